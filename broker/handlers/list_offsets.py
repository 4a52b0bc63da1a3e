"""ListOffsets (key 2), v1-11: offsets by timestamp, and the special targets.

Behaviour, as Apache Kafka 4.4:
- -2 earliest (the log start offset), -1 latest (the high watermark for
  read_uncommitted, the last stable offset for read_committed: equal until
  transactions exist), -3 the record with the largest timestamp (v7+), -4 earliest
  local (= earliest: no tiered storage), and real timestamps: the first offset whose
  record timestamp is at or after the target, or offset -1 and timestamp -1 when no
  record is that recent.
- Leader epoch (v4+) of the answer's offset; FENCED_LEADER_EPOCH /
  UNKNOWN_LEADER_EPOCH when the request's current leader epoch is older/newer than the
  image's; UNKNOWN_TOPIC_OR_PARTITION for unknown partitions.
- A partition asked for twice: one INVALID_REQUEST answer; a topic named twice is answered
  once.
- -5 (latest tiered) and -6 (earliest pending upload) concern tiered storage, which
  millpond does not have: answered offset -1, timestamp -1, as Kafka answers them with
  remote storage off.
- Not yet: follower replica requests.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.storage.log import EARLIEST_TIMESTAMP, LATEST_TIMESTAMP, MAX_TIMESTAMP
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.list_offsets_request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
)
from millpond.wire.generated.api.list_offsets_response import (
    ListOffsetsPartitionResponse,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer
    from millpond.controller.image import TopicImage

EARLIEST_LOCAL_TIMESTAMP = -4
LATEST_TIERED_TIMESTAMP = -5
EARLIEST_PENDING_UPLOAD_TIMESTAMP = -6


def handle(
    broker: BrokerServer, ctx: RequestContext, request: ListOffsetsRequest
) -> ListOffsetsResponse:
    # As Kafka: a topic named twice is answered once, and a partition asked for more than
    # once gets one INVALID_REQUEST answer (checked by compat_tests/test_differential.py).
    asked = Counter((t.name, p.partition_index) for t in request.topics for p in t.partitions)
    topics: dict[str, ListOffsetsTopicResponse] = {}
    for wanted in request.topics:
        topic = broker.image.topic(wanted.name)
        out = topics.setdefault(wanted.name, ListOffsetsTopicResponse(name=wanted.name))
        for p in wanted.partitions:
            index = p.partition_index
            if asked[(wanted.name, index)] == 1:
                out.partitions.append(_list_offset(broker, topic, p, ctx.api_version))
            elif all(done.partition_index != index for done in out.partitions):
                out.partitions.append(_answer(index, ErrorCode.INVALID_REQUEST))
    return ListOffsetsResponse(topics=list(topics.values()))


def _answer(index: int, code: ErrorCode) -> ListOffsetsPartitionResponse:
    return ListOffsetsPartitionResponse(
        partition_index=index, error_code=code, timestamp=-1, offset=-1, leader_epoch=-1
    )


def _list_offset(
    broker: BrokerServer, topic: TopicImage | None, wanted: ListOffsetsPartition, version: int
) -> ListOffsetsPartitionResponse:
    answer = _lookup(broker, topic, wanted, version)
    if version < 4:
        answer.leader_epoch = -1  # not in the schema before v4
    return answer


def _lookup(
    broker: BrokerServer, topic: TopicImage | None, wanted: ListOffsetsPartition, version: int
) -> ListOffsetsPartitionResponse:
    index = wanted.partition_index
    registration = topic.partitions.get(index) if topic is not None else None
    if topic is None or registration is None:
        return _answer(index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    current = wanted.current_leader_epoch
    if current >= 0 and current != registration.leader_epoch:
        older = current < registration.leader_epoch
        return _answer(
            index, ErrorCode.FENCED_LEADER_EPOCH if older else ErrorCode.UNKNOWN_LEADER_EPOCH
        )
    partition = broker.replicas.partition(topic, index)
    if partition is None:
        return _answer(index, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    target = wanted.timestamp
    if target in (LATEST_TIERED_TIMESTAMP, EARLIEST_PENDING_UPLOAD_TIMESTAMP):
        return _answer(index, ErrorCode.NONE)
    if target == EARLIEST_LOCAL_TIMESTAMP:
        target = EARLIEST_TIMESTAMP
    if target == MAX_TIMESTAMP and version < 7:
        return _answer(index, ErrorCode.UNSUPPORTED_VERSION)
    if target == LATEST_TIMESTAMP:
        offset, leader_epoch = partition.high_watermark, partition.leader_epoch
        return ListOffsetsPartitionResponse(
            partition_index=index, timestamp=-1, offset=offset, leader_epoch=leader_epoch
        )
    found = partition.fetch_offset_for_timestamp(target)
    if found is None:
        return _answer(index, ErrorCode.NONE)
    epoch = found.leader_epoch if found.leader_epoch is not None else partition.leader_epoch
    return ListOffsetsPartitionResponse(
        partition_index=index, timestamp=found.timestamp, offset=found.offset, leader_epoch=epoch
    )

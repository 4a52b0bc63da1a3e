"""OffsetForLeaderEpoch (key 23), v2-4: where did leader epoch E end in this log?

Consumers ask after a leader change (KIP-320) to detect truncation; followers ask to
find where their log diverges from the leader's.

Behaviour, as Apache Kafka 4.4, answered from the partition's leader epoch cache:
- The requested epoch is the latest: (epoch, log end offset). An older epoch: the start
  offset of the next higher epoch, paired with the greatest known epoch <= the
  requested one (or the requested epoch itself when it predates every known epoch).
  Epoch -1, an epoch above every known one, or an empty cache: (-1, -1) with no error.
- current_leader_epoch (when not -1) older / newer than the image's leader epoch:
  FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH. A partition the image lacks:
  UNKNOWN_TOPIC_OR_PARTITION; one another broker leads: NOT_LEADER_OR_FOLLOWER.
- One result topic per request topic, in request order; throttle_time_ms 0.

Version notes: v2 adds current_leader_epoch and throttle_time_ms (KIP-320); v3 adds
replica_id (a follower's id, -1 for consumers; -2 from older clients); v4 is flexible.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.offset_for_leader_epoch_request import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
)
from millpond.wire.generated.api.offset_for_leader_epoch_response import (
    EpochEndOffset,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderTopicResult,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer
    from millpond.controller.image import TopicImage

NO_PARTITION_LEADER_EPOCH = -1


def handle(
    broker: BrokerServer, ctx: RequestContext, request: OffsetForLeaderEpochRequest
) -> OffsetForLeaderEpochResponse:
    topics = []
    for wanted in request.topics:
        topic = broker.image.topic(wanted.topic)
        partitions = [_end_offset(broker, topic, p) for p in wanted.partitions]
        topics.append(OffsetForLeaderTopicResult(topic=wanted.topic, partitions=partitions))
    return OffsetForLeaderEpochResponse(topics=topics)


def _end_offset(
    broker: BrokerServer, topic: TopicImage | None, wanted: OffsetForLeaderPartition
) -> EpochEndOffset:
    index = wanted.partition
    registration = topic.partitions.get(index) if topic is not None else None
    if topic is None or registration is None:
        return EpochEndOffset(partition=index, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    current = wanted.current_leader_epoch
    if current != NO_PARTITION_LEADER_EPOCH and current != registration.leader_epoch:
        fenced = current < registration.leader_epoch
        code = ErrorCode.FENCED_LEADER_EPOCH if fenced else ErrorCode.UNKNOWN_LEADER_EPOCH
        return EpochEndOffset(partition=index, error_code=code)
    partition = broker.replicas.partition(topic, index)
    if partition is None:
        return EpochEndOffset(partition=index, error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER)
    epoch, end_offset = partition.end_offset_for_epoch(wanted.leader_epoch)
    if end_offset < 0:
        return EpochEndOffset(partition=index)
    return EpochEndOffset(partition=index, leader_epoch=epoch, end_offset=end_offset)

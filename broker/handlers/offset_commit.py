"""OffsetCommit (key 8), v2-10: store a group's consumed positions in __consumer_offsets.

Behaviour, as Apache Kafka 4.4:
- Per partition: a topic or partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION
  (v10 names topics by id: an unknown id is UNKNOWN_TOPIC_ID); metadata longer than
  ``offset.metadata.max.bytes`` OFFSET_METADATA_TOO_LARGE; the rest is committed.
- The group decides for all the others (:meth:`~millpond.broker.groups.offsets.Offsets.commit`,
  answered once its records are committed), and is not asked (nor made) when there
  are none: a commit with generation -1 and no
  member outside group management is accepted into an Empty group (and makes one); a
  member must be current (UNKNOWN_MEMBER_ID,
  ILLEGAL_GENERATION, FENCED_INSTANCE_ID), not in CompletingRebalance
  (REBALANCE_IN_PROGRESS); a generation-aware commit to no group is ILLEGAL_GENERATION,
  or GROUP_ID_NOT_FOUND from v9. The group id "" is a group like any other to Kafka.
- The answer lists the topics with partitions refused here first, in the order asked,
  then the group's answers (a topic in both: its refused partitions first).

Version notes: v2-4 carry a retention time (-1: the broker's offsets.retention.minutes);
v6 adds the leader epoch; v10 topic ids.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.broker.coordinator.runtime import Completion
from millpond.broker.groups.offsets import OffsetToCommit
from millpond.broker.groups.service import when_done
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.offset_commit_request import (
    OffsetCommitRequest,
    OffsetCommitRequestTopic,
)
from millpond.wire.generated.api.offset_commit_response import (
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer

TOPIC_ID_VERSION = 10
RETENTION_VERSIONS = range(2, 5)


def handle(
    broker: BrokerServer, ctx: RequestContext, request: OffsetCommitRequest
) -> OffsetCommitResponse | Awaitable[OffsetCommitResponse]:
    by_id = ctx.api_version >= TOPIC_ID_VERSION
    image = broker.image
    # Kafka's order: the topics with partitions refused here first (in the order asked),
    # then the group's answers, a topic's appended to its entry when it has one.
    answers: dict[str | bytes, OffsetCommitResponseTopic] = {}
    wanted: list[tuple[OffsetCommitRequestTopic, list[OffsetToCommit]]] = []
    for topic in request.topics:
        found = image.topic_by_id(topic.topic_id) if by_id else image.topic(topic.name)
        missing = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        offsets: list[OffsetToCommit] = []
        for p in topic.partitions:
            if found is None or p.partition_index not in found.partitions:
                code = missing if found is None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                _answer(answers, topic, by_id).partitions.append(
                    OffsetCommitResponsePartition(
                        partition_index=p.partition_index, error_code=code
                    )
                )
                continue
            offsets.append(
                OffsetToCommit(
                    found.name, p.partition_index, p.committed_offset,
                    p.committed_leader_epoch, p.committed_metadata,
                )
            )  # fmt: skip
        if offsets:
            wanted.append((topic, offsets))
    if not wanted:
        return OffsetCommitResponse(topics=list(answers.values()))
    # Only a request with something to commit reaches the group (and may create it).
    everything = [o for _, os in wanted for o in os]
    done = _commit(broker, ctx, request, everything)

    def respond() -> OffsetCommitResponse:
        error = done.error
        decided = iter([error] * len(everything) if error is not None else done.result()[1])
        for topic, offsets in wanted:
            _answer(answers, topic, by_id).partitions.extend(
                OffsetCommitResponsePartition(partition_index=o.partition, error_code=next(decided))
                for o in offsets
            )
        return OffsetCommitResponse(topics=list(answers.values()))

    return when_done([done], respond)


def _answer(
    answers: dict[str | bytes, OffsetCommitResponseTopic],
    topic: OffsetCommitRequestTopic,
    by_id: bool,
) -> OffsetCommitResponseTopic:
    key = topic.topic_id if by_id else topic.name
    answer = answers.get(key)
    if answer is None:
        answer = answers[key] = OffsetCommitResponseTopic(name=topic.name, topic_id=topic.topic_id)
    return answer


def _commit(
    broker: BrokerServer,
    ctx: RequestContext,
    request: OffsetCommitRequest,
    wanted: list[OffsetToCommit],
) -> Completion[tuple[int, list[int]]]:
    """The group's (error, per-offset errors), or the error of the operation."""
    service = broker.groups
    retention = request.retention_time_ms if ctx.api_version in RETENTION_VERSIONS else -1
    version, now = ctx.api_version, service.now_ms()
    return service.write(
        request.group_id,
        lambda c: c.commit(
            request.group_id,
            request.generation_id_or_member_epoch,
            request.member_id,
            request.group_instance_id,
            retention,
            wanted,
            version,
            now,
        ),
    )

"""OffsetFetch (key 9), v1-10: a group's committed offsets.

Behaviour, as Apache Kafka 4.4: a partition with no committed offset (of a topic that
exists or not) answers offset -1, metadata "" and no error; no topics (null) means every
offset the group committed; a group that does not exist has none. A group whose
partition is loading answers COORDINATOR_LOAD_IN_PROGRESS (per group from v8, else at
the top and on every partition).

Version notes: v5 adds the leader epoch; v7 ``require_stable`` (no transactions yet, so
nothing is ever pending); v8 batches groups; v10 names topics by id.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from millpond.broker.context import RequestContext
from millpond.broker.coordinator.runtime import Completion
from millpond.broker.groups.service import when_done
from millpond.broker.groups.shard_state import CommittedOffset
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.offset_fetch_request import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
)
from millpond.wire.generated.api.offset_fetch_response import (
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)
from millpond.wire.primitives import ZERO_UUID

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer

BATCHED_VERSION = 8
TOPIC_ID_VERSION = 10
NO_OFFSET = CommittedOffset(-1, -1, "", -1)

Wanted = list[tuple[str, list[int]]] | None
Found = list[tuple[str, list[tuple[int, CommittedOffset | None]]]]


def _fetch(broker: BrokerServer, group_id: str, wanted: Wanted) -> Completion[Found]:
    """The group's offsets, read once what was written before is committed (Kafka's
    ``require_stable`` read; with no transactions nothing else is pending)."""
    return broker.groups.read(group_id, lambda c: c.fetch_offsets(group_id, wanted))


def _outcome(done: Completion[Found], wanted: Wanted) -> tuple[int, Found]:
    if done.error is not None:
        return done.error, [(t, [(p, None) for p in ps]) for t, ps in wanted or []]
    return ErrorCode.NONE, done.result()


def handle(
    broker: BrokerServer, ctx: RequestContext, request: OffsetFetchRequest
) -> OffsetFetchResponse | Awaitable[OffsetFetchResponse]:
    if ctx.api_version < BATCHED_VERSION:
        wanted: Wanted = None
        if request.topics is not None:
            wanted = [(t.name, list(t.partition_indexes)) for t in request.topics]
        done = _fetch(broker, request.group_id, wanted)

        def respond() -> OffsetFetchResponse:
            error, found = _outcome(done, wanted)
            return OffsetFetchResponse(
                error_code=error,
                topics=[
                    OffsetFetchResponseTopic(
                        name=topic,
                        partitions=[_partition(p, offset, error) for p, offset in partitions],
                    )
                    for topic, partitions in found
                ],
            )

        return when_done([done], respond)
    by_id = ctx.api_version >= TOPIC_ID_VERSION
    groups = [_group(broker, group, by_id) for group in request.groups]
    return when_done(
        [done for done, _ in groups],
        lambda: OffsetFetchResponse(groups=[build() for _, build in groups]),
    )


def _group(
    broker: BrokerServer, group: OffsetFetchRequestGroup, by_id: bool
) -> tuple[Completion[Found], Callable[[], OffsetFetchResponseGroup]]:
    """One group of a batched (v8+) fetch; v10 topics go by id, in and out: the read,
    and how to answer from it."""
    ids: dict[str, bytes] = {}
    unknown: list[OffsetFetchResponseTopics] = []
    wanted: Wanted = None
    if group.topics is not None:
        wanted = []
        for t in group.topics:
            name = t.name
            if by_id:
                topic = broker.image.topic_by_id(t.topic_id)
                if topic is None:
                    partitions = [
                        _partitions(p, None, ErrorCode.UNKNOWN_TOPIC_ID)
                        for p in t.partition_indexes
                    ]
                    unknown.append(
                        OffsetFetchResponseTopics(topic_id=t.topic_id, partitions=partitions)
                    )
                    continue
                name = topic.name
            ids[name] = t.topic_id
            wanted.append((name, list(t.partition_indexes)))
    done = _fetch(broker, group.group_id, wanted)

    def build() -> OffsetFetchResponseGroup:
        error, found = _outcome(done, wanted)
        topics = [
            OffsetFetchResponseTopics(
                name="" if by_id else name,
                topic_id=ids.get(name) or _topic_id(broker, name),
                partitions=[_partitions(p, offset, ErrorCode.NONE) for p, offset in partitions],
            )
            for name, partitions in found
        ]
        return OffsetFetchResponseGroup(
            group_id=group.group_id, topics=topics + unknown, error_code=error
        )

    return done, build


def _topic_id(broker: BrokerServer, name: str) -> bytes:
    topic = broker.image.topic(name)
    return topic.topic_id if topic is not None else ZERO_UUID


def _answer(offset: CommittedOffset | None) -> dict[str, Any]:
    """The answer's fields of one partition (both response layouts share them)."""
    committed = offset or NO_OFFSET
    return {
        "committed_offset": committed.offset,
        "committed_leader_epoch": committed.leader_epoch,
        "metadata": committed.metadata,
    }


def _partition(
    index: int, offset: CommittedOffset | None, error: int
) -> OffsetFetchResponsePartition:
    return OffsetFetchResponsePartition(partition_index=index, error_code=error, **_answer(offset))


def _partitions(
    index: int, offset: CommittedOffset | None, error: int
) -> OffsetFetchResponsePartitions:
    return OffsetFetchResponsePartitions(partition_index=index, error_code=error, **_answer(offset))

"""OffsetDelete (key 47), v0: remove a group's committed offsets for some partitions.

Behaviour, as Apache Kafka 4.4:
- A topic that does not exist answers UNKNOWN_TOPIC_OR_PARTITION on each of its
  partitions, as does a partition the topic does not have; the coordinator sees the rest.
- The group decides for all of them (:meth:`GroupCoordinator.delete_offsets`): an
  empty id is INVALID_GROUP_ID, a group that does not exist GROUP_ID_NOT_FOUND, a group
  with members that is not a consumer group NON_EMPTY_GROUP, a loading partition
  COORDINATOR_LOAD_IN_PROGRESS; any of these is the whole answer, with no topics.
- Otherwise a topic the group's members subscribe to is GROUP_SUBSCRIBED_TO_TOPIC on
  each partition; the others' offsets are deleted (no error, committed or not).
- The answer lists the topics with errors found here first (in the order asked), then the
  coordinator's; a topic in both lists its partitions here first, then its others.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.broker.groups.service import answer
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.offset_delete_request import OffsetDeleteRequest
from millpond.wire.generated.api.offset_delete_response import (
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer


def handle(
    broker: BrokerServer, ctx: RequestContext, request: OffsetDeleteRequest
) -> OffsetDeleteResponse | Awaitable[OffsetDeleteResponse]:
    service = broker.groups
    unknown: dict[str, list[OffsetDeleteResponsePartition]] = {}
    wanted: list[tuple[str, list[int]]] = []
    for topic in request.topics:
        found = broker.image.topic(topic.name)
        indexes = [p.partition_index for p in topic.partitions]
        missing = [i for i in indexes if found is None or i not in found.partitions]
        if missing:
            unknown.setdefault(topic.name, []).extend(
                OffsetDeleteResponsePartition(
                    partition_index=i, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                )
                for i in missing
            )
        present = [i for i in indexes if i not in missing]
        if present:
            wanted.append((topic.name, present))
    if not request.group_id:
        return OffsetDeleteResponse(error_code=ErrorCode.INVALID_GROUP_ID)
    error = service.availability(request.group_id)
    if error != ErrorCode.NONE:
        return OffsetDeleteResponse(error_code=error)
    now = service.now_ms()
    done = service.write(request.group_id, lambda c: c.delete(request.group_id, wanted, now))
    return answer(
        done,
        lambda outcome: _answer(*outcome, unknown),
        lambda code: OffsetDeleteResponse(error_code=code),
    )


def _answer(
    error: int,
    deleted: list[tuple[str, list[tuple[int, int]]]],
    unknown: dict[str, list[OffsetDeleteResponsePartition]],
) -> OffsetDeleteResponse:
    if error != ErrorCode.NONE:
        return OffsetDeleteResponse(error_code=error)
    topics = {
        name: OffsetDeleteResponseTopic(name=name, partitions=list(partitions))
        for name, partitions in unknown.items()
    }
    for name, codes in deleted:
        answered = [
            OffsetDeleteResponsePartition(partition_index=p, error_code=code) for p, code in codes
        ]
        if name in topics:
            topics[name].partitions.extend(answered)
        else:
            topics[name] = OffsetDeleteResponseTopic(name=name, partitions=answered)
    return OffsetDeleteResponse(topics=list(topics.values()))

"""ListPartitionReassignments (key 46), v0: the reassignments in progress
(``kafka-reassign-partitions --verify`` and ``--list``), answered by the active
controller from its committed metadata.

Behaviour, as Apache Kafka 4.4: null topics lists every reassignment in progress;
named topics list those among the partitions named, unknown topics and partitions left
out. Each entry has the partition's replicas (the target's, then those being removed)
and the replicas being added and removed.

Not implemented: authorization (every request is allowed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.wire.generated.api.list_partition_reassignments_request import (
    ListPartitionReassignmentsRequest,
)
from millpond.wire.generated.api.list_partition_reassignments_response import (
    ListPartitionReassignmentsResponse,
    OngoingPartitionReassignment,
    OngoingTopicReassignment,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer
    from millpond.wire import Message


async def handle(
    broker: BrokerServer, ctx: RequestContext, request: ListPartitionReassignmentsRequest
) -> Message:
    wanted = (
        None
        if request.topics is None
        else [(t.name, list(t.partition_indexes)) for t in request.topics]
    )
    ongoing = await broker.admin_channel.list_partition_reassignments(wanted)
    topics: dict[str, list[OngoingPartitionReassignment]] = {}
    for o in ongoing:
        topics.setdefault(o.topic, []).append(
            OngoingPartitionReassignment(
                partition_index=o.partition,
                replicas=list(o.replicas),
                adding_replicas=list(o.adding),
                removing_replicas=list(o.removing),
            )
        )
    return ListPartitionReassignmentsResponse(
        error_message=None,
        topics=[OngoingTopicReassignment(name=n, partitions=ps) for n, ps in topics.items()],
    )

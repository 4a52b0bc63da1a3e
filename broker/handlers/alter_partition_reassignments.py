"""AlterPartitionReassignments (key 45), v0-1: move partitions to new replicas, or cancel
such a move (``kafka-reassign-partitions --execute`` / ``--cancel``), answered by the
active controller.

Behaviour, as Apache Kafka 4.4: see :mod:`millpond.controller.reassignment`. Each
partition gets its own outcome; the answer comes once the records that start (or
complete, or cancel) the reassignments are committed, not when the new replicas have
caught up (ListPartitionReassignments shows those still moving). ``timeout_ms`` is not
waited out.

Version notes: v1 adds ``allow_replication_factor_change`` (false: a target of another
size is INVALID_REPLICATION_FACTOR), echoed in the answer.
Not implemented: authorization (every request is allowed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.controller.reassignment import TopicReassignment
from millpond.wire.generated.api.alter_partition_reassignments_request import (
    AlterPartitionReassignmentsRequest,
)
from millpond.wire.generated.api.alter_partition_reassignments_response import (
    AlterPartitionReassignmentsResponse,
    ReassignablePartitionResponse,
    ReassignableTopicResponse,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer
    from millpond.wire import Message


async def handle(
    broker: BrokerServer, ctx: RequestContext, request: AlterPartitionReassignmentsRequest
) -> Message:
    allow = request.allow_replication_factor_change if ctx.api_version >= 1 else True
    topics = [
        TopicReassignment(
            t.name,
            [
                (p.partition_index, None if p.replicas is None else list(p.replicas))
                for p in t.partitions
            ],
        )
        for t in request.topics
    ]
    outcomes = await broker.admin_channel.alter_partition_reassignments(
        topics, allow_rf_change=allow
    )
    return AlterPartitionReassignmentsResponse(
        allow_replication_factor_change=allow,
        error_message=None,
        responses=[
            ReassignableTopicResponse(
                name=name,
                partitions=[
                    ReassignablePartitionResponse(
                        partition_index=index, error_code=error.code, error_message=error.message
                    )
                    for index, error in answered
                ],
            )
            for name, answered in outcomes
        ],
    )

"""ElectLeaders (key 43), v0-2: preferred and unclean leader elections
(``kafka-leader-election``), answered by the active controller.

Behaviour, as Apache Kafka 4.4 (its controller path): see
:mod:`millpond.controller.leader_election` for the elections. v0 always asks for the
preferred leaders; an election type other than 0 or 1 is INVALID_REQUEST for the whole
request (at the top from v1, and for every partition named). The answer comes once the
elections' records are committed; ``timeout_ms`` is not waited out.

Version notes: v1 adds the election type and the top-level error; v2 is flexible.
Not implemented: authorization (every request is allowed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.broker.dispatch import CloseConnection
from millpond.broker.error_responses import error_response
from millpond.controller.leader_election import ElectionType
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.elect_leaders_request import ElectLeadersRequest
from millpond.wire.generated.api.elect_leaders_response import (
    ElectLeadersResponse,
    PartitionResult,
    ReplicaElectionResult,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer
    from millpond.wire import Message


async def handle(
    broker: BrokerServer, ctx: RequestContext, request: ElectLeadersRequest
) -> Message:
    kind = request.election_type if ctx.api_version >= 1 else ElectionType.PREFERRED
    if kind not in (ElectionType.PREFERRED, ElectionType.UNCLEAN):
        why = f"Unknown election type {kind}: 0 elects preferred leaders, 1 unclean ones."
        refusal = error_response(43, ctx.api_version, request, ErrorCode.INVALID_REQUEST, why)
        if refusal is None:  # every version carries the partitions' errors
            raise CloseConnection(why)
        return refusal
    requested = (
        None
        if request.topic_partitions is None
        else [(t.topic, list(t.partitions)) for t in request.topic_partitions]
    )
    outcome = await broker.admin_channel.elect_leaders(ElectionType(kind), requested)
    return ElectLeadersResponse(
        replica_election_results=[
            ReplicaElectionResult(
                topic=t.topic,
                partition_result=[
                    PartitionResult(
                        partition_id=i, error_code=error.code, error_message=error.message
                    )
                    for i, error in t.partitions
                ],
            )
            for t in outcome
        ]
    )

"""SyncGroup (key 14), v0-5: the leader hands out the assignment; everyone gets theirs.

Behaviour, as Apache Kafka 4.4: a follower's answer waits for the leader's SyncGroup (or
for the rebalance to fail); errors UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION,
REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID, INCONSISTENT_GROUP_PROTOCOL (v5 names the
protocol type and name), INVALID_GROUP_ID, COORDINATOR_LOAD_IN_PROGRESS.

Version notes: from v5 the protocol type and name are mandatory: a request leaving
either null is INCONSISTENT_GROUP_PROTOCOL before the group is looked at.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.sync_group_request import SyncGroupRequest
from millpond.wire.generated.api.sync_group_response import SyncGroupResponse

if TYPE_CHECKING:
    from millpond.broker.node import Broker

MANDATORY_PROTOCOL_VERSION = 5


async def handle(
    broker: Broker, ctx: RequestContext, request: SyncGroupRequest
) -> SyncGroupResponse:
    service = broker.groups
    if ctx.api_version >= MANDATORY_PROTOCOL_VERSION and (
        request.protocol_type is None or request.protocol_name is None
    ):
        return SyncGroupResponse(error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    error = service.availability(request.group_id) if request.group_id else ErrorCode.NONE
    if error != ErrorCode.NONE:
        return SyncGroupResponse(error_code=error)
    answered: asyncio.Future[SyncGroupResponse] = asyncio.get_running_loop().create_future()

    def reply(response: SyncGroupResponse) -> None:
        if not answered.done():
            answered.set_result(response)

    service.coordinator.sync(request, service.now_ms(), reply)
    service.poke()
    return await answered

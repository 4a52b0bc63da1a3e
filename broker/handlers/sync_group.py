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
from millpond.broker.coordinator.runtime import Completion, CoordinatorResult
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.sync_group_request import SyncGroupRequest
from millpond.wire.generated.api.sync_group_response import SyncGroupResponse

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer
    from millpond.broker.groups.coordinator import GroupCoordinator, Record

MANDATORY_PROTOCOL_VERSION = 5


async def handle(
    broker: BrokerServer, ctx: RequestContext, request: SyncGroupRequest
) -> SyncGroupResponse:
    service = broker.groups
    if ctx.api_version >= MANDATORY_PROTOCOL_VERSION and (
        request.protocol_type is None or request.protocol_name is None
    ):
        return SyncGroupResponse(error_code=ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
    group_id = request.group_id
    error = service.availability(group_id) if group_id else ErrorCode.INVALID_GROUP_ID
    if error != ErrorCode.NONE:
        return SyncGroupResponse(error_code=error)
    answered: asyncio.Future[SyncGroupResponse] = asyncio.get_running_loop().create_future()

    def reply(response: SyncGroupResponse) -> None:
        if not answered.done():
            answered.set_result(response)

    def failed(done: Completion[None]) -> None:
        if done.error is not None:
            reply(SyncGroupResponse(error_code=done.error))

    now = service.now_ms()
    send = service.deferred(
        group_id, reply, SyncGroupResponse(error_code=ErrorCode.NOT_COORDINATOR)
    )

    def sync(coordinator: GroupCoordinator) -> CoordinatorResult[None, Record]:
        coordinator.sync(request, now, send)
        return CoordinatorResult((), None)

    service.write(group_id, sync).add_done_callback(failed)
    return await answered

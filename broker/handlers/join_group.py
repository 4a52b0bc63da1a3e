"""JoinGroup (key 11), v0-9: a consumer enters a group's next generation.

Behaviour, as Apache Kafka 4.4 (the protocol itself is
:mod:`millpond.broker.groups.membership`): the answer waits until the join phase
completes (all known members rejoined, the rebalance timeout passed, or the initial
rebalance delay of a new group ran out). An empty group id is INVALID_GROUP_ID; a session
timeout outside group.min/max.session.timeout.ms INVALID_SESSION_TIMEOUT; a group whose
``__consumer_offsets`` partition is still loading COORDINATOR_LOAD_IN_PROGRESS.

Version notes: v4+ get MEMBER_ID_REQUIRED and a member id on their first join
(KIP-394); v5 adds static membership; before v7 a missing protocol name is sent as "";
v9 may skip a rejoining static leader's assignment.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.broker.coordinator.runtime import Completion, CoordinatorResult
from millpond.broker.groups.membership import Caller
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.join_group_request import JoinGroupRequest
from millpond.wire.generated.api.join_group_response import JoinGroupResponse

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer
    from millpond.broker.groups.coordinator import GroupCoordinator, Record

NULLABLE_PROTOCOL_NAME_VERSION = 7


def client_host(ctx: RequestContext) -> str:
    """The client's address as Kafka prints an InetAddress: ``/127.0.0.1``."""
    return "/" + ctx.peer.rsplit(":", 1)[0]


async def handle(
    broker: BrokerServer, ctx: RequestContext, request: JoinGroupRequest
) -> JoinGroupResponse:
    service = broker.groups
    group_id = request.group_id
    error = service.availability(group_id) if group_id else ErrorCode.INVALID_GROUP_ID
    if error != ErrorCode.NONE:
        return _versioned(_error(request, error), ctx.api_version)
    answered: asyncio.Future[JoinGroupResponse] = asyncio.get_running_loop().create_future()

    def reply(response: JoinGroupResponse) -> None:
        if not answered.done():
            answered.set_result(response)

    def failed(done: Completion[None]) -> None:
        if done.error is not None:
            reply(_error(request, done.error))

    caller = Caller(ctx.client_id or "", client_host(ctx))
    version, now = ctx.api_version, service.now_ms()
    send = service.deferred(group_id, reply, _error(request, ErrorCode.NOT_COORDINATOR))

    def join(coordinator: GroupCoordinator) -> CoordinatorResult[None, Record]:
        coordinator.join(caller, request, version, now, send)
        return CoordinatorResult((), None)

    service.write(group_id, join).add_done_callback(failed)
    return _versioned(await answered, ctx.api_version)


def _versioned(response: JoinGroupResponse, version: int) -> JoinGroupResponse:
    if version < NULLABLE_PROTOCOL_NAME_VERSION and response.protocol_name is None:
        response.protocol_name = ""
    return response


def _error(request: JoinGroupRequest, code: int) -> JoinGroupResponse:
    return JoinGroupResponse(error_code=code, member_id=request.member_id, protocol_name=None)

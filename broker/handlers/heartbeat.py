"""Heartbeat (key 12), v0-4: a member says it is alive; the answer says whether to rejoin.

Behaviour, as Apache Kafka 4.4: NONE keeps the session; REBALANCE_IN_PROGRESS asks the
member to rejoin; UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_INSTANCE_ID,
INVALID_GROUP_ID as the coordinator decides. While the group's partition loads, Kafka
answers NONE blindly (the member keeps going and learns later), and so do we.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.broker.coordinator.runtime import CoordinatorResult
from millpond.broker.groups.service import answer
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.heartbeat_request import HeartbeatRequest
from millpond.wire.generated.api.heartbeat_response import HeartbeatResponse

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer


def handle(
    broker: BrokerServer, ctx: RequestContext, request: HeartbeatRequest
) -> HeartbeatResponse | Awaitable[HeartbeatResponse]:
    service = broker.groups
    if not request.group_id:
        return HeartbeatResponse(error_code=ErrorCode.INVALID_GROUP_ID)
    error = service.availability(request.group_id)
    if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
        return HeartbeatResponse(error_code=ErrorCode.NONE)
    if error != ErrorCode.NONE:
        return HeartbeatResponse(error_code=error)
    now = service.now_ms()
    done = service.write(
        request.group_id, lambda c: CoordinatorResult((), c.heartbeat(request, now))
    )
    return answer(done, _response, _response)


def _response(code: int) -> HeartbeatResponse:
    return HeartbeatResponse(error_code=code)

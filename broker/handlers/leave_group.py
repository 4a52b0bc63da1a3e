"""LeaveGroup (key 13), v0-5: members leave a group, which rebalances without them.

Behaviour, as Apache Kafka 4.4: v0-2 name one member (``member_id``) and the answer's
error is that member's; v3+ name several (with their group instance ids: a static
member may leave by instance id alone) and each gets its own error. A group that does
not exist answers every member UNKNOWN_MEMBER_ID.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.broker.coordinator.runtime import CoordinatorResult
from millpond.broker.groups.service import answer
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.leave_group_request import LeaveGroupRequest, MemberIdentity
from millpond.wire.generated.api.leave_group_response import LeaveGroupResponse, MemberResponse

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer

BATCHED_VERSION = 3


def handle(
    broker: BrokerServer, ctx: RequestContext, request: LeaveGroupRequest
) -> LeaveGroupResponse | Awaitable[LeaveGroupResponse]:
    service = broker.groups
    batched = ctx.api_version >= BATCHED_VERSION
    members = request.members if batched else [MemberIdentity(member_id=request.member_id)]
    group_id = request.group_id
    error = service.availability(group_id) if group_id else ErrorCode.INVALID_GROUP_ID
    if error != ErrorCode.NONE:
        return LeaveGroupResponse(error_code=error)
    now = service.now_ms()
    done = service.write(group_id, lambda c: CoordinatorResult((), c.leave(group_id, members, now)))

    def left(outcome: tuple[int, list[MemberResponse]]) -> LeaveGroupResponse:
        error, answers = outcome
        if batched:
            return LeaveGroupResponse(error_code=error, members=answers)
        if error == ErrorCode.NONE and answers:
            error = answers[0].error_code
        return LeaveGroupResponse(error_code=error)

    return answer(done, left, lambda code: LeaveGroupResponse(error_code=code))

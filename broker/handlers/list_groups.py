"""ListGroups (key 16), v0-5: every group this broker coordinates.

Behaviour, as Apache Kafka 4.4: each group with its protocol type ("" for a group made
by commits alone), from v4 its state and from v5 its type (always "classic" here: no
KIP-848 groups yet). v4's ``states_filter`` keeps groups in one of the states named
(compared trimmed and case-insensitively; a name that is no state matches nothing); v5's
``types_filter`` keeps groups of the types named (case-insensitively). An empty filter
keeps everything. While any ``__consumer_offsets`` partition is loading the answer is
COORDINATOR_LOAD_IN_PROGRESS with no groups. Groups come in no particular order.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.broker.groups.classic import ClassicGroup
from millpond.broker.groups.service import when_done
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.list_groups_request import ListGroupsRequest
from millpond.wire.generated.api.list_groups_response import ListedGroup, ListGroupsResponse

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer

STATES_FILTER_VERSION = 4
TYPES_FILTER_VERSION = 5
CLASSIC = "classic"


def handle(
    broker: BrokerServer, ctx: RequestContext, request: ListGroupsRequest
) -> ListGroupsResponse | Awaitable[ListGroupsResponse]:
    service = broker.groups
    if service.loading():
        return ListGroupsResponse(error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)
    version = ctx.api_version
    states = [s.strip() for s in request.states_filter] if version >= STATES_FILTER_VERSION else []
    types = request.types_filter if version >= TYPES_FILTER_VERSION else []
    reads = service.read_all(lambda c: _listed(c.list_groups(states, types)))
    return when_done(
        reads,
        lambda: ListGroupsResponse(
            groups=[g for done in reads if not done.error for g in done.result()]
        ),
    )


def _listed(groups: list[ClassicGroup]) -> list[ListedGroup]:
    return [
        ListedGroup(
            group_id=g.group_id,
            protocol_type=g.protocol_type or "",
            group_state=g.state.value,
            group_type=CLASSIC,
        )
        for g in groups
    ]

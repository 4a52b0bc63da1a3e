"""DescribeGroups (key 15), v0-6: the state, protocol and members of classic groups.

Behaviour, as Apache Kafka 4.4:
- Groups are answered in the order asked, duplicates included.
- A Stable group names its protocol (``protocol_data``) and gives each member's metadata
  for that protocol; a group in any other state gives its members without metadata (it
  is in flux). Every member comes with the assignment it holds (empty while a new one
  is being made). A group created by a commit alone has protocol type "" and no members.
- A group that does not exist (the id "" included) is "Dead" with no members: before v6
  with no error, from v6 GROUP_ID_NOT_FOUND and the message "Group <id> not found."
  (KIP-1043).
- A group whose ``__consumer_offsets`` partition is loading is
  COORDINATOR_LOAD_IN_PROGRESS, with nothing else filled in.
- ``include_authorized_operations`` (v3+): with ACLs absent, every GROUP operation is
  granted and the bitfield says so, for groups answered without an error.

Version notes: v3 adds authorized operations; v4 members' group instance ids; v5 is
flexible; v6 GROUP_ID_NOT_FOUND and an error message.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.broker.coordinator.runtime import Completion
from millpond.broker.groups.classic import ClassicGroup, GroupState
from millpond.broker.groups.service import GroupService, when_done
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.describe_groups_request import DescribeGroupsRequest
from millpond.wire.generated.api.describe_groups_response import (
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsResponse,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer
    from millpond.broker.groups.coordinator import GroupCoordinator

AUTHORIZED_OPERATIONS_VERSION = 3
GROUP_ID_NOT_FOUND_VERSION = 6
# Kafka's AclOperation codes a GROUP supports: READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS,
# ALTER_CONFIGS.
GROUP_OPERATIONS = sum(1 << op for op in (3, 6, 8, 10, 11))


def handle(
    broker: BrokerServer, ctx: RequestContext, request: DescribeGroupsRequest
) -> DescribeGroupsResponse | Awaitable[DescribeGroupsResponse]:
    version = ctx.api_version
    with_operations = (
        version >= AUTHORIZED_OPERATIONS_VERSION and request.include_authorized_operations
    )
    service = broker.groups
    reads = [(group_id, _read(service, group_id, version)) for group_id in request.groups]

    def respond() -> DescribeGroupsResponse:
        described = [
            DescribedGroup(group_id=group_id, error_code=done.error)
            if done.error is not None
            else done.result()
            for group_id, done in reads
        ]
        if with_operations:
            for group in described:
                if group.error_code == ErrorCode.NONE:
                    group.authorized_operations = GROUP_OPERATIONS
        return DescribeGroupsResponse(groups=described)

    return when_done([done for _, done in reads], respond)


def _read(service: GroupService, group_id: str, version: int) -> Completion[DescribedGroup]:
    return service.read(group_id, lambda c: _describe(c, group_id, version))


def _describe(coordinator: GroupCoordinator, group_id: str, version: int) -> DescribedGroup:
    group = coordinator.groups.get(group_id)
    if group is None or group.state is GroupState.DEAD:
        if version >= GROUP_ID_NOT_FOUND_VERSION:
            return DescribedGroup(
                group_id=group_id,
                error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                error_message=f"Group {group_id} not found.",
                group_state=GroupState.DEAD.value,
            )
        return DescribedGroup(group_id=group_id, group_state=GroupState.DEAD.value)
    return _described(group)


def _described(group: ClassicGroup) -> DescribedGroup:
    stable = group.state is GroupState.STABLE
    protocol = group.protocol_name if stable else None
    members = [
        DescribedGroupMember(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            member_metadata=m.metadata(protocol) if stable else b"",
            member_assignment=m.assignment,
        )
        for m in group.members.values()
    ]
    return DescribedGroup(
        group_id=group.group_id,
        group_state=group.state.value,
        protocol_type=group.protocol_type or "",
        protocol_data=protocol or "",
        members=members,
    )

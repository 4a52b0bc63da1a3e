"""DeleteGroups (key 42), v0-3: remove groups and their committed offsets.

Behaviour, as Apache Kafka 4.4: each group named once (a repeated id is answered once),
in no particular order. An Empty group is deleted: tombstones for its offsets and its
metadata go to ``__consumer_offsets``. A group with members is NON_EMPTY_GROUP; one that
does not exist (the id "" included) GROUP_ID_NOT_FOUND; one whose partition is loading
COORDINATOR_LOAD_IN_PROGRESS.

Version notes: v2 is flexible; v3 adds a per-group error message, which Kafka leaves
null for these errors, and so do we.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.broker.coordinator.runtime import Completion
from millpond.broker.groups.service import GroupService, when_done
from millpond.wire.generated.api.delete_groups_request import DeleteGroupsRequest
from millpond.wire.generated.api.delete_groups_response import (
    DeletableGroupResult,
    DeleteGroupsResponse,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer


def handle(
    broker: BrokerServer, ctx: RequestContext, request: DeleteGroupsRequest
) -> DeleteGroupsResponse | Awaitable[DeleteGroupsResponse]:
    service = broker.groups
    now = service.now_ms()
    deletions = [
        (group_id, _delete(service, group_id, now))
        for group_id in dict.fromkeys(request.groups_names)
    ]

    def respond() -> DeleteGroupsResponse:
        return DeleteGroupsResponse(
            results=[
                DeletableGroupResult(
                    group_id=group_id,
                    error_code=done.error if done.error is not None else done.result(),
                )
                for group_id, done in deletions
            ]
        )

    return when_done([done for _, done in deletions], respond)


def _delete(service: GroupService, group_id: str, now_ms: int) -> Completion[int]:
    return service.write(group_id, lambda c: c.delete_group_result(group_id, now_ms))

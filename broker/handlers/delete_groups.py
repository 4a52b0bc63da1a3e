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

from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.delete_groups_request import DeleteGroupsRequest
from millpond.wire.generated.api.delete_groups_response import (
    DeletableGroupResult,
    DeleteGroupsResponse,
)

if TYPE_CHECKING:
    from millpond.broker.node import Broker


def handle(
    broker: Broker, ctx: RequestContext, request: DeleteGroupsRequest
) -> DeleteGroupsResponse:
    service = broker.groups
    results: list[DeletableGroupResult] = []
    changed = False
    for group_id in dict.fromkeys(request.groups_names):
        error = service.availability(group_id)
        if error == ErrorCode.NONE:
            error = service.coordinator.delete_group(group_id, service.now_ms())
            changed = True
        results.append(DeletableGroupResult(group_id=group_id, error_code=error))
    if changed:
        service.poke()
    return DeleteGroupsResponse(results=results)

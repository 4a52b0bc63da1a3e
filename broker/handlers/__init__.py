"""One module per API key; each exports its :class:`~millpond.broker.dispatch.Route`.

The list below is explicit on purpose: what the broker serves is visible here, and
ApiVersions advertises exactly these routes.
"""

from millpond.broker.dispatch import Route
from millpond.broker.handlers import (
    api_versions,
    delete_groups,
    describe_groups,
    fetch,
    find_coordinator,
    heartbeat,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sync_group,
)
from millpond.broker.handlers.admin import ADMIN_ROUTES

ROUTES: tuple[Route, ...] = (
    produce.ROUTE,
    list_offsets.ROUTE,
    metadata.ROUTE,
    api_versions.ROUTE,
    fetch.ROUTE,
    offset_for_leader_epoch.ROUTE,
    init_producer_id.ROUTE,
    find_coordinator.ROUTE,
    join_group.ROUTE,
    sync_group.ROUTE,
    heartbeat.ROUTE,
    leave_group.ROUTE,
    describe_groups.ROUTE,
    list_groups.ROUTE,
    offset_commit.ROUTE,
    offset_fetch.ROUTE,
    delete_groups.ROUTE,
    offset_delete.ROUTE,
    *ADMIN_ROUTES,
)

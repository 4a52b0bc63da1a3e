"""One module per API key, each exporting ``handle``; the route table below says which.

The table is explicit on purpose: what the broker serves, and at which versions (Apache
Kafka 4.4's ranges), is visible here, and ApiVersions advertises exactly these routes.

A handler module is imported with the first request it serves. An idle broker then loads
neither the handlers nor the ~90 generated message modules they name: about a tenth of
its start-up time and 2 MB of its memory.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from millpond.broker.dispatch import Handler, HandlerResult, Route

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer
    from millpond.broker.context import RequestContext


class LazyHandler:
    """``handle`` of ``millpond.broker.handlers.<module>``, imported on the first call."""

    __slots__ = ("module", "_handle")

    def __init__(self, module: str) -> None:
        self.module = module
        self._handle: Handler | None = None

    def load(self) -> Handler:
        if self._handle is None:
            self._handle = importlib.import_module(f"{__name__}.{self.module}").handle
        return self._handle

    def __call__(self, broker: BrokerServer, ctx: RequestContext, request: Any) -> HandlerResult:
        return (self._handle or self.load())(broker, ctx, request)

    def __repr__(self) -> str:
        return f"LazyHandler({self.module!r})"


def _route(api_key: int, low: int, high: int, module: str, served_min: int | None = None) -> Route:
    return Route(api_key, low, high, LazyHandler(module), served_min_version=served_min)


ROUTES: tuple[Route, ...] = (
    # Records
    _route(0, 0, 13, "produce", served_min=3),
    _route(1, 4, 18, "fetch"),
    _route(2, 1, 11, "list_offsets"),
    _route(23, 2, 4, "offset_for_leader_epoch"),
    _route(22, 0, 5, "init_producer_id"),
    # Cluster
    _route(3, 0, 13, "metadata"),
    _route(18, 0, 5, "api_versions"),
    _route(60, 0, 2, "describe_cluster"),
    _route(55, 0, 2, "controller_role"),  # DescribeQuorum, answered by this node's controller role
    _route(75, 0, 0, "describe_topic_partitions"),
    _route(74, 0, 1, "list_config_resources"),
    _route(57, 0, 2, "update_features"),
    _route(64, 0, 0, "unregister_broker"),
    # Consumer groups
    _route(10, 0, 6, "find_coordinator"),
    _route(11, 0, 9, "join_group"),
    _route(14, 0, 5, "sync_group"),
    _route(12, 0, 4, "heartbeat"),
    _route(13, 0, 5, "leave_group"),
    _route(15, 0, 6, "describe_groups"),
    _route(16, 0, 5, "list_groups"),
    _route(8, 2, 10, "offset_commit"),
    _route(9, 1, 10, "offset_fetch"),
    _route(42, 0, 3, "delete_groups"),
    _route(47, 0, 0, "offset_delete"),
    _route(68, 0, 1, "consumer_group_heartbeat"),
    _route(69, 0, 1, "consumer_group_describe"),
    # Topics, records and configs (admin)
    _route(19, 2, 7, "create_topics"),
    _route(20, 1, 6, "delete_topics"),
    _route(37, 0, 3, "create_partitions"),
    _route(43, 0, 2, "elect_leaders"),
    _route(45, 0, 1, "alter_partition_reassignments"),
    _route(46, 0, 0, "list_partition_reassignments"),
    _route(21, 0, 2, "delete_records"),
    _route(32, 1, 4, "describe_configs"),
    _route(33, 0, 2, "alter_configs"),
    _route(44, 0, 1, "incremental_alter_configs"),
    _route(35, 1, 5, "describe_log_dirs"),
    _route(34, 1, 2, "alter_replica_log_dirs"),
    _route(61, 0, 0, "describe_producers"),
)

#: What a controller listener serves besides the controller's admin APIs of ROUTES: the
#: KRaft APIs, Fetch included (of ``__cluster_metadata``, from the other controllers and
#: from brokers following the log), and the broker lifecycle APIs.
CONTROLLER_ROUTES: tuple[Route, ...] = (
    _route(1, 4, 18, "controller_role"),
    _route(52, 0, 2, "controller_role"),
    _route(53, 0, 1, "controller_role"),
    _route(54, 0, 1, "controller_role"),
    _route(55, 0, 2, "controller_role"),
    _route(59, 0, 1, "controller_role"),
    _route(80, 0, 1, "controller_role"),
    _route(81, 0, 0, "controller_role"),
    _route(82, 0, 0, "controller_role"),
    _route(62, 0, 4, "controller_role"),
    _route(63, 0, 2, "controller_role"),
    _route(67, 0, 0, "controller_role"),
    _route(70, 0, 0, "controller_role"),
    _route(56, 2, 3, "controller_role"),
    _route(58, 0, 0, "envelope"),
)

"""A node: the roles ``process.roles`` names, composed in one process.

As Kafka's ``KafkaRaftServer``, a node runs a controller role
(:class:`~millpond.controller.controller_server.ControllerServer`: the metadata log and
the active controller) and a broker role
(:class:`~millpond.broker.broker_server.BrokerServer`: storage, routes, listener). They
meet only at the seams a remote controller would use: the broker submits operations
through the controller's channel and acts on the committed metadata it is fed. Both
share the data directory (one lock, one ``meta.properties`` cluster id).

``process.roles=broker,controller`` (combined mode, one voter) is what runs today; the
configuration refuses the others at start-up. :class:`Broker` is the node with both
roles: the broker role, plus the controller beside it (:attr:`Broker.controller`, for
tools and tests that drive it directly; the broker role never uses it).
"""

from __future__ import annotations

import base64
import random
from typing import TYPE_CHECKING, Any

from millpond.broker.broker_server import BrokerServer
from millpond.broker.config import BrokerConfig, ConfigError, build_config
from millpond.broker.config_defs_server import TRACE_FILE_KEY
from millpond.broker.control.clock import ControlledClock
from millpond.broker.dir_lock import DirLock
from millpond.broker.dispatch import Route
from millpond.broker.handlers import ROUTES
from millpond.broker.server import ListenerPlan, plan_listeners
from millpond.broker.trace import RequestTrace
from millpond.controller.controller import ControllerConfig, QuorumController
from millpond.controller.controller_server import ControllerServer
from millpond.controller.raft.keys import Endpoint
from millpond.storage.checkpoints import read_meta_properties
from millpond.storage.clock import Clock, SystemClock
from millpond.storage.fs import FileSystem, OsFileSystem, join
from millpond.storage.uuids import as_uuid4

if TYPE_CHECKING:
    from millpond.broker.authorization import Authorizer
    from millpond.controller.raft.client import RaftClient

DEFAULT_MAX_REQUEST_BYTES = 104_857_600
DEFAULT_IDLE_MS = 600_000


def new_cluster_id(rng: random.Random) -> str:
    """A Kafka cluster id: a random UUID in Kafka's URL-safe base64 form."""
    raw = as_uuid4(rng.getrandbits(128).to_bytes(16, "big"))
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _config_of(
    data_dir: str, node_id: int, host: str, port: int, num_partitions: int,
    replication_factor: int, auto_create: bool, max_request_bytes: int, idle_ms: int,
) -> BrokerConfig:  # fmt: skip
    props = {
        "node.id": str(node_id),
        "log.dirs": data_dir,
        "listeners": f"PLAINTEXT://{host}:{port}",
        "num.partitions": str(num_partitions),
        "default.replication.factor": str(replication_factor),
        "auto.create.topics.enable": str(auto_create).lower(),
        "socket.request.max.bytes": str(max_request_bytes),
        "connections.max.idle.ms": str(idle_ms),
    }
    try:
        return build_config(props, env={})[0]
    except ConfigError:  # e.g. a wildcard bind address: describe the defaults instead
        return build_config({"node.id": str(node_id), "log.dirs": data_dir}, env={})[0]


class Broker(BrokerServer):
    """A combined-mode node: the broker role with its controller role beside it."""

    def __init__(
        self,
        *,
        data_dir: str,
        log_dirs: list[str] | None = None,
        node_id: int = 1,
        host: str = "127.0.0.1",
        port: int = 9092,
        advertised_host: str | None = None,
        advertised_port: int | None = None,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        idle_ms: int = DEFAULT_IDLE_MS,
        num_partitions: int = 1,
        default_replication_factor: int = 1,
        auto_create_topics: bool = True,
        routes: tuple[Route, ...] = ROUTES,
        fs: FileSystem | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        config: BrokerConfig | None = None,
        trace: RequestTrace | None = None,
        listeners: tuple[ListenerPlan, ...] | None = None,
        authorizer: Authorizer | None = None,
        raft: RaftClient | None = None,
    ) -> None:
        config = config or _config_of(
            data_dir, node_id, host, port, num_partitions, default_replication_factor,
            auto_create_topics, max_request_bytes, idle_ms,
        )  # fmt: skip
        fs = fs or OsFileSystem()
        # The control endpoint may freeze or advance it (tests' own clocks stay theirs).
        clock = clock or ControlledClock(SystemClock())
        rng = rng or random.Random()  # noqa: S311 (ids and jitter, not secrets)
        #: Every directory of ``log.dirs``; the metadata log and meta.properties' cluster
        #: id live in the first, ``data_dir``.
        dirs = list(dict.fromkeys([data_dir, *(log_dirs or [])]))
        for directory in dirs:
            fs.makedirs(directory)
        self._locks: list[DirLock] = []
        if isinstance(fs, OsFileSystem):
            try:
                for directory in dirs:
                    self._locks.append(DirLock(directory))
            except BaseException:
                for lock in self._locks:
                    lock.release()
                raise
        cluster_id = _cluster_id(fs, data_dir, rng)
        #: The controller role (combined mode: in this process, one voter).
        self.controller_server = ControllerServer(
            fs,
            data_dir,
            clock,
            rng,
            ControllerConfig(
                node_id=node_id,
                cluster_id=cluster_id,
                num_partitions=num_partitions,
                default_replication_factor=default_replication_factor,
            ),
            raft=raft,
        )
        super().__init__(
            config=config,
            data_dir=data_dir,
            log_dirs=dirs,
            node_id=node_id,
            cluster_id=cluster_id,
            host=host,
            port=port,
            advertised=(advertised_host or host or "127.0.0.1", advertised_port),
            listeners=listeners,
            authorizer=authorizer,
            max_request_bytes=max_request_bytes,
            idle_ms=idle_ms,
            auto_create_topics=auto_create_topics,
            routes=routes,
            fs=fs,
            clock=clock,
            rng=rng,
            channel=self.controller_server.channel,
            metadata=self.controller_server,
            quorum=self.controller_server,
            trace=trace,
        )

    @classmethod
    def from_config(cls, config: BrokerConfig, **kwargs: Any) -> Broker:
        """A node as ``server.properties`` describes it: every listener, every directory
        of ``log.dirs`` (the metadata log in the first). ConfigError for a listener whose
        security protocol millpond cannot serve."""
        plans = plan_listeners(
            config.listeners, config.advertised_listeners, config.controller_listener_names
        )
        trace_file = config.get(TRACE_FILE_KEY)
        opened = None
        if trace_file and kwargs.get("trace") is None:
            opened = kwargs["trace"] = RequestTrace.open(str(trace_file))
        try:
            return cls(
                data_dir=config.log_dirs[0],
                log_dirs=list(config.log_dirs),
                node_id=config.node_id,
                listeners=tuple(plans),
                max_request_bytes=config.socket_request_max_bytes,
                idle_ms=config.connections_max_idle_ms,
                num_partitions=config.num_partitions,
                default_replication_factor=config.default_replication_factor,
                auto_create_topics=config.auto_create_topics_enable,
                config=config,
                **kwargs,
            )
        except BaseException:
            if opened is not None:
                opened.close()
            raise

    @property
    def controller(self) -> QuorumController:
        """The controller beside the broker role, for tools and tests that drive it
        directly (their operations still reach the broker only once committed)."""
        return self.controller_server.controller

    async def start(self) -> None:
        self.controller_server.local_endpoints = self._controller_endpoints
        await self.controller_server.start()
        await super().start()

    def _controller_endpoints(self) -> tuple[Endpoint, ...]:
        """This node's controller listeners, where the quorum's answers say its leader is."""
        found = []
        for server in self.listeners.servers:
            if server.listener.controller:
                host = self.listeners.plans[server.listener.name].host
                wildcard = host in ("", "::") or host == "0.0.0.0"  # noqa: S104 (a check)
                found.append(
                    Endpoint(server.listener.name, "localhost" if wildcard else host, server.port)
                )
        return tuple(found)

    async def stop(self) -> None:
        await super().stop()
        await self.controller_server.stop()
        for lock in self._locks:
            lock.release()


def _cluster_id(fs: FileSystem, data_dir: str, rng: random.Random) -> str:
    path = join(data_dir, "meta.properties")
    if fs.exists(path):
        cluster_id = read_meta_properties(fs, path).cluster_id
        if cluster_id:
            return cluster_id
    return new_cluster_id(rng)

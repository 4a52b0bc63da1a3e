"""The broker as one object: its storage, its controller, its routes, its listener.

Broker and controller run in one process (KRaft's combined mode with one voter). The
controller owns the ``__cluster_metadata`` log and the metadata image; the broker acts
only on that image. Handlers receive the :class:`Broker` and reach everything through
it; the event loop that runs the server owns every piece of mutable state, so nothing
here locks.
"""

from __future__ import annotations

import asyncio
import base64
import random
from typing import TYPE_CHECKING, Any

from millpond.broker.config import BrokerConfig, ConfigError, build_config
from millpond.broker.config_defs_server import TRACE_FILE_KEY
from millpond.broker.context import DEFAULT_LISTENER
from millpond.broker.control import CONTROL_PORT_KEY
from millpond.broker.control.clock import ControlledClock
from millpond.broker.dir_lock import DirLock
from millpond.broker.dispatch import Dispatcher, Route
from millpond.broker.emulation import CONFIG_KEY as EMULATE_KEY
from millpond.broker.emulation import emulate
from millpond.broker.groups.service import GroupService
from millpond.broker.handlers import ROUTES
from millpond.broker.maintenance import Maintenance
from millpond.broker.producer_ids import ProducerIdManager, controller_blocks
from millpond.broker.replica_manager import ReplicaManager
from millpond.broker.server import ListenerPlan, Listeners, plan_listeners
from millpond.broker.trace import RequestTrace
from millpond.controller.controller import ControllerConfig, QuorumController
from millpond.controller.image import MetadataImage
from millpond.storage.checkpoints import read_meta_properties
from millpond.storage.clock import Clock, SystemClock
from millpond.storage.config import ConfigError as LogConfigError
from millpond.storage.config import LogConfig
from millpond.storage.fs import FileSystem, OsFileSystem, join
from millpond.storage.log_manager import LogManager
from millpond.storage.uuids import as_uuid4

if TYPE_CHECKING:
    from millpond.broker.authorization import Authorizer
    from millpond.broker.context import ListenerInfo
    from millpond.broker.control.http import ControlServer
    from millpond.broker.control.service import BrokerControl
    from millpond.broker.server import KafkaConnection

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


class Broker:
    def __init__(
        self,
        *,
        data_dir: str,
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
    ) -> None:
        self.node_id = node_id
        #: Where each request is traced (``millpond serve --trace``), if anywhere.
        self.trace = trace
        #: The configuration DescribeConfigs reports (``from_config``'s, else one built
        #: from these arguments).
        self.config: BrokerConfig = config or _config_of(
            data_dir, node_id, host, port, num_partitions, default_replication_factor,
            auto_create_topics, max_request_bytes, idle_ms,
        )  # fmt: skip
        self.auto_create_topics = auto_create_topics
        self.fs = fs or OsFileSystem()
        # The control endpoint may freeze or advance it (tests' own clocks stay theirs).
        self.clock = clock or ControlledClock(SystemClock())
        self.rng = rng or random.Random()  # noqa: S311 (ids and jitter, not secrets)
        self.fs.makedirs(data_dir)
        self.data_dir = data_dir
        self._lock = DirLock(data_dir) if isinstance(self.fs, OsFileSystem) else None
        self.cluster_id = self._cluster_id(data_dir)
        self.controller = QuorumController(
            self.fs,
            data_dir,
            self.clock,
            self.rng,
            ControllerConfig(
                node_id=node_id,
                cluster_id=self.cluster_id,
                num_partitions=num_partitions,
                default_replication_factor=default_replication_factor,
            ),
        )
        # After the controller: logs opened at load (after an unclean shutdown) or on first
        # use (after a clean one) take their topic's config from the metadata image.
        self.log_manager = LogManager(
            self.fs,
            [data_dir],
            self.clock,
            cluster_id=self.cluster_id,
            node_id=node_id,
            topic_config=self._topic_log_config,
        )
        self.replicas = ReplicaManager(
            self.log_manager,
            lambda: self.controller.image,
            self.config.log_config,
            node_id,
            clock=self.clock,
            min_insync_replicas=self.config.get_int("min.insync.replicas", 1),
        )
        self.connections: set[KafkaConnection] = set()
        default_advertised = (advertised_host or host or "127.0.0.1", advertised_port)
        # One server per listener (``from_config``: every one of ``listeners``), each with
        # its routes; without a config, one PLAINTEXT listener at host:port.
        self.listeners = Listeners(
            self,
            listeners or (ListenerPlan(DEFAULT_LISTENER, host, port, default_advertised),),
            emulate(routes, self.config.get(EMULATE_KEY)),
            max_frame_size=max_request_bytes,
            idle_timeout_ms=idle_ms,
            # Sending, Kafka's 100 KB by default: larger buffers let a fetch response arrive
            # in bursts of megabytes, which cost the reader's kernel 8% more CPU per MB.
            buffer_sizes=(
                self.config.get_int("socket.send.buffer.bytes", -1),
                self.config.get_int("socket.receive.buffer.bytes", -1),
            ),
            authorizer=authorizer,
        )
        self.server = self.listeners.primary
        self.dispatcher: Dispatcher = self.server.dispatcher
        self.maintenance = Maintenance(self)
        self.groups = GroupService(self)
        self._control: BrokerControl | None = None
        self.control_server: ControlServer | None = None

    @classmethod
    def from_config(cls, config: BrokerConfig, **kwargs: Any) -> Broker:
        """A broker as ``server.properties`` describes it: every listener, the first log
        dir. ConfigError for a listener whose security protocol millpond cannot serve."""
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

    def _cluster_id(self, data_dir: str) -> str:
        path = join(data_dir, "meta.properties")
        if self.fs.exists(path):
            cluster_id = read_meta_properties(self.fs, path).cluster_id
            if cluster_id:
                return cluster_id
        return new_cluster_id(self.rng)

    def _topic_log_config(self, topic: str) -> LogConfig:
        """The topic's configs over the broker's topic defaults (as ReplicaManager's)."""
        try:
            return self.config.log_config(self.controller.image.topic_config(topic))
        except LogConfigError:
            return self.config.log_config()

    @property
    def control(self) -> BrokerControl:
        """Fault injection, the clock, state: what ``millpond.testing`` and the HTTP control
        endpoint (``millpond.control.port``) drive. Built with their first call: a broker
        nothing controls never loads it."""
        if self._control is None:
            from millpond.broker.control.service import BrokerControl  # noqa: PLC0415

            self._control = BrokerControl(self)
        return self._control

    @property
    def faults_armed(self) -> bool:
        """Whether a fault rule may apply to a request (checked on every one)."""
        return self._control is not None and bool(self._control.faults)

    @property
    def image(self) -> MetadataImage:
        return self.controller.image

    @property
    def port(self) -> int:
        return self.server.port

    @property
    def advertised(self) -> tuple[str, int]:
        """Where clients of the first broker listener reach this broker."""
        return self.listeners.advertised()

    def advertised_on(self, listener: ListenerInfo) -> tuple[str, int]:
        """Where clients of ``listener`` reach this broker (Kafka answers each client
        with the endpoints of the listener it came in on)."""
        return self.listeners.advertised(listener.name)

    def dispatcher_on(self, listener: ListenerInfo) -> Dispatcher:
        """The routes of ``listener`` (what ApiVersions advertises there)."""
        return self.listeners.dispatcher(listener)

    async def start(self) -> None:
        await self.listeners.start()
        endpoints = self.listeners.endpoints()
        registration = self.controller.register_broker(self.node_id, endpoints).response
        # Producer ids come in blocks the controller grants this broker incarnation.
        self.producer_ids = ProducerIdManager(
            controller_blocks(self.controller, self.node_id, registration.broker_epoch)
        )
        self.controller.unfence_broker(self.node_id, registration.broker_epoch)
        self.groups.start()
        self.maintenance.start()
        control_port = self.config.get(CONTROL_PORT_KEY)
        if isinstance(control_port, int) and control_port >= 0:
            # Off by default: only brokers that serve it load http.server (about 3 MB).
            from millpond.broker.control.http import ControlServer  # noqa: PLC0415

            self.control_server = ControlServer(self.control, control_port)
            await self.control_server.start()

    async def stop(self) -> None:
        if self.control_server is not None:
            await self.control_server.stop()
        await self.maintenance.stop()
        await self.groups.stop()
        await self.listeners.stop()
        await asyncio.gather(*(conn.closed() for conn in list(self.connections)))
        self.replicas.shutdown()  # producer state snapshots at each log end
        self.log_manager.shutdown()
        self.controller.close()
        if self.trace is not None:
            self.trace.close()
        if self._lock is not None:
            self._lock.release()

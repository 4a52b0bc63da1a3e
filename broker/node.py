"""A node: the roles ``process.roles`` names, composed in one process.

As Kafka's ``KafkaRaftServer``, a node runs a controller role
(:class:`~millpond.controller.controller_server.ControllerServer`: the metadata log and
the active controller) and a broker role
(:class:`~millpond.broker.broker_server.BrokerServer`: storage, routes, listener). They
meet only at the seams a remote controller would use: the broker submits operations
through the controller's channel and acts on the committed metadata it is fed. Both
share the data directory (one lock, one ``meta.properties`` cluster id).

``process.roles`` may be ``broker,controller`` (combined mode), ``broker`` or
``controller`` (which serves its controller listeners only). A combined node alone is the one
voter of its quorum, and its broker role calls the controller beside it. As one voter of
a quorum of several (static, ``controller.quorum.voters``, or dynamic, found through
``controller.quorum.bootstrap.servers`` with its voters in the log), and as a
broker-only node (which follows the quorum's log as an observer and serves no controller
listener), its broker role reaches the active controller over the network wherever it runs
(:mod:`~millpond.broker.remote_channel`) and forwards clients' admin requests there
(:mod:`~millpond.broker.forwarding`). :class:`Broker` is the node: the broker role, plus
its controller role beside it (:attr:`Broker.controller`, for tools and tests that drive
it directly; the broker role never uses it).
"""

from __future__ import annotations

import asyncio
import base64
import random
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from millpond.broker.broker_server import BrokerServer
from millpond.broker.config import BrokerConfig, ConfigError, build_config
from millpond.broker.config_defs_server import TRACE_FILE_KEY
from millpond.broker.control.clock import ControlledClock
from millpond.broker.dir_lock import DirLock
from millpond.broker.dispatch import Route
from millpond.broker.handlers import ROUTES
from millpond.broker.quorum_config import bootstrap_servers, raft_config, static_voters
from millpond.broker.server import ListenerPlan, plan_listeners
from millpond.broker.trace import RequestTrace
from millpond.controller.controller import ControllerConfig, QuorumController
from millpond.controller.controller_server import ControllerServer, raft_client_id
from millpond.controller.feature_control import registered_features
from millpond.controller.metadata_log import METADATA_PARTITION_DIR, MetadataLogConfig
from millpond.controller.raft.config import RaftConfig
from millpond.controller.raft.kafka_log import MetadataRetention
from millpond.controller.raft.keys import BOOTSTRAP_SNAPSHOT, Endpoint, VoterSet
from millpond.controller.raft.snapshots import snapshot_name
from millpond.controller.snapshot_schedule import SnapshotTriggers
from millpond.storage.checkpoints import read_meta_properties
from millpond.storage.clock import Clock, SystemClock
from millpond.storage.fs import FileSystem, OsFileSystem, join
from millpond.storage.log_dirs import ensure_meta_properties
from millpond.storage.uuids import as_uuid4

if TYPE_CHECKING:
    from millpond.broker.authorization import Authorizer
    from millpond.broker.controller_link import ControllerLink
    from millpond.broker.remote_channel import RemoteControllerChannel
    from millpond.controller.channel import ControllerChannel
    from millpond.controller.raft.client import RaftClient

DEFAULT_MAX_REQUEST_BYTES = 104_857_600
DEFAULT_IDLE_MS = 600_000


def controller_client_id(node_id: int) -> str:
    """The client id of a broker's requests to the active controller."""
    return f"broker-{node_id}-to-controller"


def peer_client_ids(node_id: int) -> tuple[str, ...]:
    """Every client id a node sends to other nodes under (to cut it off, in tests)."""
    return (raft_client_id(node_id), controller_client_id(node_id))


def new_cluster_id(rng: random.Random) -> str:
    """A Kafka cluster id: a random UUID in Kafka's URL-safe base64 form, never one
    that starts with '-' (Kafka's ``Uuid.randomUuid`` draws again: a command line would
    read it as an option)."""
    while True:
        raw = as_uuid4(rng.getrandbits(128).to_bytes(16, "big"))
        text = base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
        if not text.startswith("-"):
            return text


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
    """A node with the broker role: its controller role (or, broker-only, its replica
    of the quorum's log) beside it."""

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
        voters: VoterSet | None = None,
        bootstrap_servers: Sequence[tuple[str, int]] = (),
        raft_config: RaftConfig | None = None,
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
        #: ``process.roles=broker``: the node follows the quorum's log as an observer.
        self.broker_only = "controller" not in config.process_roles
        #: ``process.roles=controller``: a voter that serves its controller listeners only.
        self.controller_only = "broker" not in config.process_roles
        several = (
            bool(bootstrap_servers)
            or (
                voters is not None and (len(voters) > 1 or self.broker_only or self.controller_only)
            )
            # The first voters ``storage format`` wrote: a dynamic quorum (KIP-853).
            or (voters is None and fs.exists(_bootstrap_checkpoint(data_dir)))
        )
        cluster_id = _cluster_id(fs, data_dir, rng, formatted=several)
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
        #: The controller role: this node's replica of the metadata quorum (a voter, or
        #: an observer for a broker-only node) and its controller.
        try:
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
                    min_insync_replicas=config.get_int("min.insync.replicas", 1),
                    broker_session_timeout_ms=(
                        config.get_int("broker.session.timeout.ms", 9000)
                        if several and not self.broker_only
                        else None
                    ),
                    broker_disconnect_fence_ms=_disconnect_fence_ms(config, several),
                    snapshots=_snapshot_triggers(config),
                    unclean_leader_election_enable=bool(
                        config.get("unclean.leader.election.enable")
                    ),
                    leader_imbalance_check_interval_ms=(
                        config.get_int("leader.imbalance.check.interval.seconds", 300) * 1000
                        if several
                        and not self.broker_only
                        and config.get("auto.leader.rebalance.enable") is True
                        else None
                    ),
                ),
                raft=raft,
                voters=voters,
                bootstrap_servers=bootstrap_servers,
                directory_id=ensure_meta_properties(
                    fs, data_dir, cluster_id, node_id, clock
                ).directory_id,
                raft_config=raft_config,
                observer=self.broker_only,
                log_config=_metadata_log_config(config),
            )
        except BaseException:  # a metadata log it cannot open: free the directories
            for lock in self._locks:
                lock.release()
            raise
        channel: ControllerChannel = self.controller_server.channel
        link = None
        if several and not self.controller_only:
            # A quorum of several: the broker role reaches the active controller over the
            # network, wherever it runs, as a broker-only node would.
            link, channel = self._remote_channel(config, cluster_id, rng, raft_config)
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
            channel=channel,
            metadata=self.controller_server,
            quorum=None if self.broker_only else self.controller_server,
            trace=trace,
            controller_link=link,
            broker_role=not self.controller_only,
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
                voters=static_voters(config.values, config.controller_listener_names),
                bootstrap_servers=bootstrap_servers(
                    config.values, config.listeners, config.controller_listener_names
                ),
                raft_config=raft_config(config.values),
                **kwargs,
            )
        except BaseException:
            if opened is not None:
                opened.close()
            raise

    def _remote_channel(
        self,
        config: BrokerConfig,
        cluster_id: str,
        rng: random.Random,
        raft_config: RaftConfig | None,
    ) -> tuple[ControllerLink, RemoteControllerChannel]:
        # Loaded by the nodes of a quorum of several only: a single node never needs them.
        from millpond.broker.controller_link import ControllerLink  # noqa: PLC0415
        from millpond.broker.remote_channel import (  # noqa: PLC0415
            BrokerIdentity,
            RemoteControllerChannel,
        )

        quorum = self.controller_server
        timers = raft_config or RaftConfig()
        link = ControllerLink(
            lambda: quorum.quorum_leader_id,
            quorum.address_of,
            client_id=controller_client_id(config.node_id),
            request_timeout_ms=timers.request_timeout_ms,
            retry_backoff_ms=timers.retry_backoff_ms,
        )
        identity = BrokerIdentity(
            cluster_id=cluster_id,
            incarnation_id=as_uuid4(rng.getrandbits(128).to_bytes(16, "big")),
            rack=config.broker_rack,
            features=registered_features(quorum.config.supported_features),
            heartbeat_interval_ms=config.get_int("broker.heartbeat.interval.ms", 2000),
            registration_timeout_ms=config.get_int(
                "initial.broker.registration.timeout.ms", 60_000
            ),
            request_timeout_ms=config.get_int("request.timeout.ms", 30_000),
            session_timeout_ms=config.get_int("broker.session.timeout.ms", 9000),
            controlled_shutdown=bool(config.get("controlled.shutdown.enable")),
        )
        return link, RemoteControllerChannel(link, identity, lambda: self.image.offset)

    @property
    def controller(self) -> QuorumController:
        """The controller beside the broker role, for tools and tests that drive it
        directly (their operations still reach the broker only once committed)."""
        return self.controller_server.controller

    async def start(self) -> None:
        self.controller_server.local_endpoints = self._controller_endpoints
        await self.controller_server.start()
        await super().start()
        self.controller_server.listeners_bound()

    def _controller_endpoints(self) -> tuple[Endpoint, ...]:
        """This node's controller listeners: where the quorum's answers say its leader
        is, and what it announces to the quorum."""
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

    async def drop_late_connections(self) -> None:
        """Once the listeners stopped accepting: let the connections they accepted last
        finish wiring up (asyncio sets a socket up over a few loop turns), then drop
        every connection still open, so none outlives the node unclosed."""
        for _ in range(3):
            await asyncio.sleep(0)
        for connection in list(self.connections):
            connection.abort()

    async def abort(self) -> None:
        """Stop at once, as ``kill -9`` would: sockets closed mid-request, every task of
        the node cancelled, nothing flushed and no clean-shutdown marker written; what
        the files hold is what the next start recovers. For crash tests in one process
        (:mod:`millpond.testing.cluster`); a restart opens the same directories anew."""
        await asyncio.gather(*(server.abort() for server in self.listeners.servers))
        await self.drop_late_connections()
        self.controller_server.close_peers()
        if self.controller_link is not None:
            self.controller_link.close()
        if self.fetchers is not None:
            self.fetchers.close_connections()
        if self.control_server is not None:
            await self.control_server.stop()
        current = asyncio.current_task()
        tasks = [task for task in asyncio.all_tasks() if task is not current]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if isinstance(self.fs, OsFileSystem):
            self.fs.abandon_open_files()
        for lock in self._locks:
            lock.release()


def _bootstrap_checkpoint(data_dir: str) -> str:
    return join(data_dir, METADATA_PARTITION_DIR, snapshot_name(BOOTSTRAP_SNAPSHOT))


def _cluster_id(fs: FileSystem, data_dir: str, rng: random.Random, *, formatted: bool) -> str:
    """The cluster id of ``meta.properties``; a new one for a single node's first start.
    ``formatted``: the node is one of several, which must agree on the id beforehand."""
    path = join(data_dir, "meta.properties")
    if fs.exists(path):
        cluster_id = read_meta_properties(fs, path).cluster_id
        if cluster_id:
            return cluster_id
    if formatted:
        raise ConfigError(
            "log.dirs",
            data_dir,
            "has no meta.properties, and a node of a quorum of several must know its "
            "cluster's id before it starts: run `millpond storage format --cluster-id ID "
            "--config FILE` on every node, with one id for all (`millpond storage "
            "random-uuid` makes one)",
        )
    return new_cluster_id(rng)


def _disconnect_fence_ms(config: BrokerConfig, several: bool) -> int | None:
    """millpond.broker.disconnect.fence.ms where brokers have sessions (None: off)."""
    grace = config.get_int("millpond.broker.disconnect.fence.ms", 3000)
    return grace if several and grace >= 0 else None


def _snapshot_triggers(config: BrokerConfig) -> SnapshotTriggers:
    default = SnapshotTriggers()
    return SnapshotTriggers(
        config.get_int("metadata.log.max.record.bytes.between.snapshots", default.max_bytes),
        config.get_int("metadata.log.max.snapshot.interval.ms", default.max_interval_ms),
    )


def _metadata_log_config(config: BrokerConfig) -> MetadataLogConfig:
    default = MetadataLogConfig()
    return MetadataLogConfig(
        segment_bytes=config.get_int("metadata.log.segment.bytes", default.segment_bytes),
        segment_ms=config.get_int("metadata.log.segment.ms", default.segment_ms),
        retention=MetadataRetention(
            config.get_int("metadata.max.retention.bytes", default.retention.max_bytes),
            config.get_int("metadata.max.retention.ms", default.retention.max_ms),
        ),
    )

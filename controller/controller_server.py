"""The controller role of a node: the quorum controller and the channel brokers use.

Kafka composes a node from a ``ControllerServer`` and a ``BrokerServer`` according to
``process.roles``; the controller server owns the metadata log (through the Raft
client) and the active controller, and brokers reach it only through a channel and
learn metadata only from the committed log. :class:`ControllerServer` is that role for
a node of the metadata quorum: it owns the node's
:class:`~millpond.controller.raft.client.RaftClient` over ``__cluster_metadata`` (by
default the one voter of a static set) and the
:class:`~millpond.controller.controller.QuorumController` listening to it, hands brokers
in the same process a
:class:`~millpond.controller.channel.LocalControllerChannel`, and feeds them the
committed metadata (:meth:`register_listener`). Its
:class:`~millpond.controller.raft_driver.RaftDriver` carries the quorum's requests to the
other voters and answers theirs (:meth:`handle_raft_request`, from the controller
listener).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from millpond.controller import feature_control
from millpond.controller.channel import LocalControllerChannel
from millpond.controller.controller import ControllerConfig, MetadataListener, QuorumController
from millpond.controller.controller_apis import handle_controller_request
from millpond.controller.controller_registration import ControllerRegistrar
from millpond.controller.metadata_log import MetadataLogConfig, open_raft_client
from millpond.controller.peer_channel import PeerChannel
from millpond.controller.raft import codec
from millpond.controller.raft.client import RaftLogFailedError
from millpond.controller.raft.config import RaftConfig
from millpond.controller.raft.keys import Endpoint, VoterSet
from millpond.controller.raft_driver import RaftDriver
from millpond.controller.results import NotControllerError
from millpond.storage.config_def import ConfigError
from millpond.wire.api import ApiKey
from millpond.wire.generated.api.broker_heartbeat_request import BrokerHeartbeatRequest

if TYPE_CHECKING:
    import random

    from millpond.controller.image import MetadataImage
    from millpond.controller.raft.client import RaftClient
    from millpond.controller.raft.snapshots import SnapshotContents
    from millpond.storage.clock import Clock
    from millpond.storage.fs import FileSystem
    from millpond.wire import Message

__all__ = ["ControllerServer"]

_log = logging.getLogger("millpond.controller")
#: The id of the first bootstrap server (the next is one less): below every node id, and
#: clear of the driver's id for inbound requests.
BOOTSTRAP_ID = -1000


def _bootstrap_features(
    checkpoint: SnapshotContents, config: ControllerConfig, log_dir: str
) -> dict[str, int]:
    """The feature levels ``format`` chose, if this controller runs them."""
    features = feature_control.read_bootstrap_features(checkpoint.batches)
    refused = feature_control.refuse_bootstrap(features, config.node_id)
    if refused is not None:
        levels = ", ".join(f"{k}={v}" for k, v in sorted(features.items()))
        raise ConfigError(
            "log.dirs",
            log_dir,
            f"the metadata log was formatted for a cluster at {levels}, which millpond "
            f"cannot start: {refused}. Format it with `millpond storage format`, or with "
            "Kafka's kafka-storage at --release-version 4.1-IV1 and group.version, "
            "transaction.version, eligible.leader.replicas.version, share.version and "
            "streams.version at 0",
        )
    return features


def raft_client_id(node_id: int) -> str:
    """The client id of a node's requests to the other controllers of the quorum."""
    return f"raft-client-{node_id}"


class ControllerServer:
    def __init__(
        self,
        fs: FileSystem,
        metadata_log_dir: str,
        clock: Clock,
        rng: random.Random,
        config: ControllerConfig,
        *,
        raft: RaftClient | None = None,
        voters: VoterSet | None = None,
        bootstrap_servers: Sequence[tuple[str, int]] = (),
        directory_id: bytes | None = None,
        raft_config: RaftConfig | None = None,
        observer: bool = False,
        log_config: MetadataLogConfig | None = None,
    ) -> None:
        """``voters`` and ``raft_config``: the quorum (``controller.quorum.*``); by
        default this node alone, or the voters ``format`` wrote; ``bootstrap_servers``:
        the other controllers to ask for the quorum (``controller.quorum.bootstrap.
        servers``); ``directory_id``: the metadata log directory's (meta.properties), the
        second half of this replica's key; ``observer``: follow the quorum's log without
        ever voting. ``raft``: a replica opened by the caller instead. ``log_config``: the
        metadata log's segments and retention (``metadata.log.*``,
        ``metadata.max.retention.*``)."""
        self.config = config
        #: Bootstrap servers by the negative ids the Raft core knows them by.
        self._bootstrap = {BOOTSTRAP_ID - i: a for i, a in enumerate(bootstrap_servers)}
        raft_config = raft_config or RaftConfig(kraft_version=0)
        if raft_config.cluster_id is None:  # peers of another cluster are refused
            raft_config = raft_config._replace(cluster_id=config.cluster_id)
        if raft is None:
            raft = open_raft_client(
                fs,
                metadata_log_dir,
                clock,
                rng,
                node_id=config.node_id,
                directory_id=directory_id,
                voters=voters,
                bootstrap_servers=sorted(self._bootstrap),
                config=raft_config,
                can_become_voter=not observer,
                log_config=log_config,
            )
        self.raft = raft
        checkpoint = raft.log.bootstrap_checkpoint()
        if checkpoint is not None:
            try:
                features = _bootstrap_features(checkpoint, config, metadata_log_dir)
            except ConfigError:
                raft.log.log.close()
                raise
            config = self.config = config._replace(bootstrap_features=features)
        #: This node's controller listeners as they listen, for a voter set that does not
        #: name them (the default one): the node that serves them sets it.
        self.local_endpoints: Callable[[], tuple[Endpoint, ...]] = tuple
        self.controller = QuorumController(raft, clock, rng, config)
        self.driver = RaftDriver(
            raft,
            PeerChannel(
                self.address_of,
                codec.SUPPORTED_VERSIONS,
                client_id=raft_client_id(config.node_id),
                request_timeout_ms=raft_config.request_timeout_ms,
            ),
            clock,
            endpoints_of=self._endpoints_of,
        )
        #: What a broker in this process submits its controller operations to.
        self.channel = LocalControllerChannel(self.controller)
        self._sessions: asyncio.Task[None] | None = None
        self._snapshots: asyncio.Task[None] | None = None
        self._registering: asyncio.Task[None] | None = None
        self._balancing: asyncio.Task[None] | None = None
        #: broker id -> the connection (a controller listener's) it last heartbeat on.
        self._heartbeat_connections: dict[int, int] = {}
        self._fence_checks: set[asyncio.Task[None]] = set()
        #: A node with the controller role registers it (a broker's observer does not).
        self.registrar = (
            None
            if observer
            else ControllerRegistrar(
                config.node_id,
                rng.getrandbits(128).to_bytes(16, "big"),
                feature_control.registered_features(config.supported_features),
                channel=self.channel,
                peers=PeerChannel(
                    self.address_of,
                    {ApiKey.CONTROLLER_REGISTRATION: (0, 0)},
                    client_id=f"controller-registration-{config.node_id}",
                    request_timeout_ms=raft_config.request_timeout_ms,
                ),
                image=lambda: self.controller.committed_image,
                leader_id=lambda: self.raft.leader.leader_id,
                is_active=lambda: self.controller.is_active,
                endpoints=lambda: self.raft.node.local_endpoints,
            )
        )

    @property
    def committed_image(self) -> MetadataImage:
        return self.controller.committed_image

    def register_listener(self, listener: MetadataListener, broker_id: int | None = None) -> None:
        """Feed ``listener`` each committed batch from now on (``broker_id``'s loader)."""
        self.controller.register_listener(listener, broker_id)

    def _endpoints_of(self, node_id: int) -> tuple[Endpoint, ...]:
        """A voter's controller listeners: as the voter set names them, else as the
        answers naming it leader did (an observer that has not read the voters yet)."""
        voter = self.raft.node.voters.get(node_id)
        endpoints = () if voter is None else voter.endpoints
        if not endpoints and node_id == self.config.node_id:
            return self.local_endpoints()
        return endpoints or self.driver.leader_endpoints.get(node_id, ())

    def listeners_bound(self) -> None:
        """This node's controller listeners are bound: the quorum learns them (a voter
        announces them to the leader, a leader records its own)."""
        self.raft.node.local_endpoints = self.local_endpoints()
        self.driver.wake()
        if self.registrar is not None:
            self.registrar.wake()

    async def start(self) -> None:
        """Start carrying the quorum's messages (on the running event loop), and, where
        brokers have sessions, fencing those that let theirs lapse."""
        self.driver.start()
        timeout = self.config.broker_session_timeout_ms
        loop = asyncio.get_running_loop()
        if timeout is not None:
            self._sessions = loop.create_task(self._fence_stale(timeout))
        self._snapshots = loop.create_task(self._snapshot_on_time())
        interval = self.config.leader_imbalance_check_interval_ms
        if interval is not None:
            self._balancing = loop.create_task(self._balance_leaders(interval))
        if self.registrar is not None:
            self._registering = loop.create_task(self.registrar.run())

    async def _snapshot_on_time(self) -> None:
        """The time trigger and the time retention, checked every second (or as often
        as the interval asks): commits check the byte trigger themselves."""
        interval = self.config.snapshots.max_interval_ms
        period = min(1.0, interval / 1000) if interval > 0 else 1.0
        while True:
            await asyncio.sleep(period)
            try:
                if self.controller.maybe_snapshot() is None:
                    self.raft.clean()
            except RaftLogFailedError:
                return  # the node is stopping; its log failed

    async def _balance_leaders(self, interval_ms: int) -> None:
        """Every ``leader.imbalance.check.interval.seconds``, the active controller moves
        leadership back to preferred replicas that can take it (at once again while a
        pass reached its bound)."""
        more = False
        while True:
            if not more:
                await asyncio.sleep(interval_ms / 1000)
            if not self.controller.is_active:
                more = False
                continue
            try:
                more = await self.channel.submit(lambda c: c.balance_partition_leaders())
            except (NotControllerError, RaftLogFailedError):
                more = False  # the next active controller balances them

    async def _fence_stale(self, timeout_ms: int) -> None:
        # A lapsed session is fenced within an eighth of the timeout.
        while True:
            await asyncio.sleep(timeout_ms / 8000)
            fenced = await self._fence_lapsed()
            if fenced:
                _log.info("fenced brokers %s: no heartbeat within %d ms", fenced, timeout_ms)

    async def _fence_lapsed(self) -> tuple[int, ...]:
        """The brokers fenced now for a lapsed session or disconnect grace."""
        if not self.controller.is_active:
            return ()
        try:
            return await self.channel.submit(lambda c: c.fence_stale_brokers())
        except (NotControllerError, RaftLogFailedError):
            return ()  # the next active controller fences them

    async def handle_raft_request(self, request: Message, version: int) -> Message:
        """A KRaft request from the controller listener, answered once the quorum has."""
        return await self.driver.handle_request(request, version)

    async def handle_controller_request(
        self, request: Message, version: int, connection_id: int
    ) -> Message:
        if isinstance(request, BrokerHeartbeatRequest):
            self._heartbeat_connections[request.broker_id] = connection_id
        return await handle_controller_request(self.channel, request, version)

    def connection_closed(self, connection_id: int) -> None:
        """A broker's heartbeat connection closing starts its disconnect grace
        (``millpond.broker.disconnect.fence.ms``), checked once the grace has passed; an
        older connection of a broker that heartbeats on a newer one is no sign."""
        closed = [b for b, c in self._heartbeat_connections.items() if c == connection_id]
        for broker_id in closed:
            del self._heartbeat_connections[broker_id]
        grace = self.config.broker_disconnect_fence_ms
        if not closed or grace is None or not self.controller.is_active:
            return
        for broker_id in closed:
            self.controller.broker_disconnected(broker_id)
            task = asyncio.get_running_loop().create_task(self._fence_after(broker_id, grace))
            self._fence_checks.add(task)
            task.add_done_callback(self._fence_checks.discard)

    async def _fence_after(self, broker_id: int, grace: int) -> None:
        await asyncio.sleep(grace / 1000)
        if broker_id in await self._fence_lapsed():
            _log.info("fenced broker %d: its connection closed %s ms ago", broker_id, grace)

    @property
    def quorum_leader_id(self) -> int:
        return self.raft.leader.leader_id

    @property
    def is_active_controller(self) -> bool:
        return self.controller.is_active

    def address_of(self, node_id: int) -> tuple[str, int] | None:
        """Where a voter's first controller listener is, or a bootstrap server (by its
        negative id); None: not known."""
        if node_id in self._bootstrap:
            return self._bootstrap[node_id]
        endpoints = self._endpoints_of(node_id)
        return (endpoints[0].host, endpoints[0].port) if endpoints else None

    def voter_endpoints(self) -> dict[int, tuple[Endpoint, ...]]:
        return {v.key.id: self._endpoints_of(v.key.id) for v in self.raft.node.voters}

    async def stop(self) -> None:
        tasks = (self._sessions, self._snapshots, self._registering, self._balancing)
        for task in (*tasks, *self._fence_checks):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._sessions = self._snapshots = self._registering = self._balancing = None
        if self.registrar is not None:
            self.registrar.close()
        await self.driver.stop()
        self.controller.close()

    def close_peers(self) -> None:
        """Close every connection to the other nodes now (a crash, for tests)."""
        self.driver.close_peers()
        if self.registrar is not None:
            self.registrar.close()

    def close(self) -> None:
        self.controller.close()

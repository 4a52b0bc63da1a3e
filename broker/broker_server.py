"""The broker role of a node: its storage, its routes, its listener and its metadata.

As Kafka's ``BrokerServer``, the broker role reaches the controller only through a
:class:`~millpond.controller.channel.ControllerChannel` (operations submitted, answers
awaited until committed) and learns metadata only from a
:class:`~millpond.controller.channel.MetadataFeed`: each committed batch becomes its
image (:attr:`BrokerServer.image`), then the
:class:`~millpond.broker.metadata_publisher.BrokerMetadataPublisher` applies the delta
to the logs, the replica manager and the coordinators. It never sees the controller's
log or the controller's own (possibly uncommitted) image. At start it registers with
the controller, is unfenced, and asks for producer ids as it needs them.

Handlers receive the broker and reach everything through it; the event loop that runs
the server owns every piece of mutable state, so nothing here locks.
"""

from __future__ import annotations

import asyncio
import logging
import random
from typing import TYPE_CHECKING

from millpond.broker.config import BrokerConfig
from millpond.broker.context import DEFAULT_LISTENER
from millpond.broker.control import CONTROL_PORT_KEY
from millpond.broker.dispatch import CloseConnection, Dispatcher, Route
from millpond.broker.emulation import CONFIG_KEY as EMULATE_KEY
from millpond.broker.emulation import emulate
from millpond.broker.groups.placement import OFFSETS_TOPIC
from millpond.broker.groups.service import GroupService
from millpond.broker.maintenance import Maintenance
from millpond.broker.producer_id_blocks import ControllerProducerIdBlocks
from millpond.broker.producer_ids import ProducerIdManager
from millpond.broker.replica_manager import ReplicaManager
from millpond.broker.replication.isr_changes import IsrChangeSender
from millpond.broker.replication.throttle import ReplicationThrottles
from millpond.broker.server import ListenerPlan, Listeners
from millpond.broker.trace import RequestTrace
from millpond.controller.image import MetadataDelta, MetadataImage
from millpond.storage.clock import Clock
from millpond.storage.config import ConfigError as LogConfigError
from millpond.storage.config import LogConfig
from millpond.storage.fs import FileSystem
from millpond.storage.log_manager import LogManager

if TYPE_CHECKING:
    from millpond.broker.authorization import Authorizer
    from millpond.broker.context import ListenerInfo
    from millpond.broker.control.http import ControlServer
    from millpond.broker.control.service import BrokerControl
    from millpond.broker.controller_link import ControllerLink
    from millpond.broker.metadata_publisher import BrokerMetadataPublisher
    from millpond.broker.replication.fetchers import ReplicaFetchers
    from millpond.broker.server import KafkaConnection
    from millpond.controller.channel import (
        ControllerChannel,
        LocalControllerChannel,
        MetadataFeed,
        QuorumRequests,
    )

_log = logging.getLogger("millpond.broker")


class RegistrationError(Exception):
    """This broker could not join the cluster: the controller refused its registration,
    or no controller answered in time."""


class BrokerServer:
    def __init__(
        self,
        *,
        config: BrokerConfig,
        data_dir: str,
        log_dirs: list[str] | None = None,
        node_id: int,
        cluster_id: str,
        host: str,
        port: int,
        advertised: tuple[str, int | None],
        max_request_bytes: int,
        idle_ms: int,
        auto_create_topics: bool,
        routes: tuple[Route, ...],
        fs: FileSystem,
        clock: Clock,
        rng: random.Random,
        channel: ControllerChannel,
        metadata: MetadataFeed,
        trace: RequestTrace | None,
        listeners: tuple[ListenerPlan, ...] | None = None,
        authorizer: Authorizer | None = None,
        quorum: QuorumRequests | None = None,
        controller_link: ControllerLink | None = None,
        broker_role: bool = True,
    ) -> None:
        """``controller_link``: where clients' admin requests go, in Envelopes, to the
        active controller (a quorum of several nodes); None: to the controller in this
        process. ``broker_role=False``: a controller-only node, which serves its
        controller listeners and neither registers nor runs groups."""
        self.node_id = node_id
        self.broker_role = broker_role
        #: Where the controller listener's KRaft requests go (None: no controller here).
        self.quorum = quorum
        self.controller_link = controller_link
        #: Where each request is traced (``millpond serve --trace``), if anywhere.
        self.trace = trace
        #: The configuration DescribeConfigs reports.
        self.config = config
        self.auto_create_topics = auto_create_topics
        self.fs = fs
        self.clock = clock
        self.rng = rng
        self.data_dir = data_dir
        self.cluster_id = cluster_id
        #: Where controller operations go; each answer arrives once committed.
        self.controller_channel = channel
        self._image = metadata.committed_image
        # Logs opened at load (after an unclean shutdown) or on first use (after a clean
        # one) take their topic's config from the metadata image.
        self.log_manager = LogManager(
            self.fs,
            log_dirs or [data_dir],
            self.clock,
            cluster_id=cluster_id,
            node_id=node_id,
            topic_config=self._topic_log_config,
        )
        self.replicas = ReplicaManager(
            self.log_manager,
            lambda: self._image,
            self.config.log_config,
            node_id,
            clock=clock,
            min_insync_replicas=self.config.get_int("min.insync.replicas", 1),
            replica_lag_time_max_ms=self.config.get_int("replica.lag.time.max.ms", 30_000),
        )
        self.throttles = ReplicationThrottles(node_id, lambda: self._image, clock.monotonic_ms)
        self._publisher: BrokerMetadataPublisher | None = None
        #: This broker's epoch, once it has registered.
        self._broker_epoch: int | None = None
        metadata.register_listener(self, node_id)
        self.connections: set[KafkaConnection] = set()
        # One server per listener (``from_config``: every one of ``listeners``), each with
        # its routes; without a config, one PLAINTEXT listener at host:port.
        self.listeners = Listeners(
            self,
            listeners or (ListenerPlan(DEFAULT_LISTENER, host, port, advertised),),
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

    # -- metadata ----------------------------------------------------------------------------

    @property
    def image(self) -> MetadataImage:
        """The committed metadata this broker acts on."""
        return self._image

    @property
    def publisher(self) -> BrokerMetadataPublisher:
        """Built with the first delta that touches topics or configs: a start (which
        commits only this broker's registration) never loads it."""
        if self._publisher is None:
            from millpond.broker.metadata_publisher import (  # noqa: PLC0415
                BrokerMetadataPublisher,
            )

            self._publisher = BrokerMetadataPublisher(
                self.node_id,
                self.replicas,
                self.log_manager,
                lambda: self.config.log_config().file_delete_delay_ms,
            )
            # The group coordinator loads and unloads __consumer_offsets partitions as
            # this broker gains and loses their leadership.
            self._publisher.add_leadership_listener(OFFSETS_TOPIC, self.groups)
            self.replicas.on_high_watermark(OFFSETS_TOPIC, self.groups.on_high_watermark)
            if self._broker_epoch is not None:
                self._publisher.start_following(self._replica_fetchers)
        return self._publisher

    def handle_commit(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """A committed batch (Kafka's ``MetadataLoader``): the image first, so what the
        publisher sets in motion sees it, then the publisher, if the batch touched topics
        or configs (nothing else concerns it yet). A publisher failure is logged; the
        image stays, as the log does."""
        self._image = image
        if not self.broker_role:
            return  # a controller-only node holds no partitions
        if not (delta.changed_topics or delta.changed_configs) and self._publisher is None:
            return
        try:
            self.publisher.publish(delta, image)
        except Exception:  # noqa: BLE001 (as Kafka's fault handler: logged, next batch)
            _log.exception("publishing metadata at offset %d failed", image.offset)

    def _topic_log_config(self, topic: str) -> LogConfig:
        """The topic's configs over the broker's topic defaults (as ReplicaManager's)."""
        try:
            return self.config.log_config(self._image.topic_config(topic))
        except LogConfigError:
            return self.config.log_config()

    @property
    def admin_channel(self) -> LocalControllerChannel:
        """The controller in this process, which answers the admin requests of its
        listeners (a node that forwards them has its broker listeners send them on)."""
        if self.quorum is None:
            raise CloseConnection(
                "an admin request reached a node with no controller role; send it to a "
                "broker listener, which forwards it to the active controller"
            )
        return self.quorum.channel

    def connection_closed(self, connection_id: int) -> None:
        """A client's connection closed: the controller role learns of a broker's
        heartbeat connection closing (a killed broker's, said at once)."""
        if self.quorum is not None:
            self.quorum.connection_closed(connection_id)

    # -- control -----------------------------------------------------------------------------

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

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        await self.listeners.start(hold_brokers=self.broker_role)
        if self.broker_role:
            await self._start_broker_role()
            await self.listeners.serve_brokers()
        control_port = self.config.get(CONTROL_PORT_KEY)
        if isinstance(control_port, int) and control_port >= 0:
            # Off by default: only brokers that serve it load http.server (about 3 MB).
            from millpond.broker.control.http import ControlServer  # noqa: PLC0415

            self.control_server = ControlServer(self.control, control_port)
            await self.control_server.start()

    async def _start_broker_role(self) -> None:
        channel = self.controller_channel
        manager = self.log_manager
        directory_ids = [manager.directory_id(d) for d in manager.log_dirs]
        try:
            registration = await channel.register_broker(
                self.node_id,
                self.listeners.endpoints(),
                [i for i in directory_ids if i is not None],
                manager.previous_broker_epoch(),
            )
        except ConnectionError as exc:  # no active controller answered
            raise RegistrationError(f"broker {self.node_id} could not register: {exc}") from exc
        if registration.error.is_failure:
            raise RegistrationError(
                f"the controller refused to register broker {self.node_id}: "
                f"{registration.error.code.name} {registration.error.message or ''}".rstrip()
                + "; check that node.id is this node's alone and that its features match"
                " the cluster's"
            )
        # Producer ids come in blocks the controller grants this broker incarnation.
        self.producer_id_blocks = ControllerProducerIdBlocks(
            channel, self.node_id, registration.broker_epoch
        )
        self.producer_ids = ProducerIdManager(self.producer_id_blocks)
        broker_epoch = registration.broker_epoch
        self.replicas.isr_changes = IsrChangeSender(
            channel.alter_partition, self.replicas.on_isr_answer, lambda: broker_epoch, self.node_id
        )
        self._start_following(broker_epoch)
        await channel.unfence_broker(self.node_id, registration.broker_epoch)
        self.groups.start()
        self.maintenance.start()

    def _start_following(self, broker_epoch: int) -> None:
        """Registered: the partitions this broker follows fetch from their leaders, those
        the metadata names already and those later deltas name."""
        self._broker_epoch = broker_epoch
        if self._publisher is None and not self._image.topics_by_id:
            return  # the publisher, made with the first delta that touches topics, will
        self.publisher.start_following(self._replica_fetchers, self._image)

    def _replica_fetchers(self) -> ReplicaFetchers:
        """The follower fetchers (the publisher makes them when it first needs them)."""
        from millpond.broker.replication.fetchers import ReplicaFetchers  # noqa: PLC0415
        from millpond.broker.replication.follower import FetcherConfig  # noqa: PLC0415

        ms = self.config.get_int
        config = FetcherConfig(
            max_wait_ms=ms("replica.fetch.wait.max.ms", 500),
            min_bytes=ms("replica.fetch.min.bytes", 1),
            response_max_bytes=ms("replica.fetch.response.max.bytes", 10 * 1024 * 1024),
            partition_max_bytes=ms("replica.fetch.max.bytes", 1024 * 1024),
            backoff_ms=ms("replica.fetch.backoff.ms", 1000),
        )
        epoch = self._broker_epoch
        assert epoch is not None, "fetchers are made once the broker has registered"
        return ReplicaFetchers(
            self.node_id,
            lambda: self._image,
            self.replicas.existing_log,
            self.config.inter_broker_listener_name,
            self.clock,
            lambda: epoch,
            config,
            request_timeout_ms=ms("replica.socket.timeout.ms", 30_000),
            on_high_watermark=self.replicas.wake,
            throttles=self.throttles,
        )

    @property
    def fetchers(self) -> ReplicaFetchers | None:
        """The follower fetchers, once this broker follows a partition."""
        return None if self._publisher is None else self._publisher.fetchers

    async def stop(self) -> None:
        if self.control_server is not None:
            await self.control_server.stop()
        await self.controller_channel.close()
        if self.replicas.isr_changes is not None:
            await self.replicas.isr_changes.close()
        if self.fetchers is not None:
            await self.fetchers.close()
        await self.maintenance.stop()
        await self.groups.stop()
        await self.listeners.stop()
        await asyncio.gather(*(conn.closed() for conn in list(self.connections)))
        self.replicas.shutdown()  # producer state snapshots at each log end
        # The marker names this epoch: the next registration says it stopped cleanly.
        self.log_manager.shutdown(-1 if self._broker_epoch is None else self._broker_epoch)
        if self.trace is not None:
            self.trace.close()

"""The network edge: listen on each listener, and drive each connection's state machine.

Every listener of ``listeners`` is one :class:`KafkaServer` with its own routes (a broker
listener the broker's APIs, a controller listener the controller's). Each accepted socket
is a :class:`KafkaConnection`, the asyncio protocol around a sans-I/O
:class:`~millpond.broker.network.connection.Connection`: it hands the connection the
bytes read, awaits the handlers that must wait (long-poll fetches), writes the frames it
is given (records spliced from segment files: :mod:`millpond.broker.frame_sender`),
pauses and resumes reading when told, and closes with the reason it is given, in one
log line. Many connections proceed concurrently on the one event loop; nothing a peer
sends can stop the server or other connections.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import socket
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from millpond.broker.context import ANONYMOUS, DEFAULT_LISTENER, ListenerInfo, RequestContext
from millpond.broker.dispatch import Dispatcher, HandlerResult, Route, listener_routes
from millpond.broker.frame_sender import FrameSender
from millpond.broker.network.connection import Connection
from millpond.wire import Message
from millpond.wire.splice import SplicingWriter

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from millpond.broker.authorization import Authorizer
    from millpond.broker.broker_server import BrokerServer
    from millpond.broker.config_defs_listeners import Listener
    from millpond.broker.control.faults import FaultRule
    from millpond.controller.image import BrokerEndpoint

log = logging.getLogger("millpond.broker")

_connection_ids = itertools.count(1)


class KafkaConnection(asyncio.Protocol):
    """One socket, and the edge its :class:`Connection` asks for I/O."""

    def __init__(
        self,
        broker: BrokerServer,
        dispatcher: Dispatcher,
        max_frame_size: int,
        buffer_sizes: tuple[int, int] = (-1, -1),
        listener: ListenerInfo = DEFAULT_LISTENER,
    ) -> None:
        self._broker = broker
        #: SO_SNDBUF and SO_RCVBUF to set (-1: the OS's), as socket.send/receive.buffer.bytes.
        self._buffer_sizes = buffer_sizes
        self._dispatcher = dispatcher
        self._max_frame_size = max_frame_size
        self._listener = listener
        self._transport: asyncio.Transport | None = None
        self._sender: FrameSender | None = None
        self._loop = asyncio.get_running_loop()
        #: Handlers being awaited and frames being sent: cancelled when the socket closes.
        self._tasks: set[asyncio.Task[None]] = set()
        self.connection_id = next(_connection_ids)
        self.peer = "?"
        self.core: Connection | None = None

    @property
    def idle(self) -> bool:
        """Nothing queued, being handled or being sent."""
        return self.core is None or self.core.idle

    # -- asyncio.Protocol --------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self._transport = transport
        self._sender = FrameSender(transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            options = (socket.SO_SNDBUF, socket.SO_RCVBUF)
            for option, size in zip(options, self._buffer_sizes, strict=True):
                if size > 0:
                    sock.setsockopt(socket.SOL_SOCKET, option, size)
        peer = transport.get_extra_info("peername")
        address = str(peer[0]) if isinstance(peer, tuple) else str(peer)
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        broker = self._broker
        self.core = Connection(
            self,
            self._dispatcher,
            self._serve,
            max_frame_size=self._max_frame_size,
            clock=time.monotonic_ns,
            connection_id=self.connection_id,
            peer=self.peer,
            listener=self._listener,
            principal=ANONYMOUS,  # PLAINTEXT: nobody authenticates
            client_address=address,
            faults=self._fault,
            trace=broker.trace,
        )
        broker.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.core is not None:
            self.core.lost()
        self._broker.connections.discard(self)
        self._broker.connection_closed(self.connection_id)
        for task in list(self._tasks):
            task.cancel()

    def data_received(self, data: bytes) -> None:
        assert self.core is not None
        self.core.receive(data)

    def eof_received(self) -> bool | None:
        return None  # close when the peer does

    # -- what the connection core needs of the broker ----------------------------------

    def _serve(self, route: Route, ctx: RequestContext, request: Any) -> HandlerResult:
        return route.handler(self._broker, ctx, request)

    def _fault(self, route: Route, ctx: RequestContext, request: Any) -> FaultRule | None:
        broker = self._broker
        if not broker.faults_armed:
            return None
        control = broker.control
        return control.faults.take(route.api_key, ctx.client_id, request, control.topic_name)

    # -- the edge (ConnectionEdge) -----------------------------------------------------

    def send(self, frame: SplicingWriter) -> bool:
        assert self._sender is not None
        if self._sender.send_now(frame):
            return True
        self._spawn(self._send(frame))
        return False

    async def _send(self, frame: SplicingWriter) -> None:
        assert self._sender is not None and self.core is not None
        try:
            await self._sender.send(frame)
        except OSError as exc:
            self.close(f"cannot send a response: {exc}")
            return
        self.core.sent()

    def wait(self, token: int, pending: Awaitable[Message | None]) -> None:
        task = self._spawn(self._await(token, pending))
        if inspect.iscoroutine(pending):
            # A connection closed before the task ran cancels it unstarted: the handler's
            # coroutine is closed with it, not left for the collector to warn about.
            task.add_done_callback(lambda _: pending.close())

    async def _await(self, token: int, pending: Awaitable[Message | None]) -> None:
        assert self.core is not None
        try:
            response = await pending
        except Exception as exc:  # noqa: BLE001 (the core closes: a refusal or a bug)
            self.core.failed(token, exc)
            return
        self.core.completed(token, response)

    def wake_at(self, deadline_ns: int) -> None:
        assert self.core is not None
        delay_s = max(deadline_ns - time.monotonic_ns(), 0) / 1e9
        self._loop.call_later(delay_s, self.core.tick)

    def pause_reading(self) -> None:
        assert self._transport is not None
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        assert self._transport is not None
        self._transport.resume_reading()

    def close(
        self, reason: str | None = None, level: int = logging.WARNING,
        failure: BaseException | None = None,
    ) -> None:  # fmt: skip
        if reason is not None:
            exc_info = (type(failure), failure, failure.__traceback__) if failure else None
            log.log(level, "closing %s: %s", self.peer, reason, exc_info=exc_info)
        if self._transport is not None:
            self._transport.close()

    def abort(self) -> None:
        """Drop the socket at once, whatever is in flight (a crash, for tests)."""
        if self._transport is not None:
            self._transport.abort()

    def _spawn(self, work: Any) -> asyncio.Task[None]:
        task: asyncio.Task[None] = self._loop.create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def closed(self) -> None:
        """Close, and wait until no request of this connection is still being handled
        (a long-poll fetch, a delayed answer): nothing of it runs after the broker stops."""
        self.close()
        if self.core is not None:
            self.core.lost()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class KafkaServer:
    """One listener's socket; its connections are :class:`KafkaConnection`."""

    def __init__(
        self,
        broker: BrokerServer,
        dispatcher: Dispatcher,
        host: str,
        port: int,
        *,
        max_frame_size: int,
        idle_timeout_ms: int,
        buffer_sizes: tuple[int, int] = (-1, -1),
        listener: ListenerInfo = DEFAULT_LISTENER,
    ) -> None:
        self._broker = broker
        self.dispatcher = dispatcher
        self.listener = listener
        self._buffer_sizes = buffer_sizes
        self._host = host
        self._port = port
        self._max_frame_size = max_frame_size
        self._idle_timeout_s = idle_timeout_ms / 1000
        self._server: asyncio.Server | None = None
        self._reaper: asyncio.Task[None] | None = None

    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        sockname = self._server.sockets[0].getsockname()
        port: int = sockname[1]
        return port

    async def start(self, *, serve: bool = True) -> None:
        """Bind the listener's socket; accept connections too unless ``serve`` is False
        (then :meth:`serve` does, later)."""
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: KafkaConnection(
                self._broker,
                self.dispatcher,
                self._max_frame_size,
                self._buffer_sizes,
                self.listener,
            ),
            self._host or None,
            self._port,
            reuse_address=True,
            start_serving=serve,
        )
        if self._idle_timeout_s > 0:
            self._reaper = loop.create_task(self._close_idle())

    async def serve(self) -> None:
        assert self._server is not None, "not started"
        await self._server.start_serving()

    async def _close_idle(self) -> None:
        """``connections.max.idle.ms``: close connections with nothing in flight that
        have been silent that long (checked a few times per timeout)."""
        period = min(max(self._idle_timeout_s / 4, 0.01), 30.0)
        timeout_ns = int(self._idle_timeout_s * 1e9)
        while True:
            await asyncio.sleep(period)
            for conn in list(self._broker.connections):
                if conn.core is not None and conn.core.listener is self.listener:
                    conn.core.close_if_idle(timeout_ns)

    async def abort(self) -> None:
        """Stop accepting at once (a crash, for tests)."""
        if self._reaper is not None:
            self._reaper.cancel()
        await self._stop_accepting()

    async def stop(self) -> None:
        """Stop accepting; connections are closed by the broker once in-flight work ends."""
        if self._reaper is not None:
            self._reaper.cancel()
        await self._stop_accepting()
        if self._server is not None:
            await self._server.wait_closed()

    async def _stop_accepting(self) -> None:
        """Close the listening socket without leaking a connection accepted just before.
        asyncio wraps each accepted socket in a task of its own, and a task that runs
        after the server closed fails to wrap it and leaves it open (CPython 3.11).
        So the listening socket stops being read first; the accepts already queued run
        within one loop turn, and only then does the server close."""
        server = self._server
        if server is None:
            return
        loop = asyncio.get_running_loop()
        for sock in server.sockets:
            loop.remove_reader(sock.fileno())
        await asyncio.sleep(0)
        server.close()


#: Kafka's SecurityProtocol ids, as broker registrations carry them.
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
#: Security protocols millpond can serve so far.
SERVED_PROTOCOLS = ("PLAINTEXT",)
#: The controller's APIs millpond serves on a controller listener: the admin APIs its
#: handlers answer as the controller would (topics, partitions, leader elections,
#: reassignments, configs, features) and ApiVersions; the KRaft APIs come from
#: ``CONTROLLER_ROUTES``.
CONTROLLER_APIS = frozenset({18, 19, 20, 32, 33, 37, 43, 44, 45, 46, 57, 60, 64})


class ListenerPlan(NamedTuple):
    """One listener to serve: where it binds and what it advertises."""

    info: ListenerInfo
    host: str
    port: int
    #: Advertised host and port (None: the bound port), for broker listeners.
    advertised: tuple[str, int | None] | None


def plan_listeners(
    listeners: Sequence[Listener],
    advertised: Sequence[Listener],
    controller_names: Sequence[str],
) -> list[ListenerPlan]:
    """Every listener of ``listeners`` to serve, broker listeners first. Raises
    ConfigError for a security protocol millpond cannot serve yet (serving it as
    PLAINTEXT would be a lie)."""
    from millpond.broker.config import ConfigError  # noqa: PLC0415 (only from a config)

    by_name = {a.name: a for a in advertised}
    plans: list[ListenerPlan] = []
    for listener in listeners:
        if listener.security_protocol not in SERVED_PROTOCOLS:
            raise ConfigError(
                "listeners",
                ",".join(str(x) for x in listeners),
                f"listener {listener.name} uses {listener.security_protocol}; millpond "
                f"serves only {', '.join(SERVED_PROTOCOLS)} listeners so far",
            )
        controller = listener.name in controller_names
        info = ListenerInfo(listener.name, listener.security_protocol, controller)
        shown = None
        if not controller:
            own = by_name.get(listener.name, listener).resolved()
            shown = (own.host, own.port or None)
        plans.append(ListenerPlan(info, listener.host, listener.port, shown))
    plans.sort(key=lambda p: p.info.controller)
    return plans


class _BrokerTopics:
    """The broker's topics, as the authorization hook asks about them."""

    def __init__(self, broker: BrokerServer) -> None:
        self._broker = broker

    def name_of(self, topic_id: bytes) -> str | None:
        topic = self._broker.image.topic_by_id(topic_id)
        return None if topic is None else topic.name

    def creatable(self, name: str) -> bool:
        broker = self._broker
        return broker.auto_create_topics and broker.image.topic(name) is None


class Listeners:
    """The broker's servers, one per listener, each with its own routes."""

    def __init__(
        self,
        broker: BrokerServer,
        plans: Sequence[ListenerPlan],
        routes: Sequence[Route],
        *,
        max_frame_size: int,
        idle_timeout_ms: int,
        buffer_sizes: tuple[int, int] = (-1, -1),
        authorizer: Authorizer | None = None,
    ) -> None:
        self.plans = {plan.info.name: plan for plan in plans}
        self.servers: list[KafkaServer] = []
        for plan in plans:
            served = listener_routes(routes, plan.info.controller)
            if plan.info.controller:
                from millpond.broker.forwarding import (  # noqa: PLC0415
                    ADMIN_APIS,
                    answered_by_controller,
                )
                from millpond.broker.handlers import CONTROLLER_ROUTES  # noqa: PLC0415

                raft = {r.api_key for r in CONTROLLER_ROUTES}
                served = (
                    *(
                        answered_by_controller(r) if r.api_key in ADMIN_APIS else r
                        for r in served
                        if r.api_key in CONTROLLER_APIS and r.api_key not in raft
                    ),
                    *CONTROLLER_ROUTES,
                )
            elif broker.controller_link is not None:
                from millpond.broker.forwarding import FORWARDED_APIS, forwarded  # noqa: PLC0415

                served = tuple(forwarded(r) if r.api_key in FORWARDED_APIS else r for r in served)
            dispatcher = Dispatcher(served, authorizer, _BrokerTopics(broker))
            self.servers.append(
                KafkaServer(
                    broker,
                    dispatcher,
                    plan.host,
                    plan.port,
                    max_frame_size=max_frame_size,
                    idle_timeout_ms=idle_timeout_ms,
                    buffer_sizes=buffer_sizes,
                    listener=plan.info,
                )
            )
        self.by_name = {server.listener.name: server for server in self.servers}
        #: The first broker listener: the one ``Broker.port`` and log lines name.
        self.primary = self.servers[0]

    def dispatcher(self, listener: ListenerInfo) -> Dispatcher:
        server = self.by_name.get(listener.name)
        return (server or self.primary).dispatcher

    def advertised(self, name: str | None = None) -> tuple[str, int]:
        """The host and port clients of listener ``name`` (the first broker listener's
        by default, and for a controller listener) are told to reach the broker at."""
        server = self.by_name.get(name or "") or self.primary
        if server.listener.controller:
            server = self.primary
        plan = self.plans[server.listener.name]
        if plan.advertised is None:  # a controller-only node: where it listens
            return plan.host or "localhost", server.port
        host, port = plan.advertised
        return host, port if port is not None else server.port

    def endpoints(self) -> list[BrokerEndpoint]:
        """The broker listeners as the broker registers them with the controller."""
        from millpond.controller.image import BrokerEndpoint  # noqa: PLC0415

        out = []
        for server in self.servers:
            if not server.listener.controller:
                host, port = self.advertised(server.listener.name)
                protocol = server.listener.security_protocol
                out.append(
                    BrokerEndpoint(
                        server.listener.name, host, port, SECURITY_PROTOCOL_IDS[protocol]
                    )
                )
        return out

    async def start(self, *, hold_brokers: bool = False) -> None:
        """Bind every listener. The controller listeners serve at once; the broker
        listeners too unless ``hold_brokers``, until :meth:`serve_brokers`: as Kafka's
        broker, which serves clients only once it has caught up with the metadata, so
        that no answer comes from a restarted broker's stale view."""
        for server in self.servers:
            await server.start(serve=server.listener.controller or not hold_brokers)

    async def serve_brokers(self) -> None:
        for server in self.servers:
            if not server.listener.controller:
                await server.serve()

    async def stop(self) -> None:
        for server in self.servers:
            await server.stop()

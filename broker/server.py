"""The network edge: accept connections, frame requests, answer them in order.

Each connection is an :class:`asyncio.Protocol`. Bytes go through the wire layer's
:class:`~millpond.wire.framing.FrameReader`, which refuses a size prefix above
``socket.request.max.bytes`` before reading the body. Requests on one connection are
handled strictly one after another, and answered in the order they came, as Kafka
does (it mutes a connection while one of its requests is in flight); many connections
proceed concurrently on the one event loop. Reading pauses while too many requests
wait, so a pipelining client cannot make us buffer without bound.

Anything a peer sends that we cannot or will not answer closes that connection with
one log line; nothing it sends can stop the server or other connections.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import socket
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from millpond.broker import trace as trace_outcomes
from millpond.broker.context import RequestContext
from millpond.broker.dispatch import CloseConnection, Dispatcher, Route
from millpond.broker.frame_sender import FrameSender
from millpond.wire import DecodeError, Message
from millpond.wire.framing import FrameReader
from millpond.wire.splice import SplicingWriter

if TYPE_CHECKING:
    from millpond.broker.control.faults import FaultRule
    from millpond.broker.node import Broker

log = logging.getLogger("millpond.broker")

MAX_QUEUED_REQUESTS = 64
_connection_ids = itertools.count(1)


class KafkaConnection(asyncio.Protocol):
    def __init__(
        self,
        broker: Broker,
        dispatcher: Dispatcher,
        max_frame_size: int,
        buffer_sizes: tuple[int, int] = (-1, -1),
    ) -> None:
        self._broker = broker
        #: SO_SNDBUF and SO_RCVBUF to set (-1: the OS's), as socket.send/receive.buffer.bytes.
        self._buffer_sizes = buffer_sizes
        self._dispatcher = dispatcher
        self._reader = FrameReader(max_frame_size)
        self._queue: deque[memoryview] = deque()
        self._transport: asyncio.Transport | None = None
        self._sender: FrameSender | None = None
        self._worker: asyncio.Task[None] | None = None
        self._paused = False
        self._closing = False
        #: A drop fault hit this connection: it reads on and never answers again.
        self._silent = False
        self.connection_id = next(_connection_ids)
        self.peer = "?"
        self.last_active = asyncio.get_running_loop().time()

    @property
    def idle(self) -> bool:
        """Nothing queued and nothing being handled."""
        return not self._queue and (self._worker is None or self._worker.done())

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
        self.peer = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) else str(peer)
        self._broker.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        self._broker.connections.discard(self)
        if self._worker is not None and not self._worker.done():
            self._worker.cancel()

    def data_received(self, data: bytes) -> None:
        if self._closing or self._silent:
            return
        self.last_active = asyncio.get_running_loop().time()
        try:
            self._reader.feed(data)
        except DecodeError as exc:
            log.warning("closing %s: %s", self.peer, exc)
            self.close()
            return
        while (frame := self._reader.next_frame()) is not None:
            self._queue.append(frame)
        if self._queue and (self._worker is None or self._worker.done()):
            self._worker = asyncio.get_running_loop().create_task(self._work())
        if len(self._queue) >= MAX_QUEUED_REQUESTS and not self._paused:
            assert self._transport is not None
            self._transport.pause_reading()
            self._paused = True

    def eof_received(self) -> bool | None:
        return None  # close when the peer does

    # -- handling ----------------------------------------------------------------------

    async def _work(self) -> None:
        while self._queue and not self._closing:
            frame = self._queue.popleft()
            if self._paused and len(self._queue) < MAX_QUEUED_REQUESTS // 2:
                assert self._transport is not None
                self._transport.resume_reading()
                self._paused = False
            try:
                response = await self._handle(frame)
            except CloseConnection:
                self.close()
                return
            if response is not None and not self._closing and not self._silent:
                assert self._sender is not None
                try:
                    await self._sender.send(response)
                except OSError as exc:
                    log.warning("closing %s: cannot send a response: %s", self.peer, exc)
                    self.close()
                    return
            self.last_active = asyncio.get_running_loop().time()

    async def _handle(self, frame: memoryview) -> SplicingWriter | None:
        ctx = RequestContext(self.connection_id, self.peer)
        route, request = self._dispatcher.parse(frame, ctx)
        trace = self._broker.trace
        if trace is None:
            return self._encode(route, ctx, await self._answer(route, ctx, request))
        started = time.perf_counter_ns()
        outcome = trace_outcomes.CLOSED
        response: Message | None = None
        try:
            response = await self._answer(route, ctx, request)
            encoded = self._encode(route, ctx, response)
            outcome = trace_outcomes.NO_RESPONSE if encoded is None else trace_outcomes.ANSWERED
            return encoded
        finally:
            trace.record(ctx, started, outcome, request, response)

    async def _answer(self, route: Route, ctx: RequestContext, request: Any) -> Message | None:
        if self._broker.faults_armed:
            control = self._broker.control
            rule = control.faults.take(route.api_key, ctx.client_id, request, control.topic_name)
            if rule is not None:
                return await self._inject(rule, route, ctx, request)
        return await self._handle_normally(route, ctx, request)

    async def _inject(
        self, rule: FaultRule, route: Route, ctx: RequestContext, request: Any
    ) -> Message | None:
        """Carry out a fault rule (:mod:`millpond.broker.control.faults`)."""
        # Loaded with the first fault rule (by the control service), not at start-up.
        from millpond.broker.control.error_responses import error_response  # noqa: PLC0415
        from millpond.broker.control.faults import FaultAction  # noqa: PLC0415

        log.info(
            "fault rule %d: %s on %s v%d from %s (client %r)",
            rule.id, rule.action.value, route.name, ctx.api_version, self.peer, ctx.client_id,
        )  # fmt: skip
        if rule.action is FaultAction.CLOSE:
            raise CloseConnection
        if rule.action is FaultAction.DROP:
            self._silent = True
            self._queue.clear()
            return None
        if rule.action is FaultAction.DELAY:
            response = await self._handle_normally(route, ctx, request)
            await asyncio.sleep(rule.delay_ms / 1000)
            return response
        if request is None:  # an ApiVersions request above what we know: no body to answer
            raise CloseConnection
        refusal = error_response(route.api_key, ctx.api_version, request, rule.error_code)
        if refusal is None:
            raise CloseConnection
        return refusal

    async def _handle_normally(
        self, route: Route, ctx: RequestContext, request: Any
    ) -> Message | None:
        try:
            result = route.handler(self._broker, ctx, request)
            if inspect.isawaitable(result):
                result = await result
            return result
        except CloseConnection:
            raise
        except Exception:  # noqa: BLE001 (a handler's bug: logged, its connection closed)
            self._log_failure(route, ctx)
            raise CloseConnection from None

    def _encode(
        self, route: Route, ctx: RequestContext, response: Message | None
    ) -> SplicingWriter | None:
        if response is None:
            return None
        try:
            return self._dispatcher.encode(ctx, response)
        except Exception:  # noqa: BLE001 (a handler's bug: logged, its connection closed)
            self._log_failure(route, ctx)
            raise CloseConnection from None

    def _log_failure(self, route: Route, ctx: RequestContext) -> None:
        """A handler's bug: one log line with its traceback; the connection closes."""
        log.exception(
            "closing %s: %s v%d failed (correlation id %d, client %r)",
            self.peer, route.name, ctx.api_version, ctx.correlation_id, ctx.client_id,
        )  # fmt: skip

    def close(self) -> None:
        self._closing = True
        if self._transport is not None:
            self._transport.close()

    async def closed(self) -> None:
        """Close, and wait until no request of this connection is still being handled
        (a long-poll fetch, a delayed answer): nothing of it runs after the broker stops."""
        self.close()
        worker = self._worker
        if worker is not None and not worker.done():
            worker.cancel()
            await asyncio.gather(worker, return_exceptions=True)


class KafkaServer:
    """A listening socket whose connections are :class:`KafkaConnection`."""

    def __init__(
        self,
        broker: Broker,
        dispatcher: Dispatcher,
        host: str,
        port: int,
        *,
        max_frame_size: int,
        idle_timeout_ms: int,
        buffer_sizes: tuple[int, int] = (-1, -1),
    ) -> None:
        self._broker = broker
        self._dispatcher = dispatcher
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

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            lambda: KafkaConnection(
                self._broker, self._dispatcher, self._max_frame_size, self._buffer_sizes
            ),
            self._host or None,
            self._port,
            reuse_address=True,
        )
        if self._idle_timeout_s > 0:
            self._reaper = loop.create_task(self._close_idle())

    async def _close_idle(self) -> None:
        """``connections.max.idle.ms``: close connections with nothing in flight that
        have been silent that long (checked a few times per timeout)."""
        loop = asyncio.get_running_loop()
        period = min(max(self._idle_timeout_s / 4, 0.01), 30.0)
        while True:
            await asyncio.sleep(period)
            deadline = loop.time() - self._idle_timeout_s
            for conn in list(self._broker.connections):
                if conn.last_active < deadline and conn.idle:
                    log.info("closing %s: idle for %.0f ms", conn.peer, self._idle_timeout_s * 1000)
                    conn.close()

    async def stop(self) -> None:
        """Stop accepting; connections are closed by the broker once in-flight work ends."""
        if self._reaper is not None:
            self._reaper.cancel()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

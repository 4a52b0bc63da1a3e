"""One client connection as a sans-I/O state machine: bytes in, calls on its edge out.

The edge (:class:`ConnectionEdge`: the asyncio protocol in :mod:`millpond.broker.server`,
or a test's recorder) feeds it what the socket read (:meth:`Connection.receive`), the
result of every handler that had to wait (:meth:`Connection.completed`), the end of a
frame's sending (:meth:`Connection.sent`) and timer wake-ups (:meth:`Connection.tick`);
the connection asks the edge to send frames, to await a handler's result, to pause or
resume reading, to wake it later, or to close with the reason to log. Time comes from the
clock it is given; it never touches a socket or an event loop.

As Kafka does:

- Frames are read through the wire layer's :class:`~millpond.wire.framing.FrameReader`,
  which refuses a size prefix above ``socket.request.max.bytes`` before reading the body.
- Requests are answered strictly in the order they arrived. Kafka mutes a connection
  while one of its requests is in flight, so a long-poll fetch holds back the metadata
  request behind it: one request in flight by default. With more allowed, responses that
  are ready wait for the ones before them.
- Reading pauses while :data:`MAX_QUEUED_REQUESTS` requests wait to be handled and
  resumes below half that, so a pipelining client cannot make the broker buffer without
  bound.
- A connection with nothing queued, in flight or being sent, silent for
  ``connections.max.idle.ms``, is closed (:meth:`Connection.close_if_idle`).

Anything a peer sends that the broker cannot or will not answer closes the connection
with one reason to log. A fault rule (:mod:`millpond.broker.control.faults`) met by a
request closes the connection, drops it (reads on, never answers again), delays its
answer, or answers it with an error instead of handling it. Each request ends in one
trace record (:mod:`millpond.broker.trace`) when a trace is kept.
"""

from __future__ import annotations

import inspect
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from millpond.broker import trace as trace_outcomes
from millpond.broker.context import (
    ANONYMOUS,
    DEFAULT_LISTENER,
    KafkaPrincipal,
    ListenerInfo,
    RequestContext,
)
from millpond.broker.dispatch import CloseConnection, Dispatcher, HandlerResult, Route
from millpond.wire import DecodeError, Message
from millpond.wire.framing import FrameReader
from millpond.wire.splice import SplicingWriter

if TYPE_CHECKING:
    from millpond.broker.control.faults import FaultRule
    from millpond.broker.trace import RequestTrace

MAX_QUEUED_REQUESTS = 64
#: Requests one connection has in flight at once: Kafka's (it mutes the channel).
KAFKA_IN_FLIGHT = 1

#: Runs a route's handler: ``(route, context, request)`` to its result.
Serve = Callable[[Route, RequestContext, Any], HandlerResult]
#: The fault rule a request meets, if any (checked on every request).
FaultLookup = Callable[[Route, RequestContext, Any], "FaultRule | None"]


class ConnectionEdge(Protocol):
    """What the connection asks of the I/O around it."""

    def send(self, frame: SplicingWriter) -> bool:
        """Write ``frame`` (size prefix added). True: handed over whole; False: still
        being written, and :meth:`Connection.sent` follows once it is."""
        ...

    def wait(self, token: int, pending: Awaitable[Message | None]) -> None:
        """Await a handler's result, then call :meth:`Connection.completed` with it (or
        :meth:`Connection.failed`)."""
        ...

    def wake_at(self, deadline_ns: int) -> None:
        """Call :meth:`Connection.tick` once the clock reaches ``deadline_ns``."""
        ...

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...

    def close(
        self, reason: str | None, level: int = logging.WARNING, failure: BaseException | None = None
    ) -> None:
        """Close the socket; log ``reason`` at ``level`` (None: nothing to log), with
        ``failure``'s traceback when a handler's bug caused it."""
        ...


_PENDING = 0  # the handler's result is awaited
_HELD = 1  # answered, held back by a delay fault
_READY = 2  # answered (frame None: nothing to send)


class _Slot:
    """One request between dispatch and its answer."""

    __slots__ = (
        "amend",
        "ctx",
        "frame",
        "held_until",
        "request",
        "response",
        "route",
        "started",
        "state",
    )

    def __init__(self, route: Route, ctx: RequestContext, request: Any, started: int) -> None:
        self.route = route
        self.ctx = ctx
        self.request = request
        self.started = started
        self.state = _PENDING
        self.frame: SplicingWriter | None = None
        self.response: Message | None = None
        self.held_until = 0
        #: Adds what the authorizer refused to the response (a narrowed request).
        self.amend: Callable[[Any], Any] | None = None


class Connection:
    """One connection's protocol state (see the module docstring)."""

    def __init__(
        self,
        edge: ConnectionEdge,
        dispatcher: Dispatcher,
        serve: Serve,
        *,
        max_frame_size: int,
        clock: Callable[[], int],
        connection_id: int = 0,
        peer: str = "?",
        listener: ListenerInfo = DEFAULT_LISTENER,
        principal: KafkaPrincipal = ANONYMOUS,
        client_address: str = "",
        faults: FaultLookup | None = None,
        trace: RequestTrace | None = None,
        max_queued: int = MAX_QUEUED_REQUESTS,
        max_in_flight: int = KAFKA_IN_FLIGHT,
    ) -> None:
        self._edge = edge
        self._dispatcher = dispatcher
        self._serve = serve
        #: Monotonic nanoseconds.
        self._clock = clock
        self.connection_id = connection_id
        self.peer = peer
        self.listener = listener
        self.principal = principal
        self.client_address = client_address
        self._faults = faults
        self._trace = trace
        self._max_queued = max_queued
        self._max_in_flight = max_in_flight
        self._reader = FrameReader(max_frame_size)
        self._queue: deque[memoryview] = deque()
        self._in_flight: deque[_Slot] = deque()
        self._paused = False
        #: The edge is still writing a frame: nothing more is sent until it has.
        self._sending = False
        #: A drop fault hit this connection: it reads on and never answers again.
        self._silent = False
        self.closed = False
        self.last_active_ns = clock()

    @property
    def idle(self) -> bool:
        """Nothing queued, in flight or being sent."""
        return not self._queue and not self._in_flight and not self._sending

    # -- events from the edge ----------------------------------------------------------

    def receive(self, data: bytes) -> None:
        """Bytes read from the socket."""
        if self.closed or self._silent:
            return
        self.last_active_ns = self._clock()
        try:
            self._reader.feed(data)
        except DecodeError as exc:
            self._close(str(exc))
            return
        queue = self._queue
        while (frame := self._reader.next_frame()) is not None:
            queue.append(frame)
        self._pump()
        if len(queue) >= self._max_queued and not self._paused and not self.closed:
            self._paused = True
            self._edge.pause_reading()

    def completed(self, token: int, response: Message | None) -> None:
        """The awaited result of the request ``token`` (as passed to the edge's wait)."""
        slot = self._slot(token)
        if slot is None:
            return
        self._finish(slot, response)
        self._flush()
        self._pump()

    def failed(self, token: int, failure: BaseException) -> None:
        """The awaited handler of ``token`` raised: a refusal to answer
        (:class:`CloseConnection`) or a bug; either way the connection closes."""
        slot = self._slot(token)
        if slot is None:
            return
        if isinstance(failure, CloseConnection):
            self._abandon(slot, failure.reason)
        else:
            self._fail(slot, failure)

    def sent(self) -> None:
        """The frame the edge was still writing is written."""
        self._sending = False
        if self.closed:
            return
        self.last_active_ns = self._clock()
        self._flush()
        self._pump()

    def tick(self) -> None:
        """The clock reached a deadline asked for with the edge's ``wake_at``."""
        if self.closed:
            return
        now = self._clock()
        for slot in self._in_flight:
            if slot.state == _HELD and slot.held_until <= now:
                self._release(slot)
        self._flush()
        self._pump()

    def close_if_idle(self, timeout_ns: int) -> bool:
        """``connections.max.idle.ms``: close if idle and silent for ``timeout_ns``."""
        if self.closed or not self.idle or self._clock() - self.last_active_ns < timeout_ns:
            return False
        self._close(f"idle for {timeout_ns // 1_000_000} ms", logging.INFO)
        return True

    def lost(self) -> None:
        """The socket closed (the peer's doing or ours): nothing more is answered."""
        self.closed = True
        self._queue.clear()
        self._in_flight.clear()

    # -- handling ----------------------------------------------------------------------

    def _pump(self) -> None:
        """Dispatch queued requests while the in-flight window has room."""
        queue = self._queue
        in_flight = self._in_flight
        while queue and len(in_flight) < self._max_in_flight and not self._sending:
            if self.closed or self._silent:
                return
            frame = queue.popleft()
            if self._paused and len(queue) < self._max_queued // 2:
                self._paused = False
                self._edge.resume_reading()
            self._dispatch(frame)
            self._flush()

    def _dispatch(self, frame: memoryview) -> None:
        ctx = RequestContext(
            self.connection_id, self.peer, self.listener, self.principal, self.client_address
        )
        try:
            route, request = self._dispatcher.parse(frame, ctx)
        except CloseConnection as exc:
            self._close(exc.reason)
            return
        slot = _Slot(route, ctx, request, self._clock())
        self._in_flight.append(slot)
        if self._faults is not None:
            rule = self._faults(route, ctx, request)
            if rule is not None:
                self._inject(slot, rule)
                return
        self._run(slot)

    def _run(self, slot: _Slot) -> None:
        """Authorize, then call the handler; answer now, or hand its wait to the edge."""
        route, ctx, request = slot.route, slot.ctx, slot.request
        try:
            if self._dispatcher.guarded:
                from millpond.broker.authorization import Narrowed  # noqa: PLC0415 (loaded)

                verdict = self._dispatcher.authorize(route, ctx, request)
                if isinstance(verdict, Narrowed):
                    request, slot.amend = verdict
                elif verdict is not None:
                    self._finish(slot, verdict)
                    return
            result = self._serve(route, ctx, request)
        except CloseConnection as exc:
            self._abandon(slot, exc.reason)
            return
        except Exception as exc:  # noqa: BLE001 (a handler's bug: logged, its connection closed)
            self._fail(slot, exc)
            return
        if inspect.isawaitable(result):
            self._edge.wait(id(slot), result)
        else:
            self._finish(slot, result)

    def _inject(self, slot: _Slot, rule: FaultRule) -> None:
        """Carry out a fault rule (:mod:`millpond.broker.control.faults`)."""
        # Loaded with the first fault rule (by the control service), not at start-up.
        from millpond.broker.control.faults import FaultAction  # noqa: PLC0415
        from millpond.broker.error_responses import error_response  # noqa: PLC0415

        ctx = slot.ctx
        logging.getLogger("millpond.broker").info(
            "fault rule %d: %s on %s v%d from %s (client %r)",
            rule.id, rule.action.value, slot.route.name, ctx.api_version, self.peer,
            ctx.client_id,
        )  # fmt: skip
        if rule.action is FaultAction.CLOSE:
            self._abandon(slot, None)
        elif rule.action is FaultAction.DROP:
            if self._trace is not None:
                self._record(slot, trace_outcomes.NO_RESPONSE, None)
            self._silent = True
            self._queue.clear()
            self._in_flight.clear()
        elif rule.action is FaultAction.DELAY:
            slot.held_until = self._clock() + rule.delay_ms * 1_000_000
            self._run(slot)
        else:
            refusal = None
            if slot.request is not None:  # None: an ApiVersions above what we know
                refusal = error_response(
                    slot.route.api_key, ctx.api_version, slot.request, rule.error_code
                )
            if refusal is None:
                self._abandon(slot, None)
            else:
                self._finish(slot, refusal)

    def _finish(self, slot: _Slot, response: Message | None) -> None:
        """A request's answer: encoded now, sent in its turn."""
        if response is not None:
            try:
                if slot.amend is not None:
                    response = slot.amend(response)
                slot.frame = self._dispatcher.encode(slot.ctx, response)
            except Exception as exc:  # noqa: BLE001 (a handler's bug: logged, connection closed)
                self._fail(slot, exc)
                return
        slot.response = response
        if slot.held_until and slot.held_until > self._clock():
            slot.state = _HELD
            self._edge.wake_at(slot.held_until)
            return
        self._release(slot)

    def _release(self, slot: _Slot) -> None:
        slot.state = _READY
        if self._trace is not None:
            outcome = trace_outcomes.ANSWERED if slot.frame else trace_outcomes.NO_RESPONSE
            self._record(slot, outcome, slot.response)

    def _flush(self) -> None:
        """Send the answers that are ready, in request order."""
        in_flight = self._in_flight
        while in_flight and in_flight[0].state == _READY and not self._sending:
            if self.closed or self._silent:
                return
            slot = in_flight.popleft()
            frame = slot.frame
            if frame is not None:
                self._sending = not self._edge.send(frame)
            self.last_active_ns = self._clock()

    def _slot(self, token: int) -> _Slot | None:
        if self.closed or self._silent:
            return None
        for slot in self._in_flight:
            if id(slot) == token:
                return slot
        return None

    def _abandon(self, slot: _Slot, reason: str | None) -> None:
        """Close instead of answering (Kafka closes here too)."""
        if self._trace is not None:
            self._record(slot, trace_outcomes.CLOSED, None)
        self._close(reason)

    def _fail(self, slot: _Slot, failure: BaseException) -> None:
        """A handler's bug: one log line with its traceback; the connection closes."""
        if self._trace is not None:
            self._record(slot, trace_outcomes.CLOSED, None)
        ctx = slot.ctx
        reason = (
            f"{slot.route.name} v{ctx.api_version} failed "
            f"(correlation id {ctx.correlation_id}, client {ctx.client_id!r})"
        )
        self._close(reason, logging.ERROR, failure)

    def _record(self, slot: _Slot, outcome: str, response: Message | None) -> None:
        assert self._trace is not None
        latency_ns = self._clock() - slot.started
        self._trace.record(slot.ctx, latency_ns, outcome, slot.request, response)

    def _close(
        self, reason: str | None, level: int = logging.WARNING, failure: BaseException | None = None
    ) -> None:
        if self.closed:
            return
        self.closed = True
        self._queue.clear()
        self._in_flight.clear()
        self._edge.close(reason, level, failure)

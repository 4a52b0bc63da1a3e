"""The Raft client's event loop: time, the network and the core, joined on asyncio.

The core (:class:`~millpond.controller.raft.client.RaftClient`) never waits; this driver
does the waiting for it. It polls the core when its next timer is due, sends each
request the core puts in its outbox to the peer it names (through
:class:`~millpond.controller.peer_channel.PeerChannel`) and hands the answer back, and
feeds it the requests the controller listener receives, answering each when the core
has. It is woken whenever the core may have something new to send: after a request or
an answer came in, and after the controller appended records.

A peer that cannot be reached is only logged: the core's request times out and it
retries on its own schedule, as Kafka's raft client does. A request the core's codec
refuses (not the metadata partition, a malformed field) is answered with the error
Kafka gives, and the core never sees it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import cast

from millpond.controller.peer_channel import PeerChannel, PeerUnreachableError
from millpond.controller.raft import codec
from millpond.controller.raft.client import RaftClient, RaftLogFailedError
from millpond.controller.raft.keys import Endpoint
from millpond.controller.raft.messages import (
    DescribeQuorumResponse,
    ReplicaDescription,
    Request,
    Response,
    VoteRequest,
    VoteResponse,
)
from millpond.controller.raft.node import Outgoing, RaftFatalError
from millpond.storage.clock import Clock
from millpond.wire import Message
from millpond.wire.errors import ErrorCode as E

__all__ = ["RaftDriver"]

_log = logging.getLogger(__name__)
#: The source the core answers inbound requests to; each has its own correlation id.
INBOUND = -2


class RaftDriver:
    def __init__(
        self,
        client: RaftClient,
        peers: PeerChannel,
        clock: Clock,
        *,
        endpoints_of: Callable[[int], tuple[Endpoint, ...]],
    ) -> None:
        """``endpoints_of(node_id)``: the controller listeners of a voter, put in the
        answers that name it as leader."""
        self._client = client
        self._peers = peers
        self._clock = clock
        self._endpoints_of = endpoints_of
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._sends: set[asyncio.Task[None]] = set()
        #: Inbound requests waiting for the core's answer: correlation -> (future, version).
        self._inbound: dict[int, tuple[asyncio.Future[Message], int]] = {}
        self._next_inbound = 0
        #: Leaders' controller listeners as the answers naming them said, by node id.
        self.leader_endpoints: dict[int, tuple[Endpoint, ...]] = {}
        client.set_waker(self.wake)

    def _now(self) -> int:
        return self._clock.monotonic_ms()

    # -- running --------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="raft-driver")

    async def stop(self) -> None:
        tasks = [t for t in (self._task, *self._sends) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._task = None
        self._peers.close()
        for future, _ in self._inbound.values():
            if not future.done():  # the requester's connection is closed, not cancelled
                future.set_exception(ConnectionAbortedError("the quorum driver stopped"))
                future.exception()  # heard here, if its requester is gone already
        self._inbound.clear()

    def close_peers(self) -> None:
        """Close the connections to the other nodes now (a crash, for tests)."""
        self._peers.close()

    def wake(self) -> None:
        """The core may have something to send (called by the Raft client)."""
        self._wake.set()

    async def _run(self) -> None:
        while True:
            try:
                self._client.poll(self._now())
            except (RaftLogFailedError, RaftFatalError) as exc:
                # Kafka's raft client stops the node here; this one stops taking part.
                _log.error("raft: the metadata quorum replica stopped: %s; restart the node", exc)
                return
            self._drain()
            self._wake.clear()  # the poll's own wake-up is done with
            delay = max(0, self._client.wakeup_at() - self._now()) / 1000
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(min(delay, 3600)):
                    await self._wake.wait()

    # -- the outbox -----------------------------------------------------------------------

    def _drain(self) -> None:
        for out in self._client.take_outbox():
            if out.is_response:
                self._answer(out)
            else:
                task = asyncio.get_running_loop().create_task(self._send(out))
                self._sends.add(task)
                task.add_done_callback(self._sends.discard)

    def _answer(self, out: Outgoing) -> None:
        waiting = self._inbound.pop(out.correlation, None)
        if waiting is None:
            return  # the requester went away
        future, version = waiting
        if future.done():
            return
        message = cast(Response, out.message)  # the core's answers are responses
        nodes = None
        if isinstance(message, DescribeQuorumResponse):
            message = self._on_wall_clock(message)
            nodes = {r.key.id: self._endpoints_of(r.key.id) for r in message.voters}
        leader = getattr(message, "leader_id", -1)
        endpoints = self._endpoints_of(leader) if isinstance(leader, int) and leader >= 0 else ()
        try:
            future.set_result(
                codec.encode_response(message, version, leader_endpoints=endpoints, nodes=nodes)
            )
        except codec.RaftCodecError as exc:
            future.set_exception(exc)

    def _on_wall_clock(self, described: DescribeQuorumResponse) -> DescribeQuorumResponse:
        """The core times fetches on the monotonic clock; Kafka reports wall-clock ms."""
        shift = self._clock.now_ms() - self._clock.monotonic_ms()

        def moved(replicas: tuple[ReplicaDescription, ...]) -> tuple[ReplicaDescription, ...]:
            return tuple(
                r._replace(
                    last_fetch_timestamp=r.last_fetch_timestamp + shift
                    if r.last_fetch_timestamp >= 0
                    else -1,
                    last_caught_up_timestamp=r.last_caught_up_timestamp + shift
                    if r.last_caught_up_timestamp >= 0
                    else -1,
                )
                for r in replicas
            )

        return described._replace(
            voters=moved(described.voters), observers=moved(described.observers)
        )

    async def _send(self, out: Outgoing) -> None:
        request = cast(Request, out.message)  # what the core sends unasked are requests
        api_key = codec.API_KEY_OF[type(request)]
        try:
            answer, _ = await self._peers.send(
                out.destination, api_key, lambda v: codec.encode_request(request, v)
            )
            decoded = codec.decode_response(answer)
            response = decoded.message
            leader = getattr(response, "leader_id", -1)
            if decoded.leader_endpoints and isinstance(leader, int) and leader >= 0:
                self.leader_endpoints[leader] = decoded.leader_endpoints
        except PeerUnreachableError as exc:
            _log.debug("raft: %s", exc)
            self._client.unreachable(self._now(), out.destination, out.correlation)
            self.wake()  # its backoff ends sooner than the request would have timed out
            return
        except codec.RaftCodecError as exc:
            if not (isinstance(request, VoteRequest) and exc.error is E.UNSUPPORTED_VERSION):
                _log.warning("raft: no usable exchange with node %d: %s", out.destination, exc)
                return
            # A peer too old for pre-votes: the core hears it as Kafka's would.
            response = VoteResponse(E.NONE, -1, -1, False, top_error=E.UNSUPPORTED_VERSION)
        self._client.handle(
            self._now(), out.destination, out.correlation, response, is_response=True
        )
        self._drain()

    # -- inbound requests -------------------------------------------------------------------

    async def handle_request(self, request: Message, version: int) -> Message:
        """Answer one KRaft request from the controller listener."""
        try:
            message = codec.decode_request(request)
        except codec.RaftCodecError as exc:
            _log.info("raft: refused %s: %s", type(request).__name__, exc)
            return codec.error_response(request, version, exc.error)
        self._next_inbound += 1
        correlation = self._next_inbound
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._inbound[correlation] = (future, version)
        self._client.handle(self._now(), INBOUND, correlation, message, is_response=False)
        self._drain()
        try:
            return await future
        except codec.RaftCodecError as exc:  # the answer does not fit this version
            _log.info("raft: cannot answer %s v%d: %s", type(request).__name__, version, exc)
            return codec.error_response(request, version, exc.error)
        finally:
            self._inbound.pop(correlation, None)

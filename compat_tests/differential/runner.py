"""Running one scripted sequence of requests against a broker, and the same sequence against two.

A *sequence* is a function taking a :class:`Session`. It sends requests written with
``millpond.wire`` through ``session.send(request, version)``, which returns the response as plain
data (``to_data()``) and records it as one *step*. The same function runs once against Apache
Kafka and once against millpond; the two lists of steps are then normalized
(:mod:`~compat_tests.differential.normalize`) and compared field by field
(:mod:`~compat_tests.differential.compare`).

    def unknown_topic(s: Session) -> None:
        s.send(MetadataRequest(topics=[MetadataRequestTopic(name=s.topic("t"))],
                               allow_auto_topic_creation=False), 12)

    kafka, millpond = run_both(unknown_topic, "unknown-topic", KAFKA, MILLPOND)

Topic names: ``session.topic("x")`` is ``x`` in the sequence's own namespace (a prefix made of
the run number and the sequence's name), the same on both brokers, so every sequence starts from
"no such topic" on both and sequences never see each other's topics. Group ids likewise
(``session.group("g")``).

Group members block: a JoinGroup may be answered only when another member joins. Such a
sequence opens more connections to the same broker (``session.connection()``, recording into
the same steps), writes a request without waiting (``pending = other.begin(request, v)``), and
reads the answer later (``other.finish(pending)``): the steps are recorded in the order the
sequence finishes them, whatever order the answers arrive in.

Sequences must be deterministic: what they send may depend on earlier responses only through
fields that agree after normalization (a topic id read back from the broker is fine: each side
uses its own). Waiting (a topic's leaders appearing, an auto-created topic settling) goes through
the bounded helpers here, which send unrecorded requests; every wait has a deadline.
"""

from __future__ import annotations

import itertools
import os
import socket
import struct
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from millpond.wire import Message, RequestHeader, decode_response, encode_request
from millpond.wire.generated.api.list_offsets_request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from millpond.wire.generated.api.metadata_request import MetadataRequest, MetadataRequestTopic

CLIENT_ID = "millpond-differential"
IO_TIMEOUT = 30.0
WAIT_TIMEOUT = 20.0
WAIT_PAUSE = 0.02

Data = dict[str, Any]
SequenceFn = Callable[["Session"], None]

_RUNS = itertools.count(1)
# Brokers can outlive one test process (a developer's long-running pair): names stay fresh.
_PROCESS_TAG = f"{os.getpid() % 100000:05d}"


class BrokerClosedError(Exception):
    """The broker closed the connection instead of answering."""


@dataclass
class Step:
    """One recorded request and what came back: the response's ``to_data()``, or
    ``{"closed": True}`` when the broker closed the connection instead."""

    label: str
    api: str
    version: int
    response: Data
    volatile: tuple[str, ...] = ()
    """Field names whose values this step's sequence declares broker-made (a LogAppendTime
    timestamp in a ListOffsets answer): normalized to ``<volatile>`` wherever they occur."""


@dataclass(frozen=True)
class Pending:
    """A request written by :meth:`Session.begin`, its answer not read yet."""

    request: Message
    version: int
    correlation_id: int


@dataclass
class Session:
    """One sequence's conversation with one broker (``name`` is "kafka" or "millpond")."""

    name: str
    bootstrap: str
    namespace: str
    steps: list[Step] = field(default_factory=list)
    _sock: socket.socket | None = None
    _correlation_id: int = 0
    _others: list[Session] = field(default_factory=list)

    # --- names ---------------------------------------------------------------------------

    def topic(self, name: str) -> str:
        """``name`` in this sequence's namespace of topic names."""
        return f"{self.namespace}{name}"

    def group(self, name: str) -> str:
        """``name`` in this sequence's namespace of group ids."""
        return f"{self.namespace}{name}"

    def connection(self) -> Session:
        """Another connection to the same broker, recording into this session's steps (and
        closed with it): for a second group member whose requests may wait on the first's."""
        other = Session(self.name, self.bootstrap, self.namespace, self.steps)
        self._others.append(other)
        return other

    # --- requests ------------------------------------------------------------------------

    def send(
        self, request: Message, version: int, label: str = "", volatile: tuple[str, ...] = ()
    ) -> Data:
        """Send ``request`` at ``version`` and record the response as a step; returns it as
        data. A closed connection is recorded as ``{"closed": True}`` (and returned), and the
        next request opens a new connection."""
        try:
            response = self.request(request, version)
        except BrokerClosedError:
            data: Data = {"closed": True}
        else:
            data = response.to_data()
        self.record(label or api_name(request), api_name(request), version, data, volatile)
        return data

    def request(self, request: Message, version: int) -> Any:
        """Send ``request`` at ``version`` without recording it; returns the decoded
        response message. Raises :class:`BrokerClosedError` when the connection closes."""
        assert request.API_KEY is not None
        header = RequestHeader(
            request_api_key=request.API_KEY,
            request_api_version=version,
            correlation_id=self._next_correlation_id(),
            client_id=CLIENT_ID,
        )
        frame = self.exchange(encode_request(header, request))
        if frame is None:
            raise BrokerClosedError(f"{self.name} closed the connection on {request.NAME}")
        response_header, response = decode_response(frame, request.API_KEY, version)
        if response_header.correlation_id != header.correlation_id:
            raise AssertionError(
                f"{self.name}: correlation id {response_header.correlation_id}, "
                f"expected {header.correlation_id}"
            )
        return response

    def begin(self, request: Message, version: int) -> Pending:
        """Write ``request`` at ``version`` and return without reading the answer (the
        connection's next exchange must be :meth:`finish` of it)."""
        assert request.API_KEY is not None
        header = RequestHeader(
            request_api_key=request.API_KEY,
            request_api_version=version,
            correlation_id=self._next_correlation_id(),
            client_id=CLIENT_ID,
        )
        frame = encode_request(header, request)
        self._connect().sendall(struct.pack(">i", len(frame)) + frame)
        return Pending(request, version, header.correlation_id)

    def finish(self, pending: Pending, label: str = "", volatile: tuple[str, ...] = ()) -> Data:
        """Read the answer to a :meth:`begin` request (waiting for it, at most
        ``IO_TIMEOUT``) and record it as a step; returns it as data."""
        request = pending.request
        assert request.API_KEY is not None
        frame = self._receive()
        data: Data
        if frame is None:
            data = {"closed": True}
        else:
            response_header, response = decode_response(frame, request.API_KEY, pending.version)
            if response_header.correlation_id != pending.correlation_id:
                raise AssertionError(
                    f"{self.name}: correlation id {response_header.correlation_id}, "
                    f"expected {pending.correlation_id}"
                )
            data = response.to_data()
        self.record(label or api_name(request), api_name(request), pending.version, data, volatile)
        return data

    def send_raw(
        self, frame: bytes, api_key: int, decode_version: int, api: str, label: str
    ) -> Data:
        """Send a hand-built request frame (no size prefix) and record its response decoded as
        ``api_key`` at ``decode_version`` (with the response header that version implies)."""
        answer = self.exchange(frame)
        data: Data
        if answer is None:
            data = {"closed": True}
        else:
            _, response = decode_response(answer, api_key, decode_version)
            data = response.to_data()
        self.record(label, api, decode_version, data)
        return data

    def record(
        self, label: str, api: str, version: int, data: Data, volatile: tuple[str, ...] = ()
    ) -> None:
        self.steps.append(Step(label, api, version, data, volatile))

    def next_correlation_id(self) -> int:
        return self._next_correlation_id()

    def exchange(self, frame: bytes) -> bytes | None:
        """Write one frame and read one back; ``None`` when the broker closes the
        connection (the socket is then dropped)."""
        sock = self._connect()
        try:
            sock.sendall(struct.pack(">i", len(frame)) + frame)
        except (ConnectionResetError, BrokenPipeError):
            self._drop()
            return None
        return self._receive()

    def _receive(self) -> bytes | None:
        """Read one frame; ``None`` when the broker closes the connection."""
        sock = self._connect()
        try:
            size_bytes = self._read(sock, 4)
            if size_bytes is None:
                raise BrokerClosedError
            (size,) = struct.unpack(">i", size_bytes)
            body = self._read(sock, size)
            if body is None:
                raise BrokerClosedError
            return body
        except (BrokerClosedError, ConnectionResetError, BrokenPipeError):
            self._drop()
            return None

    # --- waits (unrecorded) --------------------------------------------------------------

    def wait_for_topic(self, name: str, partitions: int | None = None) -> Any:
        """Wait (bounded) until Metadata shows topic ``name`` (a full name) with every
        partition led, ``partitions`` of them when given, and every partition answers
        ListOffsets (Kafka's metadata can name a leader a moment before that leader serves
        the partition). Returns that Metadata topic; on timeout, records a step saying so
        (the comparison then shows which side never got ready) and returns None."""
        deadline = time.monotonic() + WAIT_TIMEOUT
        while True:
            metadata = self.request(
                MetadataRequest(
                    topics=[MetadataRequestTopic(name=name)], allow_auto_topic_creation=False
                ),
                12,
            )
            for t in metadata.topics:
                if (
                    t.name == name
                    and t.error_code == 0
                    and t.partitions
                    and (partitions is None or len(t.partitions) == partitions)
                    and all(p.error_code == 0 and p.leader_id >= 0 for p in t.partitions)
                    and self._serving(name, [p.partition_index for p in t.partitions])
                ):
                    return t
            if time.monotonic() > deadline:
                self.record(f"wait for {name}", "wait", 0, {"timed_out": metadata.to_data()})
                return None
            time.sleep(WAIT_PAUSE)

    def _serving(self, name: str, partitions: list[int]) -> bool:
        request = ListOffsetsRequest(
            replica_id=-1,
            topics=[
                ListOffsetsTopic(
                    name=name,
                    partitions=[
                        ListOffsetsPartition(partition_index=p, timestamp=-1) for p in partitions
                    ],
                )
            ],
        )
        response = self.request(request, 7)
        return all(p.error_code == 0 for t in response.topics for p in t.partitions)

    def wait_until_gone(self, name: str) -> None:
        """Wait (bounded) until Metadata no longer lists topic ``name`` (after a delete)."""
        deadline = time.monotonic() + WAIT_TIMEOUT
        while True:
            metadata = self.request(
                MetadataRequest(
                    topics=[MetadataRequestTopic(name=name)], allow_auto_topic_creation=False
                ),
                12,
            )
            if all(t.error_code == 3 for t in metadata.topics):
                return
            if time.monotonic() > deadline:
                self.record(f"wait for {name} gone", "wait", 0, {"timed_out": metadata.to_data()})
                return
            time.sleep(WAIT_PAUSE)

    def poll(
        self,
        request: Message,
        version: int,
        done: Callable[[Any], bool],
        label: str = "",
        timeout: float = WAIT_TIMEOUT,
    ) -> Data:
        """Send ``request`` until ``done(response)`` (for at most ``timeout`` seconds), then
        record that last response: for answers that settle, such as an auto-created topic's
        Metadata. One that never settles is recorded as ``{"never_settled": ...}``."""
        deadline = time.monotonic() + timeout
        while True:
            response = self.request(request, version)
            if done(response):
                data: Data = response.to_data()
                self.record(label or api_name(request), api_name(request), version, data)
                return data
            if time.monotonic() > deadline:
                data = {"never_settled": response.to_data()}
                self.record(label or api_name(request), api_name(request), version, data)
                return data
            time.sleep(WAIT_PAUSE)

    # --- plumbing ------------------------------------------------------------------------

    def _next_correlation_id(self) -> int:
        self._correlation_id += 1
        return self._correlation_id

    def _connect(self) -> socket.socket:
        if self._sock is None:
            host, _, port = self.bootstrap.rpartition(":")
            self._sock = socket.create_connection((host, int(port)), timeout=IO_TIMEOUT)
        return self._sock

    @staticmethod
    def _read(sock: socket.socket, n: int) -> bytes | None:
        data = bytearray()
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                return None
            data += chunk
        return bytes(data)

    def close(self) -> None:
        """Close this connection and the others opened from it."""
        for other in self._others:
            other.close()
        self._drop()

    def _drop(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def api_name(request: Message) -> str:
    """``Metadata`` for a MetadataRequest: the API's name."""
    return request.NAME.removesuffix("Request")


def namespace_for(sequence_name: str) -> str:
    """A fresh topic-name prefix: this process's run tag, the run number (one per call) and
    the sequence's name. Both brokers get the same names, so names in messages agree."""
    return f"d{_PROCESS_TAG}x{next(_RUNS)}-{sequence_name}-"


def run_sequence(sequence: SequenceFn, name: str, bootstrap: str, namespace: str) -> list[Step]:
    """Run ``sequence`` against the broker at ``bootstrap``; its recorded steps."""
    session = Session(name, bootstrap, namespace)
    try:
        sequence(session)
    finally:
        session.close()
    return session.steps


def run_both(
    sequence: SequenceFn, sequence_name: str, kafka: str, millpond: str
) -> tuple[list[Step], list[Step]]:
    """Run ``sequence`` against Kafka and millpond at once (one thread each), in the same
    fresh namespace; returns (Kafka's steps, millpond's steps)."""
    namespace = namespace_for(sequence_name)
    with ThreadPoolExecutor(max_workers=2) as pool:
        on_kafka = pool.submit(run_sequence, sequence, "kafka", kafka, namespace)
        on_millpond = pool.submit(run_sequence, sequence, "millpond", millpond, namespace)
        return on_kafka.result(), on_millpond.result()

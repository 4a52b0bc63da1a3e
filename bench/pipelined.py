"""The broker alone on produce: Produce requests built once, then sent back to back on one
socket with a fixed number in flight, as a pipelining client would. No client library runs
per record, so the figure is the broker's (on 2 cores a librdkafka load generator takes
more CPU than the broker does, and its own speed and noise set the produce figures of
bench/throughput.py). Used by throughput.py's ``pipelined`` workload; not a test.
"""

from __future__ import annotations

import socket
import struct
import time
from typing import NamedTuple

from millpond.cli.client import recv_exactly
from millpond.wire import RequestHeader, decode_response, encode_request
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.produce_request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from millpond.wire.generated.api.produce_response import ProduceResponse
from millpond.wire.records import NewRecord, build_batch

PRODUCE_VERSION = 9  # flexible, by name: what every peer serves
#: What Kafka answers for a moment after a topic is created, and a client retries.
RETRIABLE = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
    }
)


class Shape(NamedTuple):
    """One request: ``partitions`` batches of ``records`` values of ``size`` bytes."""

    key: str
    label: str
    partitions: int
    records: int
    size: int
    acks: int

    @property
    def request_bytes(self) -> int:
        return self.partitions * self.records * self.size


BIG = "1 partition, batches of 1,000 x 1 KiB"
SHAPES = [
    # 1,000 x 1 KiB stays under Kafka's message.max.bytes (1 MiB + 12) per batch.
    Shape("pipelined-big-1-1", f"{BIG}, acks=1", 1, 1000, 1024, 1),
    Shape("pipelined-big-1-all", f"{BIG}, acks=all", 1, 1000, 1024, -1),
    Shape("pipelined-small-8-1", "8 partitions, batches of 50 x 100 B, acks=1", 8, 50, 100, 1),
]
IN_FLIGHT = 16


def produce_frame(topic: str, shape: Shape) -> bytes:
    """The whole frame, size prefix included; its records are stamped now."""
    now = int(time.time() * 1000)
    batch = build_batch([NewRecord(None, b"x" * shape.size, timestamp=now)] * shape.records)
    data = [PartitionProduceData(index=p, records=batch) for p in range(shape.partitions)]
    body = ProduceRequest(
        acks=shape.acks,
        timeout_ms=30_000,
        topic_data=[TopicProduceData(name=topic, partition_data=data)],
    )
    header = RequestHeader(
        request_api_key=0,
        request_api_version=PRODUCE_VERSION,
        correlation_id=1,
        client_id="pipelined",
    )
    encoded = encode_request(header, body)
    return struct.pack(">i", len(encoded)) + encoded


class Outcome(NamedTuple):
    requests: int
    seconds: float

    def mb_s(self, shape: Shape) -> float:
        return self.requests * shape.request_bytes / self.seconds / 1e6


def until_led(host: str, port: int, frame: bytes, timeout: float = 30.0) -> None:
    """Send ``frame`` alone until no partition answers a retriable error: Kafka's metadata
    names a new topic's leaders a moment before the leader takes writes, and a client
    would retry (one request's records land before the clock starts)."""
    deadline = time.monotonic() + timeout
    sock = socket.create_connection((host, port), timeout=60)
    try:
        while True:
            sock.sendall(frame)
            codes = _codes(sock)
            if not any(codes.values()):
                return
            if time.monotonic() > deadline or not set(codes.values()) <= RETRIABLE | {0}:
                _raise(codes)
            time.sleep(0.05)
    finally:
        sock.close()


def pipeline(host: str, port: int, frame: bytes, seconds: float) -> Outcome:
    """Send ``frame`` for ``seconds`` with :data:`IN_FLIGHT` unanswered, then drain; every
    answer must carry no error (RuntimeError otherwise: a refused write is no throughput)."""
    sock = socket.create_connection((host, port), timeout=60)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        sent = answered = 0
        started = time.perf_counter()
        stop = started + seconds
        while time.perf_counter() < stop:
            sock.sendall(frame)
            sent += 1
            if sent - answered >= IN_FLIGHT:
                _answer(sock)
                answered += 1
        while answered < sent:
            _answer(sock)
            answered += 1
        return Outcome(sent, time.perf_counter() - started)
    finally:
        sock.close()


def _answer(sock: socket.socket) -> None:
    codes = _codes(sock)
    if any(codes.values()):
        _raise(codes)


def _codes(sock: socket.socket) -> dict[str, int]:
    """One Produce answer: each partition's error code."""
    (size,) = struct.unpack(">i", recv_exactly(sock, 4))
    _, response = decode_response(recv_exactly(sock, size), 0, PRODUCE_VERSION)
    assert isinstance(response, ProduceResponse)
    return {
        f"{topic.name}-{partition.index}": partition.error_code
        for topic in response.responses
        for partition in topic.partition_responses
    }


def _raise(codes: dict[str, int]) -> None:
    failed = ", ".join(f"{p}: {ErrorCode(c).name}" for p, c in codes.items() if c)
    raise RuntimeError(f"Produce refused: {failed}")

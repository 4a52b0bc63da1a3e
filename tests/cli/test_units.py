"""The CLI's pure parts, checked against independent oracles where there is one."""

from __future__ import annotations

import random
import socket
import struct
import threading

import pytest
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from millpond.cli.bench import histogram, percentile
from millpond.cli.client import Connection, client_range
from millpond.cli.errors import CliError
from millpond.cli.membership import assigned_partitions, encode_versioned, range_assign
from millpond.cli.produce import murmur2, partition_for
from millpond.wire import ResponseHeader, encode_response
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.api_versions_response import ApiVersion, ApiVersionsResponse
from millpond.wire.generated.data.consumer_protocol_assignment import (
    ConsumerProtocolAssignment,
    TopicPartition,
)


def test_murmur2_matches_kafka_python_on_random_keys() -> None:
    rng = random.Random(7)
    for length in [*range(0, 9), 17, 100]:
        for _ in range(50):
            key = bytes(rng.randrange(256) for _ in range(length))
            assert murmur2(key) & 0x7FFFFFFF == kafka_python_murmur2(key) & 0x7FFFFFFF, key
            assert 0 <= partition_for(key, 7) < 7


def test_range_assignment_gives_the_first_members_one_more() -> None:
    plan = range_assign(
        {"b": ["t", "u"], "a": ["t"], "c": ["t", "u"]},
        {"t": 7, "u": 1, "v": 4},
    )
    assert plan == {
        "a": {"t": [0, 1, 2]},
        "b": {"t": [3, 4], "u": [0]},
        "c": {"t": [5, 6]},
    }


def test_an_assignment_reads_back_and_junk_reads_as_nothing() -> None:
    message = ConsumerProtocolAssignment(
        assigned_partitions=[TopicPartition(topic="t", partitions=[2, 0])]
    )
    assert assigned_partitions(encode_versioned(message)) == [("t", 2), ("t", 0)]
    assert assigned_partitions(b"\x00") == []
    assert assigned_partitions(b"\x00\x00\x7f\xff\xff\xff") == []
    assert assigned_partitions(None) == []


def _connection(versions: dict[int, tuple[int, int]]) -> Connection:
    conn = object.__new__(Connection)
    conn.address = "broker:9092"
    conn.versions = versions
    return conn


def test_the_version_is_the_highest_both_sides_speak() -> None:
    low, high = client_range(1)  # Fetch
    assert _connection({1: (0, high + 5)}).version(1) == high
    assert _connection({1: (0, low + 1)}).version(1) == low + 1
    with pytest.raises(CliError, match="does not serve Fetch"):
        _connection({1: (0, low - 1)}).version(1)
    with pytest.raises(CliError, match="does not serve Fetch"):
        _connection({}).version(1)


def test_percentiles_and_histogram() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50 and percentile(values, 99) == 99
    assert percentile(values, 99.9) == 100 and percentile([], 50) == 0
    buckets = histogram([0.3, 0.9, 1.0, 3.0])
    assert buckets == [
        {"le_ms": 0.5, "count": 1},
        {"le_ms": 1.0, "count": 2},
        {"le_ms": 2.0, "count": 0},
        {"le_ms": 4.0, "count": 1},
    ]


def test_a_broker_without_api_versions_v3_is_read_in_v0() -> None:
    """A broker that does not know ApiVersions v3 answers in v0's shape with
    UNSUPPORTED_VERSION and its versions (KIP-511); the client uses those versions."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    asked: list[int] = []

    def old_broker() -> None:
        conn, _ = listener.accept()
        with conn:
            size = struct.unpack(">i", conn.recv(4, socket.MSG_WAITALL))[0]
            frame = conn.recv(size, socket.MSG_WAITALL)
            asked.append(struct.unpack(">h", frame[2:4])[0])
            body = ApiVersionsResponse(
                error_code=ErrorCode.UNSUPPORTED_VERSION,
                api_keys=[ApiVersion(api_key=3, min_version=0, max_version=9)],
            )
            answer = encode_response(ResponseHeader(correlation_id=1), body, 0)
            conn.sendall(struct.pack(">i", len(answer)) + answer)

    thread = threading.Thread(target=old_broker)
    thread.start()
    try:
        conn = Connection("127.0.0.1", port, 5.0, "test")
        conn.close()
    finally:
        thread.join(5)
        listener.close()
    assert asked == [3]
    assert conn.versions == {3: (0, 9)} and conn.version(3) == 9

"""Fetch end to end: a real broker, batches appended straight to its logs, fetched over
the wire at several versions and compared byte for byte with the segment files."""

from __future__ import annotations

import asyncio
import struct
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from millpond.broker.config import build_config
from millpond.broker.node import Broker
from millpond.broker.server import plan_listeners
from millpond.controller.record_serde import ApiMessageAndVersion
from millpond.controller.replication_control import CreatableTopic
from millpond.controller.results import ControllerResult
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.fetch_request import (
    FetchPartition,
    FetchRequest,
    FetchTopic,
    ForgottenTopic,
)
from millpond.wire.generated.api.fetch_response import FetchResponse, PartitionData
from millpond.wire.generated.metadata.partition_change_record import PartitionChangeRecord
from millpond.wire.records import NewRecord, build_batch

from .harness import Client, running_broker

T = TypeVar("T")
BIG = 1 << 20


def on_loop(broker: Broker, fn: Callable[[], T]) -> T:
    """Run ``fn`` on the broker's event loop (which owns all its state) and wait."""
    server = broker.server._server
    assert server is not None

    async def call() -> T:
        return fn()

    return asyncio.run_coroutine_threadsafe(call(), server.get_loop()).result(10)


def create_topic(broker: Broker, name: str, partitions: int = 1) -> bytes:
    def create() -> bytes:
        [result] = broker.controller.create_topics([CreatableTopic(name, partitions, 1)]).response
        assert result.error.code == ErrorCode.NONE
        return result.topic_id

    return on_loop(broker, create)


def append(broker: Broker, name: str, partition: int, values: list[bytes]) -> None:
    batch = build_batch([NewRecord(key=b"k", value=v) for v in values])

    def run() -> None:
        topic = broker.image.topic(name)
        assert topic is not None
        assert broker.replicas.append(topic, partition, memoryview(batch)).error == ErrorCode.NONE

    on_loop(broker, run)


def log_bytes(broker: Broker, name: str, partition: int) -> bytes:
    def run() -> bytes:
        topic = broker.image.topic(name)
        assert topic is not None
        log = broker.replicas.log(topic, partition)
        assert log is not None
        return log.read(log.log_start_offset, 1 << 30).records.read()

    return on_loop(broker, run)


def batch_spans(data: bytes) -> list[tuple[int, int, int]]:
    """(first offset, last offset, byte position) of each batch in ``data``."""
    spans, position = [], 0
    while position < len(data):
        base, length = struct.unpack_from(">qi", data, position)
        (last_delta,) = struct.unpack_from(">i", data, position + 23)
        spans.append((base, base + last_delta, position))
        position += 12 + length
    return spans


def bump_leader_epoch(broker: Broker, name: str, partition: int) -> None:
    """A leader change to the same broker: the partition's leader epoch moves up one."""

    def run() -> None:
        topic = broker.image.topic(name)
        assert topic is not None
        change = PartitionChangeRecord(
            topic_id=topic.topic_id, partition_id=partition, leader=broker.node_id
        )
        broker.controller._commit(ControllerResult((ApiMessageAndVersion(change, 0),), None))

    on_loop(broker, run)


def fetch_request(
    parts: list[tuple[str, bytes, int, int]],
    *,
    max_bytes: int = BIG,
    partition_max_bytes: int = BIG,
    max_wait_ms: int = 0,
    min_bytes: int = 0,
    session_id: int = 0,
    session_epoch: int = -1,
    **kwargs: Any,
) -> FetchRequest:
    topics: list[FetchTopic] = []
    for name, topic_id, partition, offset in parts:
        if not topics or (topics[-1].topic, topics[-1].topic_id) != (name, topic_id):
            topics.append(FetchTopic(topic=name, topic_id=topic_id))
        topics[-1].partitions.append(
            FetchPartition(
                partition=partition, fetch_offset=offset, partition_max_bytes=partition_max_bytes
            )
        )
    return FetchRequest(
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        session_id=session_id,
        session_epoch=session_epoch,
        topics=topics,
        **kwargs,
    )


def fetch(client: Client, request: FetchRequest, version: int) -> FetchResponse:
    _, response = client.request(request, version)
    assert isinstance(response, FetchResponse)
    return response


def partitions(response: FetchResponse) -> list[PartitionData]:
    return [p for topic in response.responses for p in topic.partitions]


def records(data: PartitionData) -> bytes:
    return bytes(data.records or b"")


@pytest.fixture
def broker() -> Iterator[Broker]:
    with running_broker() as running:
        yield running


@pytest.mark.parametrize("version", [4, 7, 11, 12, 13, 15, 16, 17, 18])
def test_every_offset_returns_the_batch_holding_it_byte_for_byte(
    broker: Broker, version: int
) -> None:
    topic_id = create_topic(broker, "t")
    for size in (1, 3, 2, 5):
        append(broker, "t", 0, [b"v%d" % i for i in range(size)])
    stored = log_bytes(broker, "t", 0)
    spans = batch_spans(stored)
    assert [(first, last) for first, last, _ in spans] == [(0, 0), (1, 3), (4, 5), (6, 10)]
    client = Client(broker.port)
    for first, last, position in spans:
        for offset in range(first, last + 1):
            response = fetch(client, fetch_request([("t", topic_id, 0, offset)]), version)
            assert response.error_code == ErrorCode.NONE
            [topic] = response.responses
            if version >= 13:
                assert topic.topic_id == topic_id
            else:
                assert topic.topic == "t"
            [data] = topic.partitions
            assert data.error_code == ErrorCode.NONE
            assert (data.high_watermark, data.last_stable_offset) == (11, 11)
            assert data.log_start_offset == (0 if version >= 5 else -1)
            assert data.aborted_transactions is None
            assert data.preferred_read_replica == -1
            assert records(data) == stored[position:]
    at_end = fetch(client, fetch_request([("t", topic_id, 0, 11)]), version)
    [data] = partitions(at_end)
    assert (data.error_code, records(data), data.high_watermark) == (0, b"", 11)


def test_offsets_outside_the_log_are_out_of_range(broker: Broker) -> None:
    topic_id = create_topic(broker, "t")
    for _ in range(3):
        append(broker, "t", 0, [b"a", b"b"])

    def move_start() -> None:
        topic = broker.image.topic("t")
        assert topic is not None
        log = broker.replicas.log(topic, 0)
        assert log is not None
        log.delete_records(4)

    on_loop(broker, move_start)
    client = Client(broker.port)
    for offset, code in ((3, 1), (4, 0), (6, 0), (7, 1), (-1, 1)):
        [data] = partitions(fetch(client, fetch_request([("t", topic_id, 0, offset)]), 12))
        assert data.error_code == code, offset
        if code:
            assert (data.high_watermark, data.last_stable_offset, data.log_start_offset) == (
                -1,
                -1,
                -1,
            )
            assert records(data) == b""
        else:
            assert data.log_start_offset == 4


def test_partition_and_response_limits_keep_whole_batches(broker: Broker) -> None:
    topic_id = create_topic(broker, "t", partitions=2)
    for partition in (0, 1):
        for _ in range(3):
            append(broker, "t", partition, [b"x" * 100])
    stored = {p: log_bytes(broker, "t", p) for p in (0, 1)}
    one = batch_spans(stored[0])[1][2]  # the size of one batch
    client = Client(broker.port)
    both = [("t", topic_id, 0, 0), ("t", topic_id, 1, 0)]

    def fetched(**limits: int) -> list[bytes]:
        return [records(d) for d in partitions(fetch(client, fetch_request(both, **limits), 12))]

    assert fetched() == [stored[0], stored[1]]
    # Each partition holds what fits whole in partition_max_bytes.
    assert fetched(partition_max_bytes=one * 2 + one // 2) == [
        stored[0][: 2 * one],
        stored[1][: 2 * one],
    ]
    # The first batch of the first partition with data comes whole, however small the
    # limits; after it the response limit leaves nothing for the next partition.
    assert fetched(partition_max_bytes=1) == [stored[0][:one], b""]
    assert fetched(max_bytes=1) == [stored[0][:one], b""]
    assert fetched(max_bytes=one + one // 2) == [stored[0][:one], b""]
    assert fetched(max_bytes=3 * one + one) == [stored[0], stored[1][:one]]
    # An empty first partition does not use up the first-batch rule.
    [_, second] = partitions(
        fetch(
            client, fetch_request([("t", topic_id, 0, 3), ("t", topic_id, 1, 0)], max_bytes=1), 12
        )
    )
    assert records(second) == stored[1][:one]


def test_unknown_topics_and_partitions_are_listed_last(broker: Broker) -> None:
    topic_id = create_topic(broker, "t")
    append(broker, "t", 0, [b"a"])
    client = Client(broker.port)
    by_name = fetch_request(
        [("nope", bytes(16), 0, 0), ("t", topic_id, 5, 0), ("t", topic_id, 0, 0)]
    )
    response = fetch(client, by_name, 12)
    assert [
        (t.topic, [(p.partition_index, p.error_code) for p in t.partitions])
        for t in response.responses
    ] == [
        ("t", [(0, 0)]),
        ("nope", [(0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]),
        ("t", [(5, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]),
    ]
    unknown_id = bytes([7] * 16)
    by_id = fetch_request([("", unknown_id, 0, 0), ("", topic_id, 0, 0)])
    response = fetch(client, by_id, 13)
    assert [(t.topic_id, [p.error_code for p in t.partitions]) for t in response.responses] == [
        (topic_id, [0]),
        (unknown_id, [ErrorCode.UNKNOWN_TOPIC_ID]),
    ]


def test_leader_epochs_are_checked(broker: Broker) -> None:
    topic_id = create_topic(broker, "t")
    append(broker, "t", 0, [b"a"])
    bump_leader_epoch(broker, "t", 0)
    client = Client(broker.port)

    def error(epoch: int, version: int = 12) -> int:
        request = fetch_request([("t", topic_id, 0, 0)])
        request.topics[0].partitions[0].current_leader_epoch = epoch
        return partitions(fetch(client, request, version))[0].error_code

    assert error(-1) == ErrorCode.NONE
    assert error(1) == ErrorCode.NONE
    assert error(0) == ErrorCode.FENCED_LEADER_EPOCH
    assert error(2) == ErrorCode.UNKNOWN_LEADER_EPOCH
    request = fetch_request([("t", topic_id, 0, 0)])
    request.topics[0].partitions[0].current_leader_epoch = 0
    response = fetch(client, request, 16)
    [data] = partitions(response)
    assert (data.current_leader.leader_id, data.current_leader.leader_epoch) == (1, 1)
    [node] = response.node_endpoints
    assert (node.node_id, node.port) == (1, broker.port)


def test_the_leader_is_named_by_its_endpoint_on_the_requests_listener() -> None:
    props = {
        "node.id": "1",
        "log.dirs": "/unused",
        "listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
    }
    config = build_config(props, env={})[0]
    plans = plan_listeners(config.listeners, config.advertised_listeners, ())
    with running_broker(listeners=tuple(plans)) as broker:
        topic_id = create_topic(broker, "t")
        bump_leader_epoch(broker, "t", 0)
        ports = {s.listener.name: s.port for s in broker.listeners.servers}
        for name in ("PLAINTEXT", "INTERNAL"):
            request = fetch_request([("t", topic_id, 0, 0)])
            request.topics[0].partitions[0].current_leader_epoch = 0
            response = fetch(Client(ports[name]), request, 16)
            assert partitions(response)[0].error_code == ErrorCode.FENCED_LEADER_EPOCH
            assert [(n.node_id, n.port) for n in response.node_endpoints] == [(1, ports[name])]


def test_last_fetched_epoch_reports_divergence(broker: Broker) -> None:
    topic_id = create_topic(broker, "t")
    append(broker, "t", 0, [b"a", b"b"])  # offsets 0-1 in epoch 0
    bump_leader_epoch(broker, "t", 0)
    append(broker, "t", 0, [b"c"])  # offset 2 in epoch 1
    client = Client(broker.port)

    def fetched(offset: int, last_epoch: int) -> PartitionData:
        request = fetch_request([("t", topic_id, 0, offset)])
        request.topics[0].partitions[0].last_fetched_epoch = last_epoch
        [data] = partitions(fetch(client, request, 12))
        return data

    assert records(fetched(2, 0)) != b""  # epoch 0 ended at 2: no divergence
    diverged = fetched(3, 0)  # the fetcher has an offset 2 in epoch 0 we never wrote
    assert diverged.error_code == ErrorCode.NONE
    assert (diverged.diverging_epoch.epoch, diverged.diverging_epoch.end_offset) == (0, 2)
    assert records(diverged) == b""
    assert fetched(0, 5).error_code == ErrorCode.OFFSET_OUT_OF_RANGE  # an epoch we never had


def test_isolation_levels(broker: Broker) -> None:
    topic_id = create_topic(broker, "t")
    append(broker, "t", 0, [b"a"])
    client = Client(broker.port)
    for level, aborted in ((0, None), (1, [])):
        request = fetch_request([("t", topic_id, 0, 0)], isolation_level=level)
        [data] = partitions(fetch(client, request, 11))
        assert data.aborted_transactions == aborted
        assert (data.high_watermark, data.last_stable_offset) == (1, 1)
        assert records(data) == log_bytes(broker, "t", 0)


def test_followers_are_refused(broker: Broker) -> None:
    topic_id = create_topic(broker, "t")
    client = Client(broker.port)
    [data] = partitions(fetch(client, fetch_request([("t", topic_id, 0, 0)], replica_id=2), 12))
    assert data.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def _handling(broker: Broker) -> bool:
    return on_loop(broker, lambda: any(not c.idle for c in broker.connections))


def wait_until_parked(broker: Broker) -> None:
    deadline = time.monotonic() + 10
    while not _handling(broker):
        assert time.monotonic() < deadline, "the fetch never started waiting"


def test_a_long_poll_returns_when_data_arrives(broker: Broker) -> None:
    topic_id = create_topic(broker, "t")
    client = Client(broker.port)
    request = fetch_request([("t", topic_id, 0, 0)], max_wait_ms=30_000, min_bytes=1)
    answer: list[FetchResponse] = []
    waiter = threading.Thread(target=lambda: answer.append(fetch(client, request, 12)))
    started = time.monotonic()
    waiter.start()
    wait_until_parked(broker)
    assert not answer
    append(broker, "t", 0, [b"wake"])
    waiter.join(20)
    assert answer, "the fetch did not return"
    assert time.monotonic() - started < 20
    [data] = partitions(answer[0])
    assert records(data) == log_bytes(broker, "t", 0)
    assert data.high_watermark == 1


def test_a_long_poll_keeps_waiting_below_min_bytes_then_times_out(broker: Broker) -> None:
    topic_id = create_topic(broker, "t")
    client = Client(broker.port)
    started = time.monotonic()
    [data] = partitions(
        fetch(client, fetch_request([("t", topic_id, 0, 0)], max_wait_ms=200, min_bytes=1), 12)
    )
    assert time.monotonic() - started >= 0.19
    assert (data.error_code, records(data)) == (0, b"")
    # A partition the image does not know does not cut the wait short.
    started = time.monotonic()
    unknown = fetch_request(
        [("t", topic_id, 0, 0), ("t", topic_id, 9, 0)], max_wait_ms=200, min_bytes=1
    )
    assert [d.error_code for d in partitions(fetch(client, unknown, 12))] == [
        0,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ]
    assert time.monotonic() - started >= 0.19
    # An append smaller than min_bytes wakes the fetch but does not complete it.
    request = fetch_request([("t", topic_id, 0, 0)], max_wait_ms=300, min_bytes=BIG)
    answer: list[FetchResponse] = []
    waiter = threading.Thread(target=lambda: answer.append(fetch(client, request, 12)))
    started = time.monotonic()
    waiter.start()
    wait_until_parked(broker)
    append(broker, "t", 0, [b"small"])
    waiter.join(20)
    assert time.monotonic() - started >= 0.29
    [data] = partitions(answer[0])
    assert records(data) == log_bytes(broker, "t", 0)


@pytest.mark.parametrize("version", [12, 13])
def test_incremental_sessions(broker: Broker, version: int) -> None:
    topic_id = create_topic(broker, "t", partitions=2)
    append(broker, "t", 0, [b"a", b"b"])
    append(broker, "t", 1, [b"c"])
    client = Client(broker.port)
    parts = [("t", topic_id, 0, 0), ("t", topic_id, 1, 0)]
    full = fetch(client, fetch_request(parts, session_epoch=0), version)
    session = full.session_id
    assert session > 0
    assert [len(records(d)) > 0 for d in partitions(full)] == [True, True]

    def incremental(
        epoch: int, parts: list[tuple[str, bytes, int, int]], **kw: Any
    ) -> FetchResponse:
        request = fetch_request(parts, session_id=session, session_epoch=epoch, **kw)
        return fetch(client, request, version)

    # The consumer moved both positions to the end: nothing changed, nothing listed.
    caught_up = incremental(1, [("t", topic_id, 0, 2), ("t", topic_id, 1, 1)])
    assert (caught_up.error_code, caught_up.session_id, caught_up.responses) == (0, session, [])
    # New data in partition 1 only; the request names no partition at all.
    append(broker, "t", 1, [b"d"])
    response = incremental(2, [])
    assert [(d.partition_index, d.high_watermark) for d in partitions(response)] == [(1, 2)]
    assert (
        records(partitions(response)[0])
        == log_bytes(broker, "t", 1)[len(records(partitions(full)[1])) :]
    )
    # A replayed epoch, an unknown session.
    assert incremental(2, []).error_code == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    bogus = fetch(client, fetch_request([], session_id=session + 1, session_epoch=1), version)
    assert (bogus.error_code, bogus.session_id) == (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0)
    # Forget partition 1; partition 0 is still served from the session.
    forget = [ForgottenTopic(topic="t", topic_id=topic_id, partitions=[1])]
    response = incremental(3, [("t", topic_id, 0, 0)], forgotten_topics_data=forget)
    assert [d.partition_index for d in partitions(response)] == [0]
    # A long poll in a session wakes on appends to a session partition.
    answer: list[FetchResponse] = []
    at_end = [("t", topic_id, 0, 2)]
    waiter = threading.Thread(
        target=lambda: answer.append(incremental(4, at_end, max_wait_ms=30_000, min_bytes=1))
    )
    waiter.start()
    wait_until_parked(broker)
    append(broker, "t", 0, [b"e"])
    waiter.join(20)
    [data] = partitions(answer[0])
    assert (data.partition_index, data.high_watermark) == (0, 3)
    assert (
        records(data) == log_bytes(broker, "t", 0)[batch_spans(log_bytes(broker, "t", 0))[1][2] :]
    )
    # Epoch -1 closes the session; it is gone afterwards.
    closed = fetch(client, fetch_request(parts, session_id=session, session_epoch=-1), version)
    assert closed.session_id == 0 and len(partitions(closed)) == 2
    assert incremental(5, []).error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_versions_below_7_are_sessionless(broker: Broker) -> None:
    topic_id = create_topic(broker, "t")
    client = Client(broker.port)
    response = fetch(client, fetch_request([("t", topic_id, 0, 0)]), 4)
    assert response.session_id == 0 and partitions(response)[0].error_code == 0


def test_kafka_python_consumer_reads_what_was_appended(broker: Broker) -> None:
    import kafka

    create_topic(broker, "t")
    values = [b"r%d" % i for i in range(25)]
    for chunk in range(0, 25, 5):
        append(broker, "t", 0, values[chunk : chunk + 5])
    consumer = kafka.KafkaConsumer(
        bootstrap_servers=f"127.0.0.1:{broker.port}",
        enable_auto_commit=False,
        group_id=None,
        consumer_timeout_ms=10_000,
    )
    try:
        partition = kafka.TopicPartition("t", 0)
        consumer.assign([partition])
        consumer.seek_to_beginning(partition)
        got: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + 30
        while len(got) < 25 and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=1000).values():
                got.extend((r.offset, r.value) for r in batch)
        assert got == list(enumerate(values))
    finally:
        consumer.close()


def test_librdkafka_consumer_reads_what_was_appended(broker: Broker) -> None:
    import confluent_kafka as ck

    create_topic(broker, "t", partitions=2)
    for i in range(10):
        append(broker, "t", i % 2, [b"v%d-%d" % (i, j) for j in range(3)])
    consumer = ck.Consumer(
        {
            "bootstrap.servers": f"127.0.0.1:{broker.port}",
            "group.id": "unused",  # required by the client; assign() needs no coordinator
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
        }
    )
    try:
        consumer.assign([ck.TopicPartition("t", p, ck.OFFSET_BEGINNING) for p in (0, 1)])
        got: dict[int, list[tuple[int, bytes]]] = {0: [], 1: []}
        deadline = time.monotonic() + 30
        while sum(map(len, got.values())) < 30 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None:
                assert message.error() is None, message.error()
                got[message.partition()].append((message.offset(), message.value()))
        for partition in (0, 1):
            values = [b"v%d-%d" % (i, j) for i in range(partition, 10, 2) for j in range(3)]
            assert got[partition] == list(enumerate(values))
    finally:
        consumer.close()


def test_data_written_before_a_restart_is_readable_after_it(tmp_path: Path) -> None:
    with running_broker(data_dir=str(tmp_path)) as first:
        create_topic(first, "t")
        append(first, "t", 0, [b"before"])
    with running_broker(data_dir=str(tmp_path)) as second:
        client = Client(second.port)
        topic = second.image.topic("t")
        assert topic is not None
        response = fetch(client, fetch_request([("t", topic.topic_id, 0, 0)]), 12)
        [part] = partitions(response)
        assert part.error_code == 0 and part.high_watermark == 1
        assert part.records is not None and len(part.records) > 0


def _long_poll(
    client: Client, request: FetchRequest
) -> tuple[threading.Thread, list[FetchResponse]]:
    answer: list[FetchResponse] = []
    waiter = threading.Thread(target=lambda: answer.append(fetch(client, request, 12)))
    waiter.start()
    return waiter, answer


def test_a_long_poll_is_woken_only_by_its_own_partitions(broker: Broker) -> None:
    create_topic(broker, "a")
    b_id = create_topic(broker, "b")
    client = Client(broker.port)
    waiter, answer = _long_poll(
        client, fetch_request([("b", b_id, 0, 0)], max_wait_ms=30_000, min_bytes=1)
    )
    wait_until_parked(broker)
    fetches = broker.replicas.delayed_fetches
    assert on_loop(broker, lambda: (fetches.watching(("a", 0)), fetches.watching(("b", 0)))) == (
        0,
        1,
    )
    append(broker, "a", 0, [b"elsewhere"])
    assert on_loop(broker, lambda: fetches.watching(("b", 0))) == 1
    assert not answer
    append(broker, "b", 0, [b"here"])
    waiter.join(20)
    [data] = partitions(answer[0])
    assert records(data) == log_bytes(broker, "b", 0)


def test_a_frozen_clock_does_not_hang_a_long_poll(broker: Broker) -> None:
    topic_id = create_topic(broker, "t")
    client = Client(broker.port)
    on_loop(broker, broker.control.freeze_clock)
    started = time.monotonic()
    [data] = partitions(
        fetch(client, fetch_request([("t", topic_id, 0, 0)], max_wait_ms=200, min_bytes=1), 12)
    )
    assert 0.19 <= time.monotonic() - started < 10
    assert (data.error_code, records(data)) == (0, b"")


def test_advancing_the_clock_ends_a_long_poll_at_once(broker: Broker) -> None:
    topic_id = create_topic(broker, "t")
    client = Client(broker.port)
    on_loop(broker, broker.control.freeze_clock)
    started = time.monotonic()
    waiter, answer = _long_poll(
        client, fetch_request([("t", topic_id, 0, 0)], max_wait_ms=600_000, min_bytes=1)
    )
    wait_until_parked(broker)
    on_loop(broker, lambda: broker.control.advance_clock(600_000))
    waiter.join(20)
    assert answer, "the fetch did not return"
    assert time.monotonic() - started < 20
    [data] = partitions(answer[0])
    assert (data.error_code, records(data)) == (0, b"")


def test_deleting_a_topic_ends_the_long_polls_on_it(broker: Broker) -> None:
    topic_id = create_topic(broker, "t")
    client = Client(broker.port)
    started = time.monotonic()
    waiter, answer = _long_poll(
        client, fetch_request([("t", topic_id, 0, 0)], max_wait_ms=600_000, min_bytes=1)
    )
    wait_until_parked(broker)

    def delete() -> None:
        broker.controller.delete_topics(["t"], [])
        broker.replicas.stop_partitions("t", [0], delete=True)

    on_loop(broker, delete)
    waiter.join(20)
    assert answer, "the fetch did not return"
    assert time.monotonic() - started < 20
    [data] = partitions(answer[0])
    assert data.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

"""Restarts of ``millpond serve`` as a real process: after a clean stop (SIGTERM) and after
``kill -9``, on the same data directory, every topic (name, id, partition count, configs)
and every record (byte for byte, at its offset) is there, the broker answers at once, and
an idempotent producer retrying across the restart lands its batch once.

Every wait is bounded and waits on a real condition: the "listening on" line, an answered
request, a process exiting. Nothing sleeps.
"""

from __future__ import annotations

import os
import random
import select
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from millpond.storage.names import CLEAN_SHUTDOWN_FILE
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api import create_topics_request as ct
from millpond.wire.generated.api import describe_configs_request as dc
from millpond.wire.generated.api.api_versions_request import ApiVersionsRequest
from millpond.wire.generated.api.fetch_request import FetchPartition, FetchRequest, FetchTopic
from millpond.wire.generated.api.init_producer_id_request import InitProducerIdRequest
from millpond.wire.generated.api.metadata_request import MetadataRequest
from millpond.wire.generated.api.produce_request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from millpond.wire.records import NewRecord, build_batch, iter_batches

from .harness import Client

READY_TIMEOUT = 60.0  # seconds: a bound on waiting for the "listening on" line
STOP_TIMEOUT = 60.0
TOPIC_RESOURCE = 2  # DescribeConfigs resource type TOPIC
TOPIC_CONFIG_SOURCE = 1  # DescribeConfigs config source: set on the topic
BIG = 64 << 20
#: Record timestamps: recent (producer state older than producer.id.expiration.ms is
#: dropped at load) and fixed for the whole module.
T0 = time.time_ns() // 1_000_000 - 60_000

#: name -> (partitions, configs set at creation). ``orders`` rolls segments (1 MiB, the
#: smallest Kafka allows) so recovery after a kill walks more than one segment;
#: ``events`` has the broker stamp the time, so the stored timestamps are the broker's.
TOPICS: dict[str, tuple[int, dict[str, str]]] = {
    "orders": (
        3,
        {
            "segment.bytes": "1048576",
            "retention.ms": "-1",
            "max.message.bytes": "2097152",
            "cleanup.policy": "delete",
        },
    ),
    "events": (
        4,
        {"message.timestamp.type": "LogAppendTime", "retention.bytes": "-1"},
    ),
}


# -- the process --------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Serve:
    """``millpond serve`` on one data directory and one port, started again and again."""

    data: Path
    port: int
    log: Path
    proc: subprocess.Popen[bytes] | None = None
    started: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def start(self) -> str:
        """Launch and return the "listening on" line once it is printed (bounded)."""
        assert self.proc is None or self.proc.poll() is not None
        command = [
            sys.executable, "-m", "millpond", "serve",
            "--override", f"log.dirs={self.data}",
            "--override", f"listeners=PLAINTEXT://127.0.0.1:{self.port}",
        ]  # fmt: skip
        with self.log.open("ab") as stderr:  # a file: a full pipe would block the broker
            self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=stderr)
        self.started.append(self.proc)
        line = self._first_line(self.proc)
        assert f"listening on 127.0.0.1:{self.port}" in line, line
        return line

    def _first_line(self, proc: subprocess.Popen[bytes]) -> str:
        assert proc.stdout is not None
        fd, data = proc.stdout.fileno(), b""
        deadline = time.monotonic() + READY_TIMEOUT
        while b"\n" not in data:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no 'listening on' line after {READY_TIMEOUT}s{self.tail()}")
            readable, _, _ = select.select([fd], [], [], remaining)
            if readable:
                chunk = os.read(fd, 4096)
                if not chunk:
                    raise RuntimeError(f"millpond exited ({proc.wait()}){self.tail()}")
                data += chunk
        return data.decode()

    def tail(self) -> str:
        return "\n--- stderr\n" + self.log.read_text(errors="replace")[-4000:]

    def terminate(self) -> str:
        """SIGTERM and wait for the clean exit; returns what it printed after starting."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=STOP_TIMEOUT)
        assert self.proc.returncode == 0, self.tail()
        return out.decode()

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.kill()  # SIGKILL: no flush, no snapshots, no clean-shutdown marker
        self.proc.communicate(timeout=STOP_TIMEOUT)
        assert self.proc.returncode == -signal.SIGKILL

    def stop(self, how: str) -> None:
        if how == "SIGTERM":
            assert "stopped cleanly" in self.terminate()
            assert (self.data / CLEAN_SHUTDOWN_FILE).exists()
        else:
            self.kill()
            assert not (self.data / CLEAN_SHUTDOWN_FILE).exists()

    def cleanup(self) -> None:
        for proc in self.started:
            if proc.poll() is None:
                proc.kill()
            proc.communicate(timeout=STOP_TIMEOUT)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Serve]:
    data = tmp_path / "data"
    server = Serve(data, _free_port(), tmp_path / "stderr.log")
    try:
        yield server
    finally:
        server.cleanup()


def _answers_at_once(port: int) -> None:
    """The first connection after the "listening on" line is served: no retry."""
    client = Client(port)
    try:
        _, body = client.request(
            ApiVersionsRequest(client_software_name="restart-test", client_software_version="1"), 3
        )
        assert body.error_code == ErrorCode.NONE
    finally:
        client.close()


# -- topics and configs over the wire ------------------------------------------------------


def _create_topics(client: Client) -> None:
    request = ct.CreateTopicsRequest(
        topics=[
            ct.CreatableTopic(
                name=name,
                num_partitions=partitions,
                replication_factor=1,
                configs=[ct.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()],
            )
            for name, (partitions, configs) in TOPICS.items()
        ],
        timeout_ms=30_000,
    )
    _, response = client.request(request, 7)
    assert [(t.name, t.error_code) for t in response.topics] == [
        (name, ErrorCode.NONE) for name in TOPICS
    ]


class TopicView(NamedTuple):
    topic_id: bytes
    partitions: list[tuple[int, int, int]]  # (index, error code, leader)


def _metadata(client: Client) -> tuple[str | None, dict[str, TopicView]]:
    request = MetadataRequest(topics=None, allow_auto_topic_creation=False)
    _, response = client.request(request, 12)
    topics = {
        t.name: TopicView(
            t.topic_id,
            sorted((p.partition_index, p.error_code, p.leader_id) for p in t.partitions),
        )
        for t in response.topics
        if t.error_code == ErrorCode.NONE
    }
    return response.cluster_id, topics


def _configs(client: Client) -> dict[str, list[tuple[str, str | None, int, bool, bool]]]:
    request = dc.DescribeConfigsRequest(
        resources=[
            dc.DescribeConfigsResource(resource_type=TOPIC_RESOURCE, resource_name=name)
            for name in TOPICS
        ],
        include_synonyms=False,
        include_documentation=False,
    )
    _, response = client.request(request, 4)
    described = {}
    for result in response.results:
        assert result.error_code == ErrorCode.NONE, result.error_message
        described[result.resource_name] = sorted(
            (c.name, c.value, c.config_source, c.read_only, c.is_sensitive) for c in result.configs
        )
    return described


# -- records -------------------------------------------------------------------------------


class Sent(NamedTuple):
    topic: str
    partition: int
    offset: int
    key: bytes
    value: bytes | None
    headers: list[tuple[str, bytes | None]]
    timestamp: int  # the producer's (CreateTime) or the broker's (LogAppendTime)


def _records(
    tag: str, n: int, size: int, null_header: bool = False
) -> list[tuple[bytes, bytes | None, list[Any], int]]:
    """Keyed records with headers (a repeated key, an empty value, a null value where the
    client allows one) and fixed timestamps; values are random bytes (compression cannot
    shrink them) and the last is a tombstone."""
    rng = random.Random(tag)
    out: list[tuple[bytes, bytes | None, list[Any], int]] = []
    for i in range(n):
        key = b"%s-key-%d" % (tag.encode(), i % 37)
        value: bytes | None = rng.randbytes(size) if i < n - 1 else None
        headers: list[Any] = [("seq", b"%d" % i), ("tag", tag.encode()), ("tag", b"")]
        if null_header:
            headers.append(("trace", None))
        out.append((key, value, headers, T0 + i))
    return out


def _produce_kafka_python(port: int, topic: str, tag: str, n: int, size: int) -> list[Sent]:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=f"127.0.0.1:{port}",
        enable_idempotence=True,
        acks="all",
        compression_type="gzip",
        linger_ms=5,
    )
    try:
        records = _records(tag, n, size)
        futures = [
            producer.send(topic, key=k, value=v, headers=h, timestamp_ms=ts)
            for k, v, h, ts in records
        ]
        producer.flush(timeout=60)
        sent = []
        for (key, value, headers, _), future in zip(records, futures, strict=True):
            meta = future.get(timeout=60)
            sent.append(
                Sent(topic, meta.partition, meta.offset, key, value, headers, meta.timestamp)
            )
        return sent
    finally:
        producer.close(timeout=10)


def _produce_confluent(port: int, topic: str, tag: str, n: int, size: int) -> list[Sent]:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "enable.idempotence": True,
            "compression.type": "lz4",
            "linger.ms": 5,
        }
    )
    records = _records(tag, n, size, null_header=True)
    reports: dict[int, Any] = {}
    errors: list[Any] = []

    def report(i: int) -> Callable[[Any, Any], None]:
        def on_delivery(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(err)
            else:
                reports[i] = msg

        return on_delivery

    for i, (key, value, headers, ts) in enumerate(records):
        producer.produce(topic, key=key, value=value, headers=headers, timestamp=ts,
                         on_delivery=report(i))  # fmt: skip
        producer.poll(0)
    assert producer.flush(60) == 0
    assert errors == []
    return [
        Sent(topic, reports[i].partition(), reports[i].offset(), k, v, h, reports[i].timestamp()[1])
        for i, (k, v, h, _) in enumerate(records)
    ]


def _all_partitions() -> list[tuple[str, int]]:
    return [(name, p) for name, (partitions, _) in TOPICS.items() for p in range(partitions)]


def _consume_all(port: int, parts: list[tuple[str, int]]) -> tuple[list[Any], dict[Any, int]]:
    """Every record of ``parts`` read by assignment from the beginning, in (topic,
    partition, offset) order, and the partitions' end offsets."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=f"127.0.0.1:{port}",
        enable_auto_commit=False,
        max_partition_fetch_bytes=BIG,
        fetch_max_bytes=BIG,
    )
    try:
        tps = [TopicPartition(t, p) for t, p in parts]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        records: list[Any] = []
        for _ in range(120):  # bounded: each poll waits at most 1 s for data
            if all(consumer.position(tp) >= ends[tp] for tp in tps):
                break
            for batch in consumer.poll(timeout_ms=1000).values():
                records.extend(batch)
        else:
            pytest.fail(f"not everything was read: {len(records)} records, ends {ends}")
        records.sort(key=lambda r: (r.topic, r.partition, r.offset))
        return records, {(tp.topic, tp.partition): end for tp, end in ends.items()}
    finally:
        consumer.close()


def _raw_log(client: Client, topic: str, partition: int, end: int) -> bytes:
    """The partition's record batches as Fetch serves them, from offset 0 to ``end``."""
    data, offset = b"", 0
    while offset < end:
        request = FetchRequest(
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=BIG,
            session_id=0,
            session_epoch=-1,
            topics=[
                FetchTopic(
                    topic=topic,
                    partitions=[
                        FetchPartition(
                            partition=partition, fetch_offset=offset, partition_max_bytes=BIG
                        )
                    ],
                )
            ],
        )
        _, response = client.request(request, 12)
        [answer] = response.responses
        [part] = answer.partitions
        assert (part.error_code, part.high_watermark) == (ErrorCode.NONE, end)
        chunk = bytes(part.records or b"")
        batches = list(iter_batches(chunk))
        assert batches, f"{topic}-{partition}: nothing at {offset} below {end}"
        offset = batches[-1].next_offset
        data += chunk
    return data


@dataclass
class Snapshot:
    """What a client can see of the broker's state."""

    cluster_id: str | None
    topics: dict[str, TopicView]
    configs: dict[str, list[tuple[str, str | None, int, bool, bool]]]
    records: list[Any]
    ends: dict[Any, int]
    raw: dict[tuple[str, int], bytes]


def _snapshot(port: int) -> Snapshot:
    client = Client(port)
    try:
        cluster_id, topics = _metadata(client)
        configs = _configs(client)
        records, ends = _consume_all(port, _all_partitions())
        raw = {tp: _raw_log(client, *tp, ends[tp]) for tp in _all_partitions()}
        return Snapshot(cluster_id, topics, configs, records, ends, raw)
    finally:
        client.close()


def _check_against_sent(snapshot: Snapshot, sent: list[Sent]) -> None:
    """What the consumer reads is what was produced, at the offsets the producers were told."""
    by_offset = {(s.topic, s.partition, s.offset): s for s in sent}
    assert len(by_offset) == len(sent) == len(snapshot.records)
    for record in snapshot.records:
        expected = by_offset[(record.topic, record.partition, record.offset)]
        assert (record.key, record.value) == (expected.key, expected.value)
        assert record.headers == expected.headers
        assert record.timestamp == expected.timestamp
        log_append_time = TOPICS[record.topic][1].get("message.timestamp.type") == "LogAppendTime"
        assert record.timestamp_type == (1 if log_append_time else 0)
    for name, (partitions, configs) in TOPICS.items():
        view = snapshot.topics[name]
        assert view.partitions == [(p, ErrorCode.NONE, 1) for p in range(partitions)]
        described = {c[0]: c for c in snapshot.configs[name]}
        for key, value in configs.items():
            assert described[key][1:3] == (value, TOPIC_CONFIG_SOURCE)


# -- the tests -----------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
def test_topics_and_records_survive_a_restart(serve: Serve, how: str) -> None:
    serve.start()
    client = Client(serve.port)
    try:
        _create_topics(client)
    finally:
        client.close()
    # ~4.5 MB into orders (several segments per partition), plus both clients on both topics
    sent = _produce_kafka_python(serve.port, "orders", "kp", 1500, 3000)
    sent += _produce_kafka_python(serve.port, "events", "kp-events", 200, 100)
    sent += _produce_confluent(serve.port, "events", "ck", 300, 200)
    sent += _produce_confluent(serve.port, "orders", "ck-orders", 200, 500)
    before = _snapshot(serve.port)
    _check_against_sent(before, sent)
    segments = sorted(p.name for p in (serve.data / "orders-0").glob("*.log"))
    assert len(segments) >= 2

    serve.stop(how)
    serve.start()
    _answers_at_once(serve.port)
    after = _snapshot(serve.port)
    assert after.cluster_id == before.cluster_id
    assert after.topics == before.topics  # names, ids, partition counts, leaders
    assert after.configs == before.configs
    assert after.ends == before.ends
    assert after.records == before.records  # keys, values, headers, timestamps, offsets
    assert after.raw == before.raw  # the batches byte for byte (CRCs, producer ids, ...)
    assert sorted(p.name for p in (serve.data / "orders-0").glob("*.log")) == segments

    # Producing goes on at the log ends, and a second restart keeps that too.
    more = _produce_confluent(serve.port, "orders", "ck-more", 30, 10)
    more += _produce_kafka_python(serve.port, "events", "kp-more", 30, 10)
    firsts: dict[tuple[str, int], int] = {}
    for s in more:
        firsts.setdefault((s.topic, s.partition), s.offset)
    assert all(firsts[tp] == after.ends[tp] for tp in firsts)
    serve.stop(how)
    serve.start()
    _answers_at_once(serve.port)
    final = _snapshot(serve.port)
    _check_against_sent(final, sent + more)
    assert final.topics == before.topics
    assert final.configs == before.configs
    serve.terminate()


def _produce(client: Client, topic: str, records: bytes) -> tuple[int, int]:
    request = ProduceRequest(
        acks=-1,
        timeout_ms=10_000,
        topic_data=[
            TopicProduceData(
                name=topic, partition_data=[PartitionProduceData(index=0, records=records)]
            )
        ],
    )
    _, response = client.request(request, 9)
    [answer] = response.responses
    [part] = answer.partition_responses
    return part.error_code, part.base_offset


def _batch(pid: int, epoch: int, seq: int, values: list[bytes]) -> bytes:
    records = [
        NewRecord(key=b"k%d" % (seq + i), value=v, timestamp=T0 + seq + i)
        for i, v in enumerate(values)
    ]
    return build_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_an_idempotent_retry_across_a_restart_lands_once(serve: Serve, how: str) -> None:
    topic = "payments"
    serve.start()
    client = Client(serve.port)
    try:
        request = ct.CreateTopicsRequest(
            topics=[ct.CreatableTopic(name=topic, num_partitions=1, replication_factor=1)]
        )
        [created] = client.request(request, 7)[1].topics
        assert created.error_code == ErrorCode.NONE
        _, init = client.request(
            InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000), 4
        )
        assert init.error_code == ErrorCode.NONE
        pid, epoch = init.producer_id, init.producer_epoch
        sent = [_batch(pid, epoch, 2 * i, [b"a%d" % i, b"b%d" % i]) for i in range(4)]
        # Every produce is acknowledged (acks=all) before the broker goes down.
        assert [_produce(client, topic, b) for b in sent] == [
            (ErrorCode.NONE, offset) for offset in (0, 2, 4, 6)
        ]
    finally:
        client.close()

    serve.stop(how)
    serve.start()
    client = Client(serve.port)
    try:
        # The producer did not see the last answer and sends the batch again: answered
        # as the first time, appended nothing.
        assert _produce(client, topic, sent[-1]) == (ErrorCode.NONE, 6)
        # An earlier batch, still among the producer's last 5: after a kill the log replay
        # rebuilt all 5; a clean shutdown's snapshot keeps each producer's last batch only,
        # so, as in Kafka, the older one is out of order (and still not appended).
        earlier = _produce(client, topic, sent[1])
        if how == "SIGKILL":
            assert earlier == (ErrorCode.NONE, 2)
        else:
            assert earlier[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        # A gap is still out of order, and the next sequence goes on at the log end.
        gap = _batch(pid, epoch, 11, [b"gap"])
        assert _produce(client, topic, gap)[0] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert _produce(client, topic, _batch(pid, epoch, 8, [b"next"])) == (ErrorCode.NONE, 8)
        raw = _raw_log(client, topic, 0, 9)
    finally:
        client.close()
    batches = [(b.base_offset, b.producer_id, b.base_sequence) for b in iter_batches(raw)]
    assert batches == [(0, pid, 0), (2, pid, 2), (4, pid, 4), (6, pid, 6), (8, pid, 8)]
    records, ends = _consume_all(serve.port, [(topic, 0)])
    assert ends == {(topic, 0): 9}
    assert [(r.offset, r.value) for r in records] == [
        (0, b"a0"), (1, b"b0"), (2, b"a1"), (3, b"b1"), (4, b"a2"), (5, b"b2"),
        (6, b"a3"), (7, b"b3"), (8, b"next"),
    ]  # fmt: skip
    serve.terminate()

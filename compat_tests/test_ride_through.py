"""Clients ride through a partition leader's kill -9, on a millpond cluster and on an
Apache Kafka 4.4 cluster of the same layout (a controller, brokers 2, 3 and 4): an
idempotent acks=all producer keeps sending to a replication-factor-3 partition
(min.insync.replicas 2) while its leader is killed, and a consumer reading it all along
sees every record once, in order. In compat_tests/MATRIX.md these fill the
"leader-failover" cells: kafka-python and confluent-kafka run in the test's process, Java
kafka-clients, franz-go and kafkajs as drivers (compat_tests/java/RideDriver.java,
compat_tests/go/ride_franz, compat_tests/node/ride_kafkajs.js) that print what was
acknowledged and what was read."""

from __future__ import annotations

import json
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import KafkaError
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka import TopicPartition as ConfluentPartition
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import KafkaError as KafkaPythonError

from compat_tests.harness import driver_failure
from compat_tests.kafka.cluster import KafkaCluster, kafka_cluster
from compat_tests.test_clients_go import build_go_programs
from compat_tests.test_clients_java import java_program
from compat_tests.test_clients_node import NODE_DIR, installed_node
from millpond.testing.cluster import EmbeddedCluster, cluster

pytestmark = pytest.mark.compat

COUNT = 600
PACE_S = 0.01
KILL_AFTER = 150  # records sent before the leader is killed
DEADLINE_S = 90.0


class Nodes(Protocol):
    bootstrap_servers: str

    def kill(self, node_id: int) -> None: ...

    def restart(self, node_id: int) -> None: ...


class _Kafka:
    def __init__(self, running: KafkaCluster) -> None:
        self.running = running
        self.bootstrap_servers = running.bootstrap_servers

    def kill(self, node_id: int) -> None:
        self.running.brokers[node_id].kill()

    def restart(self, node_id: int) -> None:
        self.running.brokers[node_id].launch()


@pytest.fixture(scope="module")
def kafka_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Nodes]:
    # Fencing as quick as millpond's test clusters: a kill is noticed in about 3 s.
    config = {"broker.heartbeat.interval.ms": 300}
    root = tmp_path_factory.mktemp("ride-through-kafka")
    with kafka_cluster(root, config=config, session_ms=3000) as running:
        yield _Kafka(running)


@pytest.fixture(scope="module")
def millpond_nodes() -> Iterator[EmbeddedCluster]:
    # Offsets replicated as on the Kafka cluster, so a group's coordinator moves too.
    with cluster(controllers=1, brokers=3, offsets_topic_replication_factor=3) as running:
        yield running


@pytest.fixture(params=["millpond", "kafka"])
def nodes(request: pytest.FixtureRequest) -> Nodes:
    found: Nodes = request.getfixturevalue(f"{request.param}_nodes")
    return found


def _leader(bootstrap: str, topic: str) -> int:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        [described] = admin.describe_topics([topic])
    finally:
        admin.close()
    [partition] = described["partitions"]
    return int(partition["leader_id"])


def _create(bootstrap: str, topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics(
            [
                NewTopic(
                    topic,
                    replica_assignments={0: [2, 3, 4]},
                    topic_configs={"min.insync.replicas": "2"},
                )
            ]
        )
    finally:
        admin.close()
    deadline = time.monotonic() + 30
    while True:
        try:
            if _leader(bootstrap, topic) == 2:
                return
        except KafkaPythonError:  # not known yet to the broker asked
            pass
        assert time.monotonic() < deadline, f"{topic} never got its leader"
        time.sleep(0.1)


# -- clients: send COUNT values, calling mark() after KILL_AFTER; read COUNT records --

Record = tuple[int, str]  # (offset, value)


@dataclass
class Produced:
    acked: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def fail(self, i: int, error: object) -> None:
        self.failed.append(i)
        self.errors.append(str(error))


class Client(Protocol):
    def produce(self, bootstrap: str, topic: str, mark: Callable[[], None]) -> Produced: ...

    def consume(self, bootstrap: str, topic: str) -> list[Record]: ...


class _KafkaPython:
    def produce(self, bootstrap: str, topic: str, mark: Callable[[], None]) -> Produced:
        produced = Produced()
        producer = KafkaProducer(
            bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=0
        )
        try:
            for i in range(COUNT):
                future = producer.send(topic, str(i).encode(), partition=0)
                future.add_callback(lambda _, i=i: produced.acked.append(i))
                future.add_errback(lambda e, i=i: produced.fail(i, e))
                if i + 1 == KILL_AFTER:
                    mark()
                time.sleep(PACE_S)
            producer.flush(timeout=DEADLINE_S)
        finally:
            producer.close()
        return produced

    def consume(self, bootstrap: str, topic: str) -> list[Record]:
        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
        )
        records: list[Record] = []
        deadline = time.monotonic() + DEADLINE_S
        try:
            consumer.assign([TopicPartition(topic, 0)])
            while len(records) < COUNT and time.monotonic() < deadline:
                for batch in consumer.poll(timeout_ms=200).values():
                    records.extend((r.offset, r.value.decode()) for r in batch)
        finally:
            consumer.close()
        return records


class _Confluent:
    def produce(self, bootstrap: str, topic: str, mark: Callable[[], None]) -> Produced:
        produced = Produced()
        producer = ConfluentProducer(
            {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"}
        )

        def delivered(error: KafkaError | None, i: int) -> None:
            if error is None:
                produced.acked.append(i)
            else:
                produced.fail(i, error)

        for i in range(COUNT):
            producer.produce(
                topic, str(i).encode(), partition=0, on_delivery=lambda e, _, i=i: delivered(e, i)
            )
            if i + 1 == KILL_AFTER:
                mark()
            producer.poll(0)
            time.sleep(PACE_S)
        left = producer.flush(DEADLINE_S)
        produced.errors.extend([f"{left} records left undelivered"] if left else [])
        return produced

    def consume(self, bootstrap: str, topic: str) -> list[Record]:
        consumer = ConfluentConsumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"{topic}-reader",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        records: list[Record] = []
        deadline = time.monotonic() + DEADLINE_S
        try:
            consumer.assign([ConfluentPartition(topic, 0, 0)])
            while len(records) < COUNT and time.monotonic() < deadline:
                message = consumer.poll(0.2)
                if message is not None and message.error() is None:
                    value, offset = message.value(), message.offset()
                    assert value is not None and offset is not None
                    records.append((offset, value.decode()))
        finally:
            consumer.close()
        return records


def _is_mark(line: str) -> bool:
    try:
        event = json.loads(line)
    except json.JSONDecodeError:
        return False
    return isinstance(event, dict) and event.get("event") == "mark"


class _Driver:
    """A client in another language: a program with RideDriver.java's two commands."""

    def __init__(self, command: Sequence[str | Path]) -> None:
        self.command = [str(c) for c in command]

    def _options(self, bootstrap: str, topic: str) -> list[str]:
        return ["--bootstrap", bootstrap, "--topic", topic, "--count", str(COUNT)]

    def _run(self, args: list[str], on_mark: Callable[[], None] = lambda: None) -> dict[str, Any]:
        """The driver's last event, calling ``on_mark`` at its mark; fails the test with
        its output when it exits non-zero, prints what is not JSON, or outlives 2 deadlines."""
        command = [*self.command, *args]
        lines: list[str] = []
        with (
            tempfile.TemporaryFile("w+") as errors,
            subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors, text=True) as process,
        ):
            timer = threading.Timer(2 * DEADLINE_S, process.kill)
            timer.start()
            try:
                assert process.stdout is not None
                for line in process.stdout:
                    lines.append(line)
                    if _is_mark(line):
                        on_mark()
            finally:
                timer.cancel()
                if process.poll() is None:
                    process.kill()
            code = process.wait()
            errors.seek(0)
            stderr = errors.read()
        stdout = "".join(lines)
        events = []
        for line in lines:
            try:
                events.append(json.loads(line))
            except json.JSONDecodeError:
                pytest.fail(driver_failure(command, f"printed {line!r}", stdout, stderr))
        if code != 0 or not events or not isinstance(events[-1], dict):
            pytest.fail(driver_failure(command, f"exit {code}", stdout, stderr), pytrace=False)
        last: dict[str, Any] = events[-1]
        return last

    def produce(self, bootstrap: str, topic: str, mark: Callable[[], None]) -> Produced:
        pace = ["--pace-ms", str(int(PACE_S * 1000)), "--mark", str(KILL_AFTER)]
        event = self._run(["produce", *self._options(bootstrap, topic), *pace], mark)
        return Produced(event["acked"], event["failed"], event["errors"])

    def consume(self, bootstrap: str, topic: str) -> list[Record]:
        wait = ["--timeout-ms", str(int(DEADLINE_S * 1000))]
        event = self._run(["consume", *self._options(bootstrap, topic), *wait])
        return [(int(offset), str(value)) for offset, value in event["records"]]


def _java() -> Client:
    return _Driver(java_program(Path(__file__).resolve().parent / "java" / "RideDriver.java"))


def _franz() -> Client:
    return _Driver([build_go_programs(["ride_franz"], suffix="-ride")["ride_franz"]])


def _kafkajs() -> Client:
    return _Driver([installed_node(), NODE_DIR / "ride_kafkajs.js"])


CLIENTS: dict[str, Callable[[], Client]] = {
    "kafka-python": _KafkaPython,
    "confluent-kafka": _Confluent,
    "Java kafka-clients": _java,
    "franz-go": _franz,
    "kafkajs": _kafkajs,
}
#: Readers that are consumer-group members (kafkajs has no assign): after their group's
#: coordinator moves they resume from the group's committed offset, and read again what
#: they read since.
GROUP_READERS = {"kafkajs"}


def _check_consumed(records: list[Record], *, rereads: bool) -> None:
    """The log as read holds each value once, in the order sent; a reader reads each offset
    once (or, ``rereads``, the same value each time it reads an offset again)."""
    by_offset: dict[int, str] = {}
    for offset, value in records:
        assert by_offset.setdefault(offset, value) == value, (
            f"offset {offset} read as {by_offset[offset]!r} and as {value!r}"
        )
    if not rereads:
        offsets = [offset for offset, _ in records]
        assert offsets == sorted(set(offsets)), "a reader without a group read an offset twice"
    values = [by_offset[offset] for offset in sorted(by_offset)]
    want = [str(i) for i in range(COUNT)]
    assert values == want, (
        f"read {len(values)} records, {len(set(values))} distinct, "
        f"missing {sorted(set(want) - set(values), key=int)[:10]}"
    )


class _Reading(threading.Thread):
    """A client's consume in a thread, its result (or its failure) kept for the test."""

    def __init__(self, client: Client, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.client, self.bootstrap, self.topic = client, bootstrap, topic
        self.records: list[Record] = []
        self.failure: BaseException | None = None

    def run(self) -> None:
        try:
            self.records = self.client.consume(self.bootstrap, self.topic)
        except BaseException as exc:  # noqa: BLE001 - pytest's Failed too, raised in the test
            self.failure = exc

    def result(self) -> list[Record]:
        self.join(3 * DEADLINE_S)
        assert not self.is_alive(), "the reader outlived its deadline"
        if self.failure is not None:
            raise self.failure
        return self.records


@pytest.mark.parametrize(
    "client_name",
    [
        pytest.param(name, marks=pytest.mark.compat_matrix(name, "leader-failover"))
        for name in sorted(CLIENTS)
    ],
)
def test_a_producer_and_a_consumer_ride_through_the_leaders_kill(
    client_name: str, nodes: Nodes, request: pytest.FixtureRequest
) -> None:
    slug = client_name.split()[0].lower()
    topic = f"ride-{slug}-{request.node.callspec.params['nodes']}"
    client = CLIENTS[client_name]()
    bootstrap = nodes.bootstrap_servers
    _create(bootstrap, topic)
    killed = threading.Event()

    def kill_the_leader() -> None:
        nodes.kill(2)
        killed.set()

    reader = _Reading(client, bootstrap, topic)
    reader.start()
    try:
        produced = client.produce(bootstrap, topic, kill_the_leader)
        records = reader.result()
        new_leader = _leader(bootstrap, topic)
    finally:
        if killed.is_set():
            nodes.restart(2)
    assert killed.is_set(), "the producer never reached its mark"
    assert new_leader in (3, 4), f"broker {new_leader} leads after broker 2's kill"
    assert sorted(produced.acked) == list(range(COUNT)), (
        f"{COUNT - len(set(produced.acked))} never acknowledged "
        f"({len(produced.failed)} failed: {produced.errors[:3]})"
    )
    _check_consumed(records, rereads=client_name in GROUP_READERS)


@pytest.mark.parametrize(
    ("fault", "rereads"),
    [("lost", False), ("duplicated", False), ("reordered", False), ("reread", False),
     ("changed", True)],
)  # fmt: skip
def test_the_read_check_catches_each_anomaly(fault: str, rereads: bool) -> None:
    good: list[Record] = [(i, str(i)) for i in range(COUNT)]
    bad = {
        "lost": good[:10] + good[11:],
        "duplicated": good[:10] + [(10, "9")] + [(o + 1, v) for o, v in good[10:]],
        "reordered": [*good[:10], (10, "11"), (11, "10"), *good[12:]],
        "reread": [*good[:10], *good],
        "changed": [*good, (5, "x")],
    }[fault]
    _check_consumed(good, rereads=rereads)
    _check_consumed([*good[:10], *good], rereads=True)
    with pytest.raises(AssertionError):
        _check_consumed(bad, rereads=rereads)

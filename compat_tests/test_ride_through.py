"""Clients ride through a partition leader's kill -9, on a millpond cluster and on an
Apache Kafka 4.4 cluster of the same layout (a controller, brokers 2, 3 and 4): an
idempotent acks=all producer keeps sending to a replication-factor-3 partition
(min.insync.replicas 2) while its leader is killed, and a consumer reading it all along
sees every record once, in order. In compat_tests/MATRIX.md these fill the
"leader-failover" cells of kafka-python and confluent-kafka."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Protocol

import pytest
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import KafkaError
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka import TopicPartition as ConfluentPartition
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import KafkaError as KafkaPythonError

from compat_tests.kafka.cluster import KafkaCluster, kafka_cluster
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
    with cluster(controllers=1, brokers=3) as running:
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


# -- clients: send COUNT values (calling back once acked), read values until told to stop --

Send = Callable[[str, str, Callable[[int], None], Callable[[int], None]], None]
Read = Callable[[str, str, list[int], threading.Event], None]


def _send_kafka_python(
    bootstrap: str, topic: str, acked: Callable[[int], None], sent: Callable[[int], None]
) -> None:
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=0
    )
    try:
        for i in range(COUNT):
            future = producer.send(topic, str(i).encode(), partition=0)
            future.add_callback(lambda _, i=i: acked(i))
            sent(i)
            time.sleep(PACE_S)
        producer.flush(timeout=DEADLINE_S)
    finally:
        producer.close()


def _read_kafka_python(bootstrap: str, topic: str, into: list[int], stop: threading.Event) -> None:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    try:
        consumer.assign([TopicPartition(topic, 0)])
        while not stop.is_set():
            for records in consumer.poll(timeout_ms=200).values():
                into.extend(int(r.value) for r in records)
    finally:
        consumer.close()


def _send_confluent(
    bootstrap: str, topic: str, acked: Callable[[int], None], sent: Callable[[int], None]
) -> None:
    producer = ConfluentProducer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"}
    )

    def delivered(error: KafkaError | None, message: object, i: int) -> None:
        if error is None:
            acked(i)

    for i in range(COUNT):
        producer.produce(
            topic, str(i).encode(), partition=0, on_delivery=lambda e, m, i=i: delivered(e, m, i)
        )
        sent(i)
        producer.poll(0)
        time.sleep(PACE_S)
    assert producer.flush(DEADLINE_S) == 0, "records left undelivered"


def _read_confluent(bootstrap: str, topic: str, into: list[int], stop: threading.Event) -> None:
    consumer = ConfluentConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{topic}-reader",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        consumer.assign([ConfluentPartition(topic, 0, 0)])
        while not stop.is_set():
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                value = message.value()
                assert value is not None
                into.append(int(value))
    finally:
        consumer.close()


CLIENTS: dict[str, tuple[Send, Read]] = {
    "kafka-python": (_send_kafka_python, _read_kafka_python),
    "confluent-kafka": (_send_confluent, _read_confluent),
}


@pytest.mark.parametrize(
    "client",
    [
        pytest.param(name, marks=pytest.mark.compat_matrix(name, "leader-failover"))
        for name in sorted(CLIENTS)
    ],
)
def test_a_producer_and_a_consumer_ride_through_the_leaders_kill(
    client: str, nodes: Nodes, request: pytest.FixtureRequest
) -> None:
    topic = f"ride-{client}-{request.node.callspec.params['nodes']}"
    bootstrap = nodes.bootstrap_servers
    _create(bootstrap, topic)
    send, read = CLIENTS[client]
    acked: list[int] = []
    consumed: list[int] = []
    lock = threading.Lock()
    killed = threading.Event()

    def on_ack(i: int) -> None:
        with lock:
            acked.append(i)

    def on_sent(i: int) -> None:
        if i == KILL_AFTER:
            nodes.kill(2)
            killed.set()

    stop = threading.Event()
    reader = threading.Thread(target=read, args=(bootstrap, topic, consumed, stop), daemon=True)
    reader.start()
    try:
        send(bootstrap, topic, on_ack, on_sent)
        deadline = time.monotonic() + DEADLINE_S
        while len(consumed) < COUNT and time.monotonic() < deadline and reader.is_alive():
            time.sleep(0.1)
        new_leader = _leader(bootstrap, topic)
    finally:
        stop.set()
        reader.join(30)
        if killed.is_set():
            nodes.restart(2)
    assert new_leader in (3, 4), f"broker {new_leader} leads after broker 2's kill"
    assert killed.is_set()
    assert sorted(acked) == list(range(COUNT)), f"{COUNT - len(set(acked))} never acknowledged"
    assert consumed == list(range(COUNT)), (
        f"consumed {len(consumed)} records, {len(set(consumed))} distinct, "
        f"missing {sorted(set(range(COUNT)) - set(consumed))[:10]}"
    )

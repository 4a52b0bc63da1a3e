"""Moving a running millpond cluster onto Apache Kafka without downtime, the way a team
outgrowing millpond would: two Kafka 4.4 brokers join the cluster (following millpond's
controller), Kafka's ``kafka-reassign-partitions`` moves every replica of the application's
topic and of ``__consumer_offsets`` onto them, the millpond brokers stop and Kafka's
``kafka-cluster unregister`` removes them. Throughout, an idempotent ``acks=all`` producer
and a consumer group (bootstrapped from the millpond brokers only) keep going.

Checked at the end: every acknowledged record is on the Kafka brokers at the offset it was
acknowledged at; the group read every offset, each with the value stored there; its
committed offsets, now held by Kafka's group coordinator, are the topic's ends; only the
Kafka brokers are registered; and the millpond brokers' copies are marked for deletion. (Controllers
move the same way through a dynamic quorum: test_kraft_dynamic_quorum.py.)
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import KafkaError

from compat_tests.admin import committed_offsets
from compat_tests.kafka.cluster import formatted_broker
from compat_tests.kafka.reference import RunningBroker, run_tool
from millpond.storage.checkpoints import read_meta_properties
from millpond.storage.fs import OsFileSystem
from millpond.testing.cluster import EmbeddedCluster, cluster

pytestmark = pytest.mark.compat

TOPIC, GROUP, OFFSETS = "orders", "shop", "__consumer_offsets"
PARTITIONS = 3
KAFKA_IDS = (4, 5)
SETTINGS = {
    "offsets.topic.num.partitions": PARTITIONS,
    "offsets.topic.replication.factor": 2,
    "default.replication.factor": 2,
    "min.insync.replicas": 2,
    "group.initial.rebalance.delay.ms": 0,
}
REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
CLUSTER_TOOL = "org.apache.kafka.tools.ClusterTool"


def _until(
    condition: Callable[[], bool], what: str | Callable[[], str], timeout_s: float = 90
) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() >= deadline:
            said = what if isinstance(what, str) else what()
            raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {said}")
        time.sleep(0.25)


@dataclass
class Workload:
    """A producer and a group member on threads of their own, recording what happened."""

    bootstrap: str
    stop_producing: threading.Event = field(default_factory=threading.Event)
    stop_consuming: threading.Event = field(default_factory=threading.Event)
    acked: dict[bytes, tuple[int, int]] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    consumed: dict[tuple[int, int], set[bytes]] = field(default_factory=dict)
    errors: list[BaseException] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)

    def start(self) -> None:
        for target in (self._produce, self._consume):
            thread = threading.Thread(target=self._guarded(target), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _guarded(self, target: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                target()
            except BaseException as exc:  # noqa: BLE001 (raised again in the test's thread)
                self.errors.append(exc)

        return run

    def _produce(self) -> None:
        producer = KafkaProducer(
            bootstrap_servers=self.bootstrap,
            acks="all",
            enable_idempotence=True,
            retries=2**31 - 1,
            delivery_timeout_ms=120_000,
            linger_ms=5,
        )
        pending = []
        try:
            n = 0
            while not self.stop_producing.is_set():
                value = b"order-%d" % n
                pending.append((value, producer.send(TOPIC, key=b"k%d" % (n % 11), value=value)))
                n += 1
                time.sleep(0.005)
            producer.flush(timeout=120)
        finally:
            for value, future in pending:
                try:
                    meta = future.get(timeout=0)
                except KafkaError as exc:
                    self.failed.append(f"{value!r}: {exc}")
                else:
                    self.acked[value] = (meta.partition, meta.offset)
            producer.close(timeout=30)

    def _consume(self) -> None:
        consumer = KafkaConsumer(
            TOPIC,
            bootstrap_servers=self.bootstrap,
            group_id=GROUP,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        try:
            while not self.stop_consuming.is_set():
                batches = consumer.poll(timeout_ms=200)
                for tp, records in batches.items():
                    for r in records:
                        self.consumed.setdefault((tp.partition, r.offset), set()).add(r.value)
                if batches:
                    # A rebalance or a moving coordinator refuses it: the next poll commits.
                    with contextlib.suppress(KafkaError):
                        consumer.commit()
            consumer.commit()
        finally:
            consumer.close()

    def join(self) -> None:
        for thread in self.threads:
            thread.join(timeout=150)
            assert not thread.is_alive(), "a workload thread did not finish"
        if self.errors:
            raise self.errors[0]

    def seen(self) -> set[bytes]:
        return {v for values in self.consumed.values() for v in values}


@pytest.fixture
def millpond(tmp_path: Path) -> Iterator[EmbeddedCluster]:
    with cluster(controllers=1, brokers=2, configs=SETTINGS) as running:
        yield running


def _kafka_brokers(root: Path, running: EmbeddedCluster) -> dict[int, RunningBroker]:
    controller = running.node(1)
    meta = read_meta_properties(
        OsFileSystem(), str(Path(controller.config.log_dirs[0]) / "meta.properties")
    )
    assert meta.cluster_id is not None, "the embedded cluster's nodes are formatted"
    return {
        node_id: formatted_broker(
            root / f"kafka-{node_id}", node_id, controller.port, meta.cluster_id, config=SETTINGS
        )
        for node_id in KAFKA_IDS
    }


def _plan(path: Path) -> list[tuple[str, int, list[int]]]:
    """Every partition of the topic and of the group's offsets onto the Kafka brokers, the
    leaders spread over both."""
    moves = [
        (topic, p, list(KAFKA_IDS) if p % 2 == 0 else list(reversed(KAFKA_IDS)))
        for topic in (TOPIC, OFFSETS)
        for p in range(PARTITIONS)
    ]
    partitions = [{"topic": t, "partition": p, "replicas": r} for t, p, r in moves]
    path.write_text(json.dumps({"version": 1, "partitions": partitions}))
    return moves


def _layouts(bootstrap: str) -> dict[tuple[str, int], tuple[list[int], list[int]]]:
    """Each partition's (replicas, sorted ISR), once a Kafka broker leads it."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        described = admin.describe_topics([TOPIC, OFFSETS])
    finally:
        admin.close()
    return {
        (t["name"], p["partition_index"]): (list(p["replica_nodes"]), sorted(p["isr_nodes"]))
        for t in described
        for p in t["partitions"]
        if p["leader_id"] in KAFKA_IDS
    }


def _tool(main_class: str, *args: str) -> str:
    result = run_tool(main_class, list(args), timeout=90)
    assert result.returncode == 0, f"{main_class} {args}: {result.stdout}{result.stderr}"
    return result.stdout


def _stored(bootstrap: str) -> dict[tuple[int, int], bytes]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        stored: dict[tuple[int, int], bytes] = {}
        deadline = time.monotonic() + 60
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, "reading the topic from Kafka stalled"
            for tp, records in consumer.poll(timeout_ms=500).items():
                stored.update({(tp.partition, r.offset): r.value for r in records})
        return stored
    finally:
        consumer.close()


def test_a_millpond_cluster_moves_onto_kafka_brokers_while_clients_run(
    millpond: EmbeddedCluster, tmp_path: Path
) -> None:
    admin = KafkaAdminClient(bootstrap_servers=millpond.bootstrap_servers)
    try:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 2)])
    finally:
        admin.close()
    kafka = _kafka_brokers(tmp_path, millpond)
    workload = Workload(millpond.bootstrap_servers)
    try:
        for broker in kafka.values():
            broker.launch()  # returns once registered with millpond's controller and serving
        kafka_bootstrap = ",".join(b.bootstrap for b in kafka.values())
        workload.start()
        _until(lambda: len(workload.seen()) >= 200, "the group to read 200 records")

        moves = _plan(tmp_path / "plan.json")
        everything = f"{millpond.bootstrap_servers},{kafka_bootstrap}"
        _tool(REASSIGN, "--bootstrap-server", everything,
              "--reassignment-json-file", str(tmp_path / "plan.json"), "--execute")  # fmt: skip
        # The leader stays where it is when it is among the new replicas (a partition the
        # group's first commit created once the Kafka brokers were there may be on them).
        wanted = {(t, p): (r, sorted(r)) for t, p, r in moves}
        seen: list[object] = []

        def moved() -> bool:
            seen[:] = [_layouts(kafka_bootstrap)]
            return seen[0] == wanted

        _until(moved, lambda: f"every replica on the Kafka brokers: {wanted}, seen {seen}")
        for broker_id in millpond.brokers:
            millpond.stop(broker_id)
            _tool(CLUSTER_TOOL, "unregister", "--bootstrap-server", kafka_bootstrap,
                  "--id", str(broker_id))  # fmt: skip
        after_removal = len(workload.seen())
        _until(lambda: len(workload.seen()) >= after_removal + 200, "reads from Kafka alone")
        workload.stop_producing.set()
        for thread in workload.threads[:1]:
            thread.join(timeout=150)
        _until(lambda: set(workload.acked) <= workload.seen(), "the group to read every ack")
        workload.stop_consuming.set()
        workload.join()

        stored = _stored(kafka_bootstrap)
        lost = {v: at for v, at in workload.acked.items() if stored.get(at) != v}
        assert not lost, f"{len(lost)} acknowledged records not where acknowledged: {lost}"
        assert not workload.failed, workload.failed
        # The group read every offset, each with the value stored there, and committed the end.
        assert set(workload.consumed) == set(stored)
        changed = {at: vs for at, vs in workload.consumed.items() if vs != {stored[at]}}
        assert not changed, f"offsets read with other values than stored: {changed}"
        ends = {p: 1 + max(o for q, o in stored if q == p) for p in range(PARTITIONS)}
        assert committed_offsets(kafka_bootstrap, GROUP, TOPIC) == ends

        admin = KafkaAdminClient(bootstrap_servers=kafka_bootstrap)
        try:
            registered = {b["broker_id"] for b in admin.describe_cluster()["brokers"]}
        finally:
            admin.close()
        assert registered == set(KAFKA_IDS)
        for broker_id in millpond.brokers:
            left = [
                d.name
                for log_dir in millpond.node(broker_id).config.log_dirs
                for d in Path(log_dir).iterdir()
                # A removed replica is renamed "-delete" first, as on Kafka, and removed
                # file.delete.delay.ms later (or at the next start).
                if d.name.startswith((f"{TOPIC}-", f"{OFFSETS}-"))
                and not d.name.endswith("-delete")
            ]
            assert not left, f"millpond broker {broker_id} still holds {left}"
        assert len(workload.acked) > after_removal
    finally:
        workload.stop_producing.set()
        workload.stop_consuming.set()
        for broker in kafka.values():
            broker.stop()

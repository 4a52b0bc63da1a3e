"""Kafka's MirrorMaker 2 (connect-mirror, dedicated mode) between a millpond cluster and a
separate Apache Kafka 4.4 broker, in both directions at once, as a team moving onto Kafka (or
off it) would run it:

- millpond -> Kafka: topic ``orders`` (3 partitions, replication factor 3 on millpond) arrives
  on Kafka as ``millpond.orders`` with its partitions, its ``retention.ms`` and every record in
  order; group ``billing``'s committed offsets arrive translated, on the offsets that hold the
  same records.
- Kafka -> millpond: topic ``payments`` arrives on millpond as ``kafka.payments``; millpond
  holds MirrorMaker's Connect topics (compacted config, offsets and status topics), its
  heartbeats and checkpoints, and takes group ``audit``'s translated offsets.

Records produced while MirrorMaker runs arrive too. ACL sync is off: millpond has no
authorizer configured here, as Kafka's broker has none.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
from kafka.structs import OffsetAndMetadata

from compat_tests.admin import committed_offsets
from compat_tests.kafka.reference import RunningBroker, start_broker, start_mirror_maker
from millpond.testing.cluster import EmbeddedCluster, cluster

ORDERS, PAYMENTS = "orders", "payments"
COUNT = 300  # records per topic before MirrorMaker starts
LATE = 60  # records per topic while it runs
RETENTION_MS = "3600000"
MIRROR_TIMEOUT_S = 120.0


def _until(condition: Callable[[], bool], what: str, timeout_s: float = MIRROR_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out after {timeout_s:.0f} s waiting for {what}"
        time.sleep(0.5)


@pytest.fixture(scope="module")
def millpond() -> Iterator[EmbeddedCluster]:
    with cluster(
        controllers=1, brokers=3, offsets_topic_replication_factor=3, default_replication_factor=3
    ) as running:
        yield running


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningBroker]:
    broker = start_broker(tmp_path_factory.mktemp("mirror-target-kafka"))
    try:
        yield broker
    finally:
        broker.stop()


def _properties(millpond: str, kafka: str) -> str:
    # -1: each cluster's default.replication.factor (3 on millpond, 1 on the one Kafka broker).
    factors = [
        "replication.factor",
        "offset-syncs.topic.replication.factor",
        "checkpoints.topic.replication.factor",
        "heartbeats.topic.replication.factor",
        "offset.storage.replication.factor",
        "status.storage.replication.factor",
        "config.storage.replication.factor",
    ]
    lines = [
        "clusters = millpond, kafka",
        f"millpond.bootstrap.servers = {millpond}",
        f"kafka.bootstrap.servers = {kafka}",
        "millpond->kafka.enabled = true",
        f"millpond->kafka.topics = {ORDERS}",
        "millpond->kafka.groups = billing",
        "kafka->millpond.enabled = true",
        f"kafka->millpond.topics = {PAYMENTS}",
        "kafka->millpond.groups = audit",
        *(f"{name} = -1" for name in factors),
        "sync.topic.acls.enabled = false",
        "sync.group.offsets.enabled = true",
        "sync.group.offsets.interval.seconds = 1",
        "emit.checkpoints.interval.seconds = 1",
        "emit.heartbeats.interval.seconds = 1",
        "refresh.topics.interval.seconds = 2",
        "refresh.groups.interval.seconds = 2",
        # An offset sync for every record, so a group at the end translates exactly.
        "offset.lag.max = 0",
        "offset.flush.interval.ms = 1000",
    ]
    return "".join(line + "\n" for line in lines)


def _create(bootstrap: str, topic: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics(
            [NewTopic(topic, partitions, -1, topic_configs={"retention.ms": RETENTION_MS})]
        )
    finally:
        admin.close()


def _produce(bootstrap: str, topic: str, first: int, count: int) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    try:
        for i in range(first, first + count):
            producer.send(topic, key=f"k{i % 7}".encode(), value=f"{topic}-{i}".encode())
        producer.flush(timeout=60)
    finally:
        producer.close()


def _records(bootstrap: str, topic: str) -> dict[int, list[tuple[bytes | None, bytes | None]]]:
    """Every partition's (key, value) pairs in offset order, read to the end offsets."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        partitions = sorted(consumer.partitions_for_topic(topic) or ())
        tps = [TopicPartition(topic, p) for p in partitions]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        read: dict[int, list[tuple[bytes | None, bytes | None]]] = {p: [] for p in partitions}
        deadline = time.monotonic() + 60
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, f"reading {topic} stalled at {read}"
            for tp, batch in consumer.poll(timeout_ms=500).items():
                read[tp.partition].extend((r.key, r.value) for r in batch)
        return read
    finally:
        consumer.close()


def _count(bootstrap: str, topic: str) -> int:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    try:
        tps = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        return sum(consumer.end_offsets(tps).values()) if tps else 0
    finally:
        consumer.close()


def _until_mirrored(bootstrap: str, topic: str, records: int) -> None:
    def mirrored() -> bool:
        return topic in _topics(bootstrap) and _count(bootstrap, topic) >= records

    _until(mirrored, f"{records} records in {topic}")


def _commit_ends(bootstrap: str, topic: str, group: str) -> dict[int, int]:
    """Commit ``group`` at each partition's end, as a consumer done with the topic does."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group)
    try:
        tps = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        ends = consumer.end_offsets(tps)
        consumer.commit({tp: OffsetAndMetadata(end, "", -1) for tp, end in ends.items()})
        return {tp.partition: end for tp, end in ends.items()}
    finally:
        consumer.close()


def _topic_config(bootstrap: str, topic: str, name: str) -> str | None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        described = admin.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all"
        )
    finally:
        admin.close()
    [configs] = [found for by_name in described.values() for found in by_name.values()]
    return configs[name]["value"] if name in configs else None


def _topics(bootstrap: str) -> set[str]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        return set(admin.list_topics())
    finally:
        admin.close()


def test_mirror_maker_2_copies_topics_records_and_group_offsets_both_ways(
    millpond: EmbeddedCluster, kafka: RunningBroker, tmp_path: Path
) -> None:
    source, target = millpond.bootstrap_servers, kafka.bootstrap
    _create(source, ORDERS, 3)
    _create(target, PAYMENTS, 2)
    _produce(source, ORDERS, 0, COUNT)
    _produce(target, PAYMENTS, 0, COUNT)
    billing = _commit_ends(source, ORDERS, "billing")
    audit = _commit_ends(target, PAYMENTS, "audit")

    properties = tmp_path / "mm2.properties"
    properties.write_text(_properties(source, target))
    log = tmp_path / "mirror-maker.log"
    mirror = start_mirror_maker(properties, log)
    try:
        for at, topic, total in [
            (target, f"millpond.{ORDERS}", COUNT),
            (source, f"kafka.{PAYMENTS}", COUNT),
        ]:
            _until_mirrored(at, topic, total)
        # Live: what the source takes while MirrorMaker runs arrives too.
        _produce(source, ORDERS, COUNT, LATE)
        _produce(target, PAYMENTS, COUNT, LATE)
        for at, topic in [(target, f"millpond.{ORDERS}"), (source, f"kafka.{PAYMENTS}")]:
            _until_mirrored(at, topic, COUNT + LATE)
        # Groups: translated onto the mirrored topic, at the offsets holding the same records.
        _until(
            lambda: committed_offsets(target, "billing", f"millpond.{ORDERS}") == billing, "billing"
        )
        _until(lambda: committed_offsets(source, "audit", f"kafka.{PAYMENTS}") == audit, "audit")
        assert mirror.poll() is None, f"MirrorMaker exited {mirror.returncode}"
    except AssertionError as failure:
        raise AssertionError(f"{failure}\nMirrorMaker's log ends:\n{_tail(log)}") from None
    finally:
        mirror.terminate()
        try:
            mirror.wait(timeout=30)
        except subprocess.TimeoutExpired:
            mirror.kill()
            mirror.wait(timeout=10)

    assert _records(target, f"millpond.{ORDERS}") == _records(source, ORDERS)
    assert _records(source, f"kafka.{PAYMENTS}") == _records(target, PAYMENTS)
    assert _topic_config(target, f"millpond.{ORDERS}", "retention.ms") == RETENTION_MS
    assert _topic_config(source, f"kafka.{PAYMENTS}", "retention.ms") == RETENTION_MS
    # MirrorMaker's own topics on millpond: its Connect worker for the kafka->millpond flow
    # (the config topic must be compacted, or the worker refuses to start) and its
    # heartbeats and checkpoints.
    on_millpond = _topics(source)
    for topic in [
        "mm2-configs.kafka.internal",
        "mm2-offsets.kafka.internal",
        "mm2-status.kafka.internal",
        "heartbeats",
        "kafka.checkpoints.internal",
    ]:
        assert topic in on_millpond, f"{topic} missing on millpond: {sorted(on_millpond)}"
    assert _topic_config(source, "mm2-configs.kafka.internal", "cleanup.policy") == "compact"


def _tail(path: Path, lines: int = 60) -> str:
    text = path.read_text(errors="replace") if path.exists() else "(no log)"
    return "\n".join(text.splitlines()[-lines:])

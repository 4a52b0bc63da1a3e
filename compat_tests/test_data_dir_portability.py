"""A data directory moves between millpond and Apache Kafka 4.4 as it is: a single-node
millpond's directory (its KRaft metadata log and snapshot, the partition logs and
``__consumer_offsets``) starts a Kafka 4.4 node that serves the same topics, records and
committed group offsets, with no format step."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from compat_tests.harness import millpond_server
from compat_tests.kafka.reference import Ports, RunningBroker, kafka_classpath

pytestmark = pytest.mark.compat

TOPIC = "carried"
GROUP = "carried-group"
RECORDS = [b"record-%d" % i for i in range(30)]
COMMITTED = 17


def _write_with_millpond(work: Path, controller_port: int) -> None:
    """Topics, records and a group's committed offset, then a clean stop."""
    with millpond_server(
        work,
        "metadata.log.max.record.bytes.between.snapshots=1",
        controller_port=controller_port,
    ) as bootstrap:
        _write(bootstrap)


def _write(bootstrap: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(TOPIC, 2, 1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        for i, value in enumerate(RECORDS):
            producer.send(TOPIC, value, partition=i % 2).get(timeout=30)
    finally:
        producer.close()
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP, enable_auto_commit=False)
    try:
        consumer.assign([TopicPartition(TOPIC, 0)])
        consumer.commit({TopicPartition(TOPIC, 0): _offset_and_metadata(COMMITTED)})
    finally:
        consumer.close()


def _check_carried(bootstrap: str) -> None:
    """The records and the committed offset are there, and new writes follow them."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        consumer_timeout_ms=10_000,
        enable_auto_commit=False,
    )
    try:
        consumer.assign([TopicPartition(TOPIC, 0), TopicPartition(TOPIC, 1)])
        values = sorted(m.value for m in consumer)
    finally:
        consumer.close()
    assert values == sorted(RECORDS)
    member = KafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP)
    try:
        committed = member.committed(TopicPartition(TOPIC, 0))
    finally:
        member.close()
    assert committed == COMMITTED
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        sent = producer.send(TOPIC, b"carried-on", partition=0).get(timeout=30)
    finally:
        producer.close()
    assert sent.offset == len(RECORDS) // 2


def _offset_and_metadata(offset: int) -> object:
    from kafka.structs import OffsetAndMetadata  # noqa: PLC0415

    try:
        return OffsetAndMetadata(offset, "", -1)
    except TypeError:  # kafka-python before 2.1 had no leader epoch field
        return OffsetAndMetadata(offset, "")


def _kafka_properties(data: Path, ports: Ports, controller_port: int) -> str:
    return "\n".join(
        [
            "process.roles=broker,controller",
            "node.id=1",
            f"listeners=PLAINTEXT://127.0.0.1:{ports.plaintext},"
            f"CONTROLLER://127.0.0.1:{controller_port}",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name=PLAINTEXT",
            "controller.listener.names=CONTROLLER",
            # millpond's single node is the one voter of a static set (kraft.version 0).
            f"controller.quorum.voters=1@127.0.0.1:{controller_port}",
            f"log.dirs={data}",
            "offsets.topic.replication.factor=1",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "group.initial.rebalance.delay.ms=0",
            "",
        ]
    )


def test_kafka_starts_on_a_millpond_data_directory(tmp_path: Path) -> None:
    from compat_tests.kafka.reference import free_port  # noqa: PLC0415

    controller_port = free_port()
    _write_with_millpond(tmp_path / "millpond", controller_port)
    data = tmp_path / "millpond" / "data"
    assert list((data / "__cluster_metadata-0").glob("*.checkpoint")), "no snapshot written"

    work = tmp_path / "kafka"
    work.mkdir()
    ports = Ports.loopback()
    kafka = RunningBroker(work, ports, kafka_classpath(), 180.0, 1)
    kafka.properties.write_text(_kafka_properties(data, ports, controller_port))
    with kafka:
        kafka.launch()  # no format: the directory is millpond's
        _check_carried(f"127.0.0.1:{ports.plaintext}")


def test_millpond_starts_on_a_kafka_data_directory(tmp_path: Path) -> None:
    from compat_tests.kafka.reference import free_port, run_tool  # noqa: PLC0415

    controller_port = free_port()
    work = tmp_path / "kafka"
    work.mkdir()
    ports = Ports.loopback()
    kafka = RunningBroker(work, ports, kafka_classpath(), 180.0, 1)
    data = kafka.log_dir
    kafka.properties.write_text(_kafka_properties(data, ports, controller_port))
    formatted = run_tool(
        "kafka.tools.StorageTool",
        [
            "format",
            "--cluster-id=UG9ydGFiaWxpdHktdGVzdA",
            "-c",
            str(kafka.properties),
            # Within what millpond finalizes: metadata.version 4.1-IV1, the classic
            # group protocol, transactions v1, no eligible leader replicas (Kafka 4.4's
            # defaults are above them).
            "--release-version",
            "4.1-IV1",
            *("--feature", "group.version=0", "--feature", "transaction.version=0"),
            *("--feature", "eligible.leader.replicas.version=0"),
        ],  # fmt: skip
    )
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr
    with kafka:
        kafka.launch()
        _write(f"127.0.0.1:{ports.plaintext}")

    with millpond_server(
        tmp_path / "millpond",
        f"log.dirs={data}",
        f"controller.quorum.voters=1@127.0.0.1:{controller_port}",
        controller_port=controller_port,
    ) as bootstrap:
        _check_carried(bootstrap)

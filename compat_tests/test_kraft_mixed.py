"""millpond and Apache Kafka 4.4 in one cluster, speaking KRaft to each other: a millpond
replica follows a Kafka controller's ``__cluster_metadata`` over Kafka's own Fetch and
replays it into the metadata Kafka serves; a Kafka broker follows a millpond controller,
registers with it, is unfenced by its heartbeats, forwards admin requests to it in
Envelopes, and serves the topics created through millpond to real clients."""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic

from compat_tests.harness import millpond_server
from compat_tests.kafka.reference import (
    Ports,
    RunningBroker,
    copy_when_still,
    dump_log_segments,
    free_port,
    kafka_classpath,
    run_tool,
    start_broker,
)
from millpond.controller.controller import ControllerConfig
from millpond.controller.controller_server import ControllerServer
from millpond.controller.image import MetadataImage
from millpond.controller.metadata_log import open_metadata_log, read_image, snapshot_image
from millpond.controller.raft.config import RaftConfig
from millpond.controller.raft.keys import Endpoint, ReplicaKey, Voter, VoterSet
from millpond.controller.raft.node import Role
from millpond.controller.raft.snapshots import parse_snapshot_name, read_snapshot
from millpond.storage.checkpoints import read_meta_properties
from millpond.storage.clock import SystemClock
from millpond.storage.fs import OsFileSystem

pytestmark = pytest.mark.compat

OBSERVER_ID = 3000
KAFKA_BROKER_ID = 2


def _kafka_topic_ids(bootstrap: str, names: list[str]) -> dict[str, bytes]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, 3, 1) for name in names])
        described = admin.describe_topics(names)
    finally:
        admin.close()
    return {t["name"]: _uuid_bytes(t["topic_id"]) for t in described}


def _uuid_bytes(topic_id: object) -> bytes:
    import base64  # noqa: PLC0415
    import uuid  # noqa: PLC0415

    text = str(topic_id)
    try:
        return uuid.UUID(text).bytes
    except ValueError:
        return base64.urlsafe_b64decode(text + "==")


def test_a_millpond_observer_follows_a_kafka_controller(tmp_path: Path) -> None:
    # A Kafka node of its own: Kafka lists an observer for minutes after it stops, and the
    # session's reference broker is described as observer-free elsewhere.
    with start_broker(tmp_path / "kafka") as kafka:
        server, topic_ids = _follow(kafka, tmp_path / "observer")
    _check_followed(server, topic_ids)


def _follow(
    reference_kafka: RunningBroker, directory: Path
) -> tuple[ControllerServer, dict[str, bytes]]:
    """A millpond observer of ``reference_kafka``'s quorum, once it has the topics."""
    names = [f"mixed-observed-{i}" for i in range(3)]
    topic_ids = _kafka_topic_ids(reference_kafka.bootstrap, names)
    meta = read_meta_properties(OsFileSystem(), str(reference_kafka.log_dir / "meta.properties"))
    assert meta.cluster_id is not None
    cluster_id = meta.cluster_id
    controller = Endpoint("CONTROLLER", "127.0.0.1", reference_kafka.ports.adv_controller)

    async def follow() -> ControllerServer:
        server = ControllerServer(
            OsFileSystem(),
            str(directory),
            SystemClock(),
            random.Random(1),
            ControllerConfig(OBSERVER_ID, cluster_id),
            voters=VoterSet([Voter(ReplicaKey(1), (controller,))]),
            raft_config=RaftConfig(cluster_id=cluster_id, kraft_version=1),
            observer=True,
        )
        await server.start()
        try:
            async with asyncio.timeout(30):
                while not all(server.committed_image.topic(n) for n in names):
                    await asyncio.sleep(0.05)
        finally:
            await server.stop()
        return server

    return asyncio.run(follow()), topic_ids


def _check_followed(server: ControllerServer, topic_ids: dict[str, bytes]) -> None:
    image = server.committed_image
    for name in topic_ids:
        topic = image.topic(name)
        assert topic is not None and topic.topic_id == topic_ids[name]
        assert sorted(topic.partitions) == [0, 1, 2]
        assert all(p.leader == 1 and p.replicas == (1,) for p in topic.partitions.values())
    raft = server.raft
    assert raft.node.role is Role.FOLLOWER and raft.leader.leader_id == 1
    # Kafka's voter set came through the log: voter 1 with the directory id it formatted.
    voter = raft.node.voters.get(1)
    assert voter is not None and voter.key.directory_id is not None
    assert 1 in image.brokers and not image.brokers[1].fenced


def _kafka_broker_properties(port: int, controller_port: int, log_dir: Path) -> str:
    return "\n".join(
        [
            "process.roles=broker",
            f"node.id={KAFKA_BROKER_ID}",
            f"listeners=PLAINTEXT://127.0.0.1:{port}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name=PLAINTEXT",
            "controller.listener.names=CONTROLLER",
            # millpond's default quorum is a static voter set (kraft.version 0), named so.
            f"controller.quorum.voters=1@127.0.0.1:{controller_port}",
            f"log.dirs={log_dir}",
            "offsets.topic.replication.factor=1",
            "offsets.topic.num.partitions=1",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "group.initial.rebalance.delay.ms=0",
            "",
        ]
    )


def _formatted_kafka_broker(tmp_path: Path, controller_port: int) -> RunningBroker:
    """A Kafka broker of the millpond node's cluster in ``tmp_path/kafka``, formatted with
    the cluster id millpond wrote to ``tmp_path/millpond/data``, not started."""
    meta = read_meta_properties(
        OsFileSystem(), str(tmp_path / "millpond" / "data" / "meta.properties")
    )
    work = tmp_path / "kafka"
    work.mkdir()
    ports = Ports.loopback()
    kafka = RunningBroker(work, ports, kafka_classpath(), 120.0, 1)
    kafka.properties.write_text(
        _kafka_broker_properties(ports.plaintext, controller_port, kafka.log_dir)
    )
    formatted = run_tool(
        "kafka.tools.StorageTool",
        ["format", f"--cluster-id={meta.cluster_id}", "-c", str(kafka.properties)],
    )
    assert formatted.returncode == 0, formatted.stdout + formatted.stderr
    return kafka


def test_a_kafka_broker_registers_with_a_millpond_controller(tmp_path: Path) -> None:
    controller_port = free_port()
    with millpond_server(tmp_path / "millpond", controller_port=controller_port) as bootstrap:
        kafka = _formatted_kafka_broker(tmp_path, controller_port)
        ports = kafka.ports
        with kafka:
            kafka.launch()  # returns once registered, unfenced and serving
            admin = KafkaAdminClient(bootstrap_servers=bootstrap)
            try:
                cluster = admin.describe_cluster()
                # Created through millpond, led by the Kafka broker.
                admin.create_topics(
                    [NewTopic("on-kafka", replica_assignments={0: [KAFKA_BROKER_ID]})]
                )
            finally:
                admin.close()
            assert sorted(b["broker_id"] for b in cluster["brokers"] if not b["is_fenced"]) == [
                1,
                KAFKA_BROKER_ID,
            ]
            kafka_bootstrap = f"127.0.0.1:{ports.plaintext}"
            producer = KafkaProducer(bootstrap_servers=kafka_bootstrap, acks="all")
            try:
                for i in range(20):
                    producer.send("on-kafka", b"v%d" % i).get(timeout=30)
            finally:
                producer.close()
            values = _read(kafka_bootstrap, "on-kafka", 20)
            assert values == [b"v%d" % i for i in range(20)]
            # The data lives on the Kafka broker, in Kafka's own partition directory.
            assert (kafka.log_dir / "on-kafka-0").is_dir()
            # Its controlled shutdown completes: millpond's controller lets it go once it
            # leads nothing and the other broker (millpond's own) has applied the change.
            assert kafka.stop(timeout=30), "the Kafka broker's shutdown hung\n" + kafka.log_tail()


# -- metadata snapshots across the two implementations -----------------------------------------

#: A snapshot at every commit, so that a short test has them.
EVERY_COMMIT = "metadata.log.max.record.bytes.between.snapshots=1"


def _snapshot_files(directory: Path) -> list[Path]:
    """The ``.checkpoint`` files past Kafka's bootstrap one (offset 0), oldest first."""
    found = []
    for path in directory.glob("*.checkpoint"):
        parsed = parse_snapshot_name(path.name)
        if parsed is not None and parsed[0].offset > 0:
            found.append((parsed[0].offset, path))
    return [p for _, p in sorted(found)]


def _wait_for_snapshot(directory: Path, holds: Callable[[Path], bool]) -> Path:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for path in reversed(_snapshot_files(directory)):
            if holds(path):
                return path
        time.sleep(0.1)
    raise AssertionError(f"no snapshot in {directory} holds what was asked within 30 s")


def _snapshot_image(path: Path, cluster_id: str) -> MetadataImage:
    parsed = parse_snapshot_name(path.name)
    assert parsed is not None
    return snapshot_image(cluster_id, parsed[0], read_snapshot(path.read_bytes()).batches).image


def test_a_kafka_broker_joins_from_a_millpond_snapshot(tmp_path: Path) -> None:
    """The Kafka broker's first fetch is answered with millpond's latest snapshot id; it
    downloads the snapshot by FetchSnapshot, keeps it as its own ``.checkpoint``, and
    serves the topics it holds. Kafka's DumpLogSegments decodes millpond's snapshot."""
    controller_port = free_port()
    metadata = tmp_path / "millpond" / "data" / "__cluster_metadata-0"
    with millpond_server(
        tmp_path / "millpond", EVERY_COMMIT, controller_port=controller_port
    ) as bootstrap:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.create_topics([NewTopic("snapshotted", 2, 1)])
        finally:
            admin.close()
        meta = read_meta_properties(OsFileSystem(), str(metadata.parent / "meta.properties"))
        assert meta.cluster_id is not None
        cluster_id = meta.cluster_id
        snapshot = _wait_for_snapshot(
            metadata, lambda p: _snapshot_image(p, cluster_id).topic("snapshotted") is not None
        )
        copy = tmp_path / "copy" / "__cluster_metadata-0"
        copy.mkdir(parents=True)
        shutil.copy(snapshot, copy)
        decoded = dump_log_segments([copy / snapshot.name], "--cluster-metadata-decoder")
        assert '"name":"snapshotted"' in decoded, decoded
        assert "SnapshotHeader" in decoded and "SnapshotFooter" in decoded, decoded

        kafka = _formatted_kafka_broker(tmp_path, controller_port)
        with kafka:
            kafka.launch()  # returns once registered, unfenced and serving
            downloaded = _snapshot_files(kafka.log_dir / "__cluster_metadata-0")
            assert downloaded, "the Kafka broker replayed the log instead of the snapshot"
            # Byte for byte the snapshot millpond wrote.
            assert downloaded[0].read_bytes() == (metadata / downloaded[0].name).read_bytes()
            admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{kafka.ports.plaintext}")
            try:
                described = admin.describe_topics(["snapshotted"])
            finally:
                admin.close()
            assert [len(t["partitions"]) for t in described] == [2]


def test_millpond_reads_kafkas_snapshots_as_it_replays_kafkas_log(tmp_path: Path) -> None:
    """A snapshot Kafka 4.4 wrote loads into the image millpond builds by replaying Kafka's
    own log up to the snapshot's end."""
    names = [f"kafka-snapshotted-{i}" for i in range(3)]
    key, value = EVERY_COMMIT.split("=")
    with start_broker(tmp_path / "kafka", config={key: value}) as kafka:
        topic_ids = _kafka_topic_ids(kafka.bootstrap, names)
        metadata = kafka.log_dir / "__cluster_metadata-0"
        meta = read_meta_properties(OsFileSystem(), str(kafka.log_dir / "meta.properties"))
        assert meta.cluster_id is not None
        cluster_id = meta.cluster_id
        snapshot = _wait_for_snapshot(
            metadata,
            lambda p: all(_snapshot_image(p, cluster_id).topic(n) is not None for n in names),
        )
        copy = tmp_path / "copy" / "__cluster_metadata-0"
        copy.mkdir(parents=True)
        copy_when_still(metadata / "00000000000000000000.log", copy)
    from_snapshot = _snapshot_image(snapshot, cluster_id)
    for name, topic_id in topic_ids.items():
        topic = from_snapshot.topic(name)
        assert topic is not None and topic.topic_id == topic_id and len(topic.partitions) == 3
    parsed = parse_snapshot_name(snapshot.name)
    assert parsed is not None
    log = open_metadata_log(OsFileSystem(), str(copy.parent), SystemClock())
    try:
        assert log.end_offset >= parsed[0].offset, "the copied log ends before the snapshot"
        replayed = read_image(log, MetadataImage.empty(cluster_id), end=parsed[0].offset).image
    finally:
        log.log.close()
    for broker_id in sorted({*from_snapshot.brokers, *replayed.brokers}):
        assert from_snapshot.brokers.get(broker_id) == replayed.brokers.get(broker_id), broker_id
    assert from_snapshot == replayed


# -- replication across the two implementations: the path into Kafka --------------------------


def _layout(bootstrap: str, topic: str) -> tuple[list[int], list[int], int]:
    """(replicas, sorted ISR, leader) of ``topic``'s partition 0."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        [described] = admin.describe_topics([topic])
    finally:
        admin.close()
    [p] = described["partitions"]
    return list(p["replica_nodes"]), sorted(p["isr_nodes"]), int(p["leader_id"])


def _until_layout(bootstrap: str, topic: str, wanted: tuple[list[int], list[int], int]) -> None:
    deadline = time.monotonic() + 60
    while (seen := _layout(bootstrap, topic)) != wanted:
        assert time.monotonic() < deadline, f"{topic}: {seen}, never {wanted}"
        time.sleep(0.2)


def _read(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = KafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=10_000
    )
    try:
        return [m.value for _, m in zip(range(count), consumer, strict=False)]
    finally:
        consumer.close()


def test_partitions_move_between_millpond_and_kafka_brokers_both_ways(tmp_path: Path) -> None:
    """The migration path: a partition a millpond broker leads moves onto a Kafka broker
    (Kafka following millpond's leader, then leading), and one a Kafka broker leads gains
    a millpond replica (millpond following Kafka's leader), through Kafka's
    kafka-reassign-partitions, while an acks=all producer keeps writing."""
    controller_port = free_port()
    with millpond_server(tmp_path / "millpond", controller_port=controller_port) as bootstrap:
        kafka = _formatted_kafka_broker(tmp_path, controller_port)
        with kafka:
            kafka.launch()
            admin = KafkaAdminClient(bootstrap_servers=bootstrap)
            try:
                admin.create_topics(
                    [
                        NewTopic("to-kafka", replica_assignments={0: [1]}),
                        NewTopic("from-kafka", replica_assignments={0: [KAFKA_BROKER_ID]}),
                    ]
                )
            finally:
                admin.close()
            both = f"{bootstrap},127.0.0.1:{kafka.ports.plaintext}"
            producer = KafkaProducer(bootstrap_servers=both, acks="all", retries=10)
            try:
                for i in range(300):
                    producer.send("to-kafka", b"m%d" % i)
                    producer.send("from-kafka", b"k%d" % i)
                producer.flush(30)
                plan = tmp_path / "plan.json"
                plan.write_text(
                    json.dumps(
                        {
                            "version": 1,
                            "partitions": [
                                {
                                    "topic": "to-kafka",
                                    "partition": 0,
                                    "replicas": [KAFKA_BROKER_ID],
                                },
                                {
                                    "topic": "from-kafka",
                                    "partition": 0,
                                    "replicas": [KAFKA_BROKER_ID, 1],
                                },
                            ],
                        }
                    )
                )
                moved = run_tool(
                    "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
                    [
                        "--bootstrap-server",
                        both,
                        "--reassignment-json-file",
                        str(plan),
                        "--execute",
                    ],
                )
                assert moved.returncode == 0, moved.stdout + moved.stderr
                acked = [producer.send("to-kafka", b"m%d" % i) for i in range(300, 400)]
                for future in acked:
                    future.get(timeout=60)
            finally:
                producer.close()
            _until_layout(both, "to-kafka", ([KAFKA_BROKER_ID], [KAFKA_BROKER_ID], KAFKA_BROKER_ID))
            _until_layout(
                both, "from-kafka", ([KAFKA_BROKER_ID, 1], [1, KAFKA_BROKER_ID], KAFKA_BROKER_ID)
            )
            kafka_bootstrap = f"127.0.0.1:{kafka.ports.plaintext}"
            assert _read(kafka_bootstrap, "to-kafka", 400) == [b"m%d" % i for i in range(400)]
            assert (kafka.log_dir / "to-kafka-0").is_dir()
            # millpond's replica of from-kafka holds what Kafka's leader wrote.
            millpond_dir = tmp_path / "millpond" / "data" / "from-kafka-0"
            assert millpond_dir.is_dir()
            assert _read(both, "from-kafka", 300) == [b"k%d" % i for i in range(300)]

"""Kafka 4.4's ``kafka-reassign-partitions`` against a cluster of three millpond brokers:
it moves replicas between brokers and raises a partition's replication factor while the
records stay readable from the new replicas, verifies the moves, lists one held up by a
stopped broker, and cancels it."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from compat_tests.kafka.reference import run_tool
from millpond.broker.node import Broker
from millpond.controller.image import PartitionRegistration
from millpond.testing.cluster import EmbeddedCluster, cluster

pytestmark = pytest.mark.compat

REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
ELECT = "org.apache.kafka.tools.LeaderElectionCommand"
TOPIC = "moved"


def _until(condition: Callable[[], bool], what: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _partitions(running: EmbeddedCluster, via: int) -> dict[int, PartitionRegistration]:
    def read(broker: Broker) -> dict[int, PartitionRegistration]:
        topic = broker.image.topic(TOPIC)
        return {} if topic is None else dict(topic.partitions)

    return running.node(via).handle.call(read)


def _tool(bootstrap: str, *args: str) -> str:
    result = run_tool(REASSIGN, ["--bootstrap-server", bootstrap, *args], timeout=90)
    report = f"--- stdout\n{result.stdout}--- stderr\n{result.stderr}"
    assert result.returncode == 0, f"kafka-reassign-partitions {args} failed:\n{report}"
    return result.stdout


def _plan(path: Path, moves: Sequence[tuple[int, Sequence[int]]]) -> str:
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": TOPIC, "partition": p, "replicas": list(r)} for p, r in moves
                ],
            }
        )
    )
    return str(path)


def _read_all(bootstrap: str, partition: int, count: int) -> list[bytes]:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=10_000,
    )
    try:
        consumer.assign([TopicPartition(TOPIC, partition)])
        return [m.value for _, m in zip(range(count), consumer, strict=False)]
    finally:
        consumer.close()


def test_kafka_reassign_partitions_moves_replicas_and_raises_the_replication_factor(
    tmp_path: Path,
) -> None:
    # Small replica fetches, so that a throttled move cannot copy a partition in one.
    with cluster(controllers=1, brokers=3, replica_fetch_max_bytes=4096) as running:
        bootstrap = running.bootstrap_servers
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.create_topics([NewTopic(TOPIC, replica_assignments={0: [2, 3], 1: [2, 3]})])
        finally:
            admin.close()
        _until(lambda: len(_partitions(running, 4)) == 2, "the topic created")
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=5)
        try:
            sent = [producer.send(TOPIC, f"v{i}".encode(), partition=i % 2) for i in range(400)]
            for future in sent:
                future.get(timeout=30)
        finally:
            producer.close()

        # Partition 0 gains a replica on 4 and prefers 3; partition 1 leaves 3 for 4.
        plan = _plan(tmp_path / "plan.json", [(0, [3, 4, 2]), (1, [4, 2])])
        out = _tool(bootstrap, "--reassignment-json-file", plan, "--execute")
        assert "Successfully started partition reassignments for moved-0,moved-1" in out

        def verified() -> bool:
            out = _tool(bootstrap, "--reassignment-json-file", plan, "--verify")
            return out.count("is completed") == 2

        _until(verified, "kafka-reassign-partitions --verify to report both moves completed")
        partitions = _partitions(running, 2)
        assert (partitions[0].replicas, sorted(partitions[0].isr)) == ((3, 4, 2), [2, 3, 4])
        assert (partitions[1].replicas, sorted(partitions[1].isr)) == ((4, 2), [2, 4])
        assert not partitions[0].reassigning and not partitions[1].reassigning
        assert "No partition reassignments found." in _tool(bootstrap, "--list")
        # The preferred replicas take the lead: every record is there on them.
        out = run_tool(
            ELECT,
            [
                "--bootstrap-server",
                bootstrap,
                "--election-type",
                "PREFERRED",
                "--all-topic-partitions",
            ],
            timeout=60,
        ).stdout
        assert "Successfully completed leader election (PREFERRED) for partitions" in out, out
        _until(
            lambda: [p.leader for p in _partitions(running, 3).values()] == [3, 4],
            "the preferred leaders 3 and 4",
        )
        expected = [f"v{i}".encode() for i in range(400)]
        assert _read_all(bootstrap, 0, 200) == expected[0::2]
        assert _read_all(bootstrap, 1, 200) == expected[1::2]
        # The replica that left partition 1 is deleted from broker 3's log directory.
        log_dir = Path(running.node(3).config.log_dirs[0])
        _until(
            lambda: not (log_dir / f"{TOPIC}-1").exists(), "broker 3 to delete its moved-1 replica"
        )

        # A throttled move (1 byte/s) is held up: listed, then cancelled, and its
        # throttles cleared. Unthrottled, the same move completes.
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
        try:
            sent = [producer.send(TOPIC, bytes(100), partition=1) for _ in range(2000)]
            for future in sent:
                future.get(timeout=30)
        finally:
            producer.close()
        plan = _plan(tmp_path / "throttled.json", [(1, [4, 2, 3])])
        out = _tool(bootstrap, "--reassignment-json-file", plan, "--execute", "--throttle", "1")
        assert "The inter-broker throttle limit was set to 1 B/s" in out, out
        time.sleep(2)  # the first fetch may copy up to replica.fetch.max.bytes; no more
        listed = _tool(bootstrap, "--list")
        assert "moved-1: replicas: 4,2,3. adding: 3.\n" in listed, listed
        copied = _log_end(running, 3)
        assert 0 <= copied < 1200, (
            f"broker 3 copied {copied} of 2200 records in spite of the throttle"
        )
        out = _tool(bootstrap, "--reassignment-json-file", plan, "--cancel")
        assert "Successfully cancelled partition reassignment for: moved-1" in out, out
        _until(lambda: not _partitions(running, 2)[1].reassigning, "the cancel to apply")
        assert _partitions(running, 2)[1].replicas == (4, 2)
        assert "No partition reassignments found." in _tool(bootstrap, "--list")
        assert _throttle_configs(running) == {}
        _tool(bootstrap, "--reassignment-json-file", plan, "--execute")
        _until(lambda: _partitions(running, 2)[1].replicas == (4, 2, 3), "the unthrottled move")


def _log_end(running: EmbeddedCluster, broker: int) -> int:
    """Where broker ``broker``'s replica of moved-1 ends (-1: it has none)."""

    def read(node: Broker) -> int:
        log = node.replicas.existing_log(TOPIC, 1)
        return -1 if log is None else log.log_end_offset

    return running.node(broker).handle.call(read)


def _throttle_configs(running: EmbeddedCluster) -> dict[str, str]:
    """The throttle configs the cluster's metadata holds, of any resource."""

    def read(node: Broker) -> dict[str, str]:
        return {
            f"{resource.name}/{key}": value
            for resource, configs in node.image.configs.items()
            for key, value in configs.items()
            if "throttled" in key
        }

    return running.node(2).handle.call(read)

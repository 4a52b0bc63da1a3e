"""Kafka's metadata shell (its loader, image and ``ls``/``cat`` commands) reads millpond's metadata
log and its snapshots: the topics, their partitions and configs, the registered broker and
controller, as a single-node millpond wrote them."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from compat_tests.harness import millpond_server
from compat_tests.kafka.reference import free_port, metadata_shell
from millpond.controller.record_serde import decode_metadata_record
from millpond.wire.generated.metadata.register_controller_record import RegisterControllerRecord
from millpond.wire.records import iter_batches
from tests.cluster import rig

pytestmark = pytest.mark.compat

TOPICS = {"shell-one": 1, "shell-three": 3}


def _controller_registered(segment: Path) -> bool:
    """Whether the live node's first metadata segment holds its ControllerRegistration
    (read as bytes: the node keeps writing it)."""
    data = segment.read_bytes()
    for batch in iter_batches(data, allow_truncated_tail=True):
        if batch.is_control:
            continue
        for record in batch.records():
            if isinstance(decode_metadata_record(record.value).message, RegisterControllerRecord):
                return True
    return False


def _lines(output: str) -> set[str]:
    return {line.strip() for line in output.splitlines() if line.strip()}


@pytest.fixture(scope="module")
def metadata_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A stopped single node's ``__cluster_metadata-0``: topics created, a config set,
    and a snapshot after every commit."""
    work = tmp_path_factory.mktemp("metadata-shell")
    metadata = work / "data" / "__cluster_metadata-0"
    with millpond_server(
        work, "metadata.log.max.record.bytes.between.snapshots=1", controller_port=free_port()
    ) as bootstrap:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.create_topics(
                [
                    NewTopic(name, count, 1, topic_configs={"retention.ms": "123456"})
                    for name, count in TOPICS.items()
                ]
            )
        finally:
            admin.close()
        segment = metadata / "00000000000000000000.log"
        rig.until(lambda: _controller_registered(segment), "the controller registered")
    return metadata


def _read_from(metadata_dir: Path, kind: str) -> Path:
    if kind == "log":
        return metadata_dir / "00000000000000000000.log"
    snapshots = sorted(metadata_dir.glob("*.checkpoint"))
    assert len(snapshots) > 1, "no snapshot besides the bootstrap checkpoint"
    return snapshots[-1]


@pytest.mark.parametrize("kind", ["log", "snapshot"])
def test_the_shell_reads_topics_partitions_and_configs(metadata_dir: Path, kind: str) -> None:
    commands = [["ls", "/image/topics/byName"]]
    for name in TOPICS:
        commands += [
            ["ls", f"/image/topics/byName/{name}"],
            ["cat", f"/image/topics/byName/{name}/0"],
            ["cat", f"/image/configs/TOPIC:{name}/retention.ms"],
        ]
    topics, *outputs = metadata_shell(_read_from(metadata_dir, kind), *commands)
    assert TOPICS.keys() <= _lines(topics)
    per_topic = [outputs[i : i + 3] for i in range(0, len(outputs), 3)]
    for (name, count), (entries, partition, config) in zip(TOPICS.items(), per_topic, strict=True):
        assert _lines(entries) == {"id", "name", *(str(p) for p in range(count))}, (name, entries)
        assert "replicas=[1]" in partition and "leader=1" in partition, partition
        assert config.strip() == "123456", config


@pytest.mark.parametrize("kind", ["log", "snapshot"])
def test_the_shell_reads_the_broker_and_the_controller(metadata_dir: Path, kind: str) -> None:
    brokers, controllers = metadata_shell(
        _read_from(metadata_dir, kind),
        ["ls", "/image/cluster/brokers"],
        ["ls", "/image/cluster/controllers"],
    )
    assert _lines(brokers) == {"1"}
    assert _lines(controllers) == {"1"}

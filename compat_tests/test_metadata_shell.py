"""Kafka's metadata shell (``kafka-metadata-shell --snapshot``) reads millpond's metadata
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
    source = _read_from(metadata_dir, kind)
    assert TOPICS.keys() <= _lines(metadata_shell(source, "ls", "/image/topics/byName"))
    for name, count in TOPICS.items():
        entries = _lines(metadata_shell(source, "ls", f"/image/topics/byName/{name}"))
        assert entries == {"id", "name", *(str(p) for p in range(count))}, (name, entries)
        partition = metadata_shell(source, "cat", f"/image/topics/byName/{name}/0")
        assert "replicas=[1]" in partition and "leader=1" in partition, partition
        config = metadata_shell(source, "cat", f"/image/configs/TOPIC:{name}/retention.ms")
        assert config.strip() == "123456", config


@pytest.mark.parametrize("kind", ["log", "snapshot"])
def test_the_shell_reads_the_broker_and_the_controller(metadata_dir: Path, kind: str) -> None:
    source = _read_from(metadata_dir, kind)
    assert _lines(metadata_shell(source, "ls", "/image/cluster/brokers")) == {"1"}
    assert _lines(metadata_shell(source, "ls", "/image/cluster/controllers")) == {"1"}

"""kafka-python's KafkaAdminClient against the broker, end to end: what it does against
Kafka must succeed here too."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from kafka.admin import (
    ConfigResource,
    ConfigResourceType,
    KafkaAdminClient,
    NewPartitions,
    NewTopic,
)
from kafka.errors import InvalidReplicationFactorError, TopicAlreadyExistsError
from kafka.structs import TopicPartition

from millpond.broker.node import Broker
from millpond.wire.records import NewRecord, build_batch

from .harness import running_broker


@contextmanager
def _admin() -> Iterator[tuple[Broker, KafkaAdminClient]]:
    with running_broker() as broker:
        admin = KafkaAdminClient(
            bootstrap_servers=f"127.0.0.1:{broker.port}", request_timeout_ms=10_000
        )
        try:
            yield broker, admin
        finally:
            admin.close()


def test_create_topics_with_configs_and_validate_only() -> None:
    with _admin() as (broker, admin):
        topic = NewTopic("orders", 3, 1, topic_configs={"retention.ms": "60000"})
        admin.create_topics([topic], validate_only=True)
        assert broker.image.topic("orders") is None
        admin.create_topics([topic])
        created = broker.image.topic("orders")
        assert created is not None and len(created.partitions) == 3
        assert broker.image.topic_config("orders") == {"retention.ms": "60000"}
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([topic])
        with pytest.raises(InvalidReplicationFactorError):
            admin.create_topics([NewTopic("wide", 1, 3)])
        assert "orders" in admin.list_topics()


def test_describe_and_alter_configs() -> None:
    with _admin() as (broker, admin):
        admin.create_topics([NewTopic("t", 1, 1, topic_configs={"retention.ms": "60000"})])
        described = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "t")])
        assert described["topic"]["t"]["retention.ms"]["value"] == "60000"
        # kafka-python picks IncrementalAlterConfigs (SET) when the broker offers it...
        admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, "t", configs={"segment.ms": "3600000"})]
        )
        assert broker.image.topic_config("t") == {"retention.ms": "60000", "segment.ms": "3600000"}
        # ...and the legacy AlterConfigs when asked to (it re-sends the other modified keys
        # it describes first, as that API replaces the whole set).
        admin.alter_configs(
            [ConfigResource(ConfigResourceType.TOPIC, "t", configs={"segment.ms": "7200000"})],
            incremental=False,
        )
        assert broker.image.topic_config("t") == {"retention.ms": "60000", "segment.ms": "7200000"}
        everything = admin.describe_configs(
            [
                ConfigResource(ConfigResourceType.TOPIC, "t"),
                ConfigResource(ConfigResourceType.BROKER, str(broker.node_id)),
            ],
            include_synonyms=True,
            config_filter="all",
        )
        assert everything["topic"]["t"]["cleanup.policy"]["value"] == "delete"
        assert everything["broker"][str(broker.node_id)]["num.partitions"]["value"] == "1"


def test_create_partitions_delete_records_and_delete_topics() -> None:
    with _admin() as (broker, admin):
        admin.create_topics([NewTopic("t", 1, 1)])
        admin.create_partitions({"t": NewPartitions(3)})
        topic = broker.image.topic("t")
        assert topic is not None and len(topic.partitions) == 3
        batch = build_batch([NewRecord(value=b"v%d" % i) for i in range(4)])
        assert broker.replicas.append(topic, 0, memoryview(batch)).error == 0
        result = admin.delete_records({TopicPartition("t", 0): 2})
        assert result[TopicPartition("t", 0)]["low_watermark"] == 2
        admin.delete_topics(["t"])
        assert broker.image.topic("t") is None
        assert broker.log_manager.partitions() == []


def test_describe_cluster_and_log_dirs() -> None:
    with _admin() as (broker, admin):
        admin.create_topics([NewTopic("t", 2, 1)])
        cluster = admin.describe_cluster()
        assert cluster["cluster_id"] == broker.cluster_id
        assert cluster["controller_id"] == broker.node_id
        assert [b["broker_id"] for b in cluster["brokers"]] == [broker.node_id]
        [per_broker] = admin.describe_log_dirs()
        [log_dir] = per_broker["log_dirs"]
        assert log_dir["log_dir"] == broker.data_dir
        assert [p["partition_index"] for p in log_dir["topics"][0]["partitions"]] == [0, 1]

"""CreateTopics, DeleteTopics and CreatePartitions through the real server, with the
wire client: results, Kafka's error codes, and the logs they create and remove."""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from millpond.broker.config import build_config
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api import create_partitions_request as cp
from millpond.wire.generated.api import create_topics_request as ct
from millpond.wire.generated.api import delete_topics_request as dt
from millpond.wire.primitives import ZERO_UUID

from .harness import Client, running_broker


def _create(
    client: Client, *topics: ct.CreatableTopic, version: int = 7, validate_only: bool = False
) -> Any:
    request = ct.CreateTopicsRequest(topics=list(topics), validate_only=validate_only)
    return client.request(request, version)[1]


def _topic(name: str, partitions: int = 1, rf: int = 1, **configs: str) -> ct.CreatableTopic:
    return ct.CreatableTopic(
        name=name,
        num_partitions=partitions,
        replication_factor=rf,
        configs=[
            ct.CreatableTopicConfig(name=k.replace("_", "."), value=v) for k, v in configs.items()
        ],
    )


def test_create_topics_v7_returns_counts_configs_and_id() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        [result] = _create(client, _topic("orders", 3, retention_ms="1000")).topics
        assert result.error_code == ErrorCode.NONE and result.error_message is None
        assert (result.num_partitions, result.replication_factor) == (3, 1)
        topic = broker.image.topic("orders")
        assert topic is not None and result.topic_id == topic.topic_id != ZERO_UUID
        configs = {c.name: c for c in result.configs}
        assert [c.name for c in result.configs] == sorted(configs)
        assert (configs["retention.ms"].value, configs["retention.ms"].config_source) == ("1000", 1)
        assert configs["cleanup.policy"].value == "delete"
        assert configs["cleanup.policy"].config_source == 5  # DEFAULT_CONFIG
        # The partitions' logs exist at once.
        assert broker.log_manager.partitions() == [("orders", 0), ("orders", 1), ("orders", 2)]


def test_create_topics_v4_has_no_v5_fields_and_validate_only_creates_nothing() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        [result] = _create(client, _topic("a", 2), version=4, validate_only=True).topics
        assert result.error_code == ErrorCode.NONE
        assert broker.image.topic("a") is None and broker.log_manager.partitions() == []
        [result] = _create(client, _topic("a", 2), version=5, validate_only=True).topics
        assert (result.num_partitions, result.replication_factor) == (2, 1)
        assert broker.image.topic("a") is None


def test_create_topics_errors_as_kafka() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        _create(client, _topic("exists"))
        answer = _create(
            client,
            _topic("exists"),
            _topic("dup"),
            _topic("dup"),
            _topic("bad name!"),
            _topic("rf", 1, rf=3),
            _topic("cfg", 1, no_such_config="1"),
            _topic("val", 1, retention_ms="abc"),
            _topic("__cluster_metadata"),
            _topic("zero", 0),
        )
        codes = {t.name: (t.error_code, t.error_message) for t in answer.topics}
        assert codes["exists"][0] == ErrorCode.TOPIC_ALREADY_EXISTS
        assert codes["dup"] == (ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
        assert codes["bad name!"][0] == ErrorCode.INVALID_TOPIC_EXCEPTION
        assert codes["rf"][0] == ErrorCode.INVALID_REPLICATION_FACTOR
        assert "only 1 broker(s) are registered" in (codes["rf"][1] or "")
        assert codes["cfg"][0] == ErrorCode.INVALID_CONFIG
        assert codes["val"][0] == ErrorCode.INVALID_CONFIG
        assert codes["__cluster_metadata"][0] == ErrorCode.INVALID_REQUEST
        assert codes["zero"][0] == ErrorCode.INVALID_PARTITIONS
        assert len(answer.topics) == 8  # one result for the duplicated name
        failed = [t for t in answer.topics if t.name == "rf"][0]
        assert (failed.num_partitions, failed.replication_factor, failed.configs) == (-1, -1, [])
        assert sorted(broker.image.topic_ids_by_name) == ["exists"]


def test_create_topics_with_an_explicit_assignment() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        assigned = ct.CreatableTopic(
            name="manual",
            num_partitions=-1,
            replication_factor=-1,
            assignments=[
                ct.CreatableReplicaAssignment(partition_index=i, broker_ids=[broker.node_id])
                for i in range(2)
            ],
        )
        [result] = _create(client, assigned).topics
        assert result.error_code == ErrorCode.NONE and result.num_partitions == 2
        stranger = ct.CreatableTopic(
            name="stranger",
            num_partitions=-1,
            replication_factor=-1,
            assignments=[ct.CreatableReplicaAssignment(partition_index=0, broker_ids=[42])],
        )
        [result] = _create(client, stranger).topics
        assert result.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT


def _delete(client: Client, version: int, **kw: Any) -> Any:
    return client.request(dt.DeleteTopicsRequest(**kw), version)[1]


def test_delete_topics_by_name_removes_the_logs() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        _create(client, _topic("gone", 2), _topic("kept"))
        answer = _delete(client, 5, topic_names=["gone", "missing"])
        codes = {r.name: (r.error_code, r.error_message) for r in answer.responses}
        assert codes == {
            "gone": (ErrorCode.NONE, None),
            "missing": (
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION.message,
            ),
        }
        assert broker.image.topic("gone") is None
        assert broker.log_manager.partitions() == [("kept", 0)]


def test_a_deleted_topics_files_go_after_the_brokers_delay() -> None:
    """As Kafka's kafka-delete-logs task: the broker's file.delete.delay.ms (not the
    topic's, nor the next retention pass five minutes later) decides when they go."""
    config, _ = build_config({"log.segment.delete.delay.ms": "200"})
    with running_broker(config=config) as broker:
        client = Client(broker.port)
        _create(client, _topic("gone", 2, file_delete_delay_ms="3600000"))
        _delete(client, 5, topic_names=["gone"])
        doomed = [n for n in os.listdir(broker.data_dir) if n.endswith("-delete")]
        assert len(doomed) == 2
        deadline = time.monotonic() + 30
        while doomed and time.monotonic() < deadline:
            time.sleep(0.02)  # polls a real condition, bounded
            doomed = [n for n in os.listdir(broker.data_dir) if n.endswith("-delete")]
        assert doomed == []


def test_delete_topics_v6_by_id_and_its_errors() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        _create(client, _topic("by-id"), _topic("both"), _topic("twice"))
        topic = broker.image.topic("by-id")
        assert topic is not None
        unknown = bytes(range(16))
        both = broker.image.topic_ids_by_name["both"]
        answer = _delete(
            client,
            6,
            topics=[
                dt.DeleteTopicState(name=None, topic_id=topic.topic_id),
                dt.DeleteTopicState(name=None, topic_id=unknown),
                dt.DeleteTopicState(name="both", topic_id=both),
                dt.DeleteTopicState(name=None, topic_id=ZERO_UUID),
                dt.DeleteTopicState(name="twice", topic_id=ZERO_UUID),
                dt.DeleteTopicState(name="twice", topic_id=ZERO_UUID),
            ],
        )
        by_id = {(r.name, r.topic_id): r.error_code for r in answer.responses}
        assert by_id[("by-id", topic.topic_id)] == ErrorCode.NONE
        assert by_id[(None, unknown)] == ErrorCode.UNKNOWN_TOPIC_ID
        assert by_id[("both", both)] == ErrorCode.INVALID_REQUEST
        assert by_id[(None, ZERO_UUID)] == ErrorCode.INVALID_REQUEST
        assert by_id[("twice", ZERO_UUID)] == ErrorCode.INVALID_REQUEST
        assert len(answer.responses) == 5
        assert sorted(broker.image.topic_ids_by_name) == ["both", "twice"]


def test_delete_topics_refused_when_deletion_is_disabled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        _create(client, _topic("t"))
        config, _ = build_config({"delete.topic.enable": "false"}, env={})
        monkeypatch.setattr(broker, "config", config, raising=False)
        answer = _delete(client, 5, topic_names=["t"])
        assert [r.error_code for r in answer.responses] == [ErrorCode.TOPIC_DELETION_DISABLED]
        answer = _delete(client, 2, topic_names=["t"])
        assert [r.error_code for r in answer.responses] == [ErrorCode.INVALID_REQUEST]
        assert broker.image.topic("t") is not None


def _grow(client: Client, *topics: cp.CreatePartitionsTopic, validate_only: bool = False) -> Any:
    request = cp.CreatePartitionsRequest(topics=list(topics), validate_only=validate_only)
    return client.request(request, 3)[1]


def test_create_partitions_returns_a_result_per_topic() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        _create(client, _topic("grow", 1), _topic("same", 2))
        answer = _grow(
            client,
            cp.CreatePartitionsTopic(name="grow", count=3, assignments=None),
            cp.CreatePartitionsTopic(name="same", count=2, assignments=None),
            cp.CreatePartitionsTopic(name="missing", count=2, assignments=None),
            cp.CreatePartitionsTopic(name="dup", count=2, assignments=None),
            cp.CreatePartitionsTopic(name="dup", count=3, assignments=None),
        )
        codes = {r.name: r.error_code for r in answer.results}
        assert codes == {
            "dup": ErrorCode.INVALID_REQUEST,
            "grow": ErrorCode.NONE,
            "same": ErrorCode.INVALID_PARTITIONS,
            "missing": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
        assert len(answer.results) == 4
        grown = broker.image.topic("grow")
        assert grown is not None and sorted(grown.partitions) == [0, 1, 2]
        assert ("grow", 2) in broker.log_manager.partitions()


def test_create_partitions_validate_only_and_assignments() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        _create(client, _topic("t", 1))
        [r] = _grow(
            client,
            cp.CreatePartitionsTopic(name="t", count=4, assignments=None),
            validate_only=True,
        ).results
        assert r.error_code == ErrorCode.NONE
        topic = broker.image.topic("t")
        assert topic is not None and len(topic.partitions) == 1
        wrong = [cp.CreatePartitionsAssignment(broker_ids=[broker.node_id])]
        [r] = _grow(client, cp.CreatePartitionsTopic(name="t", count=3, assignments=wrong)).results
        assert r.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
        right = wrong * 2
        [r] = _grow(client, cp.CreatePartitionsTopic(name="t", count=3, assignments=right)).results
        assert r.error_code == ErrorCode.NONE

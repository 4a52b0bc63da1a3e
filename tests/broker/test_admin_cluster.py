"""DeleteRecords, DescribeLogDirs, DescribeCluster, DescribeTopicPartitions,
DescribeProducers and UpdateFeatures through the real server."""

from __future__ import annotations

from typing import Any

from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api import create_topics_request as ct
from millpond.wire.generated.api import delete_records_request as dr
from millpond.wire.generated.api import describe_cluster_request as dcl
from millpond.wire.generated.api import describe_log_dirs_request as dld
from millpond.wire.generated.api import describe_producers_request as dp
from millpond.wire.generated.api import describe_topic_partitions_request as dtp
from millpond.wire.generated.api import update_features_request as uf
from millpond.wire.records import NewRecord, build_batch

from .harness import Client, running_broker


def _make_topic(
    client: Client, name: str, partitions: int = 1, configs: dict[str, str] | None = None
) -> None:
    topic = ct.CreatableTopic(
        name=name,
        num_partitions=partitions,
        replication_factor=1,
        configs=[ct.CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()],
    )
    [result] = client.request(ct.CreateTopicsRequest(topics=[topic]), 7)[1].topics
    assert result.error_code == ErrorCode.NONE


def _fill(broker: Any, name: str, count: int) -> None:
    """Append to partition 0 directly (no request is in flight meanwhile)."""
    topic = broker.image.topic(name)
    for i in range(count):
        batch = build_batch([NewRecord(key=b"k", value=b"v%d" % i, timestamp=1_000 + i)])
        result = broker.replicas.append(topic, 0, memoryview(batch))
        assert result.error == ErrorCode.NONE


def _delete_records(client: Client, name: str, *offsets: tuple[int, int]) -> list[Any]:
    request = dr.DeleteRecordsRequest(
        topics=[
            dr.DeleteRecordsTopic(
                name=name,
                partitions=[
                    dr.DeleteRecordsPartition(partition_index=p, offset=o) for p, o in offsets
                ],
            )
        ]
    )
    [topic] = client.request(request, 2)[1].topics
    partitions: list[Any] = topic.partitions
    return partitions


def test_delete_records_moves_the_log_start_offset() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        _make_topic(client, "t")
        _fill(broker, "t", 5)
        [r] = _delete_records(client, "t", (0, 3))
        assert (r.error_code, r.low_watermark) == (ErrorCode.NONE, 3)
        log = broker.log_manager.get_log("t", 0)
        assert log is not None and log.log_start_offset == 3
        [r] = _delete_records(client, "t", (0, 1))  # below the start: nothing changes
        assert (r.error_code, r.low_watermark) == (ErrorCode.NONE, 3)
        [r] = _delete_records(client, "t", (0, -1))  # -1: the high watermark
        assert (r.error_code, r.low_watermark) == (ErrorCode.NONE, 5)


def test_delete_records_errors_as_kafka() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        _make_topic(client, "t")
        _make_topic(client, "compacted", configs={"cleanup.policy": "compact"})
        _fill(broker, "t", 2)
        results = _delete_records(client, "t", (0, 3), (0, -5), (7, 0))
        assert [(r.error_code, r.low_watermark) for r in results] == [
            (ErrorCode.OFFSET_OUT_OF_RANGE, -1),
            (ErrorCode.OFFSET_OUT_OF_RANGE, -1),
            (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1),
        ]
        [r] = _delete_records(client, "missing", (0, 0))
        assert r.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        [r] = _delete_records(client, "compacted", (0, 0))
        assert r.error_code == ErrorCode.POLICY_VIOLATION


def test_describe_log_dirs_lists_partitions_and_space() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        _make_topic(client, "a", 2)
        _make_topic(client, "b")
        _fill(broker, "a", 3)
        answer = client.request(dld.DescribeLogDirsRequest(topics=None), 5)[1]
        assert answer.error_code == ErrorCode.NONE
        [result] = answer.results
        assert result.error_code == ErrorCode.NONE and result.log_dir == broker.data_dir
        assert result.total_bytes > 0 and 0 <= result.usable_bytes <= result.total_bytes
        assert result.is_cordoned is False
        sizes = {(t.name, p.partition_index): p for t in result.topics for p in t.partitions}
        assert sorted(sizes) == [("a", 0), ("a", 1), ("b", 0)]
        log = broker.log_manager.get_log("a", 0)
        assert log is not None and sizes[("a", 0)].partition_size == log.size > 0
        assert all(p.offset_lag == 0 and not p.is_future_key for p in sizes.values())
        some = dld.DescribeLogDirsRequest(
            topics=[dld.DescribableLogDirTopic(topic="a", partitions=[1, 9])]
        )
        [result] = client.request(some, 3)[1].results
        assert [(t.name, [p.partition_index for p in t.partitions]) for t in result.topics] == [
            ("a", [1])
        ]
        [result] = client.request(dld.DescribeLogDirsRequest(topics=[]), 1)[1].results
        assert result.topics == []


def test_describe_cluster() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        answer = client.request(dcl.DescribeClusterRequest(), 2)[1]
        assert answer.error_code == ErrorCode.NONE
        assert (answer.cluster_id, answer.controller_id) == (broker.cluster_id, broker.node_id)
        assert answer.endpoint_type == 1
        [b] = answer.brokers
        assert (b.broker_id, b.host, b.port, b.is_fenced) == (
            broker.node_id,
            "127.0.0.1",
            broker.port,
            False,
        )
        assert answer.cluster_authorized_operations == -(2**31)
        ops = client.request(
            dcl.DescribeClusterRequest(include_cluster_authorized_operations=True), 0
        )
        assert ops[1].cluster_authorized_operations == 0b1_1111_1010_0000
        wrong = client.request(dcl.DescribeClusterRequest(endpoint_type=2), 1)[1]
        assert wrong.error_code == ErrorCode.MISMATCHED_ENDPOINT_TYPE
        bad = client.request(dcl.DescribeClusterRequest(endpoint_type=7), 1)[1]
        assert bad.error_code == ErrorCode.UNSUPPORTED_ENDPOINT_TYPE


def _dtp(client: Client, names: list[str], limit: int = 2000, cursor: Any = None) -> Any:
    request = dtp.DescribeTopicPartitionsRequest(
        topics=[dtp.TopicRequest(name=n) for n in names],
        response_partition_limit=limit,
        cursor=cursor,
    )
    return client.request(request, 0)[1]


def test_describe_topic_partitions_pages_with_a_cursor() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        _make_topic(client, "a", 3)
        _make_topic(client, "b", 2)
        first = _dtp(client, [], limit=2)
        assert [(t.name, [p.partition_index for p in t.partitions]) for t in first.topics] == [
            ("a", [0, 1])
        ]
        assert (first.next_cursor.topic_name, first.next_cursor.partition_index) == ("a", 2)
        cursor = dtp.Cursor(topic_name="a", partition_index=2)
        second = _dtp(client, [], limit=2, cursor=cursor)
        assert [(t.name, len(t.partitions)) for t in second.topics] == [("a", 1), ("b", 1)]
        assert (second.next_cursor.topic_name, second.next_cursor.partition_index) == ("b", 1)
        everything = _dtp(client, ["b", "missing", "a"])
        assert [(t.name, t.error_code) for t in everything.topics] == [
            ("a", 0),
            ("b", 0),
            ("missing", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ]
        assert everything.next_cursor is None
        a = everything.topics[0]
        topic = broker.image.topic("a")
        assert topic is not None and a.topic_id == topic.topic_id
        assert a.partitions[0].leader_id == broker.node_id
        refused = _dtp(client, ["b"], cursor=dtp.Cursor(topic_name="a", partition_index=0))
        assert [t.error_code for t in refused.topics] == [ErrorCode.INVALID_REQUEST]


def test_describe_producers() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        _make_topic(client, "t")
        request = dp.DescribeProducersRequest(
            topics=[
                dp.TopicRequest(name="t", partition_indexes=[0, 5]),
                dp.TopicRequest(name="missing", partition_indexes=[0]),
            ]
        )
        t, missing = client.request(request, 0)[1].topics
        assert [(p.partition_index, p.error_code) for p in t.partitions] == [
            (0, ErrorCode.NONE),
            (5, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ]
        assert t.partitions[0].active_producers == []
        assert [p.error_code for p in missing.partitions] == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]


def _update(
    client: Client, version: int, *updates: tuple[str, int, int], validate: bool = False
) -> Any:
    request = uf.UpdateFeaturesRequest(
        feature_updates=[
            uf.FeatureUpdateKey(feature=f, max_version_level=level, upgrade_type=kind)
            for f, level, kind in updates
        ],
        validate_only=validate,
    )
    return client.request(request, version)[1]


def test_update_features() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        level = broker.image.features["metadata.version"]
        answer = _update(client, 1, ("metadata.version", level, 1), validate=True)
        assert answer.error_code == ErrorCode.NONE
        assert [(r.feature, r.error_code, r.error_message) for r in answer.results] == [
            ("metadata.version", 0, "NONE")
        ]
        answer = _update(client, 2, ("metadata.version", level, 1))
        assert (answer.error_code, answer.results) == (ErrorCode.NONE, [])
        # All or nothing: one bad update fails the request and changes nothing.
        answer = _update(client, 1, ("metadata.version", level - 1, 2), ("no.such", 1, 1))
        assert answer.error_code == ErrorCode.INVALID_UPDATE_VERSION and answer.results == []
        assert answer.error_message.startswith("The update failed for all features")
        assert broker.image.features["metadata.version"] == level


def test_describe_producers_lists_an_idempotent_producer() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        _make_topic(client, "t")
        topic = broker.image.topic("t")
        assert topic is not None
        batch = build_batch(
            [NewRecord(value=b"a", timestamp=5_000), NewRecord(value=b"b", timestamp=5_001)],
            producer_id=42,
            producer_epoch=3,
            base_sequence=0,
        )
        assert broker.replicas.append(topic, 0, memoryview(batch)).error == ErrorCode.NONE
        request = dp.DescribeProducersRequest(
            topics=[dp.TopicRequest(name="t", partition_indexes=[0])]
        )
        [t] = client.request(request, 0)[1].topics
        [p] = t.partitions
        assert p.error_code == ErrorCode.NONE
        [state] = p.active_producers
        assert (state.producer_id, state.producer_epoch, state.last_sequence) == (42, 3, 1)
        assert (state.last_timestamp, state.current_txn_start_offset) == (5_001, -1)

"""The differential sequences: each a function of a :class:`Session`, run once against Apache
Kafka 4.4 and once against millpond (see runner.py). Error paths come first in each.

Conventions: topic names go through ``s.topic(...)``; every created topic is waited for
(``create`` does it) so the next step sees it led on either broker; record timestamps are fixed
(``TS``) so batches and timestamp lookups are the same on both sides.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from compat_tests.differential.runner import SequenceFn, Session
from millpond.wire.generated.api.alter_configs_request import (
    AlterableConfig as AlterConfigsEntry,
)
from millpond.wire.generated.api.alter_configs_request import (
    AlterConfigsRequest,
)
from millpond.wire.generated.api.alter_configs_request import (
    AlterConfigsResource as AlterConfigsRes,
)
from millpond.wire.generated.api.api_versions_request import ApiVersionsRequest
from millpond.wire.generated.api.create_partitions_request import (
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from millpond.wire.generated.api.create_topics_request import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from millpond.wire.generated.api.delete_records_request import (
    DeleteRecordsPartition,
    DeleteRecordsRequest,
    DeleteRecordsTopic,
)
from millpond.wire.generated.api.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from millpond.wire.generated.api.describe_cluster_request import DescribeClusterRequest
from millpond.wire.generated.api.describe_configs_request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from millpond.wire.generated.api.describe_log_dirs_request import (
    DescribableLogDirTopic,
    DescribeLogDirsRequest,
)
from millpond.wire.generated.api.describe_producers_request import (
    DescribeProducersRequest,
)
from millpond.wire.generated.api.describe_producers_request import (
    TopicRequest as ProducersTopic,
)
from millpond.wire.generated.api.describe_topic_partitions_request import (
    Cursor,
    DescribeTopicPartitionsRequest,
)
from millpond.wire.generated.api.describe_topic_partitions_request import (
    TopicRequest as DtpTopic,
)
from millpond.wire.generated.api.elect_leaders_request import ElectLeadersRequest
from millpond.wire.generated.api.elect_leaders_request import (
    TopicPartitions as ElectTopicPartitions,
)
from millpond.wire.generated.api.fetch_request import FetchPartition, FetchRequest, FetchTopic
from millpond.wire.generated.api.find_coordinator_request import FindCoordinatorRequest
from millpond.wire.generated.api.incremental_alter_configs_request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)
from millpond.wire.generated.api.init_producer_id_request import InitProducerIdRequest
from millpond.wire.generated.api.list_config_resources_request import (
    ListConfigResourcesRequest,
)
from millpond.wire.generated.api.list_offsets_request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from millpond.wire.generated.api.metadata_request import MetadataRequest, MetadataRequestTopic
from millpond.wire.generated.api.offset_for_leader_epoch_request import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from millpond.wire.generated.api.produce_request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from millpond.wire.message import uuid_from_str
from millpond.wire.records.batch import CRC_OFFSET
from millpond.wire.records.builder import NewRecord, build_batch

TS = 1_700_000_000_000  # record timestamps: fixed, so both brokers store the same bytes
UNKNOWN_ID = uuid_from_str("AAAAAAAAAAAAAAAAAAAAAQ")  # a topic id no broker has
TOPIC = 2  # config resource types
BROKER = 4
SEQUENCES: dict[str, SequenceFn] = {}


def sequence(fn: SequenceFn) -> SequenceFn:
    SEQUENCES[fn.__name__.replace("_", "-")] = fn
    return fn


# --- helpers ---------------------------------------------------------------------------------


def batch(
    count: int = 1,
    *,
    first: int = 0,
    value_size: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    base_offset: int = 0,
) -> bytes:
    """A v2 batch of ``count`` records numbered from ``first`` (timestamps TS + i s)."""
    records = [
        NewRecord(
            key=f"k{i}".encode(),
            value=f"v{i}".encode() + b"x" * value_size,
            headers=[("h", f"{i}".encode())],
            timestamp=TS + i * 1000,
        )
        for i in range(first, first + count)
    ]
    return build_batch(
        records,
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
    )


def create(
    s: Session,
    name: str,
    partitions: int = 1,
    configs: dict[str, str] | None = None,
    *,
    version: int = 7,
    label: str = "create",
) -> dict[str, Any]:
    """CreateTopics for one topic (recorded), then wait until it is led."""
    topic = CreatableTopic(
        name=s.topic(name),
        num_partitions=partitions,
        replication_factor=1,
        configs=[CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()],
    )
    data = s.send(CreateTopicsRequest(topics=[topic], timeout_ms=30000), version, label)
    s.wait_for_topic(s.topic(name), partitions)
    return data


def create_quiet(s: Session, name: str, partitions: int = 1, **configs: str) -> Any:
    """CreateTopics without recording (setup), then wait; returns the Metadata topic."""
    topic = CreatableTopic(
        name=s.topic(name),
        num_partitions=partitions,
        replication_factor=1,
        configs=[
            CreatableTopicConfig(name=k.replace("_", "."), value=v) for k, v in configs.items()
        ],
    )
    response = s.request(CreateTopicsRequest(topics=[topic], timeout_ms=30000), 7)
    assert response.topics[0].error_code == 0, response.to_data()
    ready = s.wait_for_topic(s.topic(name), partitions)
    assert ready is not None, f"{s.name}: topic {name} never became ready"
    return ready


def produce(
    s: Session,
    name: str,
    records: bytes,
    *,
    partition: int = 0,
    acks: int = -1,
    version: int = 9,
    label: str = "produce",
) -> dict[str, Any]:
    request = ProduceRequest(
        acks=acks,
        timeout_ms=30000,
        topic_data=[
            TopicProduceData(
                name=s.topic(name),
                partition_data=[PartitionProduceData(index=partition, records=records)],
            )
        ],
    )
    return s.send(request, version, label)


def fetch(
    s: Session,
    name: str,
    offset: int,
    *,
    partition: int = 0,
    version: int = 12,
    partition_max_bytes: int = 1 << 20,
    max_bytes: int = 50 << 20,
    max_wait_ms: int = 0,
    min_bytes: int = 0,
    label: str = "fetch",
    replica_id: int = -1,
    last_fetched_epoch: int = -1,
) -> dict[str, Any]:
    """A consumer's Fetch, or with ``replica_id`` (up to v14) a follower's."""
    request = FetchRequest(
        replica_id=replica_id,
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        max_bytes=max_bytes,
        session_id=0,
        session_epoch=-1,
        topics=[
            FetchTopic(
                topic=s.topic(name),
                partitions=[
                    FetchPartition(
                        partition=partition,
                        fetch_offset=offset,
                        last_fetched_epoch=last_fetched_epoch,
                        partition_max_bytes=partition_max_bytes,
                    )
                ],
            )
        ],
    )
    return s.send(request, version, label)


def metadata(
    s: Session, *names: str, version: int = 12, auto_create: bool = False, label: str = "metadata"
) -> dict[str, Any]:
    request = MetadataRequest(
        topics=[MetadataRequestTopic(name=s.topic(n)) for n in names],
        allow_auto_topic_creation=auto_create,
    )
    return s.send(request, version, label)


def list_offsets(
    s: Session,
    name: str,
    timestamps: list[int],
    version: int,
    *,
    partition: int = 0,
    current_leader_epoch: int = -1,
    label: str = "",
) -> None:
    """One ListOffsets request per target (a partition may appear once per request)."""
    for ts in timestamps:
        request = ListOffsetsRequest(
            replica_id=-1,
            topics=[
                ListOffsetsTopic(
                    name=s.topic(name),
                    partitions=[
                        ListOffsetsPartition(
                            partition_index=partition,
                            timestamp=ts,
                            current_leader_epoch=current_leader_epoch,
                        )
                    ],
                )
            ],
        )
        s.send(request, version, f"{label or 'list-offsets'} v{version} target {ts}")


def init_producer(s: Session) -> tuple[int, int]:
    """InitProducerId v4 for an idempotent producer (recorded): (producer id, epoch)."""
    data = s.send(InitProducerIdRequest(transaction_timeout_ms=60000), 4, "init-producer-id")
    return int(data["producer_id"]), int(data["producer_epoch"])


def raw_header(api_key: int, version: int, correlation_id: int, client_id: str) -> bytes:
    """A request header v1 (api key, version, correlation id, client id) built by hand."""
    cid = client_id.encode()
    return struct.pack(">hhih", api_key, version, correlation_id, len(cid)) + cid


def describe_settled(
    s: Session, name: str, expect: dict[str, str], *keys: str, label: str = ""
) -> dict[str, Any]:
    """DescribeConfigs once the broker shows ``expect``: Kafka applies a config change
    to its metadata cache a moment after the alter answers."""
    request = DescribeConfigsRequest(
        resources=[
            DescribeConfigsResource(
                resource_type=TOPIC, resource_name=s.topic(name), configuration_keys=list(keys)
            )
        ],
        include_synonyms=False,
    )

    def done(response: Any) -> bool:
        values = {c.name: c.value for r in response.results for c in r.configs}
        return all(values.get(k) == v for k, v in expect.items())

    return s.poll(request, 4, done, label or "describe-configs")


def describe_topic_configs(s: Session, name: str, *keys: str, label: str = "") -> dict[str, Any]:
    request = DescribeConfigsRequest(
        resources=[
            DescribeConfigsResource(
                resource_type=TOPIC,
                resource_name=s.topic(name),
                configuration_keys=list(keys) if keys else None,
            )
        ],
        include_synonyms=False,
    )
    return s.send(request, 4, label or "describe-configs")


# --- ApiVersions -----------------------------------------------------------------------------


@sequence
def api_versions_each_version(s: Session) -> None:
    for version in range(0, 5):
        s.send(
            ApiVersionsRequest(client_software_name="millpond-diff", client_software_version="1.0"),
            version,
        )


@sequence
def api_versions_bad_software_name(s: Session) -> None:
    s.send(ApiVersionsRequest(client_software_name="-bad-", client_software_version="1"), 3)
    s.send(ApiVersionsRequest(client_software_name="ok", client_software_version="1 0"), 3)
    s.send(ApiVersionsRequest(client_software_name="", client_software_version=""), 3)


@sequence
def api_versions_unknown_version_fallback(s: Session) -> None:
    # A client newer than the broker: ApiVersions v127 (an empty flexible body), answered
    # in the v0 body with UNSUPPORTED_VERSION (KIP-511).
    for version in (6, 127):
        cid = s.next_correlation_id()
        frame = raw_header(18, version, cid, "x") + b"\x00" + b"\x01\x01\x01\x00"
        s.send_raw(frame, 18, 0, "ApiVersions", f"ApiVersions v{version} -> v0 body")
    # ... and the client then asks again at v0.
    s.send(ApiVersionsRequest(), 0, "retry at v0")


@sequence
def unsupported_versions_close(s: Session) -> None:
    # An API version no spec has (Metadata v99), a Produce below what Kafka 4 serves (v2,
    # advertised only for old librdkafka) and an unknown API key: the connection closes.
    for api_key, version, label in (
        (3, 99, "Metadata v99"),
        (0, 2, "Produce v2"),
        (999, 0, "key 999"),
    ):
        cid = s.next_correlation_id()
        s.send_raw(raw_header(api_key, version, cid, "x") + b"\x00" * 16, 18, 0, "raw", label)
    s.send(ApiVersionsRequest(), 0, "a new connection still works")


# --- Metadata --------------------------------------------------------------------------------


@sequence
def metadata_unknown_topic_no_auto_create(s: Session) -> None:
    for version in (4, 9, 12, 13):
        metadata(s, "nope", version=version, auto_create=False, label=f"metadata v{version}")
    s.send(
        MetadataRequest(topics=[MetadataRequestTopic(name=s.topic("nope"))]),
        1,
        "metadata v1 (always auto-creates)",
    )
    s.wait_for_topic(s.topic("nope"))
    s.send(MetadataRequest(topics=[MetadataRequestTopic(name=s.topic("nope"))]), 1, "v1 after")


@sequence
def metadata_auto_create(s: Session) -> None:
    first = metadata(s, "auto", version=12, auto_create=True, label="first answer")
    assert first["topics"], first
    request = MetadataRequest(
        topics=[MetadataRequestTopic(name=s.topic("auto"))], allow_auto_topic_creation=True
    )
    s.poll(
        request,
        12,
        lambda r: all(
            t.error_code == 0 and t.partitions and all(p.leader_id >= 0 for p in t.partitions)
            for t in r.topics
        ),
        "stable answer",
    )
    metadata(s, "auto", version=7, label="metadata v7")


@sequence
def metadata_invalid_names(s: Session) -> None:
    for name in ("bad name", "a" * 250, ".."):
        request = MetadataRequest(
            topics=[MetadataRequestTopic(name=name if name == ".." else s.topic(name))],
            allow_auto_topic_creation=True,
        )
        s.send(request, 12, f"auto-create {name[:12]!r}")
    s.send(MetadataRequest(topics=[]), 12, "no topics")
    s.send(MetadataRequest(topics=[]), 1, "no topics v1")


@sequence
def metadata_topic_ids(s: Session) -> None:
    topic_id = create_quiet(s, "ids", 2).topic_id
    s.send(
        MetadataRequest(topics=[MetadataRequestTopic(topic_id=topic_id, name=None)]),
        12,
        "by id",
    )
    s.send(
        MetadataRequest(topics=[MetadataRequestTopic(topic_id=UNKNOWN_ID, name=None)]),
        12,
        "unknown id",
    )
    s.send(
        MetadataRequest(topics=[MetadataRequestTopic(topic_id=topic_id, name="")]),
        12,
        "by id, with an empty name too",
    )
    metadata(s, "ids", version=10, label="v10 by name")
    metadata(s, "ids", version=13, label="v13 by name")


# --- CreateTopics ----------------------------------------------------------------------------


@sequence
def create_topics_invalid_names(s: Session) -> None:
    names = ["", ".", "..", "bad/name", "bad name", "a" * 250, "__cluster_metadata"]
    request = CreateTopicsRequest(
        topics=[CreatableTopic(name=n, num_partitions=1, replication_factor=1) for n in names],
        timeout_ms=30000,
    )
    s.send(request, 7, "invalid names v7")
    s.send(request, 4, "invalid names v4")


@sequence
def create_topics_replication_and_partitions(s: Session) -> None:
    shapes = [("rf3", 1, 3), ("p0", 0, 1), ("pneg", -2, 1), ("rf0", 1, 0), ("rfneg", 1, -2)]
    request = CreateTopicsRequest(
        topics=[
            CreatableTopic(name=s.topic(n), num_partitions=p, replication_factor=r)
            for n, p, r in shapes
        ],
        timeout_ms=30000,
    )
    s.send(request, 7, "bad shapes")


@sequence
def create_topics_bad_configs(s: Session) -> None:
    cases = {
        "unknown-key": ("no.such.config", "1"),
        "bad-policy": ("cleanup.policy", "bogus"),
        "bad-number": ("retention.ms", "abc"),
        "min-isr-0": ("min.insync.replicas", "0"),
        "bad-bool": ("unclean.leader.election.enable", "maybe"),
        "null-value": ("retention.ms", None),
        "bad-ts-type": ("message.timestamp.type", "Whenever"),
    }
    request = CreateTopicsRequest(
        topics=[
            CreatableTopic(
                name=s.topic(name),
                num_partitions=1,
                replication_factor=1,
                configs=[CreatableTopicConfig(name=k, value=v)],
            )
            for name, (k, v) in cases.items()
        ],
        timeout_ms=30000,
    )
    s.send(request, 7, "bad configs")
    metadata(s, *cases, label="none created")


@sequence
def create_topics_validate_only(s: Session) -> None:
    topic = CreatableTopic(
        name=s.topic("vo"),
        num_partitions=3,
        replication_factor=1,
        configs=[
            CreatableTopicConfig(name="retention.ms", value="123456"),
            CreatableTopicConfig(name="cleanup.policy", value="compact"),
        ],
    )
    s.send(CreateTopicsRequest(topics=[topic], timeout_ms=30000, validate_only=True), 7, "v7")
    s.send(CreateTopicsRequest(topics=[topic], timeout_ms=30000, validate_only=True), 4, "v4")
    metadata(s, "vo", label="not created")


@sequence
def create_topics_too_many_records(s: Session) -> None:
    """Kafka's controller refuses an operation that would write more than 10,000 metadata
    records (a topic is one record, and one more per partition)."""
    big = CreatableTopic(name=s.topic("big"), num_partitions=10_000, replication_factor=1)
    halves = [
        CreatableTopic(name=s.topic(f"half{i}"), num_partitions=6_000, replication_factor=1)
        for i in (1, 2)
    ]
    s.send(CreateTopicsRequest(topics=[big], timeout_ms=30000, validate_only=True), 7, "check")
    s.send(CreateTopicsRequest(topics=[big], timeout_ms=30000), 7, "10,000 partitions")
    s.send(CreateTopicsRequest(topics=[big], timeout_ms=30000), 4, "10,000 partitions v4")
    s.send(CreateTopicsRequest(topics=halves, timeout_ms=30000, validate_only=True), 7, "halves")
    metadata(s, "big", label="not created")


@sequence
def create_topics_created_configs(s: Session) -> None:
    create(s, "made", 2, {"retention.ms": "123456", "segment.bytes": "1048576"})
    create(s, "made5", 1, version=5, label="create v5")


@sequence
def create_topics_duplicates_and_collisions(s: Session) -> None:
    dup = CreatableTopic(name=s.topic("dup"), num_partitions=1, replication_factor=1)
    s.send(CreateTopicsRequest(topics=[dup, dup], timeout_ms=30000), 7, "twice in one request")
    create(s, "a.b", version=4)
    s.send(
        CreateTopicsRequest(
            topics=[CreatableTopic(name=s.topic("a.b"), num_partitions=1, replication_factor=1)],
            timeout_ms=30000,
        ),
        7,
        "exists",
    )
    s.send(
        CreateTopicsRequest(
            topics=[CreatableTopic(name=s.topic("a_b"), num_partitions=1, replication_factor=1)],
            timeout_ms=30000,
        ),
        7,
        "collides with a.b",
    )
    s.send(
        CreateTopicsRequest(
            topics=[CreatableTopic(name=s.topic("a.b"), num_partitions=1, replication_factor=1)],
            timeout_ms=30000,
        ),
        2,
        "exists v2",
    )


@sequence
def create_topics_defaults(s: Session) -> None:
    # -1 partitions and replication factor: the broker's num.partitions (1 on both brokers)
    # and default.replication.factor.
    topic = CreatableTopic(name=s.topic("dflt"), num_partitions=-1, replication_factor=-1)
    s.send(CreateTopicsRequest(topics=[topic], timeout_ms=30000), 4, "defaults")
    s.wait_for_topic(s.topic("dflt"), 1)
    metadata(s, "dflt")


# --- DeleteTopics ----------------------------------------------------------------------------


@sequence
def delete_topics_unknown(s: Session) -> None:
    s.send(DeleteTopicsRequest(topic_names=[s.topic("nope")], timeout_ms=30000), 5, "name v5")
    s.send(DeleteTopicsRequest(topic_names=[s.topic("nope")], timeout_ms=30000), 1, "name v1")
    unknown = UNKNOWN_ID
    s.send(
        DeleteTopicsRequest(topics=[DeleteTopicState(topic_id=unknown)], timeout_ms=30000),
        6,
        "unknown id v6",
    )
    s.send(
        DeleteTopicsRequest(topics=[DeleteTopicState(name=s.topic("nope"))], timeout_ms=30000),
        6,
        "unknown name v6",
    )


@sequence
def delete_topics_by_name_and_id(s: Session) -> None:
    a_id = create_quiet(s, "del-a").topic_id
    create(s, "del-b", version=4)
    s.send(
        DeleteTopicsRequest(
            topics=[
                DeleteTopicState(name=s.topic("del-b")),
                DeleteTopicState(name=s.topic("del-b")),
            ],
            timeout_ms=30000,
        ),
        6,
        "duplicate names",
    )
    s.send(
        DeleteTopicsRequest(topics=[DeleteTopicState(topic_id=a_id)], timeout_ms=30000),
        6,
        "by id",
    )
    s.send(DeleteTopicsRequest(topic_names=[s.topic("del-b")], timeout_ms=30000), 5, "by name")
    s.wait_until_gone(s.topic("del-a"))
    s.wait_until_gone(s.topic("del-b"))
    metadata(s, "del-a", "del-b", label="gone")


# --- CreatePartitions ------------------------------------------------------------------------


@sequence
def create_partitions_errors(s: Session) -> None:
    create_quiet(s, "cp", 2)
    topics = [
        CreatePartitionsTopic(name=s.topic("cp"), count=1, assignments=None),
        CreatePartitionsTopic(name=s.topic("nope"), count=3, assignments=None),
    ]
    s.send(CreatePartitionsRequest(topics=topics, timeout_ms=30000), 3, "fewer, unknown")
    s.send(
        CreatePartitionsRequest(
            topics=[CreatePartitionsTopic(name=s.topic("cp"), count=2, assignments=None)],
            timeout_ms=30000,
        ),
        3,
        "equal",
    )
    dup = CreatePartitionsTopic(name=s.topic("cp"), count=4, assignments=None)
    s.send(CreatePartitionsRequest(topics=[dup, dup], timeout_ms=30000), 3, "twice")
    s.send(CreatePartitionsRequest(topics=[dup], timeout_ms=30000), 0, "fewer v0")


@sequence
def elect_leaders(s: Session) -> None:
    """Preferred and unclean elections where none is needed (each partition led by its
    first replica), unknown topics and partitions, an unknown election type, v0's
    implied preferred election."""
    create_quiet(s, "el", 2)
    asked = [
        ElectTopicPartitions(topic=s.topic("el"), partitions=[1, 0, 7]),
        ElectTopicPartitions(topic=s.topic("nope"), partitions=[0]),
    ]
    for kind, label in ((0, "preferred"), (1, "unclean"), (5, "unknown type")):
        request = ElectLeadersRequest(election_type=kind, topic_partitions=asked)
        s.send(request, 2, label)
    s.send(ElectLeadersRequest(election_type=1, topic_partitions=asked), 1, "unclean v1")
    s.send(ElectLeadersRequest(topic_partitions=asked[:1]), 0, "v0")
    s.send(ElectLeadersRequest(election_type=0, topic_partitions=[]), 2, "none named")


@sequence
def create_partitions_grow(s: Session) -> None:
    create_quiet(s, "grow", 1)
    empty = CreatePartitionsTopic(name=s.topic("grow"), count=3, assignments=[])
    s.send(CreatePartitionsRequest(topics=[empty], timeout_ms=30000), 3, "empty assignments")
    grow = CreatePartitionsTopic(name=s.topic("grow"), count=3, assignments=None)
    s.send(
        CreatePartitionsRequest(topics=[grow], timeout_ms=30000, validate_only=True),
        3,
        "validate only",
    )
    metadata(s, "grow", label="still 1")
    s.send(CreatePartitionsRequest(topics=[grow], timeout_ms=30000), 3, "grow to 3")
    s.wait_for_topic(s.topic("grow"), 3)
    metadata(s, "grow", label="now 3")


@sequence
def create_partitions_too_many_records(s: Session) -> None:
    """Kafka's controller bounds an operation at 10,000 metadata records (one per new
    partition) and 10,000 topic results, and fails the whole operation past either.
    Validation only, as the answers are the same and a mistake would create 10,000
    partitions."""
    for name in ("cpbig", "cpa", "cpb"):
        create_quiet(s, name, 1)
    big = CreatePartitionsTopic(name=s.topic("cpbig"), count=10_002, assignments=None)
    s.send(
        CreatePartitionsRequest(topics=[big], timeout_ms=30000, validate_only=True),
        3,
        "10,001 new",
    )
    halves = [
        CreatePartitionsTopic(name=s.topic(name), count=6_000, assignments=None)
        for name in ("cpa", "cpb")
    ]
    s.send(
        CreatePartitionsRequest(topics=halves, timeout_ms=30000, validate_only=True),
        3,
        "5,999 and 5,999 new",
    )
    ghosts = [
        CreatePartitionsTopic(name=s.topic(f"ghost{i}"), count=2, assignments=None)
        for i in range(10_001)
    ]
    s.send(
        CreatePartitionsRequest(topics=ghosts, timeout_ms=30000, validate_only=True),
        3,
        "10,001 topics",
    )
    metadata(s, "cpbig", "cpa", "cpb", label="unchanged")


# --- configs ---------------------------------------------------------------------------------


@sequence
def describe_configs_errors(s: Session) -> None:
    resources = [
        DescribeConfigsResource(resource_type=TOPIC, resource_name=s.topic("nope")),
        DescribeConfigsResource(resource_type=TOPIC, resource_name="bad name"),
        DescribeConfigsResource(resource_type=BROKER, resource_name="abc"),
        DescribeConfigsResource(resource_type=BROKER, resource_name="99"),
    ]
    for r in resources:
        s.send(
            DescribeConfigsRequest(resources=[r]),
            4,
            f"type {r.resource_type} {r.resource_name[-8:]!r}",
        )
    s.send(
        DescribeConfigsRequest(
            resources=[DescribeConfigsResource(resource_type=99, resource_name="x")]
        ),
        4,
        "unknown resource type",
    )


@sequence
def describe_configs_topic(s: Session) -> None:
    create_quiet(s, "dc", 1, retention_ms="86400000", cleanup_policy="compact")
    describe_topic_configs(s, "dc", label="all")
    describe_topic_configs(s, "dc", "retention.ms", "cleanup.policy", "no.such", label="some")
    request = DescribeConfigsRequest(
        resources=[
            DescribeConfigsResource(
                resource_type=TOPIC,
                resource_name=s.topic("dc"),
                configuration_keys=["retention.ms", "segment.bytes", "max.message.bytes"],
            )
        ],
        include_synonyms=True,
    )
    s.send(request, 4, "synonyms v4")
    s.send(request, 1, "synonyms v1")


@sequence
def describe_configs_broker_keys(s: Session) -> None:
    keys = [
        "message.max.bytes",
        "log.segment.bytes",
        "log.retention.ms",
        "compression.type",
        "group.coordinator.rebalance.protocols",  # classic on both session brokers
    ]
    for name in ("1", ""):
        request = DescribeConfigsRequest(
            resources=[
                DescribeConfigsResource(
                    resource_type=BROKER, resource_name=name, configuration_keys=keys
                )
            ]
        )
        s.send(request, 4, f"broker {name!r}")


@sequence
def incremental_alter_configs_errors(s: Session) -> None:
    create_quiet(s, "iac", 1)

    def one(configs: list[AlterableConfig], label: str, name: str = "iac") -> None:
        res = AlterConfigsResource(
            resource_type=TOPIC, resource_name=s.topic(name), configs=configs
        )
        s.send(IncrementalAlterConfigsRequest(resources=[res]), 1, label)

    one(
        [AlterableConfig(name="retention.ms", config_operation=0, value="1")],
        "unknown topic",
        "nope",
    )
    one([AlterableConfig(name="retention.ms", config_operation=2, value="1")], "append non-list")
    one([AlterableConfig(name="retention.ms", config_operation=9, value="1")], "unknown op")
    one([AlterableConfig(name="retention.ms", config_operation=0, value="abc")], "bad value")
    one([AlterableConfig(name="no.such", config_operation=0, value="1")], "unknown key")
    one([AlterableConfig(name="retention.ms", config_operation=0, value=None)], "null set")
    one(
        [
            AlterableConfig(name="retention.ms", config_operation=0, value="1"),
            AlterableConfig(name="retention.ms", config_operation=1, value=None),
        ],
        "key twice",
    )
    res = AlterConfigsResource(
        resource_type=TOPIC,
        resource_name=s.topic("iac"),
        configs=[AlterableConfig(name="retention.ms", config_operation=0, value="5000")],
    )
    s.send(IncrementalAlterConfigsRequest(resources=[res, res]), 1, "resource twice")
    s.send(IncrementalAlterConfigsRequest(resources=[res], validate_only=True), 1, "validate")
    describe_topic_configs(s, "iac", "retention.ms", label="unchanged")


@sequence
def incremental_alter_configs_apply(s: Session) -> None:
    create_quiet(s, "iac2", 1)
    ops = [
        AlterableConfig(name="retention.ms", config_operation=0, value="5000"),
        AlterableConfig(name="cleanup.policy", config_operation=2, value="compact"),
        AlterableConfig(name="segment.bytes", config_operation=1, value=None),
    ]
    res = AlterConfigsResource(resource_type=TOPIC, resource_name=s.topic("iac2"), configs=ops)
    s.send(IncrementalAlterConfigsRequest(resources=[res]), 0, "set, append, delete v0")
    keys = ("retention.ms", "cleanup.policy", "segment.bytes")
    describe_settled(s, "iac2", {"retention.ms": "5000"}, *keys)
    sub = [AlterableConfig(name="cleanup.policy", config_operation=3, value="compact")]
    res = AlterConfigsResource(resource_type=TOPIC, resource_name=s.topic("iac2"), configs=sub)
    s.send(IncrementalAlterConfigsRequest(resources=[res]), 1, "subtract")
    expect = {"cleanup.policy": "delete"}
    describe_settled(s, "iac2", expect, "cleanup.policy", label="after subtract")
    static = [AlterableConfig(name="log.dirs", config_operation=0, value="/tmp/x")]
    res = AlterConfigsResource(resource_type=BROKER, resource_name="", configs=static)
    s.send(IncrementalAlterConfigsRequest(resources=[res], validate_only=True), 1, "static broker")


@sequence
def alter_configs_errors_and_apply(s: Session) -> None:
    create_quiet(s, "ac", 1, retention_ms="5000")

    def res(name: str, **configs: str | None) -> AlterConfigsRes:
        return AlterConfigsRes(
            resource_type=TOPIC,
            resource_name=s.topic(name),
            configs=[
                AlterConfigsEntry(name=k.replace("_", "."), value=v) for k, v in configs.items()
            ],
        )

    s.send(AlterConfigsRequest(resources=[res("nope", retention_ms="1")]), 2, "unknown topic")
    s.send(AlterConfigsRequest(resources=[res("ac", no_such="1")]), 2, "unknown key")
    s.send(AlterConfigsRequest(resources=[res("ac", retention_ms="x")]), 2, "bad value")
    s.send(AlterConfigsRequest(resources=[res("ac", retention_ms=None)]), 2, "null value")
    # (A resource listed twice is not sent: Kafka 4.4 never answers that request.)
    s.send(
        AlterConfigsRequest(resources=[res("ac", segment_bytes="2000000")], validate_only=True),
        1,
        "validate only v1",
    )
    s.send(AlterConfigsRequest(resources=[res("ac", segment_bytes="2000000")]), 0, "replace v0")
    expect = {"segment.bytes": "2000000"}
    keys = ("retention.ms", "segment.bytes")
    describe_settled(s, "ac", expect, *keys, label="retention.ms reset")


# --- Produce ---------------------------------------------------------------------------------


@sequence
def produce_unknown_topic_and_partition(s: Session) -> None:
    create_quiet(s, "pu", 2)
    produce(s, "nope", batch(), label="unknown topic v9")
    produce(s, "nope", batch(), version=3, label="unknown topic v3")
    produce(s, "pu", batch(), partition=2, label="unknown partition")
    produce(s, "pu", batch(), partition=-1, label="partition -1")
    metadata(s, "nope", label="not auto-created by produce")


@sequence
def produce_invalid_acks(s: Session) -> None:
    create_quiet(s, "acks", 1)
    produce(s, "acks", batch(), acks=2, label="acks=2")
    produce(s, "acks", batch(), acks=-2, label="acks=-2")
    produce(s, "acks", batch(), acks=1, label="acks=1")
    fetch(s, "acks", 0)


@sequence
def produce_acks_all_min_isr_capped(s: Session) -> None:
    """min.insync.replicas above the replica count: the effective minimum is capped at
    the replica count, so a single-replica partition takes acks=all."""
    create_quiet(s, "misr", 1, min_insync_replicas="2")
    describe_topic_configs(s, "misr", "min.insync.replicas")
    produce(s, "misr", batch(2), label="acks=all, min.insync.replicas=2, 1 replica")
    produce(s, "misr", batch(1, first=2), acks=1, label="acks=1")
    produce(s, "misr", batch(1, first=3), version=3, label="acks=all v3")
    fetch(s, "misr", 0, label="all committed")
    list_offsets(s, "misr", [-1], 7, label="log end")


@sequence
def fetch_long_polls(s: Session) -> None:
    """Long polls: below min_bytes until max_wait_ms, then what there is; at once when
    min_bytes is already there."""
    create_quiet(s, "lp", 2)
    fetch(s, "lp", 0, max_wait_ms=300, min_bytes=1, label="empty: waits, answers nothing")
    produce(s, "lp", batch(3), label="three")
    fetch(s, "lp", 0, max_wait_ms=10_000, min_bytes=1, label="data there: at once")
    fetch(s, "lp", 0, max_wait_ms=300, min_bytes=1 << 20, label="below min_bytes: waits")
    fetch(s, "lp", 3, max_wait_ms=300, min_bytes=1, label="at the log end: waits")
    fetch(s, "lp", 0, partition=1, max_wait_ms=300, min_bytes=1, label="other partition")
    fetch(s, "lp", 9, max_wait_ms=10_000, min_bytes=1, label="out of range: at once")


@sequence
def produce_corrupt_batch(s: Session) -> None:
    create_quiet(s, "crc", 1)
    good = bytearray(batch(3))
    bad = bytearray(good)
    bad[-1] ^= 0xFF  # a record byte: the CRC no longer matches
    produce(s, "crc", bytes(bad), label="corrupt record bytes")
    wrong_crc = bytearray(good)
    wrong_crc[CRC_OFFSET] ^= 0x01
    produce(s, "crc", bytes(wrong_crc), label="wrong crc")
    produce(s, "crc", bytes(good[:-3]), label="truncated batch")
    produce(s, "crc", b"\x00" * 5, label="garbage")
    produce(s, "crc", batch(1, base_offset=7), label="base offset 7")
    list_offsets(s, "crc", [-1], 7, label="nothing appended")


@sequence
def produce_oversized_batch(s: Session) -> None:
    create_quiet(s, "big", 1, max_message_bytes="1000")
    produce(s, "big", batch(1, value_size=2000), label="batch > max.message.bytes")
    produce(s, "big", batch(1, value_size=800), label="fits")
    produce(s, "big", batch(1, value_size=900), label="just over with overhead")
    list_offsets(s, "big", [-1], 7, label="log end")


@sequence
def produce_and_fetch_offsets(s: Session) -> None:
    create_quiet(s, "pf", 1)
    produce(s, "pf", batch(3), label="three")
    produce(s, "pf", batch(2, first=3), version=3, label="two more (v3)")
    fetch(s, "pf", 0, label="at 0")
    fetch(s, "pf", 4, label="inside a batch")
    fetch(s, "pf", 5, label="at the log end")
    fetch(s, "pf", 6, label="past the log end")
    fetch(s, "pf", -1, label="negative")
    fetch(s, "pf", 0, version=4, label="at 0 v4")
    fetch(s, "pf", 9, version=4, label="past v4")


@sequence
def fetch_before_log_start(s: Session) -> None:
    create_quiet(s, "fls", 1)
    produce(s, "fls", batch(2))
    produce(s, "fls", batch(2, first=2))
    delete = DeleteRecordsRequest(
        topics=[
            DeleteRecordsTopic(
                name=s.topic("fls"),
                partitions=[DeleteRecordsPartition(partition_index=0, offset=2)],
            )
        ],
        timeout_ms=30000,
    )
    s.send(delete, 2, "delete records to 2")
    fetch(s, "fls", 0, label="before log start")
    fetch(s, "fls", 1, label="still before")
    fetch(s, "fls", 2, label="at log start")
    list_offsets(s, "fls", [-2, -1], 9, label="earliest and latest")


@sequence
def fetch_partition_max_bytes(s: Session) -> None:
    create_quiet(s, "fmb", 2)
    for i in range(3):
        produce(s, "fmb", batch(2, first=2 * i, value_size=100), label=f"batch {i}")
    produce(s, "fmb", batch(1, value_size=100), partition=1, label="p1")
    one = len(batch(2, value_size=100))
    fetch(s, "fmb", 0, partition_max_bytes=1, label="max 1 byte: first batch whole")
    fetch(s, "fmb", 0, partition_max_bytes=2 * one, label="exactly two batches")
    request = FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=one,
        topics=[
            FetchTopic(
                topic=s.topic("fmb"),
                partitions=[
                    FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20),
                    FetchPartition(partition=1, fetch_offset=0, partition_max_bytes=1 << 20),
                ],
            )
        ],
    )
    s.send(request, 12, "response max_bytes one batch, two partitions")


@sequence
def fetch_unknown_topics(s: Session) -> None:
    create_quiet(s, "fu", 1)
    fetch(s, "nope", 0, label="unknown name v12")
    fetch(s, "fu", 0, partition=3, label="unknown partition v12")
    unknown = UNKNOWN_ID
    request = FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 20,
        topics=[
            FetchTopic(
                topic_id=unknown,
                partitions=[FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1000)],
            )
        ],
    )
    s.send(request, 13, "unknown id v13")
    s.send(request, 17, "unknown id v17")


@sequence
def fetch_by_topic_id(s: Session) -> None:
    topic = create_quiet(s, "fid", 1)
    produce(s, "fid", batch(2))
    request = FetchRequest(
        replica_id=-1,
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 20,
        topics=[
            FetchTopic(
                topic_id=topic.topic_id,
                partitions=[
                    FetchPartition(
                        partition=0,
                        fetch_offset=0,
                        current_leader_epoch=0,
                        partition_max_bytes=1 << 20,
                    )
                ],
            )
        ],
    )
    s.send(request, 16, "v16 by id")
    request.topics[0].partitions[0].current_leader_epoch = 5
    s.send(request, 16, "v16 newer leader epoch")
    s.send(request, 13, "v13 newer leader epoch")


@sequence
def produce_idempotent_sequences(s: Session) -> None:
    create_quiet(s, "idem", 1)
    pid, epoch = init_producer(s)

    def idem(seq: int, count: int, label: str, ep: int = epoch) -> None:
        records = batch(count, first=seq, producer_id=pid, producer_epoch=ep, base_sequence=seq)
        produce(s, "idem", records, label=label)

    idem(0, 2, "seq 0-1")
    idem(2, 2, "seq 2-3")
    idem(0, 2, "duplicate of the first batch")
    idem(2, 2, "duplicate of the last batch")
    idem(7, 1, "gap: out of order")
    idem(1, 1, "overlap: out of order")
    idem(4, 1, "next in order")
    fetch(s, "idem", 0, label="what is stored")


@sequence
def produce_idempotent_epochs(s: Session) -> None:
    create_quiet(s, "ep", 1)
    pid, epoch = init_producer(s)

    def idem(seq: int, ep: int, label: str) -> None:
        records = batch(1, first=seq, producer_id=pid, producer_epoch=ep, base_sequence=seq)
        produce(s, "ep", records, label=label)

    idem(0, epoch, "epoch 0 seq 0")
    idem(1, epoch + 1, "bumped epoch, seq 1: out of order")
    idem(0, epoch + 1, "bumped epoch, seq 0")
    idem(1, epoch, "old epoch")
    idem(1, epoch + 1, "new epoch seq 1")
    unknown_pid = batch(1, producer_id=pid + 500, producer_epoch=0, base_sequence=5)
    produce(s, "ep", unknown_pid, label="unknown producer starting at seq 5")
    no_seq = batch(1, producer_id=pid, producer_epoch=epoch + 1, base_sequence=-1)
    produce(s, "ep", no_seq, label="producer id without a sequence")
    describe = DescribeProducersRequest(
        topics=[ProducersTopic(name=s.topic("ep"), partition_indexes=[0, 1])]
    )
    s.send(describe, 0, "describe producers")


@sequence
def produce_by_topic_id(s: Session) -> None:
    topic = create_quiet(s, "pid13", 1)
    for label, topic_id in (
        ("known id", topic.topic_id),
        ("unknown id", UNKNOWN_ID),
    ):
        request = ProduceRequest(
            acks=-1,
            timeout_ms=30000,
            topic_data=[
                TopicProduceData(
                    topic_id=topic_id,
                    partition_data=[PartitionProduceData(index=0, records=batch(1))],
                )
            ],
        )
        s.send(request, 13, label)


@sequence
def produce_log_append_time(s: Session) -> None:
    create_quiet(s, "lat", 1, message_timestamp_type="LogAppendTime")
    produce(s, "lat", batch(2), label="log append time")
    fetch(s, "lat", 0, label="stamped")
    request = ListOffsetsRequest(
        replica_id=-1,
        topics=[
            ListOffsetsTopic(
                name=s.topic("lat"),
                partitions=[ListOffsetsPartition(partition_index=0, timestamp=-3)],
            )
        ],
    )
    # The answer's timestamp is the broker's clock at append.
    s.send(request, 9, "max timestamp", volatile=("timestamp",))


# --- InitProducerId --------------------------------------------------------------------------


@sequence
def init_producer_id_errors(s: Session) -> None:
    for version in (0, 2, 4, 5):
        s.send(
            InitProducerIdRequest(transaction_timeout_ms=60000), version, f"idempotent v{version}"
        )
    s.send(
        InitProducerIdRequest(transaction_timeout_ms=60000, producer_id=5, producer_epoch=-1),
        4,
        "id without epoch",
    )
    s.send(
        InitProducerIdRequest(transaction_timeout_ms=60000, producer_id=-1, producer_epoch=3),
        4,
        "epoch without id",
    )
    s.send(
        InitProducerIdRequest(transactional_id="", transaction_timeout_ms=60000),
        4,
        "empty transactional id",
    )


# --- ListOffsets -----------------------------------------------------------------------------


@sequence
def list_offsets_targets_and_versions(s: Session) -> None:
    create_quiet(s, "lo", 1)
    produce(s, "lo", batch(3))
    produce(s, "lo", batch(3, first=3))
    for version in (1, 2, 4, 6, 7, 8, 9, 10, 11):
        targets = [-2, -1, TS + 2500, TS + 99_000, TS]
        if version >= 7:
            targets.append(-3)
        if version >= 8:
            targets.append(-4)
        list_offsets(s, "lo", targets, version)


@sequence
def list_offsets_errors(s: Session) -> None:
    create_quiet(s, "loe", 1)
    list_offsets(s, "nope", [-1], 9, label="unknown topic")
    list_offsets(s, "loe", [-1], 9, partition=4, label="unknown partition")
    list_offsets(s, "loe", [-1], 9, current_leader_epoch=7, label="newer leader epoch")
    list_offsets(s, "loe", [-1], 9, current_leader_epoch=0, label="current leader epoch")
    list_offsets(s, "loe", [-1, -2], 1, label="empty log v1")
    list_offsets(s, "loe", [-3], 9, label="max timestamp of an empty log")
    list_offsets(s, "loe", [TS], 9, label="timestamp on an empty log")
    twice = ListOffsetsTopic(
        name=s.topic("loe"), partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)]
    )
    s.send(ListOffsetsRequest(replica_id=-1, topics=[twice, twice]), 9, "partition twice")


# --- OffsetForLeaderEpoch --------------------------------------------------------------------


@sequence
def offset_for_leader_epoch(s: Session) -> None:
    create_quiet(s, "ofle", 1)
    produce(s, "ofle", batch(3))

    def ask(epoch: int, current: int, label: str, name: str = "ofle", partition: int = 0) -> None:
        request = OffsetForLeaderEpochRequest(
            replica_id=-1,
            topics=[
                OffsetForLeaderTopic(
                    topic=s.topic(name),
                    partitions=[
                        OffsetForLeaderPartition(
                            partition=partition, current_leader_epoch=current, leader_epoch=epoch
                        )
                    ],
                )
            ],
        )
        s.send(request, 4, label)

    ask(0, -1, "epoch 0")
    ask(0, 0, "epoch 0, current 0")
    ask(3, -1, "epoch above every known")
    ask(-1, -1, "epoch -1")
    ask(0, 2, "current leader epoch too new")
    ask(0, -1, "unknown topic", name="nope")
    ask(0, -1, "unknown partition", partition=5)


# --- DeleteRecords ---------------------------------------------------------------------------


@sequence
def delete_records_paths(s: Session) -> None:
    create_quiet(s, "dr", 2)
    produce(s, "dr", batch(4))

    def delete(offset: int, label: str, name: str = "dr", partition: int = 0, v: int = 2) -> None:
        request = DeleteRecordsRequest(
            topics=[
                DeleteRecordsTopic(
                    name=s.topic(name),
                    partitions=[DeleteRecordsPartition(partition_index=partition, offset=offset)],
                )
            ],
            timeout_ms=30000,
        )
        s.send(request, v, label)

    delete(9, "past the high watermark")
    delete(-5, "negative")
    delete(1, "to 1", v=0)
    delete(0, "below the log start")
    delete(-1, "to the high watermark")
    delete(1, "unknown topic", name="nope")
    delete(1, "unknown partition", partition=7)
    delete(0, "empty partition", partition=1)
    list_offsets(s, "dr", [-2, -1], 9, label="earliest is the high watermark")
    produce(s, "dr", batch(1, first=4), label="append after")


# --- cluster, log dirs, coordinators ---------------------------------------------------------


@sequence
def describe_cluster(s: Session) -> None:
    for version in (0, 1, 2):
        s.send(DescribeClusterRequest(), version, f"v{version}")
    s.send(DescribeClusterRequest(endpoint_type=2), 1, "controllers endpoint")
    s.send(DescribeClusterRequest(endpoint_type=3), 1, "unknown endpoint type")
    s.send(DescribeClusterRequest(include_fenced_brokers=True), 2, "fenced too")


@sequence
def describe_log_dirs(s: Session) -> None:
    create_quiet(s, "ld", 2)
    produce(s, "ld", batch(3))
    request = DescribeLogDirsRequest(
        topics=[DescribableLogDirTopic(topic=s.topic("ld"), partitions=[0, 1, 5])]
    )
    for version in (1, 3, 4):
        s.send(request, version, f"v{version}")
    s.send(DescribeLogDirsRequest(topics=[]), 4, "no topics")
    unknown = DescribeLogDirsRequest(
        topics=[DescribableLogDirTopic(topic=s.topic("nope"), partitions=[0])]
    )
    s.send(unknown, 4, "unknown topic")


@sequence
def list_config_resources(s: Session) -> None:
    # The session's brokers hold other sequences' topics and group configs: this
    # sequence's topics are recorded (sorted: Kafka lists topics in hash order) with the
    # brokers, loggers and client metrics, and no group.
    create_quiet(s, "lcr-b", 1)
    create_quiet(s, "lcr-a", 2)
    for version, types, label in (
        (1, [], "v1 every type"),
        (1, [2, 4, 2], "v1 topics and brokers, topics twice"),
        (1, [8, 16, 32], "v1 loggers, client metrics, groups"),
        (1, [2, 1], "v1 an unknown type"),
        (1, [64], "v1 only an unknown type"),
        (0, [], "v0 client metrics"),
    ):
        response = s.request(ListConfigResourcesRequest(resource_types=types), version).to_data()
        kept = [r for r in response["config_resources"] if r.get("resource_type") not in (2, 32)]
        mine = [
            r
            for r in response["config_resources"]
            if r.get("resource_type") == TOPIC and r["resource_name"].startswith(s.namespace)
        ]
        response["config_resources"] = kept + sorted(mine, key=lambda r: r["resource_name"])
        s.record(label, "ListConfigResources", version, response)


@sequence
def find_coordinator(s: Session) -> None:
    # A group's coordinator: Kafka first creates __consumer_offsets (answering
    # COORDINATOR_NOT_AVAILABLE meanwhile, and only on the first lookup of the broker's life),
    # so the settled answer is compared.
    s.poll(FindCoordinatorRequest(key="g1"), 0, lambda r: r.error_code == 0, "group v0 (settled)")
    for version in (1, 2, 3):
        s.send(FindCoordinatorRequest(key="g1", key_type=0), version, f"group v{version}")
    s.send(FindCoordinatorRequest(key_type=0, coordinator_keys=["g1", "g2"]), 4, "two groups v4")
    s.send(FindCoordinatorRequest(key_type=0, coordinator_keys=["g1"]), 6, "group v6")
    s.send(FindCoordinatorRequest(key="x", key_type=7), 3, "unknown key type v3")
    s.send(FindCoordinatorRequest(key_type=7, coordinator_keys=["x"]), 4, "unknown key type v4")


@sequence
def find_coordinator_transaction(s: Session) -> None:
    # Kafka answers COORDINATOR_NOT_AVAILABLE while it creates __transaction_state (only
    # in the first moments of a broker's life), then this node: the settled answer is
    # compared, waiting at most a few seconds (Kafka settles in about one).
    s.poll(
        FindCoordinatorRequest(key="tx1", key_type=1),
        3,
        lambda r: r.error_code == 0,
        "transaction v3 (settled)",
        timeout=5.0,
    )
    s.send(FindCoordinatorRequest(key_type=1, coordinator_keys=["tx1"]), 4, "transaction v4")


@sequence
def describe_topic_partitions(s: Session) -> None:
    create_quiet(s, "dtp-a", 3)
    create_quiet(s, "dtp-b", 1)
    topics = [DtpTopic(name=s.topic("dtp-b")), DtpTopic(name=s.topic("dtp-a"))]
    s.send(DescribeTopicPartitionsRequest(topics=topics, response_partition_limit=2000), 0, "both")
    s.send(DescribeTopicPartitionsRequest(topics=topics, response_partition_limit=2), 0, "limit 2")
    s.send(
        DescribeTopicPartitionsRequest(
            topics=topics,
            response_partition_limit=2,
            cursor=Cursor(topic_name=s.topic("dtp-a"), partition_index=2),
        ),
        0,
        "from the cursor",
    )
    s.send(
        DescribeTopicPartitionsRequest(
            topics=[DtpTopic(name=s.topic("nope")), DtpTopic(name="bad name")],
            response_partition_limit=10,
        ),
        0,
        "unknown and invalid",
    )
    s.send(
        DescribeTopicPartitionsRequest(
            topics=topics,
            cursor=Cursor(topic_name=s.topic("other"), partition_index=0),
        ),
        0,
        "cursor on a topic not asked for",
    )


@sequence
def describe_producers_errors(s: Session) -> None:
    create_quiet(s, "dp", 1)
    produce(s, "dp", batch(1))
    request = DescribeProducersRequest(
        topics=[
            ProducersTopic(name=s.topic("dp"), partition_indexes=[0, 3]),
            ProducersTopic(name=s.topic("nope"), partition_indexes=[0]),
            ProducersTopic(name="bad name", partition_indexes=[0]),
        ]
    )
    s.send(request, 0, "errors and a partition with no producers")


ALL: list[tuple[str, Callable[[Session], None]]] = sorted(SEQUENCES.items())

"""CreateTopics, DeleteTopics and CreatePartitions through the controller, error paths too."""

from __future__ import annotations

import pytest

from millpond.controller.cluster_control import set_fenced
from millpond.controller.image import apply
from millpond.controller.replication_control import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatePartitionsTopic,
    validate_topic_name,
)
from millpond.wire.errors import ErrorCode

from .helpers import CLUSTER_ID, NODE_ID, mem_fs, open_controller, running_node


def create_one(topic: CreatableTopic, *, validate_only: bool = False) -> tuple[int, str | None]:
    controller = running_node()
    [result] = controller.create_topics([topic], validate_only=validate_only).response
    return result.error.code, result.error.message


def test_create_topic_writes_records_and_updates_the_image() -> None:
    controller = running_node()
    result = controller.create_topics(
        [CreatableTopic("orders", 3, 1, configs={"cleanup.policy": "compact"})]
    )
    [created] = result.response
    assert created.error.code == ErrorCode.NONE
    assert (created.num_partitions, created.replication_factor) == (3, 1)
    names = [r.message.NAME for r in result.records]
    assert names == ["TopicRecord", "ConfigRecord"] + ["PartitionRecord"] * 3
    topic = controller.image.topic("orders")
    assert topic is not None and topic.topic_id == created.topic_id
    assert created.topic_id[6] >> 4 == 4  # a version-4 UUID
    for p in topic.partitions.values():
        assert (p.replicas, p.isr, p.leader, p.leader_epoch, p.partition_epoch) == (
            (1,), (1,), 1, 0, 0,
        )  # fmt: skip
    assert controller.image.topic_config("orders") == {"cleanup.policy": "compact"}


def test_defaults_apply_for_minus_one() -> None:
    controller = open_controller(mem_fs(), num_partitions=4)
    epoch = controller.register_broker(1, []).response.broker_epoch
    controller.unfence_broker(1, epoch)
    [created] = controller.create_topics([CreatableTopic("d")]).response
    assert (created.num_partitions, created.replication_factor) == (4, 1)


def test_topic_ids_are_deterministic_with_a_seed() -> None:
    ids = [
        running_node(seed=3).create_topics([CreatableTopic("x", 1)]).response[0].topic_id
        for _ in range(2)
    ]
    assert ids[0] == ids[1]
    other = running_node(seed=4).create_topics([CreatableTopic("x", 1)]).response[0].topic_id
    assert other != ids[0]


def test_validate_only_writes_nothing() -> None:
    controller = running_node()
    before = controller.raft.end_offset
    result = controller.create_topics([CreatableTopic("v", 2)], validate_only=True)
    assert result.records == () and result.response[0].error.code == ErrorCode.NONE
    assert controller.image.topic("v") is None
    assert controller.raft.end_offset == before


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "Topic name is illegal, it can't be empty"),
        (".", 'Topic name cannot be "." or ".."'),
        ("..", 'Topic name cannot be "." or ".."'),
        ("a" * 250, "it can't be longer than 249 characters"),
        ("bad/name", "contains a character other than ASCII alphanumerics"),
        ("spaced name", "contains a character other than ASCII alphanumerics"),
    ],
)
def test_invalid_topic_names(name: str, message: str) -> None:
    code, text = create_one(CreatableTopic(name, 1))
    assert code == ErrorCode.INVALID_TOPIC_EXCEPTION and text is not None and message in text


def test_legal_names() -> None:
    for name in ("a" * 249, "A-b_c.9", "..."):
        assert validate_topic_name(name).is_success


def test_topic_already_exists_and_collisions() -> None:
    controller = running_node()
    controller.create_topics([CreatableTopic("a.b", 1)])
    [again, clash] = controller.create_topics(
        [CreatableTopic("a.b", 1), CreatableTopic("a_b", 1)]
    ).response
    assert again.error.code == ErrorCode.TOPIC_ALREADY_EXISTS
    assert again.error.message == "Topic 'a.b' already exists."
    assert clash.error.code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert clash.error.message == "Topic 'a_b' collides with existing topic: a.b"


def test_duplicate_names_in_one_request() -> None:
    controller = running_node()
    results = controller.create_topics(
        [CreatableTopic("dup", 1), CreatableTopic("ok", 1), CreatableTopic("dup", 1)]
    ).response
    assert [(r.name, r.error.code) for r in results] == [
        ("dup", ErrorCode.INVALID_REQUEST),
        ("ok", ErrorCode.NONE),
    ]
    assert controller.image.topic("dup") is None


@pytest.mark.parametrize(
    ("shapes", "message"),
    [
        # 10,000 partitions pass the partition limit; with the topic's record they are
        # 10,001 records, one over the operation's limit.
        ([10_000], "Unable to perform excessively large batch operation."),
        ([5_000, 4_999, 1], "Unable to perform excessively large batch operation."),
        ([6_000, 5_000], "Excessively large number of partitions per request."),
        ([10_001, 0, -5], "Excessively large number of partitions per request."),
    ],
)
@pytest.mark.parametrize("validate_only", [False, True])
def test_requests_over_kafkas_limits_fail_whole(
    shapes: list[int], message: str, validate_only: bool
) -> None:
    """As Kafka's controller: every topic gets POLICY_VIOLATION, nothing is written."""
    controller = running_node()
    topics = [CreatableTopic(f"t{i}", n) for i, n in enumerate(shapes)]
    result = controller.create_topics(topics, validate_only=validate_only)
    assert [(r.name, r.error.code, r.error.message) for r in result.response] == [
        (t.name, ErrorCode.POLICY_VIOLATION, message) for t in topics
    ]
    assert all(controller.image.topic(t.name) is None for t in topics)


def test_requests_at_kafkas_limits_are_served() -> None:
    """9,998 partitions, their topic's record and one config: 10,000 records."""
    controller = running_node()
    topic = CreatableTopic("t", 9_998, configs={"retention.ms": "1000"})
    [result] = controller.create_topics([topic]).response
    assert result.error.code == ErrorCode.NONE
    partitions = controller.image.topic("t")
    assert partitions is not None and len(partitions.partitions) == 9_998


@pytest.mark.parametrize("partitions", [0, -2])
def test_invalid_partitions(partitions: int) -> None:
    code, message = create_one(CreatableTopic("p", partitions))
    assert code == ErrorCode.INVALID_PARTITIONS
    assert message == "Number of partitions was set to an invalid non-positive value."


@pytest.mark.parametrize("replication_factor", [0, -2])
def test_invalid_replication_factor_values(replication_factor: int) -> None:
    code, message = create_one(CreatableTopic("r", 1, replication_factor))
    assert code == ErrorCode.INVALID_REPLICATION_FACTOR
    assert message == "Replication factor must be larger than 0, or -1 to use the default value."


def test_replication_factor_above_live_brokers() -> None:
    code, message = create_one(CreatableTopic("r", 1, 3))
    assert code == ErrorCode.INVALID_REPLICATION_FACTOR and int(code) == 38
    assert message == (
        "Unable to replicate the partition 3 time(s): The target replication factor of 3 "
        "cannot be reached because only 1 broker(s) are registered."
    )


def test_no_usable_broker() -> None:
    controller = open_controller(mem_fs())
    [none_registered] = controller.create_topics([CreatableTopic("x", 1)]).response
    assert none_registered.error.code == ErrorCode.INVALID_REPLICATION_FACTOR
    controller.register_broker(1, [])  # registered, still fenced
    [fenced] = controller.create_topics([CreatableTopic("x", 1)]).response
    assert fenced.error.message is not None
    assert fenced.error.message.endswith("All brokers are currently fenced.")


def assignment(index: int, *brokers: int) -> CreatableReplicaAssignment:
    return CreatableReplicaAssignment(index, tuple(brokers))


def test_manual_assignment() -> None:
    controller = running_node()
    [created] = controller.create_topics(
        [CreatableTopic("m", assignments=[assignment(1, 1), assignment(0, 1)])]
    ).response
    assert created.error.code == ErrorCode.NONE and created.num_partitions == 2


@pytest.mark.parametrize(
    ("topic", "code", "message"),
    [
        (
            CreatableTopic("m", 1, assignments=[assignment(0, 1)]),
            ErrorCode.INVALID_REQUEST,
            "A manual partition assignment was specified, but numPartitions was not set to -1.",
        ),
        (
            CreatableTopic("m", -1, 1, assignments=[assignment(0, 1)]),
            ErrorCode.INVALID_REQUEST,
            "A manual partition assignment was specified, but replication factor was not "
            "set to -1.",
        ),
        (
            CreatableTopic("m", assignments=[assignment(0, 1), assignment(0, 1)]),
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Found multiple manual partition assignments for partition 0",
        ),
        (
            CreatableTopic("m", assignments=[assignment(0, 1), assignment(2, 1)]),
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "partitions should be a consecutive 0-based integer sequence",
        ),
        (
            CreatableTopic("m", assignments=[assignment(0)]),
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes an empty replica list.",
        ),
        (
            CreatableTopic("m", assignments=[assignment(0, 1, 1)]),
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes the broker 1 more than once.",
        ),
        (
            CreatableTopic("m", assignments=[assignment(0, 5)]),
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes broker 5, but no such broker is registered.",
        ),
    ],
)
def test_manual_assignment_errors(topic: CreatableTopic, code: int, message: str) -> None:
    assert create_one(topic) == (code, message)


def test_inconsistent_and_fenced_manual_assignments() -> None:
    controller = running_node()
    controller.register_broker(2, [])  # fenced
    [inconsistent, fenced] = controller.create_topics(
        [
            CreatableTopic("i", assignments=[assignment(0, 1), assignment(1, 1, 2)]),
            CreatableTopic("f", assignments=[assignment(0, 2)]),
        ]
    ).response
    assert inconsistent.error.message == (
        "The manual partition assignment includes a partition with 2 replica(s), but this is "
        "not consistent with previous partitions, which have 1 replica(s)."
    )
    assert fenced.error.message == (
        "All brokers specified in the manual partition assignment for partition 0 are fenced "
        "or in controlled shutdown."
    )
    [partial] = controller.create_topics(
        [CreatableTopic("p", assignments=[assignment(0, 2, 1)])]
    ).response
    p = controller.image.topics_by_id[partial.topic_id].partitions[0]
    assert (p.replicas, p.isr, p.leader) == ((2, 1), (1,), 1)


@pytest.mark.parametrize(
    ("configs", "fragment"),
    [
        ({"no.such.config": "1"}, "unknown topic config"),
        ({"retention.ms": "soon"}, "retention.ms"),
        ({"cleanup.policy": "shred"}, "cleanup.policy"),
        ({"retention.ms": None}, "Null value not supported for topic configs: retention.ms"),
    ],
)
def test_invalid_configs(configs: dict[str, str | None], fragment: str) -> None:
    code, message = create_one(CreatableTopic("c", 1, configs=configs))
    assert code == ErrorCode.INVALID_CONFIG and message is not None and fragment in message


def test_delete_topics_by_name_and_id() -> None:
    controller = running_node()
    a, b = controller.create_topics([CreatableTopic("a", 1), CreatableTopic("b", 2)]).response
    result = controller.delete_topics(names=["a", "ghost"], topic_ids=[b.topic_id, bytes(16)])
    codes = [(r.name, r.error.code) for r in result.response]
    assert codes == [
        ("a", ErrorCode.NONE),
        ("ghost", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        ("b", ErrorCode.NONE),
        (None, ErrorCode.UNKNOWN_TOPIC_ID),
    ]
    assert [r.message.NAME for r in result.records] == ["RemoveTopicRecord"] * 2
    assert controller.image.topics_by_id == {}


def test_delete_topics_duplicates_and_same_topic_twice() -> None:
    controller = running_node()
    [a] = controller.create_topics([CreatableTopic("a", 1)]).response
    result = controller.delete_topics(names=["x", "x"], topic_ids=[a.topic_id])
    assert [r.error.code for r in result.response] == [ErrorCode.INVALID_REQUEST, ErrorCode.NONE]
    both = running_node()
    [t] = both.create_topics([CreatableTopic("t", 1)]).response
    result = both.delete_topics(names=["t"], topic_ids=[t.topic_id])
    assert len(result.records) == 1 and all(r.error.is_success for r in result.response)


def test_create_partitions() -> None:
    controller = running_node()
    controller.create_topics([CreatableTopic("t", 2)])
    result = controller.create_partitions(
        [
            CreatePartitionsTopic("t", 4),
            CreatePartitionsTopic("ghost", 2),
        ]
    )
    assert [r.error.code for r in result.response] == [
        ErrorCode.NONE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ]
    topic = controller.image.topic("t")
    assert topic is not None and sorted(topic.partitions) == [0, 1, 2, 3]
    assert topic.partitions[3].leader == 1


@pytest.mark.parametrize(
    ("request_", "code", "message"),
    [
        (
            CreatePartitionsTopic("t", 1),
            ErrorCode.INVALID_PARTITIONS,
            "The topic t currently has 2 partition(s); 1 would not be an increase.",
        ),
        (CreatePartitionsTopic("t", 2), ErrorCode.INVALID_PARTITIONS,
         "Topic already has 2 partition(s)."),
        (
            CreatePartitionsTopic("t", 4, [[1]]),
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "Attempted to add 2 additional partition(s), but only 1 assignment(s) were "
            "specified.",
        ),
        (
            CreatePartitionsTopic("t", 3, [[12]]),
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes broker 12, but no such broker is "
            "registered.",
        ),
    ],
)  # fmt: skip
def test_create_partitions_errors(request_: CreatePartitionsTopic, code: int, message: str) -> None:
    controller = running_node()
    controller.create_topics([CreatableTopic("t", 2)])
    [result] = controller.create_partitions([request_]).response
    assert (result.error.code, result.error.message) == (code, message)
    topic = controller.image.topic("t")
    assert topic is not None and len(topic.partitions) == 2


def test_create_partitions_validate_only_and_manual() -> None:
    controller = running_node()
    controller.create_topics([CreatableTopic("t", 1)])
    assert (
        controller.create_partitions([CreatePartitionsTopic("t", 3)], validate_only=True).records
        == ()
    )
    controller.create_partitions([CreatePartitionsTopic("t", 2, [[1]])])
    topic = controller.image.topic("t")
    assert topic is not None and len(topic.partitions) == 2
    assert controller.image.cluster_id == CLUSTER_ID


@pytest.mark.parametrize(
    "counts",
    [
        [10_002],  # 10,001 new partitions
        [6_000, 6_000],  # 5,999 each
        [6_000, 1, 5_003],  # 5,999, an error of its own, 5,002
    ],
)
@pytest.mark.parametrize("validate_only", [False, True])
def test_create_partitions_over_kafkas_record_bound_fail_whole(
    counts: list[int], validate_only: bool
) -> None:
    """As Kafka 4.4 (checked by the differential sequence): every topic gets
    POLICY_VIOLATION and nothing is written."""
    controller = running_node()
    names = [f"t{i}" for i in range(len(counts))]
    controller.create_topics([CreatableTopic(n, 1) for n in names])
    result = controller.create_partitions(
        [CreatePartitionsTopic(n, c) for n, c in zip(names, counts, strict=True)],
        validate_only=validate_only,
    )
    assert result.records == ()
    assert [(r.name, r.error.code, r.error.message) for r in result.response] == [
        (n, ErrorCode.POLICY_VIOLATION, "Unable to perform excessively large batch operation.")
        for n in names
    ]
    for name in names:
        topic = controller.image.topic(name)
        assert topic is not None and len(topic.partitions) == 1


def test_create_partitions_at_kafkas_record_bound_are_served() -> None:
    controller = running_node()
    controller.create_topics([CreatableTopic("a", 1), CreatableTopic("b", 1)])
    result = controller.create_partitions(
        [CreatePartitionsTopic("a", 6_000), CreatePartitionsTopic("b", 4_002)]
    )
    assert [r.error.code for r in result.response] == [ErrorCode.NONE, ErrorCode.NONE]
    assert len(result.records) == 10_000


def test_create_partitions_for_more_than_10_000_topics_fails_whole() -> None:
    controller = running_node()
    controller.create_topics([CreatableTopic("t", 1)])
    topics = [CreatePartitionsTopic("t", 2)] + [
        CreatePartitionsTopic(f"ghost{i}", 2) for i in range(10_000)
    ]
    result = controller.create_partitions(topics)
    assert result.records == ()
    assert {(r.error.code, r.error.message) for r in result.response} == {
        (ErrorCode.POLICY_VIOLATION, "Unable to perform excessively large batch operation.")
    }
    topic = controller.image.topic("t")
    assert topic is not None and len(topic.partitions) == 1


def test_fencing_the_only_broker_leaves_its_partitions_leaderless_until_it_returns() -> None:
    """As Kafka's controller does: the fenced broker stops leading, keeps its place as
    the last ISR member (it holds every acknowledged record), and leads again once it
    is unfenced; each change bumps the leader epoch."""
    controller = running_node()
    controller.create_topics([CreatableTopic("t", 2)])
    image = controller.image
    epoch = image.brokers[NODE_ID].broker_epoch
    fenced = set_fenced(image, NODE_ID, epoch, fenced=True)
    for record in fenced.records:
        image = apply(image, record.message)
    assert len(fenced.records) == 3  # two partitions lose their leader, then the fencing
    for p in image.topic("t").partitions.values():  # type: ignore[union-attr]
        assert (p.leader, p.isr, p.leader_epoch) == (-1, (NODE_ID,), 1)
    unfenced = set_fenced(image, NODE_ID, epoch, fenced=False)
    for record in unfenced.records:
        image = apply(image, record.message)
    assert len(unfenced.records) == 3  # the unfencing, then two elections
    for p in image.topic("t").partitions.values():  # type: ignore[union-attr]
        assert (p.leader, p.isr, p.leader_epoch) == (NODE_ID, (NODE_ID,), 2)

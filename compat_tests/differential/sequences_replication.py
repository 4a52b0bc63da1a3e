"""Differential sequences for a cluster of three brokers (ids 2, 3 and 4, one controller,
id 1): partition reassignments, leader elections, the min.insync.replicas refusals,
fetches from followers and UnregisterBroker's refusal. Each runs against broker 2 of a
Kafka 4.4 cluster and of a millpond cluster of the same layout
(``test_differential_replication``).

Every topic is created with a manual assignment that puts its first replica, and so its
leader, on broker 2, the broker the session talks to. What a reassignment or an election
sets in motion is waited for (bounded, unrecorded) before the answer that shows it is
recorded; answers Kafka gives in hash order are sorted.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from compat_tests.differential.runner import SequenceFn, Session
from compat_tests.differential.sequences import batch, fetch, produce
from millpond.wire.generated.api.alter_partition_reassignments_request import (
    AlterPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
)
from millpond.wire.generated.api.create_topics_request import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from millpond.wire.generated.api.elect_leaders_request import (
    ElectLeadersRequest,
    TopicPartitions,
)
from millpond.wire.generated.api.list_partition_reassignments_request import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsTopics,
)
from millpond.wire.generated.api.metadata_request import MetadataRequest, MetadataRequestTopic
from millpond.wire.generated.api.unregister_broker_request import UnregisterBrokerRequest

SEQUENCES: dict[str, SequenceFn] = {}
SETTLE_TIMEOUT = 30.0
SETTLE_PAUSE = 0.05


def sequence(fn: SequenceFn) -> SequenceFn:
    SEQUENCES[fn.__name__.replace("_", "-")] = fn
    return fn


# -- helpers ------------------------------------------------------------------------------


def create_on(s: Session, name: str, replicas: Sequence[Sequence[int]], **configs: str) -> None:
    """Topic ``name`` with partition i on ``replicas[i]`` (unrecorded), once led."""
    topic = CreatableTopic(
        name=s.topic(name),
        num_partitions=-1,
        replication_factor=-1,
        assignments=[
            CreatableReplicaAssignment(partition_index=i, broker_ids=list(r))
            for i, r in enumerate(replicas)
        ],
        configs=[
            CreatableTopicConfig(name=k.replace("_", "."), value=v) for k, v in configs.items()
        ],
    )
    response = s.request(CreateTopicsRequest(topics=[topic], timeout_ms=30000), 7)
    assert response.topics[0].error_code == 0, response.to_data()
    s.wait_for_topic(s.topic(name), len(replicas))
    settle(
        s,
        name,
        lambda parts: all(
            len(p["isr_nodes"]) == len(r) for p, r in zip(parts, replicas, strict=True)
        ),
    )


def partitions(s: Session, name: str) -> list[dict[str, Any]]:
    """Metadata's partitions of topic ``name``, by index (unrecorded)."""
    request = MetadataRequest(
        topics=[MetadataRequestTopic(name=s.topic(name))], allow_auto_topic_creation=False
    )
    data = s.request(request, 12).to_data()
    return sorted(data["topics"][0]["partitions"], key=lambda p: p["partition_index"])


def settle(s: Session, name: str, done: Any, label: str = "") -> None:
    """Wait (bounded) until ``done(partitions)`` holds; a step says so if it never does."""
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while not done(parts := partitions(s, name)):
        if time.monotonic() > deadline:
            s.record(label or f"settle {name}", "wait", 0, {"timed_out": parts})
            return
        time.sleep(SETTLE_PAUSE)


def record_layout(s: Session, name: str, label: str) -> None:
    """Each partition's replicas, leader and ISR members (sorted: Kafka's ISR order is
    the order followers joined)."""
    layout = [
        {
            "partition": p["partition_index"],
            "replicas": p["replica_nodes"],
            "leader": p["leader_id"],
            "isr": sorted(p["isr_nodes"]),
        }
        for p in partitions(s, name)
    ]
    s.record(label, "layout", 0, {"partitions": layout})


def reassign(
    s: Session,
    moves: Sequence[tuple[str, int, Sequence[int] | None]],
    *,
    version: int = 0,
    allow_rf_change: bool = True,
    label: str = "reassign",
) -> None:
    """AlterPartitionReassignments of ``(topic, partition, target or None)``, by topic."""
    topics: dict[str, list[ReassignablePartition]] = {}
    for name, index, target in moves:
        topics.setdefault(s.topic(name), []).append(
            ReassignablePartition(
                partition_index=index, replicas=None if target is None else list(target)
            )
        )
    request = AlterPartitionReassignmentsRequest(
        timeout_ms=30000,
        allow_replication_factor_change=allow_rf_change,
        topics=[ReassignableTopic(name=n, partitions=ps) for n, ps in topics.items()],
    )
    s.send(request, version, label)


def list_reassignments(s: Session, wanted: Sequence[tuple[str, Sequence[int]]], label: str) -> None:
    request = ListPartitionReassignmentsRequest(
        timeout_ms=30000,
        topics=[
            ListPartitionReassignmentsTopics(name=s.topic(n), partition_indexes=list(ps))
            for n, ps in wanted
        ],
    )
    s.send(request, 0, label)


def elect(
    s: Session, election_type: int, wanted: Sequence[tuple[str, Sequence[int]]], label: str,
    version: int = 2,
) -> None:  # fmt: skip
    request = ElectLeadersRequest(
        election_type=election_type,
        timeout_ms=30000,
        topic_partitions=[
            TopicPartitions(topic=s.topic(n), partitions=list(ps)) for n, ps in wanted
        ],
    )
    s.send(request, version, label)


# -- reassignments ------------------------------------------------------------------------


@sequence
def reassignment_refusals(s: Session) -> None:
    create_on(s, "t", [[2, 3]])
    reassign(s, [("t", 0, [2, 9])], label="an unregistered broker")
    reassign(s, [("t", 0, [2, 2])], label="a broker twice")
    reassign(s, [("t", 0, [])], label="no replicas")
    reassign(s, [("t", 5, [2, 3])], label="an unknown partition")
    reassign(s, [("nope", 0, [2])], label="an unknown topic")
    reassign(s, [("t", 0, None)], label="a cancel with nothing in progress")
    reassign(s, [("t", 0, [2, 3, 4])], version=1, allow_rf_change=False, label="rf change refused")
    reassign(s, [("t", 0, [2, 4])], version=1, allow_rf_change=False, label="same rf, v1")
    settle(
        s,
        "t",
        lambda parts: parts[0]["replica_nodes"] == [2, 4] and len(parts[0]["isr_nodes"]) == 2,
    )
    record_layout(s, "t", "moved to 2, 4")
    list_reassignments(s, [("t", [0, 1]), ("nope", [0])], "nothing in progress")


@sequence
def reassignment_moves(s: Session) -> None:
    create_on(s, "t", [[2, 3, 4], [2, 3, 4]])
    create_on(s, "u", [[2, 3]])
    # A reordering and a removal from an in-sync partition complete at once; raising a
    # partition's replication factor completes once the new replica has caught up.
    produce(s, "u", batch(3), label="records to copy")
    reassign(s, [("t", 0, [2, 4, 3]), ("t", 1, [2, 3]), ("u", 0, [2, 3, 4])])
    settle(
        s,
        "t",
        lambda parts: (
            [p["replica_nodes"] for p in parts] == [[2, 4, 3], [2, 3]]
            and all(len(p["isr_nodes"]) == len(p["replica_nodes"]) for p in parts)
        ),
    )
    settle(s, "u", lambda parts: sorted(parts[0]["isr_nodes"]) == [2, 3, 4])
    record_layout(s, "t", "after the moves")
    record_layout(s, "u", "after raising the replication factor")
    list_reassignments(s, [("t", [0, 1]), ("u", [0])], "none left in progress")


# -- leader elections ---------------------------------------------------------------------


@sequence
def elect_leaders_errors(s: Session) -> None:
    create_on(s, "t", [[2, 3, 4]])
    elect(s, 0, [("t", [0])], "preferred, already leading")
    elect(s, 1, [("t", [0])], "unclean, a leader exists")
    elect(s, 0, [("nope", [0]), ("t", [7])], "unknown topic and partition")
    elect(s, 0, [("t", [0])], "v0 preferred", version=0)
    elect(s, 2, [("t", [0])], "an unknown election type", version=1)


@sequence
def elect_preferred_after_a_reorder(s: Session) -> None:
    create_on(s, "t", [[2, 3, 4]])
    reassign(s, [("t", 0, [3, 2, 4])], label="prefer 3")
    settle(s, "t", lambda parts: parts[0]["replica_nodes"] == [3, 2, 4])
    record_layout(s, "t", "reordered, 2 still leads")
    elect(s, 0, [("t", [0])], "preferred election")
    settle(s, "t", lambda parts: parts[0]["leader_id"] == 3)
    record_layout(s, "t", "3 leads")


# -- min.insync.replicas and follower fetches ---------------------------------------------


@sequence
def not_enough_replicas(s: Session) -> None:
    create_on(s, "short", [[2, 3]], min_insync_replicas="3")
    create_on(s, "enough", [[2, 3]], min_insync_replicas="2")
    produce(s, "short", batch(2), label="acks=all, ISR below min")
    produce(s, "short", batch(2), acks=1, label="acks=1, ISR below min")
    produce(s, "enough", batch(2), label="acks=all, ISR at min")


@sequence
def follower_fetches(s: Session) -> None:
    create_on(s, "t", [[2, 3]])
    produce(s, "t", batch(3), label="three records")
    fetch(s, "t", 0, replica_id=3, label="from the follower")
    fetch(s, "t", 0, replica_id=4, label="from a broker that is no replica")
    fetch(s, "t", 3, replica_id=3, last_fetched_epoch=5, label="a diverging epoch")
    fetch(s, "t", 9, replica_id=3, label="past the log end")


# -- brokers --------------------------------------------------------------------------------


@sequence
def unregister_unknown_broker(s: Session) -> None:
    # Only an id no broker holds: the cluster is shared by every sequence.
    s.send(UnregisterBrokerRequest(broker_id=9), 0, "an id no broker registered")

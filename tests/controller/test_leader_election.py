"""ElectLeaders on a controller of three brokers: preferred elections move leadership
back to each partition's first replica when it can lead; unclean ones give a leaderless
partition the best usable replica, out of the ISR only as a last resort; what needs no
election, or cannot have one, says so and changes nothing."""

from __future__ import annotations

from collections.abc import Sequence

from millpond.controller.cluster_control import set_fenced
from millpond.controller.image import MetadataImage, apply
from millpond.controller.leader_election import ElectionType, balance_leaders, elect_leaders
from millpond.controller.record_serde import ApiMessageAndVersion
from millpond.controller.replication_control import CreatableReplicaAssignment, CreatableTopic
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.metadata.partition_change_record import PartitionChangeRecord

from .helpers import ENDPOINT, running_node

P, U = ElectionType.PREFERRED, ElectionType.UNCLEAN


def three_brokers() -> MetadataImage:
    """Topic ``t``: partition 0 on [2, 1, 3], 1 on [1, 2, 3], 2 on [3, 2, 1]."""
    controller = running_node()
    for broker in (2, 3):
        registered = controller.register_broker(broker, [ENDPOINT._replace(port=9092 + broker)])
        controller.unfence_broker(broker, registered.response.broker_epoch)
    replicas = [(2, 1, 3), (1, 2, 3), (3, 2, 1)]
    assignments = [CreatableReplicaAssignment(i, r) for i, r in enumerate(replicas)]
    [created] = controller.create_topics([CreatableTopic("t", assignments=assignments)]).response
    assert created.error.code == ErrorCode.NONE
    return controller.image


def change(
    image: MetadataImage, index: int, *, leader: int, isr: list[int] | None = None
) -> MetadataImage:
    topic = image.topic("t")
    assert topic is not None
    record = PartitionChangeRecord(
        topic_id=topic.topic_id, partition_id=index, leader=leader, isr=isr
    )
    return apply(image, record)


def fence(image: MetadataImage, broker: int) -> MetadataImage:
    epoch = image.brokers[broker].broker_epoch
    for record in set_fenced(image, broker, epoch, fenced=True).records:
        image = apply(image, record.message)
    return image


def outcome(image: MetadataImage, election: ElectionType, *indexes: int) -> list[ErrorCode]:
    result = elect_leaders(image, election, [("t", list(indexes))])
    [topic] = result.response
    return [error.code for _, error in topic.partitions]


def after(image: MetadataImage, election: ElectionType, *indexes: int) -> MetadataImage:
    for record in elect_leaders(image, election, [("t", list(indexes))]).records:
        image = apply(image, record.message)
    return image


def test_a_preferred_election_moves_leadership_back_to_the_first_replica() -> None:
    image = change(three_brokers(), 0, leader=1)  # 2 lost it, say after a restart
    assert outcome(image, P, 0, 1) == [ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED]
    moved = after(image, P, 0, 1)
    partition = moved.topic("t").partitions[0]  # type: ignore[union-attr]
    assert partition.leader == 2
    assert partition.leader_epoch == image.topic("t").partitions[0].leader_epoch + 1  # type: ignore[union-attr]
    assert moved.topic("t").partitions[1] == image.topic("t").partitions[1]  # type: ignore[union-attr]


def test_a_preferred_replica_that_cannot_lead_keeps_the_leader() -> None:
    out_of_isr = change(three_brokers(), 0, leader=1, isr=[1, 3])
    fenced = fence(change(three_brokers(), 0, leader=1), 2)
    for image in (out_of_isr, fenced):
        assert outcome(image, P, 0) == [ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE]
        assert elect_leaders(image, P, [("t", [0])]).records == ()


def test_an_unclean_election_prefers_the_isr_then_any_usable_replica() -> None:
    image = three_brokers()
    assert outcome(image, U, 0) == [ErrorCode.ELECTION_NOT_NEEDED]  # it has a leader
    # Partition 0 lost its leader with 2 and 1 out of the ISR, and 3 fenced.
    leaderless = fence(change(image, 0, leader=-1, isr=[3]), 3)
    assert outcome(leaderless, U, 0) == [ErrorCode.NONE]
    partition = after(leaderless, U, 0).topic("t").partitions[0]  # type: ignore[union-attr]
    assert (partition.leader, partition.isr, partition.leader_recovery_state) == (2, (2,), 1)
    # With an in-sync replica usable, it leads and the ISR stays.
    in_sync = change(image, 0, leader=-1, isr=[1, 3])
    partition = after(in_sync, U, 0).topic("t").partitions[0]  # type: ignore[union-attr]
    assert (partition.leader, partition.isr, partition.leader_recovery_state) == (1, (1, 3), 0)


def test_no_usable_replica_means_no_election() -> None:
    image = change(three_brokers(), 2, leader=-1)
    for broker in (1, 2, 3):
        image = fence(image, broker)
    assert outcome(image, U, 2) == [ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE]
    assert outcome(image, P, 2) == [ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE]


def test_unknown_topics_and_partitions_are_answered_in_the_request_order() -> None:
    image = three_brokers()
    result = elect_leaders(image, P, [("t", [7, 0]), ("nope", [0])])
    codes = [(t.topic, [(i, e.code) for i, e in t.partitions]) for t in result.response]
    assert codes == [
        ("t", [(7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), (0, ErrorCode.ELECTION_NOT_NEEDED)]),
        ("nope", [(0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]),
    ]


def test_all_partitions_reports_only_the_elections_that_were_needed() -> None:
    image = change(three_brokers(), 2, leader=2)
    result = elect_leaders(image, P, None)
    assert [(t.topic, [(i, e.code) for i, e in t.partitions]) for t in result.response] == [
        ("t", [(2, ErrorCode.NONE)])
    ]
    assert len(result.records) == 1


def test_balancing_moves_leadership_back_where_the_preferred_replica_can_take_it() -> None:
    image = change(three_brokers(), 0, leader=1)  # preferred 2, in the ISR
    image = change(image, 1, leader=2, isr=[2, 3])  # preferred 1, out of the ISR
    image = change(image, 2, leader=2)  # preferred 3, fenced below
    image = fence(image, 3)
    result = balance_leaders(image)
    assert result.response is False
    assert _elected(result.records) == [(0, 2)]
    assert balance_leaders(change(three_brokers(), 0, leader=1)).records != ()
    assert balance_leaders(three_brokers()).records == ()  # balanced already


def test_a_balancing_pass_stops_at_its_bound_and_asks_for_another() -> None:
    image = change(change(three_brokers(), 0, leader=1), 1, leader=2)
    first = balance_leaders(image, max_elections=1)
    assert (len(first.records), first.response) == (1, True)
    for record in first.records:
        image = apply(image, record.message)
    second = balance_leaders(image, max_elections=1)
    assert _elected(second.records) == [(1, 1)]


def _elected(records: Sequence[ApiMessageAndVersion]) -> list[tuple[int, int]]:
    """(partition, new leader) of each PartitionChangeRecord."""
    changes = [r.message for r in records]
    assert all(isinstance(c, PartitionChangeRecord) for c in changes)
    return [(c.partition_id, c.leader) for c in changes if isinstance(c, PartitionChangeRecord)]

"""Partition reassignments on a controller of four brokers: a move extends the replicas,
waits for the new ones to join the ISR, then drops the old ones (handing leadership
over when the leader leaves); reorderings and removals from an in-sync partition finish
at once; a cancel restores the replicas; bad targets are refused and change nothing."""

from __future__ import annotations

from collections.abc import Sequence

from millpond.controller.alter_partition import AlterPartitionRequest, IsrChange, IsrMember
from millpond.controller.config_control import AlterableConfig, AlterConfigOp, AlterConfigsResource
from millpond.controller.controller import QuorumController
from millpond.controller.image import ConfigResourceType, PartitionRegistration
from millpond.controller.reassignment import OngoingReassignment, TopicReassignment
from millpond.controller.replication_control import CreatableReplicaAssignment, CreatableTopic
from millpond.wire.errors import ErrorCode

from .helpers import ENDPOINT, running_node


def four_brokers(*replicas: Sequence[int]) -> QuorumController:
    """Topic ``t`` with a partition per replica list; brokers 1-4 unfenced."""
    controller = running_node()
    for broker in (2, 3, 4):
        registered = controller.register_broker(broker, [ENDPOINT._replace(port=9092 + broker)])
        controller.unfence_broker(broker, registered.response.broker_epoch)
    assignments = [CreatableReplicaAssignment(i, tuple(r)) for i, r in enumerate(replicas)]
    [created] = controller.create_topics([CreatableTopic("t", assignments=assignments)]).response
    assert created.error.code == ErrorCode.NONE
    return controller


def partition(controller: QuorumController, index: int = 0) -> PartitionRegistration:
    topic = controller.image.topic("t")
    assert topic is not None
    return topic.partitions[index]


def reassign(
    controller: QuorumController,
    *targets: Sequence[int] | None,
    allow_rf_change: bool = True,
    topic: str = "t",
) -> list[ErrorCode]:
    request = [TopicReassignment(topic, list(enumerate(targets)))]
    result = controller.alter_partition_reassignments(request, allow_rf_change=allow_rf_change)
    [(name, outcomes)] = result.response
    assert name == topic
    return [error.code for _, error in outcomes]


def isr_change(controller: QuorumController, isr: Sequence[int], index: int = 0) -> ErrorCode:
    """The leader's AlterPartition setting the ISR; the partition's answer."""
    p = partition(controller, index)
    topic = controller.image.topic("t")
    assert topic is not None
    epoch = controller.image.brokers[p.leader].broker_epoch
    change = IsrChange(index, p.leader_epoch, p.partition_epoch, [IsrMember(b) for b in isr])
    request = AlterPartitionRequest(p.leader, epoch, [(topic.topic_id, [change])])
    error, [(_, [result])] = controller.alter_partition(request).response
    assert error.code == ErrorCode.NONE
    return result.error.code


def test_a_move_adds_replicas_then_drops_the_old_ones_once_the_new_are_in_sync() -> None:
    controller = four_brokers([1, 2, 3])
    before = partition(controller)
    assert reassign(controller, [2, 3, 4]) == [ErrorCode.NONE]
    moving = partition(controller)
    assert moving.replicas == (2, 3, 4, 1)
    assert (moving.adding_replicas, moving.removing_replicas) == ((4,), (1,))
    assert (moving.leader, moving.leader_epoch) == (1, before.leader_epoch)
    assert moving.isr == (1, 2, 3)
    # The new replica catches up: the leader adds it, which completes the move and
    # hands leadership to the first replica of the target that is in sync.
    assert isr_change(controller, [1, 2, 3, 4]) == ErrorCode.NEW_LEADER_ELECTED
    done = partition(controller)
    assert done.replicas == (2, 3, 4)
    assert done.isr == (2, 3, 4)
    assert (done.adding_replicas, done.removing_replicas) == ((), ())
    assert (done.leader, done.leader_epoch) == (2, before.leader_epoch + 1)


def test_a_move_in_progress_is_listed_until_it_completes() -> None:
    controller = four_brokers([1, 2, 3], [2, 3, 4])
    assert reassign(controller, [1, 2, 4], [2, 3, 4]) == [ErrorCode.NONE, ErrorCode.NONE]
    [ongoing] = controller.list_partition_reassignments(None).response
    assert ongoing == OngoingReassignment("t", 0, (1, 2, 4, 3), (4,), (3,))
    named = controller.list_partition_reassignments([("t", [0, 1, 7]), ("nope", [0])])
    assert named.response == [ongoing]
    assert isr_change(controller, [1, 2, 3, 4]) == ErrorCode.NONE  # the leader stays
    assert partition(controller).replicas == (1, 2, 4)
    assert controller.list_partition_reassignments(None).response == []


def test_a_reordering_or_a_removal_from_an_in_sync_partition_finishes_at_once() -> None:
    controller = four_brokers([1, 2, 3], [1, 2, 3])
    epoch = partition(controller).leader_epoch
    assert reassign(controller, [3, 2, 1], [1, 2]) == [ErrorCode.NONE, ErrorCode.NONE]
    reordered, shrunk = partition(controller, 0), partition(controller, 1)
    assert (reordered.replicas, reordered.leader, reordered.leader_epoch) == ((3, 2, 1), 1, epoch)
    assert (shrunk.replicas, shrunk.isr, shrunk.reassigning) == ((1, 2), (1, 2), False)
    assert (shrunk.leader, shrunk.leader_epoch) == (1, epoch + 1)  # replicas left: new epoch


def test_raising_the_replication_factor_waits_for_every_new_replica() -> None:
    controller = four_brokers([2])
    assert reassign(controller, [2, 3, 1]) == [ErrorCode.NONE]
    assert partition(controller).adding_replicas == (1, 3)
    assert isr_change(controller, [2, 3]) == ErrorCode.NONE
    assert partition(controller).reassigning
    assert isr_change(controller, [2, 3, 1]) == ErrorCode.NONE
    done = partition(controller)
    assert (done.replicas, done.isr, done.leader, done.reassigning) == (
        (2, 3, 1),
        (2, 3, 1),
        2,
        False,
    )


def test_a_cancel_restores_the_replicas_and_drops_the_adding_ones_from_the_isr() -> None:
    controller = four_brokers([1, 2, 3])
    assert reassign(controller, [1, 2, 4]) == [ErrorCode.NONE]
    assert reassign(controller, None) == [ErrorCode.NONE]
    back = partition(controller)
    assert (back.replicas, back.isr, back.leader) == ((1, 2, 3), (1, 2, 3), 1)
    assert back.reassigning is False
    assert reassign(controller, None) == [ErrorCode.NO_REASSIGNMENT_IN_PROGRESS]


def test_a_new_target_replaces_the_one_in_progress() -> None:
    controller = four_brokers([1, 2])
    assert reassign(controller, [3, 4]) == [ErrorCode.NONE]
    assert partition(controller).replicas == (3, 4, 1, 2)
    assert reassign(controller, [1, 3]) == [ErrorCode.NONE]
    moving = partition(controller)
    assert moving.replicas == (1, 3, 2, 4)
    assert (moving.removing_replicas, moving.adding_replicas) == ((2, 4), (3, 4))


def test_a_cancel_that_would_need_an_unclean_election_is_refused_unless_the_topic_allows_it() -> (
    None
):
    controller = four_brokers([1, 2])
    assert reassign(controller, [3, 4]) == [ErrorCode.NONE]
    assert isr_change(controller, [1, 2, 3]) == ErrorCode.NONE  # 4 still behind
    for broker in (1, 2):  # the original replicas go away; 3 leads, alone in the ISR
        controller.fence_broker(broker, controller.image.brokers[broker].broker_epoch)
    assert (partition(controller).isr, partition(controller).leader) == ((3,), 3)
    assert reassign(controller, None) == [ErrorCode.INVALID_REPLICA_ASSIGNMENT]
    assert partition(controller).replicas == (3, 4, 1, 2)
    unclean = AlterableConfig("unclean.leader.election.enable", AlterConfigOp.SET, "true")
    resource = AlterConfigsResource(ConfigResourceType.TOPIC, "t", [unclean])
    controller.incremental_alter_configs([resource])
    assert reassign(controller, None) == [ErrorCode.NONE]
    back = partition(controller)
    # The original replicas are fenced: the first takes the ISR alone, leading none yet.
    assert (back.replicas, back.isr, back.leader, back.reassigning) == ((1, 2), (1,), -1, False)


def test_bad_targets_are_refused_and_change_nothing() -> None:
    controller = four_brokers([1, 2, 3])
    before = controller.image
    assert reassign(controller, [1, 2, 9]) == [ErrorCode.INVALID_REPLICA_ASSIGNMENT]
    assert reassign(controller, [1, 1, 2]) == [ErrorCode.INVALID_REPLICA_ASSIGNMENT]
    assert reassign(controller, []) == [ErrorCode.INVALID_REPLICA_ASSIGNMENT]
    assert reassign(controller, [1, 2, 3], [1]) == [
        ErrorCode.NONE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ]
    assert reassign(controller, [1], topic="nope") == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]
    assert reassign(controller, [1, 2], allow_rf_change=False) == [
        ErrorCode.INVALID_REPLICATION_FACTOR
    ]
    assert reassign(controller, [2, 3, 4], allow_rf_change=False) == [ErrorCode.NONE]
    assert controller.image.topic("t") != before.topic("t")

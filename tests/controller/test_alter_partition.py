"""AlterPartition at the controller: a leader's ISR change is checked in Kafka's order
(request epoch, topic, partition, epochs, leader, members, recovery state, eligibility)
and, when valid, written as the request orders the ISR; the answer is the partition as
it is afterwards, and an unchanged ISR writes nothing."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from millpond.controller.alter_partition import (
    AlterPartitionRequest,
    IsrChange,
    IsrMember,
    PartitionResult,
)
from millpond.controller.image import LeaderRecoveryState
from millpond.controller.results import ApiError
from millpond.wire.errors import ErrorCode

from .helpers import Cluster

RECOVERING = LeaderRecoveryState.RECOVERING


def ask(
    cluster: Cluster,
    isr: Sequence[int],
    *,
    sender: int = 1,
    topic_id: bytes | None = None,
    leader_epoch: int | None = None,
    partition_epoch: int | None = None,
    epochs: dict[int, int] | None = None,
    recovery: int = 0,
    sender_epoch: int | None = None,
) -> tuple[ApiError, PartitionResult | None]:
    """Partition ``t``-0 (led by 1, replicas [1, 2, 3]) asked to take ``isr``."""
    current = cluster.partition(0)
    topic = cluster.image.topic("t")
    assert topic is not None
    known = {**cluster.epochs, **(epochs or {})}
    change = IsrChange(
        0,
        current.leader_epoch if leader_epoch is None else leader_epoch,
        current.partition_epoch if partition_epoch is None else partition_epoch,
        [IsrMember(b, known.get(b, -1)) for b in isr],
        recovery,
    )
    request = AlterPartitionRequest(
        sender,
        cluster.epochs[sender] if sender_epoch is None else sender_epoch,
        [(topic.topic_id if topic_id is None else topic_id, [change])],
    )
    error, topics = cluster.controller.alter_partition(request).response
    if not topics:
        return error, None
    [(_, [result])] = topics
    return error, result


def code(answer: tuple[ApiError, PartitionResult | None]) -> ErrorCode:
    error, result = answer
    if error.is_failure or result is None:
        return error.code
    return result.error.code


def test_a_shrink_and_an_expand_are_written_and_answered() -> None:
    cluster = Cluster()
    before = cluster.partition(0)
    error, result = ask(cluster, [1, 2])
    assert error.is_success and result is not None and result.error.is_success
    after = cluster.partition(0)
    assert after.isr == (1, 2) and after.partition_epoch == before.partition_epoch + 1
    assert after.leader_epoch == before.leader_epoch  # an ISR change moves no leader
    assert result.registration == after
    error, result = ask(cluster, [1, 2, 3])
    assert result is not None and result.registration == cluster.partition(0)
    assert cluster.partition(0).isr == (1, 2, 3)


def test_the_same_isr_writes_nothing_and_another_order_is_a_change() -> None:
    cluster = Cluster()
    end = cluster.controller.last_offset
    _, same = ask(cluster, [1, 2, 3])
    assert cluster.controller.last_offset == end
    assert same is not None and same.registration == cluster.partition(0)
    _, reordered = ask(cluster, [1, 3, 2])
    assert cluster.partition(0).isr == (1, 3, 2)
    assert reordered is not None and reordered.registration is not None
    assert reordered.registration.partition_epoch == cluster.partition(0).partition_epoch


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ({"sender_epoch": 0}, ErrorCode.STALE_BROKER_EPOCH),
        ({"topic_id": bytes(16)}, ErrorCode.UNKNOWN_TOPIC_ID),
        ({"leader_epoch": 5}, ErrorCode.NOT_CONTROLLER),
        ({"partition_epoch": 5}, ErrorCode.NOT_CONTROLLER),
        ({"leader_epoch": -1}, ErrorCode.FENCED_LEADER_EPOCH),
        ({"sender": 2}, ErrorCode.INVALID_REQUEST),
        ({"partition_epoch": -1}, ErrorCode.INVALID_UPDATE_VERSION),
        ({"isr": [1, 1]}, ErrorCode.INVALID_REQUEST),
        ({"isr": [1, 7]}, ErrorCode.INVALID_REQUEST),
        ({"isr": [2, 3]}, ErrorCode.INVALID_REQUEST),  # without the leader
        ({"isr": []}, ErrorCode.INVALID_REQUEST),
        ({"isr": [1, 2], "recovery": RECOVERING}, ErrorCode.INVALID_REQUEST),
        ({"isr": [1], "recovery": RECOVERING}, ErrorCode.INVALID_REQUEST),  # not back
        ({"epochs": {2: 999}}, ErrorCode.INELIGIBLE_REPLICA),
    ],
)
def test_refusals_in_kafkas_order(case: dict[str, object], expected: ErrorCode) -> None:
    cluster = Cluster()
    args: dict[str, object] = {"isr": [1, 2, 3], **case}
    isr = args.pop("isr")
    end = cluster.controller.last_offset
    assert code(ask(cluster, isr, **args)) == expected  # type: ignore[arg-type]
    assert cluster.controller.last_offset == end  # nothing written


def test_an_unknown_partition() -> None:
    cluster = Cluster()
    topic = cluster.image.topic("t")
    assert topic is not None
    change = IsrChange(9, 0, 0, [IsrMember(1, cluster.epochs[1])])
    request = AlterPartitionRequest(1, cluster.epochs[1], [(topic.topic_id, [change])])
    _, [(_, [result])] = cluster.controller.alter_partition(request).response
    assert result.error.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_a_fenced_or_shutting_down_member_is_ineligible_the_leader_too() -> None:
    cluster = Cluster()
    cluster.controller.fence_broker(3, cluster.epochs[3])
    assert cluster.partition(0).isr == (1, 2)
    assert code(ask(cluster, [1, 2, 3])) == ErrorCode.INELIGIBLE_REPLICA
    cluster.beat(2, stop=True)  # 2 leads partition 1: controlled shutdown
    assert cluster.image.brokers[2].in_controlled_shutdown
    assert cluster.partition(0).isr == (1,)
    assert code(ask(cluster, [1, 2])) == ErrorCode.INELIGIBLE_REPLICA
    unregistered = Cluster()
    unregistered.controller.unregister_broker(2)
    assert code(ask(unregistered, [1, 2])) == ErrorCode.INELIGIBLE_REPLICA


def test_an_epoch_of_minus_one_is_not_checked() -> None:
    cluster = Cluster()
    assert code(ask(cluster, [1, 2], epochs={2: -1})) == ErrorCode.NONE

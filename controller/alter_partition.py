"""AlterPartition (key 56, v2-3): a partition leader asks the controller to change its
ISR, as Kafka's controller checks and applies it.

The request as a whole needs the sender's current broker epoch (STALE_BROKER_EPOCH).
Then each partition, in Kafka's order of checks:

1. an unknown topic id: UNKNOWN_TOPIC_ID for each of its partitions; an unknown
   partition: UNKNOWN_TOPIC_OR_PARTITION;
2. a leader or partition epoch *newer* than the controller's: NOT_CONTROLLER (this
   controller may be behind; the broker asks the active one again);
3. an older leader epoch: FENCED_LEADER_EPOCH; a sender that is not the leader:
   INVALID_REQUEST; an older partition epoch: INVALID_UPDATE_VERSION;
4. an ISR with a duplicate, a negative id or a replica outside the assignment, or
   without the leader: INVALID_REQUEST; RECOVERING with more than one member, or going
   back from RECOVERED to RECOVERING: INVALID_REQUEST;
5. a member (any of them, the leader too) not registered, fenced, shutting down, or
   named with a broker epoch other than its registration's: INELIGIBLE_REPLICA.

A valid change writes a PartitionChangeRecord with the ISR as the request orders it
(an ISR with the same members in another order is a change, as Kafka compares lists)
and the leader recovery state when it differs; the same ISR and state write nothing.
An ISR that now holds every replica a reassignment adds completes it in the same record
(:func:`~millpond.controller.partition_change.build_change`): when that moves the
leadership away from the sender, its answer is NEW_LEADER_ELECTED. Otherwise the
answer is the partition as it is after the change. Pure functions of the image.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from millpond.controller.cluster_control import check_broker_epoch
from millpond.controller.image import LeaderRecoveryState, MetadataImage, PartitionRegistration
from millpond.controller.partition_change import build_change
from millpond.controller.record_serde import ApiMessageAndVersion, with_version
from millpond.controller.results import NO_ERROR, ApiError, ControllerResult
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.metadata.partition_change_record import PartitionChangeRecord

__all__ = [
    "AlterPartitionAnswer",
    "AlterPartitionRequest",
    "IsrChange",
    "IsrMember",
    "PartitionResult",
    "alter_partition",
]


class IsrMember(NamedTuple):
    broker_id: int
    #: -1: not checked (a leader that does not know the member's epoch).
    broker_epoch: int = -1


class IsrChange(NamedTuple):
    partition_index: int
    leader_epoch: int
    partition_epoch: int
    new_isr: Sequence[IsrMember]
    leader_recovery_state: int = LeaderRecoveryState.RECOVERED


class AlterPartitionRequest(NamedTuple):
    broker_id: int
    broker_epoch: int
    #: (topic id, the changes to its partitions)
    topics: Sequence[tuple[bytes, Sequence[IsrChange]]]


class PartitionResult(NamedTuple):
    partition_index: int
    error: ApiError
    #: The partition as the controller has it after the change (for NONE only).
    registration: PartitionRegistration | None = None


#: The request's own error, and (topic id, per-partition results) in the request's order.
AlterPartitionAnswer = tuple[ApiError, list[tuple[bytes, list[PartitionResult]]]]


def alter_partition(
    image: MetadataImage, request: AlterPartitionRequest
) -> ControllerResult[AlterPartitionAnswer]:
    """The records for the valid changes, and one result per partition (or the
    request's own error)."""
    error = check_broker_epoch(image, request.broker_id, request.broker_epoch)
    if error.is_failure:
        return ControllerResult((), (error, []))
    records: list[ApiMessageAndVersion] = []
    answers = []
    for topic_id, changes in request.topics:
        topic = image.topics_by_id.get(topic_id)
        results = []
        for change in changes:
            if topic is None:
                results.append(PartitionResult(change.partition_index, _UNKNOWN_TOPIC_ID))
                continue
            current = topic.partitions.get(change.partition_index)
            refusal = (
                _UNKNOWN_PARTITION
                if current is None
                else _refusal(image, request.broker_id, current, change)
            )
            if refusal is not None or current is None:
                results.append(PartitionResult(change.partition_index, refusal or NO_ERROR))
                continue
            fields = build_change(
                current,
                set(image.usable_brokers()).__contains__,
                isr=[m.broker_id for m in change.new_isr],
                recovery=change.leader_recovery_state,
            )
            after = current
            if fields:
                record = PartitionChangeRecord(
                    topic_id=topic_id, partition_id=change.partition_index, **fields
                )
                records.append(with_version(record))
                after = current.merge(record)
                if after.leader != request.broker_id:
                    results.append(PartitionResult(change.partition_index, _NEW_LEADER))
                    continue
            results.append(PartitionResult(change.partition_index, NO_ERROR, after))
        answers.append((topic_id, results))
    return ControllerResult(tuple(records), (NO_ERROR, answers))


_UNKNOWN_TOPIC_ID = ApiError(ErrorCode.UNKNOWN_TOPIC_ID, "This server does not host this topic ID.")
_NEW_LEADER = ApiError(
    ErrorCode.NEW_LEADER_ELECTED,
    "The change completed a reassignment that moved the leadership to another replica.",
)
_UNKNOWN_PARTITION = ApiError(
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."
)


def _refusal(
    image: MetadataImage, sender: int, current: PartitionRegistration, change: IsrChange
) -> ApiError | None:
    """Why the change is refused, in Kafka's order of checks (None: it is valid)."""
    if (
        change.leader_epoch > current.leader_epoch
        or change.partition_epoch > current.partition_epoch
    ):
        return ApiError(
            ErrorCode.NOT_CONTROLLER,
            "The request names a newer leader or partition epoch than this controller "
            "knows; ask the active controller.",
        )
    if change.leader_epoch < current.leader_epoch:
        return ApiError(
            ErrorCode.FENCED_LEADER_EPOCH,
            f"Leader epoch {change.leader_epoch} is older than the current {current.leader_epoch}.",
        )
    if sender != current.leader:
        return ApiError(
            ErrorCode.INVALID_REQUEST,
            f"Broker {sender} is not the leader of the partition (broker {current.leader} is).",
        )
    if change.partition_epoch < current.partition_epoch:
        return ApiError(
            ErrorCode.INVALID_UPDATE_VERSION,
            f"Partition epoch {change.partition_epoch} is older than the current "
            f"{current.partition_epoch}.",
        )
    ids = [m.broker_id for m in change.new_isr]
    if len(set(ids)) != len(ids) or any(i < 0 or i not in current.replicas for i in ids):
        return ApiError(
            ErrorCode.INVALID_REQUEST,
            f"Invalid ISR {ids}: every member must be a distinct replica of "
            f"{list(current.replicas)}.",
        )
    if current.leader not in ids:
        return ApiError(
            ErrorCode.INVALID_REQUEST, f"The new ISR {ids} does not contain the leader."
        )
    recovered, recovering = LeaderRecoveryState.RECOVERED, LeaderRecoveryState.RECOVERING
    if change.leader_recovery_state == recovering and len(ids) > 1:
        return ApiError(
            ErrorCode.INVALID_REQUEST,
            "A partition whose leader is RECOVERING has its leader alone in the ISR.",
        )
    if current.leader_recovery_state == recovered and change.leader_recovery_state == recovering:
        return ApiError(
            ErrorCode.INVALID_REQUEST, "A RECOVERED leader cannot go back to RECOVERING."
        )
    for member in change.new_isr:
        broker = image.brokers.get(member.broker_id)
        if broker is None:
            why = "is not registered"
        elif broker.in_controlled_shutdown:
            why = "is shutting down"
        elif broker.fenced:
            why = "is fenced"
        elif member.broker_epoch not in (-1, broker.broker_epoch):
            why = f"has epoch {broker.broker_epoch}, not {member.broker_epoch}"
        else:
            continue
        return ApiError(
            ErrorCode.INELIGIBLE_REPLICA,
            f"Broker {member.broker_id} cannot be in the ISR: it {why}.",
        )
    return None

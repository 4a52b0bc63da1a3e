"""Partition reassignments (KIP-455): AlterPartitionReassignments and
ListPartitionReassignments, as Kafka's controller runs them.

A reassignment moves a partition to a target replica list in two records:

1. the first adds the target's new replicas to the partition's replicas (the target's
   order, then the replicas being removed) and names them as *adding*, the others as
   *removing*; the new replicas fetch from the leader like any follower;
2. once the ISR holds every adding replica (and, when fewer are added than removed,
   every replica that stays), the change that shows it completes the reassignment: the
   removing replicas leave the replicas and the ISR, a removed leader hands over, and
   the leader epoch moves on. That change is usually the leader's AlterPartition adding
   the last new replica, and it may be the first record itself (a reordering, or
   removals from a partition whose remaining replicas are in sync).

Every partition change passes through
:func:`~millpond.controller.partition_change.build_change`, which completes a
reassignment wherever its ISR allows it. A new target replaces an ongoing one, judged
against the partition's current (extended) replicas. A null target cancels the
reassignment: the replicas go back to those before it, the adding ones leave the ISR, and
when that empties the ISR the first original replica takes it alone, which only a topic
with ``unclean.leader.election.enable`` allows. With ``allow_rf_change`` off (v1), a
target of another size than the partition's replication factor (after an ongoing
reassignment) is INVALID_REPLICATION_FACTOR.

Partitions are answered one by one, each judged against the image as the request found
it; the records go in together. Pure functions of the image.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from millpond.controller.image import MetadataImage, PartitionRegistration, TopicImage
from millpond.controller.partition_change import Election, build_change, unclean_election_enabled
from millpond.controller.record_serde import ApiMessageAndVersion, with_version
from millpond.controller.replication_control import validate_manual_assignment
from millpond.controller.results import NO_ERROR, ApiError, ControllerResult
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.metadata.partition_change_record import PartitionChangeRecord

__all__ = [
    "OngoingReassignment",
    "TopicReassignment",
    "alter_partition_reassignments",
    "list_partition_reassignments",
]


class TopicReassignment(NamedTuple):
    name: str
    #: (partition index, target replicas or None to cancel), in the request's order.
    partitions: Sequence[tuple[int, Sequence[int] | None]]


class OngoingReassignment(NamedTuple):
    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


#: (topic name, [(partition index, outcome)]) in the request's order.
ReassignmentOutcomes = list[tuple[str, list[tuple[int, ApiError]]]]


def alter_partition_reassignments(
    image: MetadataImage,
    topics: Sequence[TopicReassignment],
    *,
    allow_rf_change: bool = True,
    unclean_default: bool = False,
) -> ControllerResult[ReassignmentOutcomes]:
    """One outcome per partition asked for, and the records that start, replace, or
    cancel the reassignments (see the module docstring). ``unclean_default`` is the
    controller's static ``unclean.leader.election.enable``."""
    records: list[ApiMessageAndVersion] = []
    outcomes: ReassignmentOutcomes = []
    for topic in topics:
        answered = []
        for index, target in topic.partitions:
            error, record = _reassign(
                image, topic.name, index, target, allow_rf_change, unclean_default
            )
            if record is not None:
                records.append(with_version(record))
            answered.append((index, error))
        outcomes.append((topic.name, answered))
    return ControllerResult(tuple(records), outcomes)


def _reassign(
    image: MetadataImage,
    name: str,
    index: int,
    target: Sequence[int] | None,
    allow_rf_change: bool,
    unclean_default: bool,
) -> tuple[ApiError, PartitionChangeRecord | None]:
    topic = image.topic(name)
    if topic is None:
        return ApiError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {name}."
        ), None
    p = topic.partitions.get(index)
    if p is None:
        return ApiError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {name}:{index}."
        ), None
    usable = set(image.usable_brokers()).__contains__
    if target is None:
        if not p.reassigning:
            # No message, as Kafka's: its ApiError drops a message that is the code's own.
            return ApiError(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS), None
        unclean = unclean_election_enabled(image, name, unclean_default)
        replicas, isr, needs_unclean = _revert(p)
        if not replicas:
            return ApiError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "Invalid replica assignment: addingReplicas contains all replicas.",
            ), None
        if needs_unclean and not unclean:
            return ApiError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Unable to revert partition assignment for {name}:{index} because it would "
                "require an unclean leader election.",
            ), None
        election = Election.UNCLEAN if unclean else Election.ONLINE
        fields = build_change(
            p, usable, election=election, isr=isr, replicas=replicas, removing=(), adding=()
        )
        return NO_ERROR, _record(topic, index, fields)
    error = validate_manual_assignment(image, target)
    if error.is_success and not allow_rf_change:
        error = _same_replication_factor(p, target)
    if error.is_failure:
        return error, None
    removing = sorted(set(p.replicas) - set(target))
    adding = sorted(set(target) - set(p.replicas))
    replicas = [*target, *removing]
    # As Kafka's controller: an empty list keeps the partition's own (a target equal to
    # the current replicas leaves an ongoing reassignment's adding and removing as they are).
    fields = build_change(
        p,
        usable,
        replicas=replicas,
        removing=removing or None,
        adding=adding or None,
    )
    return NO_ERROR, _record(topic, index, fields)


def _record(topic: TopicImage, index: int, fields: dict[str, Any]) -> PartitionChangeRecord | None:
    if not fields:
        return None
    return PartitionChangeRecord(topic_id=topic.topic_id, partition_id=index, **fields)


def _revert(p: PartitionRegistration) -> tuple[list[int], list[int], bool]:
    """(the replicas before the reassignment, its ISR without the adding replicas,
    whether that needed an unclean election). Kafka's PartitionReassignmentRevert."""
    replicas = [r for r in p.replicas if r not in p.adding_replicas]
    isr = [r for r in p.isr if r not in p.adding_replicas]
    if isr or not replicas:
        return replicas, isr, False
    return replicas, replicas[:1], True


def _same_replication_factor(p: PartitionRegistration, target: Sequence[int]) -> ApiError:
    if p.reassigning:
        current = len((set(p.replicas) | set(p.adding_replicas)) - set(p.removing_replicas))
    else:
        current = len(p.replicas)
    if current == len(target):
        return NO_ERROR
    return ApiError(
        ErrorCode.INVALID_REPLICATION_FACTOR,
        f"The replication factor is changed from {current} to {len(target)}",
    )


def list_partition_reassignments(
    image: MetadataImage, topics: Sequence[tuple[str, Sequence[int]]] | None
) -> list[OngoingReassignment]:
    """The reassignments in progress: every one (``topics`` None), or those among the
    partitions named. Unknown topics and partitions are left out, as Kafka does."""
    if topics is None:
        wanted = [
            (topic, index)
            for topic in sorted(image.topics_by_id.values(), key=lambda t: t.name)
            for index in sorted(topic.partitions)
        ]
    else:
        wanted = []
        for name, indexes in topics:
            found = image.topic(name)
            if found is not None:
                wanted += [(found, i) for i in indexes]
    ongoing = []
    for topic, index in wanted:
        p = topic.partitions.get(index)
        if p is not None and p.reassigning:
            ongoing.append(
                OngoingReassignment(
                    topic.name, index, p.replicas, p.adding_replicas, p.removing_replicas
                )
            )
    return ongoing

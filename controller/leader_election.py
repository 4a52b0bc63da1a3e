"""ElectLeaders: the leader elections an operator asks for (``kafka-leader-election``),
as Kafka's controller runs them.

- *Preferred* (type 0): the partition's first replica leads again, if it is in the ISR
  and usable (unfenced, not shutting down); a partition it leads already needs no
  election (ELECTION_NOT_NEEDED). When the first replica cannot lead, a partition
  without a leader gets the first of its ISR that can; one that keeps its leader gets
  PREFERRED_LEADER_NOT_AVAILABLE.
- *Unclean* (type 1): a partition without a leader gets the first usable replica of its
  ISR, or failing that the first usable replica at all, which then is the whole ISR and
  leads in the RECOVERING state (it may lack acknowledged records); a partition with a
  leader needs no election; one with no usable replica gets
  ELIGIBLE_LEADERS_NOT_AVAILABLE.

Partitions named in the request are answered one by one, in order; with none named
(null), every partition is tried and only those that needed an election are reported.
Pure functions of the image.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import IntEnum
from typing import Any, NamedTuple

from millpond.controller.image import NO_LEADER, MetadataImage, PartitionRegistration
from millpond.controller.partition_change import Election, build_change
from millpond.controller.record_serde import ApiMessageAndVersion, with_version
from millpond.controller.results import NO_ERROR, ApiError, ControllerResult
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.metadata.partition_change_record import PartitionChangeRecord

__all__ = [
    "MAX_ELECTIONS_PER_IMBALANCE",
    "ElectionType",
    "TopicElection",
    "balance_leaders",
    "elect_leaders",
]

#: Kafka's maxElectionsPerImbalance: the most preferred elections one balancing pass writes.
MAX_ELECTIONS_PER_IMBALANCE = 1000


class ElectionType(IntEnum):
    PREFERRED = 0
    UNCLEAN = 1


class TopicElection(NamedTuple):
    topic: str
    #: (partition index, outcome), in the request's order.
    partitions: list[tuple[int, ApiError]]


def elect_leaders(
    image: MetadataImage,
    election: ElectionType,
    requested: Sequence[tuple[str, Sequence[int]]] | None,
) -> ControllerResult[list[TopicElection]]:
    """One outcome per partition asked for (see the module docstring); ``requested``
    None asks for every partition."""
    records: list[ApiMessageAndVersion] = []
    results = []
    if requested is None:
        for topic in sorted(image.topics_by_id.values(), key=lambda t: t.name):
            outcomes = []
            for index in sorted(topic.partitions):
                error = _elect(image, topic.name, index, election, records)
                if error.code != ErrorCode.ELECTION_NOT_NEEDED:
                    outcomes.append((index, error))
            results.append(TopicElection(topic.name, outcomes))
    else:
        for name, indexes in requested:
            outcomes = [(i, _elect(image, name, i, election, records)) for i in indexes]
            results.append(TopicElection(name, outcomes))
    return ControllerResult(tuple(records), results)


def balance_leaders(
    image: MetadataImage, max_elections: int = MAX_ELECTIONS_PER_IMBALANCE
) -> ControllerResult[bool]:
    """``auto.leader.rebalance.enable``'s pass (Kafka's maybeBalancePartitionLeaders): a
    preferred election for each partition not led by its first replica, where one
    changes anything, up to ``max_elections``; the answer says whether that bound was
    reached (another pass should follow at once)."""
    records: list[ApiMessageAndVersion] = []
    usable = set(image.usable_brokers()).__contains__
    for topic in sorted(image.topics_by_id.values(), key=lambda t: t.name):
        for index in sorted(topic.partitions):
            if len(records) >= max_elections:
                return ControllerResult(tuple(records), True)
            p = topic.partitions[index]
            if not p.replicas or p.leader == p.replicas[0]:
                continue
            change = build_change(p, usable, election=Election.PREFERRED)
            if change:
                record = PartitionChangeRecord(
                    topic_id=topic.topic_id, partition_id=index, **change
                )
                records.append(with_version(record))
    return ControllerResult(tuple(records), len(records) >= max_elections)


def _elect(
    image: MetadataImage,
    name: str,
    index: int,
    election: ElectionType,
    records: list[ApiMessageAndVersion],
) -> ApiError:
    topic_id = image.topic_ids_by_name.get(name)
    topic = None if topic_id is None else image.topics_by_id.get(topic_id)
    if topic is None:
        return ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No topic named {name}.")
    partition = topic.partitions.get(index)
    if partition is None:
        return ApiError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No partition {index} in topic {name}."
        )
    change = _change(partition, election, set(image.usable_brokers()))
    if isinstance(change, ApiError):
        return change
    record = PartitionChangeRecord(topic_id=topic.topic_id, partition_id=index, **change)
    records.append(with_version(record))
    return NO_ERROR


def _change(
    p: PartitionRegistration, election: ElectionType, usable: set[int]
) -> dict[str, Any] | ApiError:
    """The record's fields the election changes, or why there is none."""
    if election is ElectionType.PREFERRED:
        if p.replicas and p.leader == p.replicas[0]:
            return ApiError(ErrorCode.ELECTION_NOT_NEEDED, ErrorCode.ELECTION_NOT_NEEDED.message)
        change = build_change(p, usable.__contains__, election=Election.PREFERRED)
        if change:
            return change
        return ApiError(
            ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
            f"The preferred replica {p.replicas[0] if p.replicas else NO_LEADER} is not in the"
            " ISR or not usable (fenced or shutting down); retry once it has caught up and is"
            " unfenced.",
        )
    if p.leader != NO_LEADER:
        return ApiError(ErrorCode.ELECTION_NOT_NEEDED, ErrorCode.ELECTION_NOT_NEEDED.message)
    change = build_change(p, usable.__contains__, election=Election.UNCLEAN)
    if change:
        return change
    return ApiError(
        ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
        "No replica of the partition is usable (every one is fenced or shutting down); "
        "retry once one is back.",
    )

"""Partition leadership and ISR as the controller changes them when a broker's state
changes: PartitionChangeRecords, as Kafka's ``generateLeaderAndIsrUpdates`` and
``PartitionChangeBuilder`` write them (eligible leader replicas off, as millpond's
clusters run).

- A broker being fenced, shutting down or unregistered leaves every ISR that holds it,
  except that an ISR never becomes empty (its last member stays: it holds every
  acknowledged record), and it stops leading: its partitions move to the first of their
  replicas, in preferred order, that is in the new ISR and usable (unfenced, not shutting
  down), or have no leader (-1) until one is.
- A broker being unfenced may lead again: partitions without a leader get one from
  their ISR, the unfenced broker counting as usable.
- With ``unclean.leader.election.enable`` a partition whose ISR has no usable replica
  takes the first usable replica at all: it becomes the whole ISR and leads in the
  RECOVERING state (it may lack acknowledged records).

A leader that still qualifies keeps leading, and the ISR shrinking alone does not bump the
leader epoch (metadata versions from 3.6 on). :func:`build_change` is the one builder of
every PartitionChangeRecord the controller writes (these, AlterPartition, ElectLeaders,
reassignments), so a reassignment completes wherever an ISR change allows it. Pure
functions of the image.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from enum import Enum
from typing import Any

from millpond.controller.image import (
    NO_LEADER,
    ConfigResource,
    ConfigResourceType,
    LeaderRecoveryState,
    MetadataImage,
    PartitionRegistration,
    TopicImage,
)
from millpond.controller.record_serde import ApiMessageAndVersion, with_version
from millpond.wire.generated.metadata.partition_change_record import PartitionChangeRecord

__all__ = [
    "Election",
    "build_change",
    "completed_reassignment",
    "leader_and_isr_updates",
    "partitions_led_by",
    "partitions_with_replica_in_isr",
    "partitions_without_leader",
    "unclean_election_enabled",
]


#: (topic, partition index, registration)
PartitionRef = tuple[TopicImage, int, PartitionRegistration]


def _partitions(image: MetadataImage) -> Iterator[PartitionRef]:
    for topic in sorted(image.topics_by_id.values(), key=lambda t: t.name):
        for index in sorted(topic.partitions):
            yield topic, index, topic.partitions[index]


def partitions_with_replica_in_isr(image: MetadataImage, broker_id: int) -> list[PartitionRef]:
    return [ref for ref in _partitions(image) if broker_id in ref[2].isr]


def partitions_without_leader(image: MetadataImage) -> list[PartitionRef]:
    return [ref for ref in _partitions(image) if ref[2].leader == NO_LEADER]


def partitions_led_by(image: MetadataImage, broker_id: int) -> list[PartitionRef]:
    return [ref for ref in _partitions(image) if ref[2].leader == broker_id]


def unclean_election_enabled(image: MetadataImage, topic: str, default: bool) -> bool:
    """``unclean.leader.election.enable`` of a topic: its own, else the cluster-wide
    dynamic default, else the controller's static setting."""
    key = "unclean.leader.election.enable"
    value = image.topic_config(topic).get(key)
    if value is None:
        value = image.config(ConfigResource(ConfigResourceType.BROKER, "")).get(key)
    return default if value is None else value.strip().lower() == "true"


def leader_and_isr_updates(
    image: MetadataImage,
    partitions: Iterable[PartitionRef],
    *,
    remove: int = NO_LEADER,
    add: int = NO_LEADER,
    unclean_default: bool = False,
) -> list[ApiMessageAndVersion]:
    """The changes for ``partitions`` when broker ``remove`` leaves (fenced, shutting
    down, unregistered) or broker ``add`` may lead (being unfenced; the image does not
    show it usable yet). ``unclean_default`` is the controller's static
    ``unclean.leader.election.enable``, for topics and clusters that do not set it.
    Partitions that need no change get no record."""
    usable = set(image.usable_brokers())

    def acceptable(replica: int) -> bool:
        return replica != remove and (replica == add or replica in usable)

    records = []
    for topic, index, p in partitions:
        unclean = unclean_election_enabled(image, topic.name, unclean_default)
        election = Election.UNCLEAN if unclean else Election.ONLINE
        isr = [r for r in p.isr if r != remove]
        change = build_change(p, acceptable, election=election, isr=isr)
        if change:
            record = PartitionChangeRecord(topic_id=topic.topic_id, partition_id=index, **change)
            records.append(with_version(record))
    return records


class Election(Enum):
    """How a leader is chosen (Kafka's PartitionChangeBuilder.Election)."""

    #: The first replica if it may lead, else as ONLINE (ElectLeaders type 0).
    PREFERRED = "preferred"
    #: The current leader while it may lead, else the first replica in the ISR that may.
    ONLINE = "online"
    #: As ONLINE, else the first replica that may lead at all, which then is the whole
    #: ISR and leads RECOVERING (it may lack acknowledged records).
    UNCLEAN = "unclean"


def build_change(
    p: PartitionRegistration,
    acceptable: Callable[[int], bool],
    *,
    election: Election = Election.ONLINE,
    isr: Sequence[int] | None = None,
    replicas: Sequence[int] | None = None,
    removing: Sequence[int] | None = None,
    adding: Sequence[int] | None = None,
    recovery: int | None = None,
) -> dict[str, Any]:
    """The PartitionChangeRecord fields that take ``p`` to the targets given (None: as
    it is), with a leader that is ``acceptable`` (unfenced, not shutting down) chosen by
    ``election``; empty when nothing changes. Kafka's PartitionChangeBuilder.build, with
    eligible leader replicas off:

    - a reassignment in progress completes once the target ISR holds every adding
      replica and some replica that stays (with fewer added than removed, every replica
      that stays): the removing replicas leave the replicas and the ISR;
    - the leader is elected over the target replicas and ISR;
    - replicas leaving the assignment bump the leader epoch even when the leader stays;
    - an ISR never becomes empty: a target ISR without members is not written.
    """
    target_isr = list(p.isr if isr is None else isr)
    target_replicas = list(p.replicas if replicas is None else replicas)
    target_removing = list(p.removing_replicas if removing is None else removing)
    target_adding = list(p.adding_replicas if adding is None else adding)
    completed = completed_reassignment(target_replicas, target_removing, target_adding, target_isr)
    if completed is not None:
        target_replicas, target_isr = completed
        target_removing, target_adding = [], []
    change: dict[str, Any] = {}
    leader, unclean = _elect(p, election, target_replicas, target_isr, acceptable)
    if leader != p.leader:
        change["leader"] = leader
        if unclean:
            change["isr"] = [leader]
            if p.leader_recovery_state != LeaderRecoveryState.RECOVERING:
                change["leader_recovery_state"] = LeaderRecoveryState.RECOVERING
    elif not set(p.replicas) <= set(target_replicas):
        change["leader"] = p.leader  # the same leader in a new epoch
    if "isr" not in change and target_isr and target_isr != list(p.isr):
        change["isr"] = target_isr
    if target_replicas and target_replicas != list(p.replicas):
        change["replicas"] = target_replicas
    if target_removing != list(p.removing_replicas):
        change["removing_replicas"] = target_removing
    if target_adding != list(p.adding_replicas):
        change["adding_replicas"] = target_adding
    if recovery is not None and recovery != p.leader_recovery_state:
        change["leader_recovery_state"] = recovery
    return change


def _elect(
    p: PartitionRegistration,
    election: Election,
    replicas: Sequence[int],
    isr: Sequence[int],
    acceptable: Callable[[int], bool],
) -> tuple[int, bool]:
    """(the leader, whether the election was unclean)."""

    def valid(replica: int) -> bool:
        return replica in isr and acceptable(replica)

    if election is Election.PREFERRED and replicas and valid(replicas[0]):
        return replicas[0], False
    if valid(p.leader):
        return p.leader, False
    clean = next((r for r in replicas if valid(r)), None)
    if clean is not None:
        return clean, False
    if election is Election.UNCLEAN:
        any_usable = next((r for r in replicas if acceptable(r)), None)
        if any_usable is not None:
            return any_usable, True
    return NO_LEADER, False


def completed_reassignment(
    replicas: Sequence[int], removing: Sequence[int], adding: Sequence[int], isr: Sequence[int]
) -> tuple[list[int], list[int]] | None:
    """(replicas, ISR) once the reassignment is done, or None while it is not (or none
    is in progress). Kafka's PartitionReassignmentReplicas.maybeCompleteReassignment."""
    if not removing and not adding:
        return None
    new_isr, new_replicas = list(isr), list(replicas)
    if removing:
        new_isr = [r for r in isr if r not in removing]
        new_replicas = [r for r in replicas if r not in removing]
        if not new_isr or not new_replicas:
            return None
    if not set(adding) <= set(new_isr):
        return None
    if len(adding) < len(removing) and not set(new_replicas) <= set(new_isr):
        return None
    return new_replicas, new_isr

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
leader epoch (metadata versions from 3.6 on). Pure functions of the image.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
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
    "election_change",
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
        change = election_change(p, acceptable, remove=remove, unclean=unclean)
        if change:
            record = PartitionChangeRecord(topic_id=topic.topic_id, partition_id=index, **change)
            records.append(with_version(record))
    return records


def election_change(
    p: PartitionRegistration,
    acceptable: Callable[[int], bool],
    *,
    remove: int = NO_LEADER,
    unclean: bool,
) -> dict[str, Any]:
    """The PartitionChangeRecord's fields that change when ``remove`` leaves the ISR and
    the leader must be ``acceptable`` (none: no record). Kafka's PartitionChangeBuilder
    with an ONLINE, or UNCLEAN, election."""
    target_isr = [r for r in p.isr if r != remove]

    def valid(replica: int) -> bool:
        return replica in target_isr and acceptable(replica)

    leader, is_unclean = NO_LEADER, False
    if valid(p.leader):
        leader = p.leader
    else:
        clean = next((r for r in p.replicas if valid(r)), None)
        if clean is not None:
            leader = clean
        elif unclean:
            any_usable = next((r for r in p.replicas if acceptable(r)), None)
            if any_usable is not None:
                leader, is_unclean = any_usable, True
    change: dict[str, Any] = {}
    if leader != p.leader:
        change["leader"] = leader
        if is_unclean:
            change["isr"] = [leader]
            if p.leader_recovery_state != LeaderRecoveryState.RECOVERING:
                change["leader_recovery_state"] = LeaderRecoveryState.RECOVERING
    if "isr" not in change and target_isr and tuple(target_isr) != p.isr:
        change["isr"] = target_isr
    return change

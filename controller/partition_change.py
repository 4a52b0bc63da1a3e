"""Partition leadership as the controller changes it: PartitionChangeRecords.

Kafka's controller elects a partition's leader from its ISR, preferring its replicas'
order, among the brokers that are usable (unfenced, not shutting down), and a new leader
bumps the partition's leader epoch (the replay does). Here: the election when a broker is
unfenced. Pure functions of the image.
"""

from __future__ import annotations

from millpond.controller.image import NO_LEADER, MetadataImage
from millpond.controller.record_serde import ApiMessageAndVersion, with_version
from millpond.wire.generated.metadata.partition_change_record import PartitionChangeRecord

__all__ = ["elect_leaderless"]


def elect_leaderless(image: MetadataImage, unfenced: int) -> list[ApiMessageAndVersion]:
    """Kafka's ``handleBrokerUnfenced``: each partition left without a leader (its leader
    was fenced or shut down) whose ISR holds the broker being unfenced gets a leader
    again: the first of its replicas, in their preferred order, that is in the ISR and
    usable. ``image`` is the one before the unfencing."""
    usable = {*image.usable_brokers(), unfenced}
    records = []
    for topic in sorted(image.topics_by_id.values(), key=lambda t: t.name):
        for index in sorted(topic.partitions):
            p = topic.partitions[index]
            if p.leader != NO_LEADER or unfenced not in p.isr:
                continue
            leader = next((r for r in p.replicas if r in p.isr and r in usable), None)
            if leader is None:
                continue  # an ISR outside the replicas: nothing to elect from
            change = PartitionChangeRecord(
                topic_id=topic.topic_id, partition_id=index, leader=leader
            )
            records.append(with_version(change))
    return records

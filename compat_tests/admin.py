"""Questions the cluster-wide compat tests ask any cluster, millpond's or Kafka's, through
kafka-python's admin client (a real client, not millpond's own wire code)."""

from __future__ import annotations

from kafka import KafkaAdminClient


def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """``group``'s committed offset of each partition of ``topic`` (OffsetFetch)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        offsets = admin.list_group_offsets({group: None})[group]
    finally:
        admin.close()
    return {tp.partition: meta.offset for tp, meta in offsets.items() if tp.topic == topic}

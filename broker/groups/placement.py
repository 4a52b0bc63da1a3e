"""Where groups live: the ``__consumer_offsets`` topic, and which of its partitions holds
a group. That is Kafka's rule, so a group keeps its partition when data moves between
Kafka and millpond: Java's ``String.hashCode`` of the group id, made non-negative, modulo
the topic's partition count. Apart from the records' codecs, so a broker that no group
has used yet does not load them.
"""

from __future__ import annotations

OFFSETS_TOPIC = "__consumer_offsets"


def partition_for(group_id: str, partitions: int) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode()) % partitions``."""
    h = 0
    for unit in _utf16_units(group_id):
        h = (31 * h + unit) & 0xFFFFFFFF
    if h >= 0x80000000:
        h -= 1 << 32
    return (h & 0x7FFFFFFF) % partitions


def _utf16_units(text: str) -> list[int]:
    data = text.encode("utf-16-be", "surrogatepass")
    return [int.from_bytes(data[i : i + 2], "big") for i in range(0, len(data), 2)]

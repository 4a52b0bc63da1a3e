"""Kafka's timestamp types, shared by record batches v2 and legacy messages v1.

Attribute bit 3 says whose clock the timestamps are: the producer's (CreateTime) or
the broker's at append (LogAppendTime, a topic config). Magic 0 messages carry no
timestamp at all, which readers report as ``NO_TIMESTAMP_TYPE`` with timestamp -1.
"""

from __future__ import annotations

from enum import IntEnum

#: The timestamp Kafka reports where there is none (magic 0, empty batches).
NO_TIMESTAMP = -1

#: Attribute bit 3 in both v1 messages and v2 batches.
TIMESTAMP_TYPE_BIT = 0x08


class TimestampType(IntEnum):
    """Kafka's ``TimestampType`` ids (as in ListOffsets and the consumer's records)."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

"""The records of ``__consumer_offsets``, in Kafka's own format, so Kafka's tools read
our log and we read theirs.

A record's key is an int16 record type followed by the key fields; its value is an int16
version followed by the value fields at that version; a null value is a tombstone.
Types: 0 and 1 are an offset commit (group, topic, partition), 2 is a classic group's
metadata (members, generation, assignment). Later types (consumer, share and streams
groups) are not ours to read: :func:`decode` returns None for them.

Which partition holds a group: :mod:`millpond.broker.groups.placement`.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from millpond.broker.groups.placement import OFFSETS_TOPIC
from millpond.wire.exceptions import DecodeError
from millpond.wire.generated.group_coordinator.group_metadata_key import GroupMetadataKey
from millpond.wire.generated.group_coordinator.group_metadata_value import GroupMetadataValue
from millpond.wire.generated.group_coordinator.offset_commit_key import OffsetCommitKey
from millpond.wire.generated.group_coordinator.offset_commit_value import OffsetCommitValue
from millpond.wire.primitives import DECODE_FAILURES

_INT16 = struct.Struct(">h")

LEGACY_OFFSET_COMMIT = 0
OFFSET_COMMIT = 1
GROUP_METADATA = 2
#: Versions Kafka 4 writes: offset commits at 3 (1 when the commit carries an expiry
#: time), group metadata at 3.
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_EXPIRING_VALUE_VERSION = 1
GROUP_METADATA_VALUE_VERSION = 3


class OffsetRecord(NamedTuple):  # a NamedTuple: one is made per committed offset
    group_id: str
    topic: str
    partition: int
    value: OffsetCommitValue | None  # None: a tombstone


class GroupRecord(NamedTuple):
    group_id: str
    value: GroupMetadataValue | None  # None: a tombstone


def offset_key(group_id: str, topic: str, partition: int) -> bytes:
    key = OffsetCommitKey(group=group_id, topic=topic, partition=partition)
    return _INT16.pack(OFFSET_COMMIT) + key.encode(0)


def offset_value(value: OffsetCommitValue) -> bytes:
    version = OFFSET_COMMIT_VALUE_VERSION
    if value.expire_timestamp >= 0:
        version = OFFSET_COMMIT_EXPIRING_VALUE_VERSION
    return _INT16.pack(version) + value.encode(version)


def group_key(group_id: str) -> bytes:
    return _INT16.pack(GROUP_METADATA) + GroupMetadataKey(group=group_id).encode(0)


def group_value(value: GroupMetadataValue) -> bytes:
    return _INT16.pack(GROUP_METADATA_VALUE_VERSION) + value.encode(GROUP_METADATA_VALUE_VERSION)


def encode(record: OffsetRecord | GroupRecord) -> tuple[bytes, bytes | None]:
    """A record's key and value (None: a tombstone) as Kafka writes them."""
    if isinstance(record, OffsetRecord):
        key = offset_key(record.group_id, record.topic, record.partition)
        return key, None if record.value is None else offset_value(record.value)
    return group_key(record.group_id), None if record.value is None else group_value(record.value)


def decode(key: bytes, value: bytes | None) -> OffsetRecord | GroupRecord | None:
    """One record of the topic; None for record types other than classic groups' and
    offsets'. Raises DecodeError for bytes that are not a valid record of its type."""
    try:
        (record_type,) = _INT16.unpack_from(key)
        if record_type in (LEGACY_OFFSET_COMMIT, OFFSET_COMMIT):
            k = OffsetCommitKey.decode(key[2:], 0)
            offset = None
            if value is not None:
                (version,) = _INT16.unpack_from(value)
                offset = OffsetCommitValue.decode(value[2:], version)
            return OffsetRecord(k.group, k.topic, k.partition, offset)
        if record_type == GROUP_METADATA:
            g = GroupMetadataKey.decode(key[2:], 0)
            group = None
            if value is not None:
                (version,) = _INT16.unpack_from(value)
                group = GroupMetadataValue.decode(value[2:], version)
            return GroupRecord(g.group, group)
    except DecodeError as exc:
        raise DecodeError(f"unreadable {OFFSETS_TOPIC} record: {exc}") from None
    except (*DECODE_FAILURES, KeyError, ValueError) as exc:
        raise DecodeError(f"unreadable {OFFSETS_TOPIC} record: {exc!r}") from None
    return None

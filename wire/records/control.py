"""Control records: the key and value formats of records in control batches.

A control batch (attribute bit 5) holds records that consumers never see as data.
Its key is ``version int16, type int16``; for the transaction markers ABORT and
COMMIT the value is an EndTxnMarker ``version int16, coordinator_epoch int32``. The
KRaft types (leader change, snapshot header/footer, kraft version, voters) have
values of their own that the metadata layer decodes; here only their type is named.
"""

from __future__ import annotations

from enum import IntEnum
from struct import Struct
from typing import NamedTuple

from millpond.wire.exceptions import DecodeError

_KEY = Struct(">hh")
_END_TXN_MARKER = Struct(">hi")

CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0


class ControlRecordType(IntEnum):
    """Kafka's control record types (the int16 ``type`` of a control key)."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


class ControlKey(NamedTuple):
    """A control record's key. ``type`` stays an int so unknown future types survive."""

    version: int
    type: int


class EndTxnMarker(NamedTuple):
    """The value of an ABORT or COMMIT control record."""

    version: int
    coordinator_epoch: int


def parse_control_key(key: bytes | memoryview | None) -> ControlKey:
    """Read a control key; fields after ``type`` (a later version) are ignored."""
    if key is None or len(key) < _KEY.size:
        raise DecodeError("control record key shorter than 4 bytes")
    version, type_ = _KEY.unpack_from(key, 0)
    if version < 0:
        raise DecodeError(f"invalid control record key version {version}")
    return ControlKey(version, type_)


def build_control_key(type_: ControlRecordType | int, version: int = CONTROL_KEY_VERSION) -> bytes:
    return _KEY.pack(version, type_)


def parse_end_txn_marker(value: bytes | memoryview | None) -> EndTxnMarker:
    """Read an EndTxnMarker value; fields of later versions are ignored."""
    if value is None or len(value) < _END_TXN_MARKER.size:
        raise DecodeError("end transaction marker shorter than 6 bytes")
    version, coordinator_epoch = _END_TXN_MARKER.unpack_from(value, 0)
    if version < 0:
        raise DecodeError(f"invalid end transaction marker version {version}")
    return EndTxnMarker(version, coordinator_epoch)


def build_end_txn_marker(coordinator_epoch: int, version: int = END_TXN_MARKER_VERSION) -> bytes:
    return _END_TXN_MARKER.pack(version, coordinator_epoch)

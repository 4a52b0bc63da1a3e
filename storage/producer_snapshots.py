"""Producer state snapshots: ``<20-digit offset>.snapshot`` files in a partition directory.

A snapshot records, as of an offset (exclusive: the log end offset when it was taken),
the state of every idempotent or transactional producer of the partition, so that
loading a log replays batches from the latest snapshot instead of from the log start.
The layout is Kafka's (``ProducerStateManager``, schema ``ProducerSnapshot.json``), all
big-endian::

    offset  size
    0       2    version (int16) = 1
    2       4    CRC-32C (uint32) of every byte from offset 6 to the end of the file
    6       4    number of producer entries (int32)
    10      46   per entry: producer_id int64, epoch int16, last_sequence int32,
                 last_offset int64, offset_delta int32, timestamp int64,
                 coordinator_epoch int32, current_txn_first_offset int64 (-1: none)

The body after the version is the generated
:class:`~millpond.wire.generated.storage.producer_snapshot.ProducerSnapshot` message.
Kafka writes the file in place; we write it with ``write_atomic`` so that a crash never
leaves a torn snapshot (Kafka copes with one by falling back to an older snapshot; so
can our loader, on :class:`CorruptSnapshotError`). Unlike Kafka, bytes after the last
entry are refused even when the CRC covers them: Kafka never writes any.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Final

from millpond.storage.fs import FileSystem, join, write_atomic
from millpond.storage.names import SNAPSHOT_SUFFIX, parse_segment_file_name, segment_file_name
from millpond.wire.crc32c import crc32c
from millpond.wire.exceptions import DecodeError, EncodeError
from millpond.wire.generated.storage.producer_snapshot import ProducerEntry, ProducerSnapshot

__all__ = [
    "SNAPSHOT_VERSION",
    "CorruptSnapshotError",
    "ProducerEntry",
    "decode_snapshot",
    "delete_snapshots_below",
    "encode_snapshot",
    "list_snapshots",
    "read_snapshot",
    "snapshot_path",
    "write_snapshot",
]

SNAPSHOT_VERSION: Final = 1
_VERSION = struct.Struct(">h")
_CRC = struct.Struct(">I")
_CRC_POSITION: Final = 2
_ENTRIES_POSITION: Final = 6


class CorruptSnapshotError(Exception):
    """A ``.snapshot`` file that is not a valid version 1 snapshot."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"corrupt producer snapshot {path}: {problem}")
        self.path = path
        self.problem = problem


def snapshot_path(partition_dir: str, offset: int) -> str:
    return join(partition_dir, segment_file_name(offset, SNAPSHOT_SUFFIX))


def encode_snapshot(entries: Iterable[ProducerEntry]) -> bytes:
    """The bytes of a snapshot file holding ``entries`` (in the given order)."""
    body = bytearray(_VERSION.pack(SNAPSHOT_VERSION))
    body += ProducerSnapshot(crc=0, producer_entries=list(entries)).encode(SNAPSHOT_VERSION)
    _CRC.pack_into(body, _CRC_POSITION, crc32c(memoryview(body)[_ENTRIES_POSITION:]))
    return bytes(body)


def decode_snapshot(data: bytes, path: str = "<snapshot>") -> list[ProducerEntry]:
    """The entries of a snapshot file's bytes; :class:`CorruptSnapshotError` unless the
    version is 1, the CRC matches and the entries fill the file exactly."""
    if len(data) < _ENTRIES_POSITION:
        raise CorruptSnapshotError(path, f"{len(data)} bytes, shorter than the header")
    (version,) = _VERSION.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(path, f"unknown version {version}")
    (stored,) = _CRC.unpack_from(data, _CRC_POSITION)
    computed = crc32c(memoryview(data)[_ENTRIES_POSITION:])
    if stored != computed:
        raise CorruptSnapshotError(path, f"CRC mismatch: stored {stored}, computed {computed}")
    try:
        snapshot = ProducerSnapshot.decode(memoryview(data)[_VERSION.size :], SNAPSHOT_VERSION)
    except DecodeError as exc:
        raise CorruptSnapshotError(path, str(exc)) from None
    return snapshot.producer_entries


def write_snapshot(
    fs: FileSystem, partition_dir: str, offset: int, entries: Iterable[ProducerEntry]
) -> str:
    """Write the snapshot for ``offset`` atomically (replacing one already there);
    returns its path."""
    path = snapshot_path(partition_dir, offset)
    try:
        data = encode_snapshot(entries)
    except EncodeError as exc:
        raise ValueError(f"producer entries do not fit Kafka's snapshot: {exc}") from None
    write_atomic(fs, path, data)
    return path


def read_snapshot(fs: FileSystem, path: str) -> list[ProducerEntry]:
    handle = fs.open(path)
    try:
        data = handle.read_at(0, handle.size())
    finally:
        handle.close()
    return decode_snapshot(data, path)


def list_snapshots(fs: FileSystem, partition_dir: str) -> list[int]:
    """Offsets of the snapshots in ``partition_dir``, ascending (files marked
    ``.deleted`` and ``.tmp`` leftovers are not snapshots)."""
    offsets = []
    for name in fs.listdir(partition_dir):
        parsed = parse_segment_file_name(name)
        if parsed is not None and parsed.suffix == SNAPSHOT_SUFFIX and not parsed.extra:
            offsets.append(parsed.base_offset)
    return sorted(offsets)


def delete_snapshots_below(fs: FileSystem, partition_dir: str, offset: int) -> list[int]:
    """Remove the snapshots of offsets strictly below ``offset``; returns their offsets."""
    removed = [o for o in list_snapshots(fs, partition_dir) if o < offset]
    for o in removed:
        fs.remove(snapshot_path(partition_dir, o))
    return removed

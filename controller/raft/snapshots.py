"""Metadata snapshots in Kafka's ``.checkpoint`` format: names, bytes, and reading back.

A snapshot of ``__cluster_metadata`` holds the state machine's records up to (not
including) its id's end offset, as record batches v2 numbered from offset 0, each
stamped with the snapshot's epoch:

* first a control batch: a SnapshotHeaderRecord (control type 3, with the append time of
  the last record the snapshot covers) and, when ``kraft.version`` is 1 or more, a
  KRaftVersionRecord and the VotersRecord in force at the snapshot's end;
* then the data batches, the records framed as in the log, up to 8 MiB each;
* last a control batch holding a SnapshotFooterRecord (type 4).

A snapshot lives in the partition directory as ``<end offset, 20 digits>-<epoch, 10
digits>.checkpoint``. One being written (or received from the leader) is
``.checkpoint.part`` until it is whole and fsynced, then renamed; one to be deleted is
renamed ``.checkpoint.deleted`` first. Kafka's own tools (``kafka-dump-log
--cluster-metadata-decoder``, ``kafka-metadata-shell --snapshot``) read these files.

Pure: bytes in, bytes out; the files are the log's (:mod:`.kafka_log`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from millpond.controller.raft.keys import OffsetAndEpoch
from millpond.wire.exceptions import DecodeError
from millpond.wire.generated.data.k_raft_version_record import KRaftVersionRecord
from millpond.wire.generated.data.snapshot_footer_record import SnapshotFooterRecord
from millpond.wire.generated.data.snapshot_header_record import SnapshotHeaderRecord
from millpond.wire.records import (
    ControlRecordType,
    NewRecord,
    RecordBatch,
    build_batch,
    build_control_key,
    iter_batches,
    parse_control_key,
)

__all__ = [
    "DELETED_SUFFIX",
    "PART_SUFFIX",
    "SUFFIX",
    "SnapshotContents",
    "SnapshotFormatError",
    "SnapshotHeader",
    "data_batches",
    "encode_snapshot",
    "parse_snapshot_name",
    "read_header",
    "read_snapshot",
    "snapshot_name",
]

SUFFIX = ".checkpoint"
PART_SUFFIX = SUFFIX + ".part"
DELETED_SUFFIX = SUFFIX + ".deleted"
_NAME = re.compile(r"^(\d{20})-(\d{10})(\.checkpoint(?:\.part|\.deleted)?)$")

#: Kafka's raft caps a batch at 8 MiB; more records go in the next batch.
MAX_BATCH_BYTES = 8 * 1024 * 1024
#: Per-record framing beyond the value, a safe upper bound for sizing batches.
_RECORD_OVERHEAD = 32
HEADER_VERSION = 0
FOOTER_VERSION = 0
KRAFT_VERSION_VERSION = 0


class SnapshotFormatError(ValueError):
    """Bytes that are not a whole metadata snapshot (torn, corrupt, or out of order)."""


def snapshot_name(snapshot_id: OffsetAndEpoch, suffix: str = SUFFIX) -> str:
    return f"{snapshot_id.offset:020d}-{snapshot_id.epoch:010d}{suffix}"


def parse_snapshot_name(name: str) -> tuple[OffsetAndEpoch, str] | None:
    """(snapshot id, suffix) of a snapshot file's name; None for any other file."""
    match = _NAME.match(name)
    if match is None:
        return None
    return OffsetAndEpoch(int(match[2]), int(match[1])), match[3]


def data_batches(
    payloads: Iterable[bytes], *, epoch: int, timestamp: int, base_offset: int = 0
) -> Iterator[bytes]:
    """The payloads as uncompressed data batches of at most about 8 MiB, numbered from
    ``base_offset`` (the log renumbers them on append; a snapshot keeps them)."""
    records: list[NewRecord] = []
    size = 0
    for payload in payloads:
        if records and size + len(payload) + _RECORD_OVERHEAD > MAX_BATCH_BYTES:
            yield _batch(records, base_offset, epoch, timestamp)
            base_offset += len(records)
            records, size = [], 0
        records.append(NewRecord(value=payload, timestamp=timestamp))
        size += len(payload) + _RECORD_OVERHEAD
    if records:
        yield _batch(records, base_offset, epoch, timestamp)


def _batch(records: list[NewRecord], base: int, epoch: int, timestamp: int) -> bytes:
    return build_batch(
        records, base_offset=base, base_timestamp=timestamp, partition_leader_epoch=epoch
    )


def encode_snapshot(
    snapshot_id: OffsetAndEpoch,
    payloads: Iterable[bytes],
    *,
    last_contained_timestamp: int,
    now: int,
    kraft_version: int = 0,
    voters_record: bytes | None = None,
) -> Iterator[bytes]:
    """The snapshot's batches, in file order (see the module docstring).
    ``voters_record``: the encoded VotersRecord, written when ``kraft_version`` >= 1."""
    epoch = snapshot_id.epoch
    header = SnapshotHeaderRecord(
        version=HEADER_VERSION, last_contained_log_timestamp=last_contained_timestamp
    )
    control = [_control(ControlRecordType.SNAPSHOT_HEADER, header.encode(HEADER_VERSION), now)]
    if kraft_version >= 1:
        version = KRaftVersionRecord(version=KRAFT_VERSION_VERSION, k_raft_version=kraft_version)
        control.append(
            _control(ControlRecordType.KRAFT_VERSION, version.encode(KRAFT_VERSION_VERSION), now)
        )
        if voters_record is not None:
            control.append(_control(ControlRecordType.KRAFT_VOTERS, voters_record, now))
    yield build_batch(control, base_timestamp=now, partition_leader_epoch=epoch, is_control=True)
    offset = len(control)
    for batch in data_batches(payloads, epoch=epoch, timestamp=now, base_offset=offset):
        offset = RecordBatch(batch).next_offset
        yield batch
    footer = SnapshotFooterRecord(version=FOOTER_VERSION)
    yield build_batch(
        [_control(ControlRecordType.SNAPSHOT_FOOTER, footer.encode(FOOTER_VERSION), now)],
        base_offset=offset,
        base_timestamp=now,
        partition_leader_epoch=epoch,
        is_control=True,
    )


def _control(kind: ControlRecordType, value: bytes, now: int) -> NewRecord:
    return NewRecord(key=build_control_key(kind), value=value, timestamp=now)


class SnapshotHeader(NamedTuple):
    """What a snapshot's first (control) batch says."""

    #: The append time of the last record the snapshot covers.
    last_contained_timestamp: int
    #: The VotersRecord's bytes, if any (``kraft.version`` >= 1).
    voters_record: bytes | None
    #: The KRaftVersionRecord's level (0 when there is none).
    kraft_version: int


def read_header(batch: RecordBatch) -> SnapshotHeader:
    """The header batch's records; :class:`SnapshotFormatError` if it is not one."""
    timestamp = None
    voters = None
    kraft_version = 0
    for record in batch.records() if batch.is_control else ():
        kind = parse_control_key(record.key).type
        value = b"" if record.value is None else bytes(record.value)
        try:
            if kind == ControlRecordType.SNAPSHOT_HEADER:
                header = SnapshotHeaderRecord.decode(value, HEADER_VERSION)
                timestamp = header.last_contained_log_timestamp
            elif kind == ControlRecordType.KRAFT_VERSION:
                version = KRaftVersionRecord.decode(value, KRAFT_VERSION_VERSION)
                kraft_version = version.k_raft_version
        except DecodeError as exc:
            raise SnapshotFormatError(f"unreadable control record (type {kind}): {exc}") from None
        if kind == ControlRecordType.KRAFT_VOTERS:
            voters = value
    if timestamp is None:
        raise SnapshotFormatError("the snapshot's first batch holds no SnapshotHeaderRecord")
    return SnapshotHeader(timestamp, voters, kraft_version)


class SnapshotContents(NamedTuple):
    #: What the first batch says (its timestamp is the snapshot's age for retention).
    header: SnapshotHeader
    #: The data batches, in order.
    batches: list[RecordBatch]


def read_snapshot(data: bytes | memoryview, *, check_crc: bool = True) -> SnapshotContents:
    """The parts of a whole snapshot; :class:`SnapshotFormatError` if ``data`` is torn,
    fails a CRC, or does not begin with a header and end with a footer."""
    try:
        batches = list(iter_batches(data, allow_truncated_tail=True))
    except DecodeError as exc:
        raise SnapshotFormatError(f"not a snapshot: {exc}") from None
    consumed = sum(b.size_in_bytes for b in batches)
    if consumed != len(data):
        raise SnapshotFormatError(
            f"torn snapshot: {len(data) - consumed} bytes after the last whole batch"
        )
    if check_crc:
        for batch in batches:
            if not batch.is_valid():
                raise SnapshotFormatError(f"batch at offset {batch.base_offset} fails its CRC")
    if len(batches) < 2 or not batches[0].is_control or not batches[-1].is_control:
        raise SnapshotFormatError("a snapshot begins with a header batch and ends with a footer")
    header = read_header(batches[0])
    footer = [parse_control_key(r.key).type for r in batches[-1].records()]
    if footer != [ControlRecordType.SNAPSHOT_FOOTER]:
        raise SnapshotFormatError("the snapshot's last batch is not a SnapshotFooterRecord")
    return SnapshotContents(header, [b for b in batches[1:-1] if not b.is_control])

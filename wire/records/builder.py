"""Building v2 record batches: data batches and transaction marker batches.

Producers build batches, so the broker itself builds few: transaction markers,
batches rewritten by compaction, converted legacy data, and everything tests and
tools need. Builders therefore favour clarity over speed; the CRC is always right.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from millpond.wire.crc32c import crc32c
from millpond.wire.exceptions import EncodeError
from millpond.wire.records.batch import (
    ATTRIBUTES_OFFSET,
    BATCH_HEADER_SIZE,
    CONTROL_BIT,
    CRC_OFFSET,
    DELETE_HORIZON_BIT,
    HEADER,
    LOG_OVERHEAD,
    MAGIC,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    TRANSACTIONAL_BIT,
)
from millpond.wire.records.compression import Compression, compress
from millpond.wire.records.control import (
    ControlRecordType,
    build_control_key,
    build_end_txn_marker,
)
from millpond.wire.records.record import Header, encode_record
from millpond.wire.records.timestamp_type import NO_TIMESTAMP, TIMESTAMP_TYPE_BIT, TimestampType

_UINT32 = struct.Struct(">I")


class NewRecord(NamedTuple):
    """A record to write. Give ``timestamp`` (absolute) or ``timestamp_delta``, or
    neither for the batch's base timestamp; ``offset_delta`` defaults to the record's
    position in the batch."""

    key: bytes | None = None
    value: bytes | None = None
    headers: Sequence[Header] = ()
    timestamp: int | None = None
    timestamp_delta: int | None = None
    offset_delta: int | None = None
    attributes: int = 0


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def build_batch(
    records: Iterable[NewRecord],
    *,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    compression: Compression = Compression.NONE,
    compression_level: int | None = None,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    base_timestamp: int | None = None,
    max_timestamp: int | None = None,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    is_transactional: bool = False,
    is_control: bool = False,
    delete_horizon_ms: int | None = None,
    last_offset_delta: int | None = None,
) -> bytes:
    """Encode a v2 batch with a correct CRC.

    ``base_timestamp`` defaults to the first absolute record timestamp, else to now.
    With ``delete_horizon_ms`` the base timestamp *is* the horizon (KIP-534) and record
    deltas are taken against it, so absolute record timestamps are unchanged.
    ``max_timestamp`` defaults to the largest record timestamp (-1 for no records),
    ``last_offset_delta`` to the largest offset delta (0 for no records): compaction
    passes both to keep an emptied batch's offset range and producer state.
    """
    recs = list(records)
    if delete_horizon_ms is not None:
        base_timestamp = delete_horizon_ms
    elif base_timestamp is None:
        base_timestamp = next((r.timestamp for r in recs if r.timestamp is not None), None)
        if base_timestamp is None:
            base_timestamp = now_ms()
    parts: list[bytes] = []
    max_ts = NO_TIMESTAMP
    max_delta = 0
    for i, r in enumerate(recs):
        if r.timestamp is not None:
            ts_delta = r.timestamp - base_timestamp
        else:
            ts_delta = 0 if r.timestamp_delta is None else r.timestamp_delta
        max_ts = max(max_ts, base_timestamp + ts_delta)
        offset_delta = i if r.offset_delta is None else r.offset_delta
        max_delta = max(max_delta, offset_delta)
        try:
            parts.append(
                encode_record(offset_delta, ts_delta, r.key, r.value, r.headers, r.attributes)
            )
        except ValueError as exc:
            raise EncodeError(f"record {i}: {exc}") from None
    body = b"".join(parts)
    if compression != Compression.NONE:
        body = compress(compression, body, level=compression_level)

    attributes = int(compression)
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_BIT
    if is_transactional:
        attributes |= TRANSACTIONAL_BIT
    if is_control:
        attributes |= CONTROL_BIT
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_BIT

    out = bytearray(BATCH_HEADER_SIZE + len(body))
    try:
        HEADER.pack_into(
            out,
            0,
            base_offset,
            BATCH_HEADER_SIZE - LOG_OVERHEAD + len(body),
            partition_leader_epoch,
            MAGIC,
            0,
            attributes,
            max_delta if last_offset_delta is None else last_offset_delta,
            base_timestamp,
            max_ts if max_timestamp is None else max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            len(recs),
        )
    except struct.error as exc:
        raise EncodeError(f"record batch header field out of range: {exc}") from None
    out[BATCH_HEADER_SIZE:] = body
    _UINT32.pack_into(out, CRC_OFFSET, crc32c(memoryview(out)[ATTRIBUTES_OFFSET:]))
    return bytes(out)


def build_control_batch(
    control_type: ControlRecordType,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    timestamp: int | None = None,
) -> bytes:
    """A transaction marker batch (COMMIT or ABORT), as a coordinator writes it:
    transactional, control, one record, no sequence, uncompressed."""
    if control_type not in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
        raise EncodeError(f"{control_type!r} is not a transaction marker")
    record = NewRecord(
        key=build_control_key(control_type),
        value=build_end_txn_marker(coordinator_epoch),
        timestamp=now_ms() if timestamp is None else timestamp,
    )
    return build_batch(
        [record],
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
    )

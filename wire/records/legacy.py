"""Legacy message sets, magic 0 and 1 (Kafka before 0.11), read and (for tests) written.

Each entry is ``offset int64, message_size int32`` then a message: ``crc int32``
(CRC-32/zlib over the rest), ``magic int8, attributes int8``, ``timestamp int64``
(magic 1 only), ``key bytes, value bytes`` (int32 length, -1 for null). The magic byte
sits at byte 16 of an entry, as in a v2 batch, so one peek tells the formats apart.

Compression wraps a whole inner message set in the value of one *wrapper* message.
For magic 1 the inner offsets are relative (0, 1, ...) and the wrapper carries the
absolute offset of the *last* inner message; for magic 0 the inner offsets are
absolute. Timestamps of a LogAppendTime magic 1 wrapper override the inner ones.

Old segments and old clients still hold these, so a broker must read them (to
convert up, to serve old data, to recover); it never has to produce them except
for very old fetchers. LZ4 in magic 0 carries Kafka's broken frame checksum
(KAFKA-3160), which is repaired before decoding and reproduced when building.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator
from struct import Struct
from typing import NamedTuple

from millpond.wire.exceptions import DecodeError, EncodeError
from millpond.wire.records.batch import DEFAULT_MAX_RECORDS_SIZE, LOG_OVERHEAD
from millpond.wire.records.compression import COMPRESSION_MASK, Compression, compress, decompress
from millpond.wire.records.lz4frame import break_header_checksum, repair_header_checksum
from millpond.wire.records.timestamp_type import NO_TIMESTAMP, TIMESTAMP_TYPE_BIT, TimestampType

Buffer = bytes | bytearray | memoryview

# offset, message_size, crc, magic, attributes
_ENTRY = Struct(">qiIbb")
_INT64 = Struct(">q")
_INT32 = Struct(">i")
_CRC_START = LOG_OVERHEAD + 4  # the CRC covers magic onwards
# crc + magic + attributes + key length + value length (+ timestamp for v1)
MIN_MESSAGE_SIZE = (14, 22)


class LegacyRecord(NamedTuple):
    """A message of a legacy set (after unwrapping compression, if any)."""

    offset: int
    timestamp: int
    timestamp_type: TimestampType
    key: bytes | None
    value: bytes | None
    magic: int
    attributes: int = 0


def iter_legacy_entries(
    buf: Buffer, *, allow_truncated_tail: bool = False
) -> Iterator[LegacyRecord]:
    """Walk the top-level entries of a message set, CRCs checked; wrappers not opened.

    A truncated or malformed entry raises :class:`DecodeError`; with
    ``allow_truncated_tail`` (Fetch responses) an incomplete last entry ends the walk.
    """
    view = memoryview(buf)
    end = len(view)
    pos = 0
    while pos < end:
        remaining = end - pos
        if remaining < LOG_OVERHEAD + MIN_MESSAGE_SIZE[0]:
            if allow_truncated_tail:
                return
            raise DecodeError(f"truncated legacy message: {remaining} bytes left at {pos}")
        (size,) = _INT32.unpack_from(view, pos + 8)
        if size + LOG_OVERHEAD > remaining:
            if allow_truncated_tail and size >= MIN_MESSAGE_SIZE[0]:
                return
            raise DecodeError(f"truncated legacy message at {pos}: {size} bytes announced")
        yield _read_message(view, pos, size)
        pos += LOG_OVERHEAD + size


def _read_message(view: memoryview, pos: int, size: int) -> LegacyRecord:
    offset, _, crc, magic, attributes = _ENTRY.unpack_from(view, pos)
    if magic not in (0, 1):
        raise DecodeError(f"legacy message at {pos} has magic {magic}")
    if size < MIN_MESSAGE_SIZE[magic]:
        raise DecodeError(f"legacy message at {pos} has invalid size {size}")
    end = pos + LOG_OVERHEAD + size
    if zlib.crc32(view[pos + _CRC_START : end]) != crc:
        raise DecodeError(f"legacy message at offset {offset} is corrupt (CRC mismatch)")
    p = pos + _ENTRY.size
    if magic == 1:
        (timestamp,) = _INT64.unpack_from(view, p)
        p += 8
        timestamp_type = (
            TimestampType.LOG_APPEND_TIME
            if attributes & TIMESTAMP_TYPE_BIT
            else TimestampType.CREATE_TIME
        )
    else:
        timestamp = NO_TIMESTAMP
        timestamp_type = TimestampType.NO_TIMESTAMP_TYPE
    key, p = _read_bytes(view, p, end)
    value, p = _read_bytes(view, p, end)
    if p != end:
        raise DecodeError(f"legacy message at offset {offset} has {end - p} trailing bytes")
    return LegacyRecord(offset, timestamp, timestamp_type, key, value, magic, attributes)


def _read_bytes(view: memoryview, pos: int, end: int) -> tuple[bytes | None, int]:
    if end - pos < 4:
        raise DecodeError("truncated legacy message field length")
    (n,) = _INT32.unpack_from(view, pos)
    pos += 4
    if n < 0:
        if n != -1:
            raise DecodeError(f"invalid legacy field length {n}")
        return None, pos
    if n > end - pos:
        raise DecodeError(f"legacy field of {n} bytes overruns its message")
    return bytes(view[pos : pos + n]), pos + n


def iter_legacy_records(
    buf: Buffer,
    *,
    max_size: int = DEFAULT_MAX_RECORDS_SIZE,
    allow_truncated_tail: bool = False,
) -> Iterator[LegacyRecord]:
    """Walk a message set, opening compressed wrappers (each at most ``max_size``
    bytes decompressed) and yielding the messages with absolute offsets."""
    for entry in iter_legacy_entries(buf, allow_truncated_tail=allow_truncated_tail):
        if entry.attributes & COMPRESSION_MASK:
            yield from _unwrap(entry, max_size)
        else:
            yield entry


def _unwrap(wrapper: LegacyRecord, max_size: int) -> Iterator[LegacyRecord]:
    codec_id = wrapper.attributes & COMPRESSION_MASK
    if codec_id not in (Compression.GZIP, Compression.SNAPPY, Compression.LZ4):
        raise DecodeError(f"codec id {codec_id} is not valid in a magic {wrapper.magic} message")
    if wrapper.value is None:
        raise DecodeError(f"compressed wrapper at offset {wrapper.offset} has a null value")
    data = wrapper.value
    if codec_id == Compression.LZ4 and wrapper.magic == 0:
        data = repair_header_checksum(data)
    inner = list(iter_legacy_entries(decompress(codec_id, data, max_size=max_size)))
    if not inner:
        raise DecodeError(f"compressed wrapper at offset {wrapper.offset} is empty")
    shift = 0
    if wrapper.magic == 1:
        shift = wrapper.offset - inner[-1].offset
    log_append = wrapper.timestamp_type == TimestampType.LOG_APPEND_TIME
    for msg in inner:
        if msg.magic != wrapper.magic:
            raise DecodeError(
                f"inner message magic {msg.magic} inside a magic {wrapper.magic} wrapper"
            )
        if msg.attributes & COMPRESSION_MASK:
            raise DecodeError("compressed message nested inside a compressed wrapper")
        yield msg._replace(
            offset=msg.offset + shift,
            timestamp=wrapper.timestamp if log_append else msg.timestamp,
            timestamp_type=wrapper.timestamp_type if wrapper.magic == 1 else msg.timestamp_type,
        )


# --- writing (tests, tools, down-conversion) -------------------------------------------


def encode_legacy_message(
    offset: int,
    magic: int,
    key: bytes | None,
    value: bytes | None,
    *,
    attributes: int = 0,
    timestamp: int = NO_TIMESTAMP,
) -> bytes:
    """Encode one entry (offset, size and message) with its CRC."""
    if magic not in (0, 1):
        raise EncodeError(f"legacy magic must be 0 or 1, not {magic}")
    body = bytearray((magic, attributes & 0xFF))
    if magic == 1:
        body += _INT64.pack(timestamp)
    for field in (key, value):
        if field is None:
            body += _INT32.pack(-1)
        else:
            body += _INT32.pack(len(field))
            body += field
    crc = zlib.crc32(body)
    return _INT64.pack(offset) + _INT32.pack(len(body) + 4) + crc.to_bytes(4, "big") + body


def build_legacy_message_set(
    records: Iterable[tuple[bytes | None, bytes | None, int]],
    *,
    magic: int,
    base_offset: int = 0,
    compression: Compression = Compression.NONE,
    timestamp_type: TimestampType = TimestampType.CREATE_TIME,
    log_append_time: int | None = None,
) -> bytes:
    """Encode ``(key, value, timestamp)`` triples as a legacy message set.

    Uncompressed sets get consecutive offsets from ``base_offset``. Compressed sets
    become one wrapper whose offset is the last inner offset, inner offsets relative
    for magic 1, absolute for magic 0, the way Kafka wrote them. For magic 1 the
    wrapper's timestamp is the largest inner one, or ``log_append_time``.
    """
    recs = list(records)
    ts_attr = TIMESTAMP_TYPE_BIT if timestamp_type == TimestampType.LOG_APPEND_TIME else 0
    if magic == 0:
        ts_attr = 0
    if compression == Compression.NONE:
        return b"".join(
            encode_legacy_message(
                base_offset + i,
                magic,
                key,
                value,
                attributes=ts_attr,
                timestamp=ts if magic else NO_TIMESTAMP,
            )
            for i, (key, value, ts) in enumerate(recs)
        )
    if compression == Compression.ZSTD:
        raise EncodeError("zstd needs magic 2")
    inner = b"".join(
        encode_legacy_message(
            i if magic == 1 else base_offset + i,
            magic,
            key,
            value,
            timestamp=ts if magic else NO_TIMESTAMP,
        )
        for i, (key, value, ts) in enumerate(recs)
    )
    payload = compress(compression, inner)
    if compression == Compression.LZ4 and magic == 0:
        payload = break_header_checksum(payload)
    wrapper_ts = NO_TIMESTAMP
    if magic == 1:
        if log_append_time is not None:
            wrapper_ts = log_append_time
        else:
            wrapper_ts = max((ts for _, _, ts in recs), default=NO_TIMESTAMP)
    return encode_legacy_message(
        base_offset + len(recs) - 1,
        magic,
        None,
        payload,
        attributes=int(compression) | ts_attr,
        timestamp=wrapper_ts,
    )

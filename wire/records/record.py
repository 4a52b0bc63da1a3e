"""Records inside a v2 batch: the per-record varint layout, read and written.

A record is ``length varint`` then ``attributes int8, timestamp_delta varlong,
offset_delta varint, key_length varint, key, value_length varint, value,
header_count varint, headers`` where each header is ``key_length varint, key
(UTF-8), value_length varint, value``; a length of -1 means null. Offsets and
timestamps are deltas against the batch header so small batches stay small.

This is the slow path (per-record Python work): the broker's produce path never
comes here; compaction, down-conversion, transaction markers, tests and tools do.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

from millpond.wire.exceptions import DecodeError
from millpond.wire.varint import encode_varint, encode_varlong, read_varint, read_varlong

Buffer = bytes | bytearray | memoryview
Header = tuple[str, bytes | None]

_NULL = encode_varint(-1)


class Record(NamedTuple):
    """One record read from a batch, with its absolute offset and timestamp.

    ``timestamp`` is ``base_timestamp + timestamp_delta`` for CreateTime batches and
    the batch's ``max_timestamp`` for LogAppendTime batches, as Kafka's consumers see it.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[Header]
    offset_delta: int
    timestamp_delta: int
    attributes: int = 0


def iter_records(
    data: Buffer,
    count: int,
    base_offset: int,
    base_timestamp: int,
    log_append_time: int | None = None,
) -> Iterator[Record]:
    """Read exactly ``count`` records that fill ``data`` (the batch's records section).

    Fewer records than ``count``, a record that overruns its length, or bytes left
    after the last record raise :class:`DecodeError`.
    """
    if count < 0:
        raise DecodeError(f"negative record count {count}")
    view = memoryview(data)
    end = len(view)
    pos = 0
    for _ in range(count):
        if pos >= end:
            raise DecodeError(f"batch announces {count} records but its data ends early")
        length, pos = read_varint(view, pos)
        if length <= 0 or length > end - pos:
            raise DecodeError(f"record length {length} does not fit the batch")
        rec = _read_record(view[pos : pos + length], base_offset, base_timestamp, log_append_time)
        pos += length
        yield rec
    if pos != end:
        raise DecodeError(f"{end - pos} bytes of garbage after the last record")


def _read_record(
    buf: memoryview, base_offset: int, base_timestamp: int, log_append_time: int | None
) -> Record:
    end = len(buf)
    attributes = buf[0]
    timestamp_delta, pos = read_varlong(buf, 1)
    offset_delta, pos = read_varint(buf, pos)
    key, pos = _read_bytes(buf, pos, end, "key")
    value, pos = _read_bytes(buf, pos, end, "value")
    header_count, pos = read_varint(buf, pos)
    if header_count < 0 or header_count > end - pos:
        raise DecodeError(f"invalid header count {header_count}")
    headers: list[Header] = []
    for _ in range(header_count):
        raw_key, pos = _read_bytes(buf, pos, end, "header key")
        if raw_key is None:
            raise DecodeError("null header key")
        try:
            header_key = raw_key.decode()
        except UnicodeDecodeError:
            raise DecodeError("header key is not valid UTF-8") from None
        header_value, pos = _read_bytes(buf, pos, end, "header value")
        headers.append((header_key, header_value))
    if pos != end:
        raise DecodeError(f"record length mismatch: {end - pos} bytes left over")
    timestamp = base_timestamp + timestamp_delta if log_append_time is None else log_append_time
    return Record(
        base_offset + offset_delta,
        timestamp,
        key,
        value,
        headers,
        offset_delta,
        timestamp_delta,
        attributes,
    )


def _read_bytes(buf: memoryview, pos: int, end: int, what: str) -> tuple[bytes | None, int]:
    n, pos = read_varint(buf, pos)
    if n < 0:
        if n != -1:
            raise DecodeError(f"invalid {what} length {n}")
        return None, pos
    if n > end - pos:
        raise DecodeError(f"{what} of {n} bytes overruns its record")
    return bytes(buf[pos : pos + n]), pos + n


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[Header] = (),
    attributes: int = 0,
) -> bytes:
    """Encode one record, length prefix included."""
    parts = [
        bytes((attributes,)),
        encode_varlong(timestamp_delta),
        encode_varint(offset_delta),
    ]
    _append_bytes(parts, key)
    _append_bytes(parts, value)
    parts.append(encode_varint(len(headers)))
    for header_key, header_value in headers:
        _append_bytes(parts, header_key.encode())
        _append_bytes(parts, header_value)
    body = b"".join(parts)
    return encode_varint(len(body)) + body


def _append_bytes(parts: list[bytes], data: bytes | None) -> None:
    if data is None:
        parts.append(_NULL)
    else:
        parts.append(encode_varint(len(data)))
        parts.append(data)

"""Runtime support for the generated message classes.

The generated code (``wire/generated/``) is straight-line: one reader and one writer
function per distinct wire layout of each struct, with runs of fixed-width fields
merged into one precompiled :class:`struct.Struct`. What it cannot inline lives
here: variable-length strings, bytes, records and array lengths in their classic
(int16/int32 length) and compact (unsigned varint length + 1) forms, tagged-field
and nullable-struct markers. The base classes live in :mod:`millpond.wire.message`.

Readers take ``(buf, pos)`` and return ``(value, new_pos)``. They are as lenient as
Kafka's own where Kafka is lenient: any negative length of a nullable field means
null, and invalid UTF-8 in a string becomes U+FFFD (what Java's decoder does), so
the broker answers such a request with an error code where Kafka does, instead of
closing the connection. They check every length
against the bytes that remain *before* allocating, as Kafka's own generated readers
do, so a hostile length can never make us allocate more than the frame holds.
Truncation surfaces as :class:`struct.error`, :class:`IndexError` or
:class:`DecodeError`; ``Message.decode`` turns all of them into
:class:`DecodeError`.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from millpond.wire.exceptions import DecodeError, EncodeError
from millpond.wire.splice import Spliced, SplicingWriter
from millpond.wire.varint import encode_uvarint, read_uvarint

Buffer = bytes | bytearray | memoryview
TaggedFields = tuple[tuple[int, bytes], ...]
"""Tagged fields this codec does not know, as (tag, raw bytes), kept for re-encoding."""

ZERO_UUID = bytes(16)
MAX_VERSION = 0x7FFF

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_NULL16 = b"\xff\xff"
_NULL32 = b"\xff\xff\xff\xff"

# Exceptions that malformed input can raise inside generated readers.
DECODE_FAILURES = (struct.error, IndexError, UnicodeDecodeError, OverflowError, MemoryError)
# Exceptions that bad values raise inside generated writers.
ENCODE_FAILURES = (struct.error, AttributeError, TypeError, ValueError, OverflowError, KeyError)


def _need(buf: Buffer, end: int, what: str) -> None:
    if end > len(buf):
        raise DecodeError(f"{what} runs {end - len(buf)} bytes past the end of the buffer")


# -- strings ---------------------------------------------------------------------------


def read_string(buf: Buffer, pos: int) -> tuple[str, int]:
    (n,) = _I16.unpack_from(buf, pos)
    if n < 0:
        raise DecodeError(f"non-nullable string has length {n}")
    pos += 2
    end = pos + n
    _need(buf, end, "string")
    return str(buf[pos:end], "utf-8", "replace"), end


def read_nullable_string(buf: Buffer, pos: int) -> tuple[str | None, int]:
    (n,) = _I16.unpack_from(buf, pos)
    pos += 2
    if n < 0:
        return None, pos
    end = pos + n
    _need(buf, end, "string")
    return str(buf[pos:end], "utf-8", "replace"), end


# Strings are at most 0x7fff bytes in every encoding: Kafka's readers refuse longer
# compact strings ("had invalid length"), and write_compact_string could not write them
# back. (The varint holds the length + 1; only multi-byte varints can exceed it.)
_MAX_COMPACT_STRING = 0x7FFF + 1


def read_compact_string(buf: Buffer, pos: int) -> tuple[str, int]:
    n = buf[pos]
    if n < 0x80:  # a one-byte length: by far the most common
        pos += 1
    else:
        n, pos = read_uvarint(buf, pos)
        if n > _MAX_COMPACT_STRING:
            raise DecodeError(f"compact string of {n - 1} bytes is longer than 32767")
    if n == 0:
        raise DecodeError("non-nullable compact string is null")
    end = pos + n - 1
    _need(buf, end, "compact string")
    return str(buf[pos:end], "utf-8", "replace"), end


def read_compact_nullable_string(buf: Buffer, pos: int) -> tuple[str | None, int]:
    n = buf[pos]
    if n < 0x80:  # a one-byte length: by far the most common
        pos += 1
    else:
        n, pos = read_uvarint(buf, pos)
        if n > _MAX_COMPACT_STRING:
            raise DecodeError(f"compact string of {n - 1} bytes is longer than 32767")
    if n == 0:
        return None, pos
    end = pos + n - 1
    _need(buf, end, "compact string")
    return str(buf[pos:end], "utf-8", "replace"), end


def _encode_str(value: str, limit: int) -> bytes:
    data = value.encode("utf-8")
    if len(data) > limit:
        raise EncodeError(f"string of {len(data)} bytes is longer than the limit of {limit}")
    return data


def write_string(w: bytearray, value: str) -> None:
    data = _encode_str(value, 0x7FFF)
    w += _I16.pack(len(data))
    w += data


def write_nullable_string(w: bytearray, value: str | None) -> None:
    if value is None:
        w += _NULL16
    else:
        write_string(w, value)


def write_compact_string(w: bytearray, value: str) -> None:
    data = _encode_str(value, 0x7FFF)
    n = len(data) + 1
    if n < 0x80:
        w.append(n)
    else:
        w += encode_uvarint(n)
    w += data


def write_compact_nullable_string(w: bytearray, value: str | None) -> None:
    if value is None:
        w.append(0)
    else:
        write_compact_string(w, value)


# -- bytes and records -----------------------------------------------------------------


def read_bytes(buf: Buffer, pos: int) -> tuple[bytes, int]:
    (n,) = _I32.unpack_from(buf, pos)
    if n < 0:
        raise DecodeError(f"non-nullable bytes field has length {n}")
    pos += 4
    end = pos + n
    _need(buf, end, "bytes field")
    return bytes(buf[pos:end]), end


def read_nullable_bytes(buf: Buffer, pos: int) -> tuple[bytes | None, int]:
    (n,) = _I32.unpack_from(buf, pos)
    pos += 4
    if n < 0:
        return None, pos
    end = pos + n
    _need(buf, end, "bytes field")
    return bytes(buf[pos:end]), end


def read_compact_bytes(buf: Buffer, pos: int) -> tuple[bytes, int]:
    n = buf[pos]
    if n < 0x80:  # a one-byte length: by far the most common
        pos += 1
    else:
        n, pos = read_uvarint(buf, pos)
    if n == 0:
        raise DecodeError("non-nullable compact bytes field is null")
    end = pos + n - 1
    _need(buf, end, "compact bytes field")
    return bytes(buf[pos:end]), end


def read_compact_nullable_bytes(buf: Buffer, pos: int) -> tuple[bytes | None, int]:
    n = buf[pos]
    if n < 0x80:  # a one-byte length: by far the most common
        pos += 1
    else:
        n, pos = read_uvarint(buf, pos)
    if n == 0:
        return None, pos
    end = pos + n - 1
    _need(buf, end, "compact bytes field")
    return bytes(buf[pos:end]), end


def read_records(buf: Buffer, pos: int) -> tuple[memoryview | None, int]:
    """Records stay a zero-copy view of the frame: the broker never decodes them here."""
    (n,) = _I32.unpack_from(buf, pos)
    pos += 4
    if n < 0:
        return None, pos
    end = pos + n
    _need(buf, end, "records field")
    return memoryview(buf)[pos:end], end


def read_compact_records(buf: Buffer, pos: int) -> tuple[memoryview | None, int]:
    n = buf[pos]
    if n < 0x80:  # a one-byte length: by far the most common
        pos += 1
    else:
        n, pos = read_uvarint(buf, pos)
    if n == 0:
        return None, pos
    end = pos + n - 1
    _need(buf, end, "compact records field")
    return memoryview(buf)[pos:end], end


def write_bytes(w: bytearray, value: Buffer) -> None:
    w += _I32.pack(len(value))
    w += value


def write_nullable_bytes(w: bytearray, value: Buffer | None) -> None:
    if value is None:
        w += _NULL32
    else:
        w += _I32.pack(len(value))
        w += value


def write_compact_bytes(w: bytearray, value: Buffer) -> None:
    n = len(value) + 1
    if n < 0x80:
        w.append(n)
    else:
        w += encode_uvarint(n)
    w += value


def write_compact_nullable_bytes(w: bytearray, value: Buffer | None) -> None:
    if value is None:
        w.append(0)
    else:
        n = len(value) + 1
        if n < 0x80:
            w.append(n)
        else:
            w += encode_uvarint(n)
        w += value


def write_records(w: bytearray, value: Buffer | None) -> None:
    """As nullable bytes; a :class:`~millpond.wire.splice.Spliced` value is left for the
    sender to splice in (a :class:`~millpond.wire.splice.SplicingWriter`) or read now."""
    if type(value) is Spliced:
        w += _I32.pack(value.source.size)
        _splice(w, value)
    else:
        write_nullable_bytes(w, value)


def write_compact_records(w: bytearray, value: Buffer | None) -> None:
    if type(value) is Spliced:
        w += encode_uvarint(value.source.size + 1)
        _splice(w, value)
    else:
        write_compact_nullable_bytes(w, value)


def _splice(w: bytearray, value: Spliced) -> None:
    if type(w) is SplicingWriter:
        w.splices.append((len(w), value.source))
    else:
        w += value.source.read()


# -- arrays ----------------------------------------------------------------------------


def read_array_len(buf: Buffer, pos: int) -> tuple[int, int]:
    (n,) = _I32.unpack_from(buf, pos)
    pos += 4
    if n < 0:
        raise DecodeError(f"non-nullable array has length {n}")
    if n > len(buf) - pos:
        raise DecodeError(f"array of {n} elements but only {len(buf) - pos} bytes remain")
    return n, pos


def read_nullable_array_len(buf: Buffer, pos: int) -> tuple[int, int]:
    """Return -1 for a null array."""
    (n,) = _I32.unpack_from(buf, pos)
    pos += 4
    if n < 0:
        return -1, pos
    if n > len(buf) - pos:
        raise DecodeError(f"array of {n} elements but only {len(buf) - pos} bytes remain")
    return n, pos


def read_compact_array_len(buf: Buffer, pos: int) -> tuple[int, int]:
    n = buf[pos]
    if n < 0x80:  # a one-byte length: by far the most common
        pos += 1
    else:
        n, pos = read_uvarint(buf, pos)
    if n == 0:
        raise DecodeError("non-nullable compact array is null")
    n -= 1
    if n > len(buf) - pos:
        raise DecodeError(f"array of {n} elements but only {len(buf) - pos} bytes remain")
    return n, pos


def read_compact_nullable_array_len(buf: Buffer, pos: int) -> tuple[int, int]:
    """Return -1 for a null array."""
    n = buf[pos]
    if n < 0x80:  # a one-byte length: by far the most common
        pos += 1
    else:
        n, pos = read_uvarint(buf, pos)
    n -= 1
    if n > len(buf) - pos:
        raise DecodeError(f"array of {n} elements but only {len(buf) - pos} bytes remain")
    return n, pos


# Precompiled structs for the short fixed-width arrays that dominate real messages
# (replica lists, partition ids): code -> tuple indexed by element count.
_SHORT_ARRAY = 64
_ARRAY_STRUCTS: dict[str, tuple[struct.Struct, ...]] = {
    code: tuple(struct.Struct(f">{n}{code}") for n in range(_SHORT_ARRAY))
    for code in ("?", "b", "h", "H", "i", "I", "q", "d")
}
# The same, for generated code that inlines the short-array fast path.
SHORT_ARRAY = _SHORT_ARRAY
ARRAY_STRUCTS = _ARRAY_STRUCTS


def read_fixed_array(buf: Buffer, pos: int, n: int, code: str, size: int) -> tuple[list[Any], int]:
    """An array of fixed-width elements in one unpack (``code`` is a struct code)."""
    end = pos + n * size
    _need(buf, end, "array")
    if n < _SHORT_ARRAY:
        return list(_ARRAY_STRUCTS[code][n].unpack_from(buf, pos)), end
    return list(struct.unpack_from(f">{n}{code}", buf, pos)), end


def read_compact_fixed_array(buf: Buffer, pos: int, code: str, size: int) -> tuple[list[Any], int]:
    """A non-nullable compact array of fixed-width elements: length and elements at once."""
    n = buf[pos] - 1
    if 0 <= n < _SHORT_ARRAY:  # a one-byte length of a short array
        pos += 1
        end = pos + n * size
        if end > len(buf):
            raise DecodeError(f"array runs {end - len(buf)} bytes past the end of the buffer")
        return list(_ARRAY_STRUCTS[code][n].unpack_from(buf, pos)), end
    n, pos = read_compact_array_len(buf, pos)
    return read_fixed_array(buf, pos, n, code, size)


def write_compact_fixed_array(w: bytearray, values: list[Any], code: str) -> None:
    """Length (compact) and elements of an array of fixed-width elements."""
    n = len(values)
    if n < _SHORT_ARRAY:
        w.append(n + 1)
        w += _ARRAY_STRUCTS[code][n].pack(*values)
    else:
        w += encode_uvarint(n + 1)
        w += struct.pack(f">{n}{code}", *values)


def write_array_len(w: bytearray, n: int) -> None:
    w += _I32.pack(n)


def write_compact_array_len(w: bytearray, n: int) -> None:
    if 0 <= n < 0x7F:
        w.append(n + 1)
    else:
        w += encode_uvarint(n + 1)


def write_fixed_array(w: bytearray, values: list[Any], code: str) -> None:
    n = len(values)
    if n < _SHORT_ARRAY:
        w += _ARRAY_STRUCTS[code][n].pack(*values)
    else:
        w += struct.pack(f">{n}{code}", *values)


# -- tagged fields ---------------------------------------------------------------------

TagReader = Callable[[Any, Buffer, int], int]


def read_tagged_fields(buf: Buffer, pos: int, obj: Any, known: dict[int, TagReader]) -> int:
    """Read a tagged-field section into ``obj``; unknown tags are kept byte for byte."""
    count, pos = read_uvarint(buf, pos)
    if count > len(buf) - pos:
        raise DecodeError(f"{count} tagged fields but only {len(buf) - pos} bytes remain")
    unknown: list[tuple[int, bytes]] = []
    for _ in range(count):
        tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        end = pos + size
        _need(buf, end, "tagged field")
        reader = known.get(tag)
        if reader is None:
            unknown.append((tag, bytes(buf[pos:end])))
        elif reader(obj, buf, pos) != end:
            raise DecodeError(f"tagged field {tag} does not fill its {size} bytes")
        pos = end
    if unknown:
        obj.unknown_tagged_fields = tuple(unknown)
    return pos


def write_tagged_fields(
    w: bytearray, known: list[tuple[int, bytearray]], unknown: TaggedFields
) -> None:
    """Write known (already encoded) and unknown tagged fields, in ascending tag order."""
    if not known and not unknown:
        w.append(0)
        return
    fields: list[tuple[int, Buffer]] = [*known, *unknown]
    if len(fields) > 1:
        fields.sort(key=lambda item: item[0])
    w += encode_uvarint(len(fields))
    for tag, data in fields:
        w += encode_uvarint(tag)
        w += encode_uvarint(len(data))
        w += data


def write_no_tagged_fields(w: bytearray, unknown: TaggedFields) -> None:
    if unknown:
        write_tagged_fields(w, [], unknown)
    else:
        w.append(0)


# -- nullable structs ------------------------------------------------------------------


def read_struct_marker(buf: Buffer, pos: int) -> tuple[bool, int]:
    """A nullable struct is preceded by one byte: -1 for null, 1 for present."""
    marker = buf[pos]
    if marker == 0xFF:
        return False, pos + 1
    if marker == 1:
        return True, pos + 1
    raise DecodeError(f"nullable struct marker is {marker}, expected -1 or 1")


def read_uuid_array(buf: Buffer, pos: int, n: int) -> tuple[list[bytes], int]:
    end = pos + 16 * n
    _need(buf, end, "uuid array")
    return [bytes(buf[p : p + 16]) for p in range(pos, end, 16)], end


def write_uuid_array(w: bytearray, values: list[bytes]) -> None:
    for value in values:
        if len(value) != 16:
            raise EncodeError(f"a uuid must be 16 bytes, not {len(value)}")
        w += value

"""Variable-length integers of the Kafka protocol.

Unsigned varints (at most 5 bytes) carry compact lengths and tagged-field headers;
zig-zag varints (5 bytes) and varlongs (10 bytes) carry the fields of records
inside a v2 record batch. Readers take ``(buf, pos)`` and return ``(value, pos)``;
they raise :class:`DecodeError` on a truncated or over-long encoding.
"""

from millpond.wire.exceptions import DecodeError

Buffer = bytes | bytearray | memoryview

# One-byte encodings are by far the most common: precompute them.
_SMALL = tuple(bytes((i,)) for i in range(128))


def read_uvarint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Read an unsigned varint of at most 5 bytes (a 32-bit value)."""
    if pos < len(buf) and buf[pos] < 0x80:  # one byte: most lengths, counts and types
        return buf[pos], pos + 1
    value = 0
    shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise DecodeError("truncated unsigned varint")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            if value > 0xFFFFFFFF:
                raise DecodeError("unsigned varint does not fit in 32 bits")
            return value, pos
        shift += 7
        if shift >= 35:
            raise DecodeError("unsigned varint longer than 5 bytes")


def read_uvarlong(buf: Buffer, pos: int) -> tuple[int, int]:
    """Read an unsigned varlong of at most 10 bytes (a 64-bit value)."""
    value = 0
    shift = 0
    end = len(buf)
    while True:
        if pos >= end:
            raise DecodeError("truncated unsigned varlong")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            if value > 0xFFFFFFFFFFFFFFFF:
                raise DecodeError("unsigned varlong does not fit in 64 bits")
            return value, pos
        shift += 7
        if shift >= 70:
            raise DecodeError("varlong longer than 10 bytes")


def read_varint(buf: Buffer, pos: int) -> tuple[int, int]:
    """Read a zig-zag encoded signed varint (32-bit)."""
    if pos < len(buf) and (raw := buf[pos]) < 0x80:
        return (raw >> 1) ^ -(raw & 1), pos + 1
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def read_varlong(buf: Buffer, pos: int) -> tuple[int, int]:
    """Read a zig-zag encoded signed varlong (64-bit)."""
    if pos < len(buf) and (raw := buf[pos]) < 0x80:
        return (raw >> 1) ^ -(raw & 1), pos + 1
    raw, pos = read_uvarlong(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def encode_uvarint(value: int) -> bytes:
    """Encode an unsigned varint; values must fit in 64 bits."""
    if 0 <= value < 0x80:
        return _SMALL[value]
    if value < 0 or value > 0xFFFFFFFFFFFFFFFF:
        raise ValueError(f"unsigned varint out of range: {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """Encode a zig-zag signed varint (32-bit range)."""
    if not -0x80000000 <= value <= 0x7FFFFFFF:
        raise ValueError(f"varint out of the 32-bit range: {value}")
    return encode_uvarint(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def encode_varlong(value: int) -> bytes:
    """Encode a zig-zag signed varlong (64-bit range)."""
    if not -0x8000000000000000 <= value <= 0x7FFFFFFFFFFFFFFF:
        raise ValueError(f"varlong out of the 64-bit range: {value}")
    return encode_uvarint(((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF)


def size_of_uvarint(value: int) -> int:
    """Number of bytes :func:`encode_uvarint` produces for ``value``."""
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size

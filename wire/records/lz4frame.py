"""The LZ4 frame descriptor's header checksum, and Kafka's old mistake with it.

An LZ4 frame starts with the magic ``04 22 4D 18``, a descriptor (FLG, BD, then an
optional 8-byte content size and 4-byte dictionary id, as FLG says) and one header
checksum byte HC = ``(xxh32(descriptor, seed 0) >> 8) & 0xFF``.

KAFKA-3160: Kafka's own LZ4 stream classes before 0.10 hashed the magic number too
(``xxh32(magic + descriptor)``). Those frames sit in magic 0 message sets forever,
so Kafka reads magic 0 LZ4 without checking HC and still *writes* the wrong byte for
magic 0 (old consumers would reject a right one). The standard decoder under
:mod:`cramjam` checks HC, so :func:`repair_header_checksum` rewrites it before
decoding magic 0 wrappers, and :func:`break_header_checksum` reproduces the old
byte for builders. The hash comes from the ``xxhash`` library.
"""

from __future__ import annotations

from millpond.wire.exceptions import DecodeError

LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"

Buffer = bytes | bytearray | memoryview


def _xxh32(data: Buffer) -> int:
    import xxhash  # noqa: PLC0415 (deferred: only magic 0 LZ4 message sets need it)

    value: int = xxhash.xxh32_intdigest(bytes(data))
    return value


def descriptor_end(frame: Buffer) -> int:
    """Offset of the HC byte: 4 (magic) + 2 (FLG, BD) + optional fields named in FLG."""
    if len(frame) < 7 or bytes(frame[:4]) != LZ4_FRAME_MAGIC:
        raise DecodeError("not an LZ4 frame")
    flg = frame[4]
    end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if len(frame) <= end:
        raise DecodeError("truncated LZ4 frame descriptor")
    return end


def header_checksum(frame: Buffer) -> int:
    """The HC byte the LZ4 frame specification expects for ``frame``."""
    end = descriptor_end(frame)
    return (_xxh32(frame[4:end]) >> 8) & 0xFF


def broken_header_checksum(frame: Buffer) -> int:
    """The HC byte Kafka's pre-0.10 LZ4 writer put there (magic included in the hash)."""
    end = descriptor_end(frame)
    return (_xxh32(frame[:end]) >> 8) & 0xFF


def repair_header_checksum(frame: Buffer) -> bytes:
    """A copy of ``frame`` whose HC is right, whatever it was: how magic 0 LZ4 is read."""
    end = descriptor_end(frame)
    fixed = bytearray(frame)
    fixed[end] = (_xxh32(fixed[4:end]) >> 8) & 0xFF
    return bytes(fixed)


def break_header_checksum(frame: Buffer) -> bytes:
    """A copy of ``frame`` with Kafka's magic 0 HC byte: how magic 0 LZ4 is written."""
    end = descriptor_end(frame)
    broken = bytearray(frame)
    broken[end] = (_xxh32(broken[:end]) >> 8) & 0xFF
    return bytes(broken)

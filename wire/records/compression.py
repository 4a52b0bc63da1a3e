"""Compression codecs of Kafka record batches and legacy message sets.

The codec id lives in the low three bits of a batch's (or wrapper message's)
attributes and applies to everything after the header. What the bytes look like
is Kafka's choice, not the library's default, which is why some framing is done
here by hand:

- gzip: an RFC 1952 stream (Java's ``GZIPOutputStream``); readers accept
  concatenated members, as Java's ``GZIPInputStream`` does.
- snappy: Java clients write snappy-java's "xerial" stream framing (a 16-byte
  header, then ``[int32 big-endian length][raw snappy block]`` chunks); librdkafka
  writes and reads both that and one plain raw snappy block. We write xerial, the
  form every client reads, and accept both.
- lz4: the LZ4 *frame* format (magic ``0x184D2204``) with independent blocks (Java's
  reader refuses linked ones). Legacy
  magic 0 batches carry a broken header checksum (KAFKA-3160); see
  :mod:`millpond.wire.records.lz4frame`.
- zstd: a zstd frame (magic v2 batches only).

Decompression reads untrusted input. Every codec caps its output at ``max_size``
(a few hundred bytes of zstd can expand to gigabytes) and every failure surfaces as
:class:`DecodeError`, so a broker has a single exception to map to
``CORRUPT_MESSAGE``.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from enum import IntEnum
from functools import cache
from struct import Struct
from types import ModuleType

from millpond.wire.exceptions import DecodeError
from millpond.wire.varint import read_uvarint

Buffer = bytes | bytearray | memoryview


class Compression(IntEnum):
    """Codec ids as stored in the attribute bits 0-2."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


#: Mask of the codec bits in batch and message attributes.
COMPRESSION_MASK = 0x07

# snappy-java's stream header: magic, then "version" and "compatible version" ints.
XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = Struct(">8sii")
_XERIAL_VERSION = 1
_XERIAL_COMPATIBLE_VERSION = 1
# snappy-java compresses 32 KiB of input per block by default; Kafka keeps the default.
XERIAL_BLOCK_SIZE = 32 * 1024
_INT32 = Struct(">i")


@cache
def _cramjam() -> ModuleType:
    """The codecs (several MB of Rust), loaded with the first batch that needs one."""
    import cramjam  # noqa: PLC0415 (deferred: most brokers' start never needs it)

    return cramjam


@cache
def _codec_errors() -> tuple[type[Exception], ...]:
    """What cramjam raises on bad input (its own error, or a Python one for odd arguments)."""
    return (_cramjam().DecompressionError, ValueError, TypeError, OSError)


# Default levels are Kafka's (KIP-390): gzip 6 (Deflater's default), lz4 9 is the
# HC level Java uses only when asked, so keep the fast level; zstd 3.
_GZIP_LEVEL = 6
_ZSTD_LEVEL = 3

# First guess of the decompressed size for codecs whose frames need not announce
# it (lz4, zstd): grown four-fold on overflow, never past max_size.
_MIN_GUESS = 64 * 1024
_GUESS_RATIO = 4


def compress(codec: Compression | int, data: Buffer, *, level: int | None = None) -> bytes:
    """Compress ``data`` the way Kafka clients write it for ``codec``."""
    codec = _codec(codec)
    if codec is Compression.NONE:
        return bytes(data)
    if codec is Compression.GZIP:
        c = zlib.compressobj(_GZIP_LEVEL if level is None else level, zlib.DEFLATED, 31)
        return c.compress(data) + c.flush()
    if codec is Compression.SNAPPY:
        return xerial_snappy_compress(data)
    if codec is Compression.LZ4:
        # Independent blocks: Kafka's Java reader refuses linked ones ("Dependent block
        # stream is unsupported"), which cramjam's one-shot compress would write.
        compressor = _cramjam().lz4.Compressor(level, block_linked=False)
        compressor.compress(bytes(data))
        return bytes(compressor.finish())
    return bytes(_cramjam().zstd.compress(data, level=_ZSTD_LEVEL if level is None else level))


def decompress(codec: Compression | int, data: Buffer, *, max_size: int) -> bytes:
    """Decompress untrusted ``data``; more than ``max_size`` bytes of output is an error.

    Raises :class:`DecodeError` for an unknown codec, corrupt or truncated input,
    or output above ``max_size``.
    """
    try:
        codec = _codec(codec)
    except ValueError as exc:
        raise DecodeError(str(exc)) from None
    if codec is Compression.NONE:
        if len(data) > max_size:
            raise _too_large(codec, max_size)
        return bytes(data)
    if codec is Compression.GZIP:
        return _gunzip(data, max_size)
    if codec is Compression.SNAPPY:
        return snappy_decompress(data, max_size=max_size)
    if codec is Compression.LZ4:
        return _decompress_growing(codec, _cramjam().lz4.decompress_into, data, max_size)
    return _decompress_growing(codec, _cramjam().zstd.decompress_into, data, max_size)


def _codec(codec: Compression | int) -> Compression:
    try:
        return Compression(codec)
    except ValueError:
        raise ValueError(f"unknown compression codec id {codec}") from None


def _too_large(codec: Compression, max_size: int) -> DecodeError:
    return DecodeError(f"{codec.name} data decompresses to more than {max_size} bytes")


# --- gzip --------------------------------------------------------------------------


def _gunzip(data: Buffer, max_size: int) -> bytes:
    # zlib's max_length bounds each call's output, so a bomb stops at max_size + 1 bytes.
    out: list[bytes] = []
    total = 0
    rest: Buffer = data
    try:
        while True:
            d = zlib.decompressobj(31)
            chunk = d.decompress(rest, max_size - total + 1)
            total += len(chunk)
            if total > max_size:
                raise _too_large(Compression.GZIP, max_size)
            out.append(chunk)
            if not d.eof:
                raise DecodeError("truncated gzip data")
            rest = d.unused_data
            if not rest:
                break
    except zlib.error as exc:
        raise DecodeError(f"corrupt gzip data: {exc}") from None
    return out[0] if len(out) == 1 else b"".join(out)


# --- snappy ------------------------------------------------------------------------


def xerial_snappy_compress(data: Buffer, block_size: int = XERIAL_BLOCK_SIZE) -> bytes:
    """Frame ``data`` as snappy-java's stream format, the form Java clients write."""
    view = memoryview(data)
    parts = [_XERIAL_HEADER.pack(XERIAL_MAGIC, _XERIAL_VERSION, _XERIAL_COMPATIBLE_VERSION)]
    for start in range(0, len(view), block_size):
        block = bytes(_cramjam().snappy.compress_raw(view[start : start + block_size]))
        parts.append(_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def snappy_decompress(data: Buffer, *, max_size: int) -> bytes:
    """Decompress xerial-framed or plain raw snappy, as Kafka and librdkafka accept both."""
    view = memoryview(data)
    if len(view) >= len(XERIAL_MAGIC) and view[: len(XERIAL_MAGIC)] == XERIAL_MAGIC:
        blocks = _xerial_blocks(view)
    else:
        blocks = [view]
    # Raw snappy blocks announce their length up front: sum them before allocating.
    lengths = []
    total = 0
    for block in blocks:
        n, _ = read_uvarint(block, 0)
        total += n
        if total > max_size:
            raise _too_large(Compression.SNAPPY, max_size)
        lengths.append(n)
    out = bytearray(total)
    target = memoryview(out)
    pos = 0
    for block, n in zip(blocks, lengths, strict=True):
        try:
            written = _cramjam().snappy.decompress_raw_into(block, target[pos : pos + n])
        except _codec_errors() as exc:
            raise DecodeError(f"corrupt snappy data: {exc}") from None
        if written != n:
            raise DecodeError("snappy block shorter than its announced length")
        pos += n
    return bytes(out)


def _xerial_blocks(view: memoryview) -> list[memoryview]:
    if len(view) < _XERIAL_HEADER.size:
        raise DecodeError("truncated xerial snappy header")
    pos = _XERIAL_HEADER.size
    end = len(view)
    blocks = []
    while pos < end:
        if end - pos < 4:
            raise DecodeError("truncated xerial snappy block length")
        (n,) = _INT32.unpack_from(view, pos)
        pos += 4
        if n < 0 or n > end - pos:
            raise DecodeError(f"xerial snappy block of {n} bytes overruns the data")
        blocks.append(view[pos : pos + n])
        pos += n
    return blocks


# --- lz4 and zstd ------------------------------------------------------------------


def _decompress_growing(
    codec: Compression,
    decompress_into: Callable[[Buffer, bytearray], int],
    data: Buffer,
    max_size: int,
) -> bytes:
    """Decompress into a bounded buffer, growing it geometrically up to ``max_size``.

    lz4 and zstd frames need not state their content size (Java clients stream them),
    so the output size is unknown: a buffer that is too small fails fast, and the
    retries cost at most a third more than decompressing once into the right size.
    """
    size = min(max_size, max(_MIN_GUESS, len(data) * _GUESS_RATIO))
    while True:
        out = bytearray(size)
        try:
            n = decompress_into(data, out)
        except _codec_errors() as exc:
            overflow = "whole buffer" in str(exc)
            if overflow and size < max_size:
                size = min(max_size, size * _GUESS_RATIO)
                continue
            if overflow:
                raise _too_large(codec, max_size) from None
            raise DecodeError(f"corrupt {codec.name} data: {exc}") from None
        if n == size:
            return bytes(out)
        return bytes(memoryview(out)[:n])

import contextlib
import gzip
import os
import struct

import cramjam
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from millpond.wire.exceptions import DecodeError
from millpond.wire.records.compression import (
    XERIAL_MAGIC,
    Compression,
    compress,
    decompress,
    snappy_decompress,
    xerial_snappy_compress,
)

CODECS = list(Compression)
MiB = 1024 * 1024


def sample(n: int) -> bytes:
    # Compressible but not trivial: repeated words with random noise.
    words = [b"alpha", b"beta", b"gamma", b"delta", os.urandom(7)]
    out = bytearray()
    i = 0
    while len(out) < n:
        out += words[i % len(words)]
        i += 7
    return bytes(out[:n])


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("size", [0, 1, 100, 70_000, 300_000])
def test_round_trip(codec: Compression, size: int) -> None:
    data = sample(size)
    assert decompress(codec, compress(codec, data), max_size=size) == data


@settings(max_examples=60, deadline=None)
@given(codec=st.sampled_from(CODECS), data=st.binary(max_size=2000))
def test_round_trip_property(codec: Compression, data: bytes) -> None:
    blob = compress(codec, data)
    assert decompress(codec, memoryview(blob), max_size=len(data)) == data


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_from_memoryview_slice(codec: Compression) -> None:
    data = sample(5000)
    blob = compress(codec, memoryview(b"xx" + data)[2:])
    framed = bytearray(b"\0" * 3 + blob + b"\0" * 3)
    assert decompress(codec, memoryview(framed)[3:-3], max_size=5000) == data


def test_stdlib_and_library_interop() -> None:
    data = sample(10_000)
    assert gzip.decompress(compress(Compression.GZIP, data)) == data
    assert decompress(Compression.GZIP, gzip.compress(data), max_size=10_000) == data
    assert bytes(cramjam.lz4.decompress(compress(Compression.LZ4, data))) == data
    assert decompress(Compression.LZ4, bytes(cramjam.lz4.compress(data)), max_size=10**5) == data
    assert bytes(cramjam.zstd.decompress(compress(Compression.ZSTD, data))) == data
    assert decompress(Compression.ZSTD, bytes(cramjam.zstd.compress(data)), max_size=10**5) == data


def test_gzip_concatenated_members() -> None:
    blob = gzip.compress(b"hello ") + gzip.compress(b"world")
    assert decompress(Compression.GZIP, blob, max_size=100) == b"hello world"


def test_xerial_written_by_us_has_snappy_java_layout() -> None:
    data = sample(100_000)
    blob = xerial_snappy_compress(data)
    assert blob[:8] == XERIAL_MAGIC
    assert struct.unpack(">ii", blob[8:16]) == (1, 1)
    pos, out = 16, b""
    while pos < len(blob):
        (n,) = struct.unpack_from(">i", blob, pos)
        out += bytes(cramjam.snappy.decompress_raw(blob[pos + 4 : pos + 4 + n]))
        pos += 4 + n
    assert out == data
    assert blob == compress(Compression.SNAPPY, data)


def test_xerial_built_independently() -> None:
    # Framed by hand: header, then [int32 length][raw block] with odd block sizes.
    data = sample(50_000)
    chunks = [data[:1], data[1:20_000], data[20_000:20_000], data[20_000:]]
    blob = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
    for chunk in chunks:
        raw = bytes(cramjam.snappy.compress_raw(chunk))
        blob += struct.pack(">i", len(raw)) + raw
    assert decompress(Compression.SNAPPY, blob, max_size=50_000) == data


def test_raw_snappy_accepted() -> None:
    data = sample(40_000)
    raw = bytes(cramjam.snappy.compress_raw(data))
    assert decompress(Compression.SNAPPY, raw, max_size=40_000) == data


def test_empty_xerial_stream() -> None:
    assert snappy_decompress(XERIAL_MAGIC + struct.pack(">ii", 1, 1), max_size=0) == b""


BOMB = b"\0" * (8 * MiB)


@pytest.mark.parametrize("codec", [c for c in CODECS if c is not Compression.NONE])
def test_decompression_bomb_capped(codec: Compression) -> None:
    blob = compress(codec, BOMB)
    assert len(blob) < 500_000
    with pytest.raises(DecodeError, match="more than"):
        decompress(codec, blob, max_size=MiB)
    assert decompress(codec, blob, max_size=len(BOMB)) == BOMB


def test_raw_snappy_bomb_rejected_before_allocating() -> None:
    # A raw block that claims 4 GiB - 1 of output: refused from its preamble alone.
    with pytest.raises(DecodeError):
        decompress(Compression.SNAPPY, b"\xff\xff\xff\xff\x0f\x00", max_size=MiB)


def test_none_capped() -> None:
    with pytest.raises(DecodeError):
        decompress(Compression.NONE, b"abc", max_size=2)


def test_exact_fit_is_allowed() -> None:
    for codec in CODECS:
        data = sample(MiB)
        assert decompress(codec, compress(codec, data), max_size=MiB) == data


def test_unknown_codec() -> None:
    with pytest.raises(DecodeError):
        decompress(5, b"", max_size=10)
    with pytest.raises(ValueError):
        compress(7, b"")


@pytest.mark.parametrize("codec", [c for c in CODECS if c is not Compression.NONE])
def test_truncated_input_is_decode_error(codec: Compression) -> None:
    blob = compress(codec, sample(20_000))
    for cut in [0, 1, 2, 5, 10, 17, len(blob) // 2, len(blob) - 1]:
        with pytest.raises(DecodeError):
            decompress(codec, blob[:cut], max_size=10**6)


@settings(max_examples=150, deadline=None)
@given(codec=st.sampled_from(CODECS), data=st.binary(max_size=300))
def test_garbage_raises_only_decode_error(codec: Compression, data: bytes) -> None:
    with contextlib.suppress(DecodeError):
        decompress(codec, data, max_size=10_000)


@settings(max_examples=150, deadline=None)
@given(
    codec=st.sampled_from(CODECS),
    flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(1, 255)), max_size=4),
)
def test_corrupted_streams_raise_only_decode_error(
    codec: Compression, flips: list[tuple[int, int]]
) -> None:
    blob = bytearray(compress(codec, sample(3000)))
    for pos, mask in flips:
        blob[pos % len(blob)] ^= mask
    with contextlib.suppress(DecodeError):
        decompress(codec, bytes(blob), max_size=10_000)


def test_zlib_errors_mapped() -> None:
    with pytest.raises(DecodeError):
        decompress(Compression.GZIP, b"\x1f\x8b\x08\x00" + b"\xff" * 20, max_size=100)
    # A valid gzip member followed by junk: the junk is not a gzip member.
    with pytest.raises(DecodeError):
        decompress(Compression.GZIP, gzip.compress(b"x") + b"junk", max_size=100)

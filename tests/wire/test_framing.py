"""FrameReader must return exactly the frames that were sent, however TCP splits them,
copy nothing it does not have to, and refuse a bad size prefix before buffering a body."""

import array
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from millpond.wire.exceptions import DecodeError, EncodeError, FrameTooLargeError
from millpond.wire.framing import (
    DEFAULT_MAX_FRAME_SIZE,
    FrameReader,
    frame,
    frame_parts,
    size_prefix,
)

payloads = st.lists(st.binary(max_size=300), max_size=20)


def split_at(data: bytes, cuts: list[int]) -> list[bytes]:
    """Cut ``data`` at the given offsets (sorted, deduplicated, clipped)."""
    points = sorted({min(c, len(data)) for c in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


@given(payloads, st.lists(st.integers(min_value=0, max_value=7000), max_size=40))
def test_frames_survive_any_chunking(bodies: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(frame(b) for b in bodies)
    reader = FrameReader()
    received: list[bytes] = []
    for chunk in split_at(stream, cuts):
        reader.feed(chunk)
        received.extend(bytes(f) for f in reader.drain())
    assert received == bodies
    assert reader.at_frame_boundary
    assert reader.buffered == 0
    reader.check_eof()


@given(payloads, st.integers(min_value=1, max_value=17))
def test_fixed_size_chunks_and_next_frame(bodies: list[bytes], step: int) -> None:
    stream = b"".join(frame(b) for b in bodies)
    reader = FrameReader()
    received: list[bytes] = []
    for i in range(0, len(stream), step):
        reader.feed(memoryview(stream)[i : i + step])
        while (f := reader.next_frame()) is not None:
            received.append(bytes(f))
    assert received == bodies


@given(payloads)
def test_feeding_twice_before_draining(bodies: list[bytes]) -> None:
    stream = b"".join(frame(b) for b in bodies)
    half = len(stream) // 2
    reader = FrameReader()
    reader.feed(stream[:half])
    reader.feed(stream[half:])
    assert len(reader) == len(bodies)
    assert [bytes(f) for f in reader.drain()] == bodies
    assert reader.next_frame() is None


def test_frame_within_one_chunk_is_a_view_not_a_copy() -> None:
    chunk = frame(b"hello") + frame(b"world") + b"\x00\x00"
    reader = FrameReader()
    reader.feed(chunk)
    first, second = reader.drain()
    assert first.obj is chunk and second.obj is chunk
    assert (bytes(first), bytes(second)) == (b"hello", b"world")
    assert reader.buffered == 2


def test_body_after_a_lone_prefix_is_a_view_of_its_chunk() -> None:
    reader = FrameReader()
    reader.feed(size_prefix(3))
    body = b"abc" + frame(b"next")
    reader.feed(body)
    first, second = reader.drain()
    assert first.obj is body and second.obj is body
    assert (bytes(first), bytes(second)) == (b"abc", b"next")


def test_many_frames_in_one_chunk() -> None:
    bodies = [i.to_bytes(4, "big") * (i % 7) for i in range(20_000)]
    chunk = b"".join(frame(b) for b in bodies)
    reader = FrameReader()
    reader.feed(chunk)
    assert len(reader) == len(bodies)
    assert [bytes(f) for f in reader.drain()] == bodies


def test_large_frame_in_many_small_chunks() -> None:
    body = bytes(range(256)) * 1024  # 256 KiB
    stream = frame(body)
    reader = FrameReader()
    for i in range(0, len(stream), 16):
        reader.feed(stream[i : i + 16])
    (out,) = reader.drain()
    assert out == body
    assert reader.buffered == 0


def test_zero_length_frames() -> None:
    reader = FrameReader()
    reader.feed(frame(b"") + frame(b"") + frame(b"x") + frame(b""))
    assert [bytes(f) for f in reader.drain()] == [b"", b"", b"x", b""]
    # A zero-length frame whose prefix is split across chunks completes with its prefix.
    reader.feed(b"\x00\x00")
    assert reader.next_frame() is None
    assert not reader.at_frame_boundary
    reader.feed(b"\x00\x00")
    assert reader.drain() == [b""]
    assert reader.at_frame_boundary


def test_empty_feed_is_harmless() -> None:
    reader = FrameReader()
    reader.feed(b"")
    reader.feed(b"\x00")
    reader.feed(b"")
    reader.feed(b"\x00\x00\x01z")
    assert reader.drain() == [b"z"]


def test_oversized_prefix_is_rejected_before_the_body_arrives() -> None:
    reader = FrameReader(max_frame_size=1000)
    with pytest.raises(FrameTooLargeError) as info:
        reader.feed(size_prefix(1001))
    assert info.value.size == 1001
    assert info.value.max_size == 1000
    assert reader.buffered == 0


def test_oversized_split_prefix_is_rejected_as_soon_as_complete() -> None:
    reader = FrameReader(max_frame_size=1000)
    reader.feed(size_prefix(2**31 - 1)[:3])
    with pytest.raises(FrameTooLargeError):
        reader.feed(size_prefix(2**31 - 1)[3:] + b"body bytes")
    assert reader.buffered == 0


def test_oversized_prefix_after_good_frames_keeps_them() -> None:
    reader = FrameReader(max_frame_size=10)
    with pytest.raises(FrameTooLargeError):
        reader.feed(frame(b"ok") + size_prefix(11) + b"x" * 11)
    assert reader.drain() == [b"ok"]


def test_frame_of_exactly_the_maximum_is_accepted() -> None:
    reader = FrameReader(max_frame_size=10)
    reader.feed(frame(b"0123456789"))
    assert reader.drain() == [b"0123456789"]


@pytest.mark.parametrize("size", [-1, -(2**31)])
def test_negative_size_is_a_decode_error(size: int) -> None:
    reader = FrameReader()
    with pytest.raises(DecodeError, match="negative") as info:
        reader.feed(struct.pack(">i", size))
    assert not isinstance(info.value, FrameTooLargeError)


def test_negative_size_split_across_chunks() -> None:
    reader = FrameReader()
    reader.feed(b"\xff")
    with pytest.raises(DecodeError, match="negative"):
        reader.feed(b"\xff\xff\xfe")


def test_reader_stays_failed_after_a_bad_prefix() -> None:
    reader = FrameReader(max_frame_size=4)
    with pytest.raises(FrameTooLargeError):
        reader.feed(size_prefix(5))
    with pytest.raises(FrameTooLargeError):
        reader.feed(frame(b"ok"))


def test_check_eof_mid_frame() -> None:
    reader = FrameReader()
    reader.feed(size_prefix(10) + b"abc")
    assert reader.buffered == 7
    with pytest.raises(DecodeError, match="7 bytes"):
        reader.check_eof()


def test_accepts_bytearray_and_non_byte_views() -> None:
    reader = FrameReader()
    reader.feed(bytearray(frame(b"ab")))
    words = array.array("I", [0, 0])
    memoryview(words).cast("B")[:] = frame(b"wxyz")
    reader.feed(memoryview(words))
    assert reader.drain() == [b"ab", b"wxyz"]


def test_max_frame_size_is_validated() -> None:
    assert FrameReader().max_frame_size == DEFAULT_MAX_FRAME_SIZE == 104_857_600
    with pytest.raises(ValueError):
        FrameReader(max_frame_size=-1)
    with pytest.raises(ValueError):
        FrameReader(max_frame_size=2**31)


def test_frame_and_frame_parts() -> None:
    assert frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert frame(b"") == b"\x00\x00\x00\x00"
    assert frame(memoryview(b"xy")) == b"\x00\x00\x00\x02xy"
    tail = memoryview(b"defg")
    parts = frame_parts([b"ab", bytearray(b"c"), tail])
    assert parts[0] == b"\x00\x00\x00\x07"
    assert parts[3] is tail
    assert b"".join(parts) == frame(b"abcdefg")
    assert frame_parts([]) == [b"\x00\x00\x00\x00"]
    # memoryview parts count in bytes, not items.
    assert frame_parts([memoryview(array.array("I", [1, 2]))])[0] == b"\x00\x00\x00\x08"


def test_size_prefix_bounds() -> None:
    assert size_prefix(2**31 - 1) == b"\x7f\xff\xff\xff"
    with pytest.raises(EncodeError):
        size_prefix(2**31)
    with pytest.raises(EncodeError):
        size_prefix(-1)

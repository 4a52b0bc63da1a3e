import contextlib
import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from millpond.wire.exceptions import DecodeError
from millpond.wire.records import (
    Compression,
    TimestampType,
    build_legacy_message_set,
    iter_legacy_entries,
    iter_legacy_records,
    read_magic,
)
from millpond.wire.records.legacy import encode_legacy_message
from millpond.wire.records.lz4frame import header_checksum

RECS = [(b"k1", b"v1", 1000), (None, b"v2", 1005), (b"k3", None, 1003)]
LEGACY_CODECS = [Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4]


def test_message_layout_v0() -> None:
    data = encode_legacy_message(7, 0, b"k", b"value")
    body = b"\x00\x00" + struct.pack(">i", 1) + b"k" + struct.pack(">i", 5) + b"value"
    assert data == struct.pack(">qiI", 7, len(body) + 4, zlib.crc32(body)) + body
    assert read_magic(data) == 0


def test_message_layout_v1() -> None:
    data = encode_legacy_message(7, 1, None, b"v", timestamp=99, attributes=0x08)
    body = b"\x01\x08" + struct.pack(">q", 99) + struct.pack(">i", -1) + struct.pack(">i", 1) + b"v"
    assert data == struct.pack(">qiI", 7, len(body) + 4, zlib.crc32(body)) + body
    (rec,) = iter_legacy_records(data)
    assert rec.timestamp_type is TimestampType.LOG_APPEND_TIME and rec.timestamp == 99


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", LEGACY_CODECS)
def test_round_trip(magic: int, codec: Compression) -> None:
    data = build_legacy_message_set(RECS, magic=magic, base_offset=40, compression=codec)
    got = list(iter_legacy_records(data))
    assert [(r.offset, r.key, r.value, r.magic) for r in got] == [
        (40, b"k1", b"v1", magic),
        (41, None, b"v2", magic),
        (42, b"k3", None, magic),
    ]
    if magic == 1:
        assert [r.timestamp for r in got] == [1000, 1005, 1003]
        assert {r.timestamp_type for r in got} == {TimestampType.CREATE_TIME}
    else:
        assert {(r.timestamp, r.timestamp_type) for r in got} == {
            (-1, TimestampType.NO_TIMESTAMP_TYPE)
        }
    entries = list(iter_legacy_entries(data))
    if codec is Compression.NONE:
        assert len(entries) == 3
    else:
        (wrapper,) = entries
        assert wrapper.offset == 42 and wrapper.attributes & 0x07 == codec
        if magic == 1:
            assert wrapper.timestamp == 1005


def test_log_append_time_wrapper_overrides_inner_timestamps() -> None:
    data = build_legacy_message_set(
        RECS,
        magic=1,
        compression=Compression.GZIP,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        log_append_time=5555,
    )
    got = list(iter_legacy_records(data))
    assert {(r.timestamp, r.timestamp_type) for r in got} == {(5555, TimestampType.LOG_APPEND_TIME)}


def test_magic0_lz4_uses_kafka_3160_checksum() -> None:
    data = build_legacy_message_set(RECS, magic=0, compression=Compression.LZ4)
    (wrapper,) = iter_legacy_entries(data)
    assert wrapper.value is not None
    frame = wrapper.value
    assert frame[6] != header_checksum(frame)  # the broken byte, as Kafka writes magic 0
    assert [r.value for r in iter_legacy_records(data)] == [b"v1", b"v2", None]
    # A correct checksum in magic 0 is read as well (newer writers).
    good = encode_legacy_message(
        2, 0, None, frame[:6] + bytes((header_checksum(frame),)) + frame[7:], attributes=3
    )
    assert [r.value for r in iter_legacy_records(good)] == [b"v1", b"v2", None]
    # In magic 1 the checksum is checked.
    data1 = build_legacy_message_set(RECS, magic=1, compression=Compression.LZ4)
    (w1,) = iter_legacy_entries(data1)
    assert w1.value is not None
    bad = bytearray(w1.value)
    bad[6] ^= 0xFF
    with pytest.raises(DecodeError):
        list(iter_legacy_records(encode_legacy_message(2, 1, None, bytes(bad), attributes=3)))


def test_crc_checked() -> None:
    data = build_legacy_message_set(RECS, magic=1)
    for pos in range(16, len(data) // 3):
        bad = bytearray(data)
        bad[pos] ^= 0x10
        with pytest.raises(DecodeError):
            list(iter_legacy_records(bad))


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
def test_truncation_at_every_byte(codec: Compression) -> None:
    data = build_legacy_message_set(RECS, magic=1, compression=codec) * 2
    ends, pos = [], 0
    while pos < len(data):
        pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
        ends.append(pos)
    for cut in range(len(data)):
        complete = [e for e in ends if e <= cut]
        if cut == 0 or cut in complete:
            list(iter_legacy_records(data[:cut]))
        else:
            with pytest.raises(DecodeError):
                list(iter_legacy_records(data[:cut]))
        n = len(list(iter_legacy_entries(data[:cut], allow_truncated_tail=True)))
        assert n == len(complete)


def test_bad_wrappers() -> None:
    inner = build_legacy_message_set(RECS, magic=0)
    # inner magic 0 inside a magic 1 wrapper
    wrapper = encode_legacy_message(2, 1, None, zlib_gzip(inner), attributes=1, timestamp=0)
    with pytest.raises(DecodeError, match="magic"):
        list(iter_legacy_records(wrapper))
    # nested compression
    nested = build_legacy_message_set(RECS, magic=1, compression=Compression.GZIP)
    wrapper = encode_legacy_message(0, 1, None, zlib_gzip(nested), attributes=1, timestamp=0)
    with pytest.raises(DecodeError, match="nested"):
        list(iter_legacy_records(wrapper))
    # null value, zstd, empty
    for value, attrs in [(None, 1), (b"x", 4), (zlib_gzip(b""), 1)]:
        with pytest.raises(DecodeError):
            list(iter_legacy_records(encode_legacy_message(0, 1, None, value, attributes=attrs)))
    with pytest.raises(DecodeError):
        list(iter_legacy_records(encode_legacy_message(0, 0, None, b"x")[:-1] + b"\x02"))


def zlib_gzip(data: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


@settings(max_examples=200, deadline=None)
@given(
    magic=st.sampled_from([0, 1]),
    codec=st.sampled_from(LEGACY_CODECS),
    flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(1, 255)), max_size=3),
    fix_crc=st.booleans(),
)
def test_corruption_raises_only_decode_error(
    magic: int, codec: Compression, flips: list[tuple[int, int]], fix_crc: bool
) -> None:
    data = bytearray(build_legacy_message_set(RECS, magic=magic, compression=codec))
    for pos, mask in flips:
        data[pos % len(data)] ^= mask
    if fix_crc and codec:
        struct.pack_into(">I", data, 12, zlib.crc32(bytes(data[16:])))
    with contextlib.suppress(DecodeError):
        list(iter_legacy_records(data, max_size=10_000))

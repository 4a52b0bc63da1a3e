import contextlib
import struct

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from millpond.wire.exceptions import DecodeError
from millpond.wire.records import (
    BATCH_HEADER_SIZE,
    Compression,
    ControlRecordType,
    NewRecord,
    RecordBatch,
    TimestampType,
    build_batch,
    build_control_batch,
    iter_batches,
    parse_control_key,
    parse_end_txn_marker,
    read_magic,
)
from millpond.wire.records.record import encode_record

# Built by an independent implementation (kafka-python 3.0.12's DefaultRecordBatchBuilder):
# records (k, v, [("h", b"x")]) at 1700000000000 and (None, b"v2", []) 5 ms later.
KNOWN_BATCH = bytes.fromhex(
    "0000000000000000000000470000000002fd17427f0000000000010000018bcfe568000000018bcf"
    "e56805ffffffffffffffffffffffffffff0000000218000000026b0276020268027810000a020104"
    "763200"
)
KNOWN_RECORDS = [
    NewRecord(b"k", b"v", [("h", b"x")], timestamp=1_700_000_000_000),
    NewRecord(None, b"v2", timestamp=1_700_000_000_005),
]


def test_known_answer() -> None:
    batch = RecordBatch(KNOWN_BATCH)
    assert batch.crc == 0xFD17427F
    assert batch.compute_crc() == 0xFD17427F
    batch.validate()
    assert (batch.base_offset, batch.batch_length, batch.partition_leader_epoch) == (0, 71, 0)
    assert (batch.magic, batch.attributes, batch.last_offset_delta) == (2, 0, 1)
    assert (batch.base_timestamp, batch.max_timestamp) == (1_700_000_000_000, 1_700_000_000_005)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)
    assert batch.records_count == 2
    assert batch.size_in_bytes == len(KNOWN_BATCH)
    assert (batch.last_offset, batch.next_offset) == (1, 2)
    assert batch.compression is Compression.NONE
    assert batch.timestamp_type is TimestampType.CREATE_TIME
    assert not (batch.is_transactional or batch.is_control or batch.has_delete_horizon)
    recs = list(batch.records())
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in recs] == [
        (0, 1_700_000_000_000, b"k", b"v", [("h", b"x")]),
        (1, 1_700_000_000_005, None, b"v2", []),
    ]
    assert build_batch(KNOWN_RECORDS, partition_leader_epoch=0) == KNOWN_BATCH


def test_crc_is_crc32c_from_attributes() -> None:
    assert crc32c(KNOWN_BATCH[21:]) == struct.unpack_from(">I", KNOWN_BATCH, 17)[0]


def test_header_is_61_bytes() -> None:
    assert BATCH_HEADER_SIZE == 61


def test_every_flipped_crc_covered_byte_is_detected() -> None:
    data = build_batch(KNOWN_RECORDS, compression=Compression.GZIP, producer_id=7)
    for pos in range(len(data)):
        corrupted = bytearray(data)
        corrupted[pos] ^= 0x01
        try:
            batch = RecordBatch(corrupted)
        except DecodeError:
            assert pos in range(8, 17)  # batch_length or magic
            continue
        if pos < 17:
            assert batch.is_valid()  # base_offset and partition_leader_epoch: not covered
        else:
            assert not batch.is_valid()
            with pytest.raises(DecodeError, match="corrupt"):
                batch.validate()


def test_in_place_rewrite_keeps_crc_valid() -> None:
    buf = bytearray(b"\xaa" * 5 + build_batch(KNOWN_RECORDS) + b"\xbb" * 5)
    (batch,) = iter_batches(memoryview(buf)[5:-5])
    crc = batch.crc
    batch.set_base_offset(1_000_000)
    batch.set_partition_leader_epoch(42)
    assert (batch.base_offset, batch.partition_leader_epoch, batch.crc) == (1_000_000, 42, crc)
    batch.validate()
    again = RecordBatch(bytes(buf[5:-5]))
    again.validate()
    assert (again.base_offset, again.partition_leader_epoch) == (1_000_000, 42)
    assert [r.offset for r in again.records()] == [1_000_000, 1_000_001]
    assert buf[:5] == b"\xaa" * 5 and buf[-5:] == b"\xbb" * 5


def test_log_append_time_rewrite() -> None:
    buf = bytearray(build_batch(KNOWN_RECORDS, compression=Compression.LZ4))
    batch = RecordBatch(buf)
    batch.set_log_append_time(1_800_000_000_000)
    batch.validate()
    assert batch.timestamp_type is TimestampType.LOG_APPEND_TIME
    assert batch.max_timestamp == 1_800_000_000_000
    assert batch.base_timestamp == 1_700_000_000_000
    assert batch.compression is Compression.LZ4
    assert [r.timestamp for r in RecordBatch(bytes(buf)).records()] == [1_800_000_000_000] * 2
    batch.set_max_timestamp(TimestampType.CREATE_TIME, 1_700_000_000_005)
    assert bytes(buf) == build_batch(KNOWN_RECORDS, compression=Compression.LZ4)


def test_rewrite_needs_writable_buffer() -> None:
    batch = RecordBatch(KNOWN_BATCH)
    with pytest.raises(TypeError):
        batch.set_base_offset(5)
    with pytest.raises(TypeError):
        batch.set_log_append_time(5)


def blob_of(n: int) -> bytes:
    return b"".join(
        build_batch(
            [NewRecord(b"key%d" % i, b"value" * i, timestamp=1000 + i)],
            base_offset=i * 10,
            compression=Compression(i % 5),
        )
        for i in range(n)
    )


def test_iter_batches_walks_a_blob() -> None:
    blob = blob_of(5)
    batches = list(iter_batches(blob))
    assert [b.base_offset for b in batches] == [0, 10, 20, 30, 40]
    assert [b.compression for b in batches] == list(Compression)
    assert sum(b.size_in_bytes for b in batches) == len(blob)
    for i, b in enumerate(batches):
        b.validate()
        assert [(r.key, r.value) for r in b.records()] == [(b"key%d" % i, b"value" * i)]
    assert list(iter_batches(b"")) == []


def test_truncation_at_every_byte() -> None:
    blob = blob_of(3)
    sizes = [b.size_in_bytes for b in iter_batches(blob)]
    ends = [sum(sizes[: i + 1]) for i in range(len(sizes))]
    for cut in range(len(blob)):
        data = blob[:cut]
        complete = [e for e in ends if e <= cut]
        if cut in complete or cut == 0:
            assert len(list(iter_batches(data))) == len(complete)
        else:
            with pytest.raises(DecodeError):
                list(iter_batches(data))
        # Fetch semantics: the whole batches, then a quiet stop.
        assert len(list(iter_batches(data, allow_truncated_tail=True))) == len(complete)


def test_truncating_the_records_section_at_every_byte() -> None:
    # Keep the header self-consistent (length and CRC fixed up) so only the record
    # parser can notice.
    records = [NewRecord(b"k" * i, b"v" * i, [(f"h{i}", b"x")], timestamp=i) for i in range(4)]
    for codec in (Compression.NONE, Compression.GZIP):
        data = build_batch(records, compression=codec)
        for cut in range(BATCH_HEADER_SIZE, len(data)):
            short = bytearray(data[:cut])
            struct.pack_into(">i", short, 8, cut - 12)
            struct.pack_into(">I", short, 17, crc32c(bytes(short[21:])))
            batch = RecordBatch(short)
            batch.validate()
            with pytest.raises(DecodeError):
                list(batch.records())


def test_records_count_and_trailing_garbage() -> None:
    rec = encode_record(0, 0, b"k", b"v")
    for body, count in [(rec, 2), (rec + rec, 1), (rec + b"\0", 1), (b"", 1), (rec, -1)]:
        data = bytearray(build_batch([]))
        data += body
        struct.pack_into(">i", data, 8, len(data) - 12)
        struct.pack_into(">i", data, 57, count)
        with pytest.raises(DecodeError):
            list(RecordBatch(data).records())


def test_bad_batch_headers() -> None:
    data = bytearray(KNOWN_BATCH)
    data[16] = 1
    with pytest.raises(DecodeError, match="magic"):
        list(iter_batches(data))
    with pytest.raises(DecodeError, match="magic"):
        RecordBatch(data)
    data = bytearray(KNOWN_BATCH)
    struct.pack_into(">i", data, 8, 10)
    with pytest.raises(DecodeError):
        list(iter_batches(data))
    with pytest.raises(DecodeError):
        list(iter_batches(data, allow_truncated_tail=True))
    with pytest.raises(DecodeError):
        RecordBatch(KNOWN_BATCH + b"\0")
    data = bytearray(KNOWN_BATCH)
    data[22] |= 0x07  # codec id 7
    with pytest.raises(DecodeError, match="codec"):
        list(RecordBatch(data).records())


def test_read_magic() -> None:
    assert read_magic(KNOWN_BATCH) == 2
    assert read_magic(b"\0" * 20 + KNOWN_BATCH, 20) == 2
    with pytest.raises(DecodeError):
        read_magic(KNOWN_BATCH[:16])


def test_decompression_cap_applies_to_records() -> None:
    data = build_batch([NewRecord(None, b"\0" * 1_000_000)], compression=Compression.ZSTD)
    assert len(data) < 1000
    with pytest.raises(DecodeError):
        list(RecordBatch(data).records(max_size=100_000))
    assert len(list(RecordBatch(data).records(max_size=2_000_000))) == 1


def test_producer_fields_and_flags() -> None:
    data = build_batch(
        [NewRecord(b"a", b"b", timestamp=5), NewRecord(b"c", None, timestamp=3)],
        base_offset=100,
        partition_leader_epoch=9,
        producer_id=123456789,
        producer_epoch=7,
        base_sequence=0x7FFFFFFF,
        is_transactional=True,
        compression=Compression.SNAPPY,
    )
    batch = RecordBatch(data)
    batch.validate()
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (
        123456789,
        7,
        2**31 - 1,
    )
    assert batch.last_sequence == 0  # wraps as Kafka's sequences do
    assert batch.is_transactional and not batch.is_control and batch.has_producer_id
    assert (batch.base_timestamp, batch.max_timestamp) == (5, 5)
    assert [(r.offset, r.timestamp, r.value) for r in batch.records()] == [
        (100, 5, b"b"),
        (101, 3, None),
    ]


def test_delete_horizon() -> None:
    data = build_batch(
        [NewRecord(b"a", None, timestamp=1000)], delete_horizon_ms=5000, base_offset=3
    )
    batch = RecordBatch(data)
    assert batch.has_delete_horizon and batch.delete_horizon_ms == 5000
    assert batch.base_timestamp == 5000 and batch.attributes & 0x40
    (rec,) = batch.records()
    assert (rec.timestamp, rec.timestamp_delta) == (1000, -4000)


def test_empty_batch_after_compaction_keeps_offset_range() -> None:
    data = build_batch(
        [], base_offset=50, last_offset_delta=9, base_timestamp=7, max_timestamp=8, producer_id=3
    )
    batch = RecordBatch(data)
    assert (batch.records_count, batch.last_offset, batch.next_offset) == (0, 59, 60)
    assert list(batch.records()) == []


@pytest.mark.parametrize("kind", [ControlRecordType.COMMIT, ControlRecordType.ABORT])
def test_control_batch(kind: ControlRecordType) -> None:
    data = build_control_batch(
        kind, producer_id=77, producer_epoch=3, coordinator_epoch=12, base_offset=5, timestamp=99
    )
    batch = RecordBatch(data)
    batch.validate()
    assert batch.is_control and batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 3, -1)
    (rec,) = batch.records()
    assert rec.offset == 5 and rec.timestamp == 99
    key = parse_control_key(rec.key)
    assert key.version == 0 and key.type == kind
    marker = parse_end_txn_marker(rec.value)
    assert (marker.version, marker.coordinator_epoch) == (0, 12)


def test_control_parsers_reject_short_input() -> None:
    for bad in (None, b"", b"\0\0\0"):
        with pytest.raises(DecodeError):
            parse_control_key(bad)
    with pytest.raises(DecodeError):
        parse_control_key(b"\xff\xff\0\0")
    for bad in (None, b"\0\0\0\0\0"):
        with pytest.raises(DecodeError):
            parse_end_txn_marker(bad)
    assert parse_control_key(b"\0\0\0\x05\x01").type == ControlRecordType.KRAFT_VERSION


headers_st = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8)), max_size=3)
record_st = st.builds(
    NewRecord,
    key=st.none() | st.binary(max_size=40),
    value=st.none() | st.binary(max_size=200),
    headers=headers_st,
    timestamp=st.integers(min_value=0, max_value=2**41),
    timestamp_delta=st.none(),
    offset_delta=st.none(),
    attributes=st.just(0),
)


@settings(max_examples=120, deadline=None)
@given(
    records=st.lists(record_st, max_size=12),
    codec=st.sampled_from(list(Compression)),
    base_offset=st.integers(min_value=0, max_value=2**62),
    epoch=st.integers(min_value=-1, max_value=2**31 - 1),
    producer=st.tuples(
        st.integers(min_value=-1, max_value=2**63 - 1),
        st.integers(min_value=-1, max_value=2**15 - 1),
        st.integers(min_value=-1, max_value=2**31 - 1),
    ),
    transactional=st.booleans(),
)
def test_round_trip(
    records: list[NewRecord],
    codec: Compression,
    base_offset: int,
    epoch: int,
    producer: tuple[int, int, int],
    transactional: bool,
) -> None:
    data = build_batch(
        records,
        base_offset=base_offset,
        partition_leader_epoch=epoch,
        compression=codec,
        base_timestamp=None if records else 0,
        producer_id=producer[0],
        producer_epoch=producer[1],
        base_sequence=producer[2],
        is_transactional=transactional,
    )
    (batch,) = iter_batches(data)
    batch.validate()
    assert batch.size_in_bytes == len(data)
    assert (batch.base_offset, batch.partition_leader_epoch) == (base_offset, epoch)
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == producer
    assert batch.compression is codec and batch.is_transactional is transactional
    assert batch.records_count == len(records)
    assert batch.last_offset_delta == max(len(records) - 1, 0)
    if records:
        assert batch.max_timestamp == max(r.timestamp or 0 for r in records)
    got = list(batch.records())
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in got] == [
        (base_offset + i, r.timestamp, r.key, r.value, list(r.headers))
        for i, r in enumerate(records)
    ]


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=400), truncated_ok=st.booleans())
def test_garbage_raises_only_decode_error(data: bytes, truncated_ok: bool) -> None:
    try:
        for batch in iter_batches(data, allow_truncated_tail=truncated_ok):
            batch.is_valid()
            list(batch.records())
    except DecodeError:
        pass


@settings(max_examples=200, deadline=None)
@given(
    codec=st.sampled_from(list(Compression)),
    flips=st.lists(
        st.tuples(st.integers(min_value=21), st.integers(1, 255)), min_size=1, max_size=3
    ),
)
def test_corrupted_records_raise_only_decode_error(
    codec: Compression, flips: list[tuple[int, int]]
) -> None:
    # Corrupt past the header, then "fix" the CRC, so the records parser sees it all.
    data = bytearray(build_batch(KNOWN_RECORDS * 3, compression=codec))
    for pos, mask in flips:
        data[21 + pos % (len(data) - 21)] ^= mask
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    with contextlib.suppress(DecodeError):
        list(RecordBatch(data).records(max_size=100_000))

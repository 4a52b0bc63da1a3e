"""kafka-python (an independent implementation) as a test oracle, both directions.

Only codecs that kafka-python can run with the standard library (none, gzip) are
exercised here; the other codecs are checked against the raw libraries elsewhere.
"""

import pytest

pytest.importorskip("kafka")

from kafka.record.default_records import (  # noqa: E402
    DefaultRecordBatch,
    DefaultRecordBatchBuilder,
)
from kafka.record.legacy_records import (  # noqa: E402
    LegacyRecordBatch,
    LegacyRecordBatchBuilder,
)

from millpond.wire.records import (  # noqa: E402
    Compression,
    NewRecord,
    RecordBatch,
    build_batch,
    build_legacy_message_set,
    iter_batches,
    iter_legacy_records,
)

RECORDS = [
    (
        b"key-%d" % i if i % 3 else None,
        b"value-%d" % i * i if i % 4 else None,
        1_700_000_000_000 + i,
    )
    for i in range(20)
]
HEADERS = [("trace", b"abc"), ("empty", None), ("ünïcode", b"")]


def kafka_python_batch(codec: int, transactional: bool, pid: int, epoch: int, seq: int) -> bytes:
    b = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=transactional,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        batch_size=10**7,
    )
    for i, (key, value, ts) in enumerate(RECORDS):
        b.append(i, ts, key, value, HEADERS if i % 2 else [])
    return bytes(b.build())


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
@pytest.mark.parametrize("producer", [(False, -1, -1, -1), (True, 4242, 3, 17)])
def test_we_read_kafka_python_batches(
    codec: Compression, producer: tuple[bool, int, int, int]
) -> None:
    data = kafka_python_batch(codec, *producer)
    (batch,) = iter_batches(data)
    batch.validate()
    assert batch.compression is codec
    assert (batch.is_transactional, batch.producer_id, batch.producer_epoch) == producer[:3]
    assert batch.base_sequence == producer[3]
    assert batch.records_count == len(RECORDS)
    assert batch.last_offset_delta == len(RECORDS) - 1
    assert batch.max_timestamp == RECORDS[-1][2]
    got = [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in batch.records()]
    assert got == [(i, k, v, ts, HEADERS if i % 2 else []) for i, (k, v, ts) in enumerate(RECORDS)]
    if codec is Compression.NONE:
        rebuilt = build_batch(
            [
                NewRecord(k, v, HEADERS if i % 2 else [], timestamp=ts)
                for i, (k, v, ts) in enumerate(RECORDS)
            ],
            partition_leader_epoch=batch.partition_leader_epoch,
            is_transactional=producer[0],
            producer_id=producer[1],
            producer_epoch=producer[2],
            base_sequence=producer[3],
        )
        assert rebuilt == data


@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
def test_kafka_python_reads_our_batches(codec: Compression) -> None:
    data = build_batch(
        [NewRecord(k, v, HEADERS, timestamp=ts) for k, v, ts in RECORDS],
        base_offset=1000,
        compression=codec,
        producer_id=9,
        producer_epoch=1,
        base_sequence=5,
    )
    theirs = DefaultRecordBatch(data)
    assert theirs.validate_crc()
    assert theirs.base_offset == 1000 and theirs.compression_type == codec
    assert [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in theirs] == [
        (1000 + i, k, v, ts, HEADERS) for i, (k, v, ts) in enumerate(RECORDS)
    ]
    assert RecordBatch(data).crc == theirs.crc


def kafka_python_legacy(magic: int, codec: int) -> bytes:
    b = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=10**7)
    for i, (key, value, ts) in enumerate(RECORDS):
        b.append(i, ts if magic else None, key, value)
    return bytes(b.build())


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [Compression.NONE, Compression.GZIP])
def test_legacy_both_directions(magic: int, codec: Compression) -> None:
    theirs = kafka_python_legacy(magic, codec)
    got = [(r.offset, r.key, r.value, r.timestamp) for r in iter_legacy_records(theirs)]
    # A producer's v1 wrapper carries offset 0 (kafka-python) and the broker stamps the
    # real last offset; inner offsets count back from the wrapper's.
    shift = -(len(RECORDS) - 1) if magic == 1 and codec else 0
    expected = [(i + shift, k, v, ts if magic else -1) for i, (k, v, ts) in enumerate(RECORDS)]
    assert got == expected
    ours = build_legacy_message_set(RECORDS, magic=magic, compression=codec)
    if codec is Compression.NONE:
        assert ours == theirs  # byte for byte
        return
    # kafka-python reads one top-level message: our compressed wrapper.
    read = [(r.offset, r.key, r.value) for r in LegacyRecordBatch(ours, magic)]
    assert read == [(i, k, v) for i, (k, v, _) in enumerate(RECORDS)]

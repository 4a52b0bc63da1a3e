"""Storage interop with Apache Kafka 4.4, both ways.

millpond writes, Kafka reads: a partition directory written by :class:`millpond.storage.log.Log`
(several segments, many offset and time index entries, every codec, keys, headers, timestamps
out of order, an idempotent producer, committed and aborted transactions with a ``.txnindex``)
passes Kafka's own ``DumpLogSegments`` with ``--deep-iteration``, ``--index-sanity-check`` and
``--verify-index-only``, and the records Kafka prints are the ones millpond wrote.

Kafka writes, millpond reads: a partition produced to the reference broker by kafka-python (and
by raw Produce requests for the codecs kafka-python may lack) and copied at rest opens in
millpond, after a clean and an unclean shutdown, with Kafka's indexes and with indexes millpond
rebuilds; millpond serves Kafka's batches byte for byte from every offset, agrees with Kafka's
ListOffsets, and rebuilds exactly the index files Kafka wrote.

One DumpLogSegments quirk is tolerated, nothing else: its ``--deep-iteration`` continuity check
starts every file at offset -1, so each segment not based at offset 0 is reported as
"-1 is followed by <base offset>" (Kafka's own multi-segment logs get the same note; a test
below shows it).
"""

from __future__ import annotations

import random
import re
import shutil
import socket
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka import codec as kafka_codec
from kafka.admin import NewTopic

from compat_tests.kafka.reference import RunningBroker, ToolError, dump_log_segments
from millpond.storage.clock import ManualClock
from millpond.storage.config import LogConfig
from millpond.storage.fs import OsFileSystem
from millpond.storage.log import Log
from millpond.storage.txn_index import AbortedTxn
from millpond.wire import RequestHeader, decode_response, encode_request
from millpond.wire.generated.api.produce_request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from millpond.wire.generated.api.produce_response import ProduceResponse
from millpond.wire.records import (
    Compression,
    ControlRecordType,
    NewRecord,
    RecordBatch,
    build_batch,
    build_control_batch,
    iter_batches,
)

pytestmark = pytest.mark.compat

T0 = 1_700_000_000_000  # record timestamps (Nov 2023: in the past, so Kafka accepts them)
OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")


# --- DumpLogSegments --------------------------------------------------------------------------

_FIRST_OFFSET_NOTE = re.compile(
    r"^Non-consecutive offsets in (\S+)\n  -1 is followed by (\d+)\n", re.M
)


class Dump(NamedTuple):
    stdout: str
    #: Files DumpLogSegments called non-consecutive only because they start above offset 0
    #: (their names, sorted: the tool prints them in hash order).
    starts_noted: list[str]


def _dump(files: Sequence[Path], *options: str) -> Dump:
    """dump_log_segments, tolerating only the per-file "-1 is followed by <base>" note (see the
    module docstring); every other complaint still raises ToolError."""
    try:
        return Dump(dump_log_segments(files, *options), [])
    except ToolError as exc:
        result = exc.result
        if result.returncode != 0 or "invalid bytes at the end" in result.stdout:
            raise
        noted: list[str] = []
        for m in _FIRST_OFFSET_NOTE.finditer(result.stderr):
            if int(m[2]) != _base_offset(Path(m[1])):
                raise
            noted.append(Path(m[1]).name)
        if _FIRST_OFFSET_NOTE.sub("", result.stderr).strip():
            raise
        return Dump(result.stdout, sorted(noted))


def _base_offset(path: Path) -> int:
    return int(path.name.split(".")[0])


def _files(directory: Path, suffix: str) -> list[Path]:
    return sorted(directory.glob(f"*{suffix}"))


def _offset_entries(path: Path) -> list[tuple[int, int]]:
    base, data = _base_offset(path), path.read_bytes()
    return [(base + rel, pos) for rel, pos in OFFSET_ENTRY.iter_unpack(data)]


def _time_entries(path: Path) -> list[tuple[int, int]]:
    base, data = _base_offset(path), path.read_bytes()
    return [(ts, base + rel) for ts, rel in TIME_ENTRY.iter_unpack(data)]


_BATCH_LINE = re.compile(
    r"^baseOffset: (\d+) lastOffset: (\d+) count: (\d+) baseSequence: (-?\d+) "
    r"lastSequence: (-?\d+) producerId: (-?\d+) producerEpoch: (-?\d+) "
    r"partitionLeaderEpoch: (-?\d+) isTransactional: (\w+) isControl: (\w+) .* "
    r"position: (\d+) CreateTime: (\d+) size: (\d+) magic: 2 compresscodec: (\w+) "
    r"crc: \d+ isvalid: (\w+)$",
    re.M,
)
_RECORD_LINE = re.compile(
    r"^\| offset: (\d+) CreateTime: (\d+) keySize: (-?\d+) valueSize: (-?\d+) "
    r"sequence: (-?\d+) headerKeys: \[([^\]]*)\](.*)$",
    re.M,
)


# --- millpond writes, Kafka reads ---------------------------------------------------------------


class Rec(NamedTuple):
    """A record as DumpLogSegments prints it with --print-data-log."""

    offset: int
    timestamp: int
    sequence: int
    header_keys: str
    contents: str  # " key: K payload: V", or the control record's " endTxnMarker: ..."


class Bat(NamedTuple):
    """A batch header as DumpLogSegments prints it."""

    base_offset: int
    last_offset: int
    records: int
    base_sequence: int
    producer_id: int
    producer_epoch: int
    leader_epoch: int
    transactional: bool
    control: bool
    codec: str


@dataclass
class Written:
    directory: Path
    records: list[Rec] = field(default_factory=list)
    batches: list[Bat] = field(default_factory=list)
    aborted: list[AbortedTxn] = field(default_factory=list)


CODECS = {Compression.NONE: "none", Compression.GZIP: "gzip", Compression.SNAPPY: "snappy"}
CODECS |= {Compression.ZSTD: "zstd", Compression.LZ4: "lz4"}
IDEMPOTENT = (4242, 1)  # producer id, epoch
COMMITTED = (7000, 2)
ABORTED = (7001, 3)
COORDINATOR_EPOCH = 5
LEADER_EPOCH = 4


class _Writer:
    """Appends batches to a millpond Log and records what DumpLogSegments should print."""

    def __init__(self, directory: Path, config: LogConfig) -> None:
        directory.mkdir(parents=True)
        self.out = Written(directory)
        self.log = Log(
            OsFileSystem(), str(directory), config, ManualClock(T0), rng=random.Random(0)
        )
        self.sequence = 0

    def data(
        self,
        i: int,
        codec: Compression,
        *,
        producer: tuple[int, int] = (-1, -1),
        sequence: int = -1,
        transactional: bool = False,
    ) -> int:
        """Batch number ``i``: 1-6 records; returns its first offset."""
        n = 1 + (i * 7) % 6
        base_ts = T0 + 100 * i - (5_000 if i % 9 == 5 else 0)  # some go back in time
        records = []
        for j in range(n):
            key = None if (i % 11 == 0 and j == 0) else f"key-{i}-{j}".encode()
            value = f"value-{i}-{j}-".encode() + b"abcdefgh"[i % 8 :] * (3 + (i * 53 + j) % 60)
            headers: list[tuple[str, bytes | None]] = []
            if i % 2:
                headers = [("h1", f"{i}".encode()), ("h2", None)]
            records.append(NewRecord(key=key, value=value, headers=headers, timestamp=base_ts + j))
        raw = build_batch(
            records,
            compression=codec,
            producer_id=producer[0],
            producer_epoch=producer[1],
            base_sequence=sequence,
            is_transactional=transactional,
        )
        info = self.log.append(bytearray(raw), assign_offsets=True, leader_epoch=LEADER_EPOCH)
        for j, r in enumerate(records):
            contents = f" payload: {r.value.decode()}" if r.value is not None else ""
            if r.key is not None:
                contents = f" key: {r.key.decode()}{contents}"
            seq = -1 if sequence < 0 else sequence + j
            keys = ",".join(k for k, _ in r.headers)
            self.out.records.append(Rec(info.first_offset + j, base_ts + j, seq, keys, contents))
        self.out.batches.append(
            Bat(
                info.first_offset, info.last_offset, n, sequence, *producer,
                LEADER_EPOCH, transactional, False, CODECS[codec],
            )
        )  # fmt: skip
        return info.first_offset

    def marker(self, i: int, kind: ControlRecordType, producer: tuple[int, int]) -> int:
        raw = build_control_batch(
            kind,
            producer_id=producer[0],
            producer_epoch=producer[1],
            coordinator_epoch=COORDINATOR_EPOCH,
            timestamp=T0 + 100 * i,
        )
        info = self.log.append(bytearray(raw), assign_offsets=True, leader_epoch=LEADER_EPOCH)
        contents = f" endTxnMarker: {kind.name} coordinatorEpoch: {COORDINATOR_EPOCH}"
        self.out.records.append(Rec(info.first_offset, T0 + 100 * i, -1, "", contents))
        self.out.batches.append(
            Bat(
                info.first_offset, info.first_offset, 1, -1, *producer,
                LEADER_EPOCH, True, True, "none",
            )
        )  # fmt: skip
        return info.first_offset


# Small segments and a small index interval: several segments, dozens of index entries each.
MILLPOND_CONFIG = LogConfig(segment_bytes=6_000, index_interval_bytes=300)


def write_millpond_partition(directory: Path, codecs: Sequence[Compression]) -> Written:
    w = _Writer(directory, MILLPOND_CONFIG)
    txn_first = 0
    for i in range(90):
        codec = codecs[i % len(codecs)]
        if i % 10 == 3:  # an idempotent producer, sequences continuing across its batches
            w.data(i, codec, producer=IDEMPOTENT, sequence=w.sequence)
            w.sequence += w.out.batches[-1].records
        elif i in (40, 60):  # a transaction's data, then (next batch) its marker
            producer = COMMITTED if i == 40 else ABORTED
            txn_first = w.data(i, codec, producer=producer, sequence=0, transactional=True)
        elif i == 41:
            w.marker(i, ControlRecordType.COMMIT, COMMITTED)
        elif i == 61:
            marker = w.marker(i, ControlRecordType.ABORT, ABORTED)
            # What the producer-state layer records for an abort, in the marker's segment (the
            # LSO while the transaction was open was its first offset).
            aborted = AbortedTxn(ABORTED[0], txn_first, marker, txn_first)
            w.log.active_segment.txn_index.append(aborted)
            w.out.aborted.append(aborted)
        else:
            w.data(i, codec)
    w.log.close()
    return w.out


@pytest.fixture(scope="module")
def millpond_written(tmp_path_factory: pytest.TempPathFactory) -> Written:
    root = tmp_path_factory.mktemp("millpond-written")
    codecs = [
        Compression.NONE,
        Compression.GZIP,
        Compression.SNAPPY,
        Compression.ZSTD,
        Compression.LZ4,
    ]
    return write_millpond_partition(root / "interop-0", codecs)


def _parse_dump(stdout: str) -> tuple[list[Bat], list[Rec]]:
    batches = [
        Bat(
            int(m[1]), int(m[2]), int(m[3]), int(m[4]), int(m[6]), int(m[7]), int(m[8]),
            m[9] == "true", m[10] == "true", m[14],
        )
        for m in _BATCH_LINE.finditer(stdout)
    ]  # fmt: skip
    records = [
        Rec(int(m[1]), int(m[2]), int(m[5]), m[6], m[7]) for m in _RECORD_LINE.finditer(stdout)
    ]
    assert all(m[15] == "true" for m in _BATCH_LINE.finditer(stdout)), "a batch is not valid"
    return batches, records


def test_millpond_partition_has_what_the_checks_need(millpond_written: Written) -> None:
    d = millpond_written.directory
    logs = _files(d, ".log")
    assert len(logs) >= 4
    for log in logs:  # the last one too, partly filled as it is
        stem = log.name.removesuffix(".log")
        assert len(_offset_entries(d / f"{stem}.index")) >= 3
        assert len(_time_entries(d / f"{stem}.timeindex")) >= 3
    assert len(_files(d, ".txnindex")) == 1
    assert {b.codec for b in millpond_written.batches} == {"none", "gzip", "snappy", "zstd", "lz4"}


def test_kafka_deep_iteration_reads_every_millpond_record(millpond_written: Written) -> None:
    d = millpond_written.directory
    logs, txn = _files(d, ".log"), _files(d, ".txnindex")
    indexes = _files(d, ".index") + _files(d, ".timeindex")
    dump = _dump([*logs, *txn, *indexes], "--deep-iteration", "--print-data-log")
    batches, records = _parse_dump(dump.stdout)
    assert batches == millpond_written.batches
    assert records == millpond_written.records
    assert dump.starts_noted == [p.name for p in logs if _base_offset(p) > 0]
    # The .txnindex entry, as Kafka reads it.
    (aborted,) = millpond_written.aborted
    assert re.search(
        rf"^version: 0 producerId: {aborted.producer_id} firstOffset: {aborted.first_offset} "
        rf"lastOffset: {aborted.last_offset} lastStableOffset: {aborted.last_stable_offset}$",
        dump.stdout,
        re.M,
    ), dump.stdout
    # The index entries Kafka printed (after checking each against the log) are our files'.
    printed_index = [
        (int(o), int(p))
        for o, p in re.findall(r"^offset: (\d+) position: (\d+)$", dump.stdout, re.M)
    ]
    printed_time = [
        (int(t), int(o))
        for t, o in re.findall(r"^timestamp: (\d+) offset: (\d+)$", dump.stdout, re.M)
    ]
    assert printed_index == [e for p in _files(d, ".index") for e in _offset_entries(p)]
    assert printed_time == [e for p in _files(d, ".timeindex") for e in _time_entries(p)]
    _assert_no_complaints(dump.stdout)


def _assert_no_complaints(stdout: str) -> None:
    for word in ("Mismatches", "not found", "rror", "xception", "invalid bytes", "isvalid: false"):
        assert word not in stdout, stdout


def test_kafka_index_sanity_check_passes_millpond_indexes(millpond_written: Written) -> None:
    d = millpond_written.directory
    indexes = _files(d, ".index") + _files(d, ".timeindex")
    dump = _dump(indexes, "--index-sanity-check")
    for index in indexes:
        assert f"{index} passed sanity check." in dump.stdout
    _assert_no_complaints(dump.stdout)


def test_kafka_verify_index_only_finds_no_mismatch(millpond_written: Written) -> None:
    d = millpond_written.directory
    indexes = _files(d, ".index") + _files(d, ".timeindex")
    dump = _dump(indexes, "--verify-index-only")
    assert dump.stdout.split("\n") == [f"Dumping {p}" for p in indexes] + [""]
    assert dump.starts_noted == []


def test_kafka_reads_millpond_lz4_batches(tmp_path: Path) -> None:
    d = tmp_path / "lz4-0"
    written = write_millpond_partition(d, [Compression.LZ4, Compression.NONE])
    dump = _dump(_files(d, ".log"), "--deep-iteration", "--print-data-log")
    assert _parse_dump(dump.stdout) == (written.batches, written.records)


# --- Kafka writes, millpond reads ---------------------------------------------------------------

TOPIC = "storage-interop-kafka"
# internal.segment.bytes is the test-only way past segment.bytes' 1 MiB minimum in Kafka 4.
KAFKA_TOPIC_CONFIG = {
    "internal.segment.bytes": "16384",
    "index.interval.bytes": "1024",
    "retention.ms": "-1",
}
KAFKA_LOG_CONFIG = LogConfig(segment_bytes=16384, index_interval_bytes=1024, retention_ms=-1)
GROUPS = 48


def _second_codec() -> str | None:
    """A codec besides gzip that kafka-python can use here (its extras install them)."""
    available = {"lz4": kafka_codec.has_lz4, "zstd": kafka_codec.has_zstd}
    available["snappy"] = kafka_codec.has_snappy
    return next((name for name, has in available.items() if has()), None)


@dataclass
class KafkaWritten:
    copy: Path  # the partition directory as Kafka left it, copied at rest
    end_offset: int
    list_offsets: dict[int, tuple[int, int, int] | None]  # ts -> (timestamp, offset, epoch)
    records: int


def _group_records(g: int) -> list[tuple[bytes, bytes, list[tuple[str, bytes]], int]]:
    rng = random.Random(g)
    n = 4 + g % 6
    base_ts = T0 + 1_000 * g - (2_500 if g % 7 == 3 else 0)
    return [
        (
            f"key-{g}-{j}".encode(),
            rng.randbytes(60 + rng.randrange(400)).hex().encode(),
            [("h", f"{g}.{j}".encode())] if j % 2 else [],
            base_ts + 10 * j,
        )
        for j in range(n)
    ]


def _raw_produce(broker: RunningBroker, batch: bytes) -> None:
    """One Produce v11 of a millpond-built batch (codecs kafka-python may not have here)."""
    request = ProduceRequest(
        acks=-1,
        timeout_ms=30_000,
        topic_data=[
            TopicProduceData(
                name=TOPIC, partition_data=[PartitionProduceData(index=0, records=batch)]
            )
        ],
    )
    header = RequestHeader(
        request_api_key=0, request_api_version=11, correlation_id=1, client_id="interop"
    )
    frame = encode_request(header, request)
    with socket.create_connection(("127.0.0.1", broker.ports.plaintext), 30) as s:
        s.sendall(struct.pack(">i", len(frame)) + frame)
        with s.makefile("rb") as reader:
            (size,) = struct.unpack(">i", reader.read(4))
            _, response = decode_response(reader.read(size), 0, 11)
    assert isinstance(response, ProduceResponse)
    (partition,) = response.responses[0].partition_responses
    assert partition.error_code == 0, partition


@pytest.fixture(scope="module")
def kafka_written(
    reference_kafka: RunningBroker, tmp_path_factory: pytest.TempPathFactory
) -> KafkaWritten:
    """GROUPS groups of records, one batch each: uncompressed, gzip and a second codec from
    kafka-python, snappy and zstd from millpond's builder by raw Produce; then Kafka's
    ListOffsets answers, and the partition directory copied with the broker stopped."""
    admin = KafkaAdminClient(bootstrap_servers=reference_kafka.bootstrap)
    try:
        admin.create_topics(
            [NewTopic(TOPIC, 1, 1, topic_configs=KAFKA_TOPIC_CONFIG)], timeout_ms=30_000
        )
    finally:
        admin.close()
    client_codecs: list[str | None] = [None, "gzip"]
    if (second := _second_codec()) is not None:
        client_codecs.append(second)
    producers = [
        KafkaProducer(
            bootstrap_servers=reference_kafka.bootstrap,
            acks="all",
            compression_type=c,
            linger_ms=60_000,  # a group becomes one batch, sent by flush()
            batch_size=1 << 20,
        )
        for c in client_codecs
    ]
    raw_codecs = [Compression.SNAPPY, Compression.ZSTD]
    kinds = len(producers) + len(raw_codecs)
    records = 0
    try:
        for g in range(GROUPS):
            group = _group_records(g)
            records += len(group)
            kind = g % kinds
            if kind < len(producers):
                for key, value, headers, ts in group:
                    producers[kind].send(
                        TOPIC, key=key, value=value, headers=headers, timestamp_ms=ts
                    )
                producers[kind].flush(timeout=30)
            else:
                batch = build_batch(
                    [NewRecord(key=k, value=v, headers=h, timestamp=ts) for k, v, h, ts in group],
                    compression=raw_codecs[kind - len(producers)],
                )
                _raw_produce(reference_kafka, batch)
    finally:
        for producer in producers:
            producer.close(timeout=30)
    tp = TopicPartition(TOPIC, 0)
    consumer = KafkaConsumer(bootstrap_servers=reference_kafka.bootstrap)
    answers: dict[int, tuple[int, int, int] | None] = {}
    try:
        end = int(consumer.end_offsets([tp])[tp])
        for ts in _queried_timestamps():
            found = consumer.offsets_for_times({tp: ts})[tp]
            answers[ts] = None if found is None else (
                int(found.timestamp), int(found.offset), int(found.leader_epoch)
            )  # fmt: skip
    finally:
        consumer.close()
    copy = reference_kafka.copy_partition_dir(TOPIC, 0, tmp_path_factory.mktemp("kafka-written"))
    return KafkaWritten(copy, end, answers, records)


def _queried_timestamps() -> list[int]:
    """Before everything, exact record timestamps, between records, in the groups that went
    back in time, and past the newest record."""
    picks = [T0 - 1, T0, T0 + 5, T0 + 1_000 * 3 - 2_500, T0 + 1_000 * 10 + 20]
    picks += [T0 + 1_000 * 17 - 2_499, T0 + 1_000 * 30 + 1, T0 + 1_000 * (GROUPS - 1) + 10]
    return [*picks, T0 + 1_000 * GROUPS]


def _kafka_batches(copy: Path) -> list[tuple[int, bytes]]:
    """(segment base offset, batch bytes) of every batch, straight from Kafka's .log files."""
    out = []
    for log in _files(copy, ".log"):
        data = log.read_bytes()
        for batch in iter_batches(data):
            out.append((_base_offset(log), bytes(batch.buffer)))
    return out


def test_kafka_partition_has_what_the_checks_need(kafka_written: KafkaWritten) -> None:
    logs = _files(kafka_written.copy, ".log")
    assert len(logs) >= 4
    assert kafka_written.end_offset == kafka_written.records >= 200
    batches = [RecordBatch(b) for _, b in _kafka_batches(kafka_written.copy)]
    assert len(batches) == GROUPS
    assert {b.compression for b in batches} >= {
        Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.ZSTD,
    }  # fmt: skip
    assert sum(len(_offset_entries(p)) for p in _files(kafka_written.copy, ".index")) >= 10
    assert any(v is None for v in kafka_written.list_offsets.values())


def test_kafka_own_segments_get_the_same_dump_note(kafka_written: KafkaWritten) -> None:
    """The tolerated DumpLogSegments note is about Kafka's tool, not millpond's files."""
    logs = _files(kafka_written.copy, ".log")
    dump = _dump(logs, "--deep-iteration")
    assert dump.starts_noted == [p.name for p in logs if _base_offset(p) > 0]


VARIANTS = {
    "clean-as-copied": (True, False),
    "unclean-as-copied": (False, False),
    "clean-indexes-removed": (True, True),
    "unclean-indexes-removed": (False, True),
}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_millpond_reads_kafka_partition(
    kafka_written: KafkaWritten, tmp_path: Path, variant: str
) -> None:
    clean, remove_indexes = VARIANTS[variant]
    kafka_dir = kafka_written.copy
    d = Path(shutil.copytree(kafka_dir, tmp_path / kafka_dir.name))
    if remove_indexes:
        for index in _files(d, ".index") + _files(d, ".timeindex"):
            index.unlink()
    log = Log(
        OsFileSystem(),
        str(d),
        KAFKA_LOG_CONFIG,
        ManualClock(T0 + 1_000 * GROUPS),
        had_clean_shutdown=clean,
        recovery_point=kafka_written.end_offset if clean else 0,
    )
    try:
        kafka_logs = _files(kafka_dir, ".log")
        assert [s.base_offset for s in log.segments] == [_base_offset(p) for p in kafka_logs]
        assert (log.log_start_offset, log.log_end_offset) == (0, kafka_written.end_offset)
        assert log.recovered_bytes_cut == 0
        # Each segment, read whole, is Kafka's .log file byte for byte.
        for segment, kafka_log in zip(log.segments, kafka_logs, strict=True):
            whole = log.read(segment.base_offset, 1 << 30)
            assert whole.records.read() == kafka_log.read_bytes()
        # From every offset, the batch holding it, byte for byte.
        batches = _kafka_batches(kafka_dir)
        for base, raw in batches:
            batch = RecordBatch(raw)
            for offset in range(batch.base_offset, batch.last_offset + 1):
                data = log.read(offset, 1)
                assert (data.segment_base_offset, data.records.read()) == (base, raw)
        assert log.read(kafka_written.end_offset, 1 << 20).records.size == 0
        # ListOffsets by timestamp: Kafka's answers.
        for ts, answer in kafka_written.list_offsets.items():
            assert log.find_offset_by_timestamp(ts) == answer, ts
        # The indexes millpond holds (Kafka's, or rebuilt from the .log) are Kafka's entries.
        for segment, kafka_log in zip(log.segments, kafka_logs, strict=True):
            stem = kafka_log.name.removesuffix(".log")
            offsets = [tuple(e) for e in segment.offset_index.all_entries()]
            times = [tuple(e) for e in segment.time_index.all_entries()]
            assert offsets == _offset_entries(kafka_dir / f"{stem}.index"), stem
            assert times == _time_entries(kafka_dir / f"{stem}.timeindex"), stem
    finally:
        log.close()
    # Closing changed nothing of Kafka's (or wrote exactly Kafka's files back).
    for suffix in (".log", ".index", ".timeindex"):
        for kafka_file in _files(kafka_dir, suffix):
            assert (d / kafka_file.name).read_bytes() == kafka_file.read_bytes(), kafka_file.name

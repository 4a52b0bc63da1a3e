"""Benchmark of the wire layer against ``kio`` (PyPI), generated from the same Kafka specs.

Not a test. Run ``.venv/bin/python bench/wire_codecs.py`` (needs the ``bench`` extra:
``.venv/bin/pip install -e '.[bench]'``). Three workloads, each built as the *same*
logical message in both libraries at the highest version both support, checked
byte-identical before anything is timed:

(a) Metadata response v13: 100 topics x 10 partitions, 3 brokers, 3 replicas each.
(b) Produce request v13: 1 MiB of real v2 record batches (16 KiB each, built with
    ``millpond.wire.records.build_batch``) over 2 topics x 4 partitions. millpond's
    path is decode + walk every batch header + validate its CRC-32C (records
    untouched); kio cannot walk batches, so only the decodes compare like for like.
(c) Fetch response v18: 100 partitions (5 topics x 20) carrying 1-4 KiB of record
    batches each, with watermarks, log start offsets and empty aborted-transaction lists.

Message *bodies* are timed (no request/response header), decode and encode separately,
with ``time.perf_counter_ns``: a warm-up, then SAMPLES samples of a calibrated number
of calls each; the table reports the medians. Results go to stdout and, as Markdown, to
``bench/RESULTS-wire.md``.
"""

from __future__ import annotations

import datetime
import io
import os
import platform
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kio.schema.errors import ErrorCode
from kio.schema.fetch.v18 import response as _kfetch
from kio.schema.metadata.v13 import response as _kmeta
from kio.schema.produce.v13 import request as _kproduce
from kio.serial import entity_reader, entity_writer

from millpond.wire.generated.api import fetch_response as mfetch
from millpond.wire.generated.api import metadata_response as mmeta
from millpond.wire.generated.api import produce_request as mproduce
from millpond.wire.primitives import Message
from millpond.wire.records import NewRecord, build_batch, iter_batches

# kio types its fields with phantom types (i32, BrokerId, Records, i32Timedelta...), which
# plain ints and bytes do not satisfy statically; its entities are built untyped here.
kfetch: Any = _kfetch
kmeta: Any = _kmeta
kproduce: Any = _kproduce

METADATA_VERSION = 13  # highest in both (kio 0.6.5: 0-13; millpond: 0-13)
PRODUCE_VERSION = 13  # highest in both (kio 0.6.5: 3-13; millpond: 3-13)
FETCH_VERSION = 18  # highest in both (kio 0.6.5: 4-18; millpond: 4-18)

KiB = 1024
MiB = 1024 * KiB
SAMPLES = 15
SAMPLE_SECONDS = 0.04  # each sample runs about this long
RESULTS = Path(__file__).with_name("RESULTS-wire.md")


# -- timing ----------------------------------------------------------------------------


def calls_per_sample(fn: Callable[[], object]) -> int:
    """Warm ``fn`` up and find how many calls take about SAMPLE_SECONDS."""
    clock = time.perf_counter_ns
    calls = 1
    while True:
        start = clock()
        for _ in range(calls):
            fn()
        elapsed = clock() - start
        if elapsed >= SAMPLE_SECONDS * 1e9 / 4:
            return max(1, round(calls * SAMPLE_SECONDS * 1e9 / max(elapsed, 1)))
        calls *= 2


def median_ns_per_call(*fns: Callable[[], object]) -> list[float]:
    """Median nanoseconds per call of each of ``fns`` over SAMPLES samples.

    The functions' samples alternate, so that load from elsewhere on the machine
    (this is a shared box) hits both sides of a comparison alike.
    """
    clock = time.perf_counter_ns
    counts = [calls_per_sample(fn) for fn in fns]
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(SAMPLES):
        for fn, calls, out in zip(fns, counts, samples, strict=True):
            start = clock()
            for _ in range(calls):
                fn()
            out.append((clock() - start) / calls)
    return [statistics.median(out) for out in samples]


# -- helpers ---------------------------------------------------------------------------


def topic_uuid(i: int) -> uuid.UUID:
    """A deterministic, realistic-looking (version 4) topic id."""
    return uuid.UUID(bytes=random.Random(i).randbytes(16), version=4)


def kio_encode(entity: Any) -> bytes:
    """kio's serialization: its cached entity writer into a BytesIO."""
    buffer = io.BytesIO()
    entity_writer(type(entity))(buffer, entity)
    return buffer.getvalue()


def sized_batch(rng: random.Random, size: int, base_offset: int, records: int) -> bytes:
    """A real uncompressed v2 record batch of exactly ``size`` bytes."""
    timestamp = 1_767_225_600_000 + base_offset
    key_size = 12
    # Value size that brings the batch to ``size``; varint widths make it iterative.
    value_size = max(1, (size - 61) // records - key_size - 12)
    for _ in range(8):
        recs = [
            NewRecord(
                key=f"key-{base_offset + i:08d}".encode(),
                value=rng.randbytes(value_size),
                headers=[("trace-id", b"%016x" % rng.getrandbits(64))] if i % 4 == 0 else [],
                timestamp=timestamp + i,
            )
            for i in range(records)
        ]
        # Give the last record's value the slack so the total comes out exact.
        partial = build_batch(recs, base_offset=base_offset)
        slack = size - len(partial)
        if slack == 0:
            return partial
        last = recs[-1]
        assert last.value is not None
        recs[-1] = last._replace(value=rng.randbytes(max(1, len(last.value) + slack)))
        batch = build_batch(recs, base_offset=base_offset)
        if len(batch) == size:
            return batch
        value_size += (size - len(batch)) // records or (1 if size > len(batch) else -1)
    raise RuntimeError(f"could not build a batch of exactly {size} bytes")


# -- workloads -------------------------------------------------------------------------


@dataclass
class Workload:
    name: str
    version: int
    millpond: Message
    kio: Any
    millpond_type: type[Message]
    note: str


def metadata_workload() -> Workload:
    brokers = [(i, f"broker-{i}.millpond.internal", 9092, f"rack-{i % 3}") for i in range(3)]
    topics = []
    for t in range(100):
        parts = []
        for p in range(10):
            leader = (t + p) % 3
            replicas = [(leader + r) % 3 for r in range(3)]
            isr = replicas if (t * 10 + p) % 7 else replicas[:2]  # a few shrunk ISRs
            parts.append((p, leader, 5 + t % 4, replicas, isr))
        topics.append((f"topic-{t:04d}", topic_uuid(t), parts))
    cluster_id = "MkU3OEVBNTcwNTJENDM2Qk"

    mp = mmeta.MetadataResponse(
        throttle_time_ms=0,
        brokers=[
            mmeta.MetadataResponseBroker(node_id=i, host=h, port=port, rack=rack)
            for i, h, port, rack in brokers
        ],
        cluster_id=cluster_id,
        controller_id=1,
        topics=[
            mmeta.MetadataResponseTopic(
                error_code=0,
                name=name,
                topic_id=tid.bytes,
                is_internal=False,
                partitions=[
                    mmeta.MetadataResponsePartition(
                        error_code=0,
                        partition_index=p,
                        leader_id=leader,
                        leader_epoch=epoch,
                        replica_nodes=list(replicas),
                        isr_nodes=list(isr),
                        offline_replicas=[],
                    )
                    for p, leader, epoch, replicas, isr in parts
                ],
            )
            for name, tid, parts in topics
        ],
        error_code=0,
    )
    kio = kmeta.MetadataResponse(
        throttle_time=datetime.timedelta(0),
        brokers=tuple(
            kmeta.MetadataResponseBroker(node_id=i, host=h, port=port, rack=rack)
            for i, h, port, rack in brokers
        ),
        cluster_id=cluster_id,
        controller_id=1,
        topics=tuple(
            kmeta.MetadataResponseTopic(
                error_code=ErrorCode.none,
                name=name,
                topic_id=tid,
                is_internal=False,
                partitions=tuple(
                    kmeta.MetadataResponsePartition(
                        error_code=ErrorCode.none,
                        partition_index=p,
                        leader_id=leader,
                        leader_epoch=epoch,
                        replica_nodes=tuple(replicas),
                        isr_nodes=tuple(isr),
                        offline_replicas=(),
                    )
                    for p, leader, epoch, replicas, isr in parts
                ),
            )
            for name, tid, parts in topics
        ),
        error_code=ErrorCode.none,
    )
    return Workload(
        "(a) Metadata response",
        METADATA_VERSION,
        mp,
        kio,
        mmeta.MetadataResponse,
        "100 topics x 10 partitions, 3 brokers, 3 replicas",
    )


def produce_workload() -> Workload:
    rng = random.Random(0xB)
    topics = []
    offset = 0
    for t in range(2):
        parts = []
        for p in range(4):
            batches = []
            for _ in range(8):
                batches.append(sized_batch(rng, 16 * KiB, offset, 15))
                offset += 15
            parts.append((p, b"".join(batches)))
        topics.append((topic_uuid(1000 + t), parts))
    assert sum(len(r) for _, parts in topics for _, r in parts) == MiB

    mp = mproduce.ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout_ms=30_000,
        topic_data=[
            mproduce.TopicProduceData(
                topic_id=tid.bytes,
                partition_data=[
                    mproduce.PartitionProduceData(index=p, records=records) for p, records in parts
                ],
            )
            for tid, parts in topics
        ],
    )
    kio = kproduce.ProduceRequest(
        transactional_id=None,
        acks=-1,
        timeout=datetime.timedelta(seconds=30),
        topic_data=tuple(
            kproduce.TopicProduceData(
                topic_id=tid,
                partition_data=tuple(
                    kproduce.PartitionProduceData(index=p, records=records) for p, records in parts
                ),
            )
            for tid, parts in topics
        ),
    )
    return Workload(
        "(b) Produce request",
        PRODUCE_VERSION,
        mp,
        kio,
        mproduce.ProduceRequest,
        "1 MiB of records: 2 topics x 4 partitions x 8 batches of 16 KiB",
    )


def fetch_workload() -> Workload:
    rng = random.Random(0xC)
    topics = []
    for t in range(5):
        parts = []
        for p in range(20):
            size = rng.randrange(1 * KiB, 4 * KiB + 1)
            base = rng.randrange(0, 5_000_000)
            count = max(2, size // 300)
            records = sized_batch(rng, size, base, count)
            hw = base + count + rng.randrange(0, 500)
            parts.append((p, hw, base - rng.randrange(0, 1_000_000), records))
        topics.append((topic_uuid(2000 + t), parts))

    mp = mfetch.FetchResponse(
        throttle_time_ms=0,
        error_code=0,
        session_id=1_234_567,
        responses=[
            mfetch.FetchableTopicResponse(
                topic_id=tid.bytes,
                partitions=[
                    mfetch.PartitionData(
                        partition_index=p,
                        error_code=0,
                        high_watermark=hw,
                        last_stable_offset=hw,
                        log_start_offset=max(0, start),
                        aborted_transactions=[],
                        preferred_read_replica=-1,
                        records=records,
                    )
                    for p, hw, start, records in parts
                ],
            )
            for tid, parts in topics
        ],
    )
    kio = kfetch.FetchResponse(
        throttle_time=datetime.timedelta(0),
        error_code=ErrorCode.none,
        session_id=1_234_567,
        responses=tuple(
            kfetch.FetchableTopicResponse(
                topic_id=tid,
                partitions=tuple(
                    kfetch.PartitionData(
                        partition_index=p,
                        error_code=ErrorCode.none,
                        high_watermark=hw,
                        last_stable_offset=hw,
                        log_start_offset=max(0, start),
                        aborted_transactions=(),
                        preferred_read_replica=-1,
                        records=records,
                    )
                    for p, hw, start, records in parts
                ),
            )
            for tid, parts in topics
        ),
    )
    return Workload(
        "(c) Fetch response",
        FETCH_VERSION,
        mp,
        kio,
        mfetch.FetchResponse,
        "5 topics x 20 partitions, 1-4 KiB of record batches each",
    )


# -- checks ----------------------------------------------------------------------------


def walk_produce(request: mproduce.ProduceRequest) -> int:
    """The broker's produce-path check: walk every batch header and validate its CRC."""
    batches = 0
    for topic in request.topic_data:
        for partition in topic.partition_data:
            records = partition.records
            if records is None:
                continue
            for batch in iter_batches(records):
                batch.validate()
                batches += 1
    return batches


def verify(w: Workload) -> bytes:
    """Both encodings byte-identical, and each library decodes the other's bytes back."""
    mine = w.millpond.encode(w.version)
    theirs = kio_encode(w.kio)
    if mine != theirs:
        at = next((i for i, (a, b) in enumerate(zip(mine, theirs, strict=False)) if a != b), None)
        sys.exit(f"{w.name}: encodings differ ({len(mine)} vs {len(theirs)} bytes, first at {at})")
    decoded, end = entity_reader(type(w.kio))(mine, 0)
    if end != len(mine) or decoded != w.kio:
        sys.exit(f"{w.name}: kio does not decode millpond's bytes to the same message")
    if w.millpond_type.decode(theirs, w.version) != w.millpond:
        sys.exit(f"{w.name}: millpond does not decode kio's bytes to the same message")
    return mine


# -- report ----------------------------------------------------------------------------


@dataclass
class Row:
    workload: str
    operation: str
    size: int
    millpond_ns: float
    kio_ns: float | None

    def cells(self) -> list[str]:
        unit, scale = ("GB/s", 1e9) if self.size >= 512 * KiB else ("MB/s", 1e6)

        def rate(ns: float) -> str:
            return f"{1e9 / ns:,.0f} ops/s, {self.size / ns * 1e9 / scale:,.2f} {unit}"

        kio = rate(self.kio_ns) if self.kio_ns is not None else "n/a"
        ratio = f"{self.kio_ns / self.millpond_ns:.2f}x" if self.kio_ns is not None else "n/a"
        return [
            self.workload,
            self.operation,
            f"{self.size:,} B",
            f"{self.millpond_ns / 1e3:,.1f} us ({rate(self.millpond_ns)})",
            f"{self.kio_ns / 1e3:,.1f} us ({kio})" if self.kio_ns is not None else "n/a",
            ratio,
        ]


def table(rows: list[Row]) -> str:
    head = ["workload", "operation", "body", "millpond (median)", "kio 0.6.5 (median)", "speedup"]
    lines = [
        "| " + " | ".join(head) + " |",
        "|" + "|".join(["---"] * 3 + ["---:"] * 3) + "|",
    ]
    lines += ["| " + " | ".join(row.cells()) + " |" for row in rows]
    return "\n".join(lines)


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> str:
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return (
        f"{os.cpu_count()} CPUs ({cpu_model()}), {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()} ({platform.python_implementation()}), "
        f"load average {load:.2f} at start"
    )


def run_workload(w: Workload, rows: list[Row], goals: list[str]) -> None:
    """Verify, then time one workload; append its rows and goal verdicts."""
    body = verify(w)
    print(f"{w.name} v{w.version}: {len(body):,} bytes, byte-identical in both libraries")
    mp_type, version, mp_msg = w.millpond_type, w.version, w.millpond
    kio_read = entity_reader(type(w.kio))
    kio_msg = w.kio

    mp_decode, kio_decode = median_ns_per_call(
        lambda: mp_type.decode(body, version), lambda: kio_read(body, 0)
    )
    mp_encode, kio_enc = median_ns_per_call(
        lambda: mp_msg.encode(version), lambda: kio_encode(kio_msg)
    )
    label = f"{w.name} v{w.version}"
    rows.append(Row(label, "decode", len(body), mp_decode, kio_decode))
    if isinstance(mp_msg, mproduce.ProduceRequest):
        batches = walk_produce(mproduce.ProduceRequest.decode(body, version))

        def decode_and_walk() -> None:
            walk_produce(mproduce.ProduceRequest.decode(body, version))

        (mp_walk,) = median_ns_per_call(decode_and_walk)
        rows.append(
            Row(label, f"decode + walk {batches} batches + CRC-32C", len(body), mp_walk, None)
        )
        gbps = len(body) / mp_walk
        goals.append(
            f"(b) decode + walk + CRC above 1 GB/s: {gbps:.2f} GB/s -> "
            + ("met" if gbps > 1 else "MISSED")
        )
    rows.append(Row(label, "encode", len(body), mp_encode, kio_enc))
    if not isinstance(mp_msg, mproduce.ProduceRequest):
        for op, mine, theirs in (("decode", mp_decode, kio_decode), ("encode", mp_encode, kio_enc)):
            ratio = theirs / mine
            goals.append(
                f"{w.name[:3]} {op} at least 3x kio: {ratio:.2f}x -> "
                + ("met" if ratio >= 3 else "MISSED")
            )


def main() -> None:
    rows: list[Row] = []
    goals: list[str] = []
    workloads = [metadata_workload(), produce_workload(), fetch_workload()]
    for w in workloads:
        run_workload(w, rows, goals)

    result = table(rows)
    print()
    print(result)
    print()
    print("\n".join(goals))

    command = ".venv/bin/python bench/wire_codecs.py"
    notes = "\n".join(f"- {w.name} v{w.version}: {w.note}." for w in workloads)
    RESULTS.write_text(
        "# Wire codecs: millpond vs kio\n\n"
        f"Command: `{command}`  \n"
        f"Machine: {machine()}  \n"
        f"Date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC  \n"
        f"Method: message bodies (no header), median of {SAMPLES} samples of "
        f"~{SAMPLE_SECONDS * 1e3:.0f} ms each after a warm-up, millpond's and kio's samples "
        "alternating; time per call, calls/s "
        "and bytes of body per second. Speedup = kio time / millpond time.\n\n"
        f"Workloads (both encodings checked byte-identical first):\n\n{notes}\n\n"
        f"{result}\n\n"
        "kio has no record-batch walk, so (b)'s walk + CRC row has no kio figure; compare "
        "the decode rows. kio decodes with its native (Rust) reader and encodes in Python.\n\n"
        "Goals:\n\n" + "\n".join(f"- {g}" for g in goals) + "\n",
        encoding="utf-8",
    )
    print(f"\nwritten to {RESULTS}")


if __name__ == "__main__":
    main()

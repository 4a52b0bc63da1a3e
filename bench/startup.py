"""Start-up benchmark: ``millpond serve`` against Apache Kafka 4.4 on the same machine, same run.

For each broker, ``--runs`` times, on a fresh data directory:

1. Launch to first Metadata: the clock starts just before the process is spawned; the bench
   then tries to connect every ``--poll-ms`` (a refused connect returns at once; socket
   timeouts are 50 ms) and sends a Metadata v12 request (all topics) on each connection
   until one is answered with the broker itself in its broker list. The request frame is
   encoded before the launch, so no client-side work is timed. For Kafka the data
   directory is formatted first (``kafka.tools.StorageTool format --standalone``, as
   ``compat_tests/kafka/reference.py`` does); the format step is *not* timed, only the
   broker JVM (``kafka.Kafka server.properties``) is.
2. Resident memory (VmRSS of the broker process itself, from /proc/<pid>/status) at the
   first answer and after ``--settle`` seconds idle.
3. 1,000 partitions: CreateTopics of 100 topics x 10 partitions (one request), one record
   produced to every partition (acks=1, retried per partition until all are acknowledged),
   then VmRSS after ``--settle`` seconds idle.
4. Restart with those 1,000 partitions: SIGTERM (a clean stop), launch again on the same
   data directory, time to first Metadata (now listing 100 topics) and VmRSS after settling.

Goals: start in under 0.5 s and idle under 60 MB. Not a test: run it by hand
(Kafka's jars come from ``bash compat_tests/kafka/install.sh``); results go in
``bench/RESULTS-startup.md``.

    .venv/bin/python bench/startup.py [--runs 5] [--only millpond|kafka]
"""

from __future__ import annotations

import argparse
import compileall
import os
import platform
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.wire_client import Client, recv_exact  # noqa: E402
from compat_tests.kafka.reference import (  # noqa: E402 (after the path is set)
    BROKER_JVM,
    BROKER_LOG4J,
    KAFKA_VERSION,
    Ports,
    kafka_classpath,
    run_tool,
    server_properties,
)
from millpond.wire import RequestHeader, decode_response, encode_request  # noqa: E402
from millpond.wire.generated.api import create_topics_request as ct  # noqa: E402
from millpond.wire.generated.api import produce_request as pr  # noqa: E402
from millpond.wire.generated.api.metadata_request import MetadataRequest  # noqa: E402
from millpond.wire.records import NewRecord, build_batch  # noqa: E402

METADATA_VERSION = 12
TOPICS, PARTITIONS = 100, 10
READY_TIMEOUT = 120.0
RETRIABLE = {3, 5, 6, 7}  # UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE, NOT_LEADER, TIMEOUT


def compile_millpond(root: Path = ROOT) -> None:
    """Write millpond's bytecode caches, as installing a wheel does: without them every start
    compiles ~300 modules (0.46 s instead of 0.20 s of imports here), for instance under
    PYTHONDONTWRITEBYTECODE, and the bench would time the compiler, not the broker. The
    folders are pyproject's package-dir (a checkout from before it: ``millpond/`` alone)."""
    with (root / "pyproject.toml").open("rb") as f:
        setuptools = tomllib.load(f).get("tool", {}).get("setuptools", {})
    folders = setuptools.get("package-dir", {"millpond": "millpond"}).values()
    for folder in sorted(set(folders)):
        compileall.compile_dir((root / folder).resolve(), quiet=1)
        # compileall skips linked folders (how such a checkout's millpond/ held its layers).
        for entry in sorted((root / folder).iterdir()):
            if entry.is_symlink() and entry.is_dir():
                compileall.compile_dir(entry.resolve(), quiet=1)


def check_out(ref: str, into: Path) -> Path:
    """The tree of commit ``ref`` of this repository, unpacked into ``into``."""
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", ref],
        capture_output=True, check=True,
    )  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def lay_out_package(root: Path, into: Path) -> Path:
    """A folder whose ``millpond`` is checkout ``root``'s package as it installs (links to
    the folders pyproject's package-dir names), for ``PYTHONPATH``."""
    with (root / "pyproject.toml").open("rb") as f:
        setuptools = tomllib.load(f).get("tool", {}).get("setuptools", {})
    mapping = setuptools.get("package-dir", {"millpond": "millpond"})
    top = into / "millpond"
    top.mkdir(parents=True)
    for entry in (root / mapping["millpond"]).iterdir():
        (top / entry.name).symlink_to(entry.resolve())
    for package, folder in mapping.items():
        if package.count(".") == 1:
            (top / package.split(".")[1]).symlink_to((root / folder).resolve())
    return into


def metadata_frame() -> bytes:
    header = RequestHeader(
        request_api_key=3,
        request_api_version=METADATA_VERSION,
        correlation_id=1,
        client_id="bench-startup",
    )
    frame = encode_request(header, MetadataRequest(topics=None, allow_auto_topic_creation=False))
    return struct.pack(">i", len(frame)) + frame


def _first_metadata(
    port: int, proc: subprocess.Popen[bytes], frame: bytes, poll_s: float
) -> tuple[float, int]:
    """Connect and ask Metadata until answered with a broker listed; returns the
    monotonic time of the answer and the number of topics in it."""
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the broker exited ({proc.returncode}) before answering")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.05) as sock:
                sock.settimeout(READY_TIMEOUT)
                sock.sendall(frame)
                (size,) = struct.unpack(">i", recv_exact(sock, 4))
                data = recv_exact(sock, size)
        except OSError:
            time.sleep(poll_s)
            continue
        answered = time.monotonic()
        body: Any = decode_response(data, 3, METADATA_VERSION)[1]
        if body.brokers:
            return answered, len(body.topics)
    raise TimeoutError(f"no Metadata answer on port {port} after {READY_TIMEOUT}s")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


# -- the two brokers -------------------------------------------------------------------------


@dataclass
class Launcher:
    """How to (re)start one broker on one data directory."""

    name: str
    port: int
    command: list[str]
    log: Path
    prepare_s: float = 0.0  # untimed preparation (Kafka's format step)
    env: Mapping[str, str] | None = None  # set over the bench's own environment


def millpond_launcher(
    work: Path, extra: Mapping[str, str] | None = None, package: Path | None = None
) -> Launcher:
    """``millpond serve`` from this checkout, or from ``package`` (a folder holding a
    ``millpond`` package laid out as installed: see :func:`lay_out_package`)."""
    port = _free_port()
    python = [sys.executable, "-m"] if package is None else [sys.executable, "-P", "-m"]
    command = [
        *python, "millpond", "serve",
        "--override", f"log.dirs={work / 'data'}",
        "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
    ]  # fmt: skip
    for key, value in (extra or {}).items():
        command += ["--override", f"{key}={value}"]
    env = None if package is None else {"PYTHONPATH": str(package)}
    return Launcher("millpond", port, command, work / "millpond.log", env=env)


def kafka_launcher(work: Path, classpath: str, extra: Mapping[str, str] | None = None) -> Launcher:
    ports = Ports.loopback()
    properties = work / "server.properties"
    properties.write_text(server_properties(ports, work / "data", extra or {}))
    started = time.monotonic()
    args = ["format", "-t", "bench-startup-cluster-0", "-c", str(properties), "--standalone"]
    formatted = run_tool("kafka.tools.StorageTool", args, classpath=classpath)
    if formatted.returncode != 0:
        raise RuntimeError(f"format failed: {formatted.stdout}{formatted.stderr}")
    prepare = time.monotonic() - started
    # The command RunningBroker.launch runs (without setpriv: the pid is the JVM's).
    command = [
        "java", *BROKER_JVM, "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={BROKER_LOG4J}", "-cp", classpath,
        "kafka.Kafka", str(properties),
    ]  # fmt: skip
    return Launcher("kafka", ports.plaintext, command, work / "kafka.log", prepare)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Run:
    start_s: float = 0.0
    rss_first_mb: float = 0.0
    rss_idle_mb: float = 0.0
    rss_1000_mb: float = 0.0
    restart_s: float = 0.0
    restart_topics: int = 0
    rss_restart_mb: float = 0.0
    prepare_s: float = 0.0
    notes: list[str] = field(default_factory=list)


def launch(
    launcher: Launcher, frame: bytes, poll_s: float
) -> tuple[subprocess.Popen[bytes], float, int]:
    with launcher.log.open("ab") as log:
        started = time.monotonic()
        env = None if launcher.env is None else {**os.environ, **launcher.env}
        proc = subprocess.Popen(launcher.command, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        answered, topics = _first_metadata(launcher.port, proc, frame, poll_s)
    except BaseException:
        stop(proc)
        raise
    return proc, answered - started, topics


def stop(proc: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=30)


def _create_and_fill(port: int) -> None:
    """100 topics x 10 partitions, then one record in each partition (acks=1)."""
    client = Client(port, client_id="bench-startup")
    try:
        names = [f"bench-{i:03d}" for i in range(TOPICS)]
        request = ct.CreateTopicsRequest(
            topics=[
                ct.CreatableTopic(name=n, num_partitions=PARTITIONS, replication_factor=1)
                for n in names
            ],
            timeout_ms=60_000,
        )
        response = client.request(request, 7)
        errors = {t.name: t.error_code for t in response.topics if t.error_code != 0}
        if errors:
            raise RuntimeError(f"CreateTopics failed: {errors}")
        record = build_batch([NewRecord(key=b"k", value=b"v" * 100)])
        todo = {(n, p) for n in names for p in range(PARTITIONS)}
        deadline = time.monotonic() + READY_TIMEOUT
        while todo:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(todo)} partitions still refuse the record")
            by_topic: dict[str, list[int]] = {}
            for name, partition in sorted(todo):
                by_topic.setdefault(name, []).append(partition)
            produce = pr.ProduceRequest(
                acks=1,
                timeout_ms=30_000,
                topic_data=[
                    pr.TopicProduceData(
                        name=name,
                        partition_data=[
                            pr.PartitionProduceData(index=p, records=record) for p in parts
                        ],
                    )
                    for name, parts in by_topic.items()
                ],
            )
            answer = client.request(produce, 9)
            for topic in answer.responses:
                for part in topic.partition_responses:
                    if part.error_code == 0:
                        todo.discard((topic.name, part.index))
                    elif part.error_code not in RETRIABLE:
                        raise RuntimeError(f"{topic.name}-{part.index}: error {part.error_code}")
            if todo:
                time.sleep(0.05)  # the partitions' leaders are being set up
    finally:
        client.close()


def measure(launcher: Launcher, frame: bytes, poll_s: float, settle_s: float) -> Run:
    run = Run(prepare_s=launcher.prepare_s)
    proc, run.start_s, _ = launch(launcher, frame, poll_s)
    try:
        run.rss_first_mb = rss_mb(proc.pid)
        time.sleep(settle_s)
        run.rss_idle_mb = rss_mb(proc.pid)
        _create_and_fill(launcher.port)
        time.sleep(settle_s)
        run.rss_1000_mb = rss_mb(proc.pid)
    finally:
        stop(proc)
    proc, run.restart_s, run.restart_topics = launch(launcher, frame, poll_s)
    try:
        time.sleep(settle_s)
        run.rss_restart_mb = rss_mb(proc.pid)
    finally:
        stop(proc)
    return run


# -- the report ------------------------------------------------------------------------------


def _median(runs: list[Run], pick: Callable[[Run], float]) -> float:
    return statistics.median(pick(r) for r in runs)


ROWS: list[tuple[str, Callable[[Run], float], str]] = [
    ("launch to first Metadata answer (fresh data dir)", lambda r: r.start_s, "s"),
    ("RSS at the first answer", lambda r: r.rss_first_mb, "MB"),
    ("RSS idle (settled after start)", lambda r: r.rss_idle_mb, "MB"),
    ("RSS with 1,000 partitions, one record each", lambda r: r.rss_1000_mb, "MB"),
    ("restart to first Metadata answer (1,000 partitions)", lambda r: r.restart_s, "s"),
    ("RSS idle after that restart", lambda r: r.rss_restart_mb, "MB"),
]


def _fmt(value: float, unit: str) -> str:
    return f"{value:.3f} s" if unit == "s" else f"{value:.1f} MB"


def report(results: dict[str, list[Run]], args: argparse.Namespace, seconds: float) -> str:
    uname = platform.uname()
    lines = [
        "| what | "
        + " | ".join(results)
        + (" | millpond / kafka |" if len(results) == 2 else " |"),
        "|---|" + "---:|" * (len(results) + (1 if len(results) == 2 else 0)),
    ]
    for label, pick, unit in ROWS:
        medians = {name: _median(runs, pick) for name, runs in results.items()}
        cells = [_fmt(v, unit) for v in medians.values()]
        if len(results) == 2:
            cells.append(f"{medians['millpond'] / medians['kafka']:.3f}")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    raw = []
    for name, runs in results.items():
        starts = ", ".join(f"{r.start_s:.3f}" for r in runs)
        restarts = ", ".join(f"{r.restart_s:.3f}" for r in runs)
        idle = ", ".join(f"{r.rss_idle_mb:.1f}" for r in runs)
        full = ", ".join(f"{r.rss_1000_mb:.1f}" for r in runs)
        raw.append(
            f"- {name}: start {starts} s; restart {restarts} s; idle {idle} MB; "
            f"1,000 partitions {full} MB; topics listed after restart "
            f"{sorted({r.restart_topics for r in runs})}"
        )
        if name == "kafka":
            prep = statistics.median(r.prepare_s for r in runs)
            raw.append(f"  (untimed format step before each Kafka run: median {prep:.2f} s)")
    header = [
        f"Command: `.venv/bin/python bench/startup.py --runs {args.runs}` ({seconds:.0f} s)  ",
        f"Machine: {os.cpu_count()} CPUs, {uname.system} {uname.release}, "
        f"Python {platform.python_version()}, Kafka {KAFKA_VERSION} on "
        f"{_java_version()}, load average {os.getloadavg()[0]:.2f} at the end  ",
        f"Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC  ",
        f"Method: medians of {args.runs} runs per broker, each on a fresh data directory; "
        f"connect polled every {args.poll_ms} ms; RSS settled {args.settle} s.",
        "",
    ]
    return "\n".join([*header, *lines, "", "Every run:", "", *raw, ""])


def _java_version() -> str:
    if shutil.which("java") is None:
        return "no java"
    out = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
    first = (out.stderr or out.stdout).splitlines()[0]
    return first.replace('"', "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--only", choices=["millpond", "kafka"])
    parser.add_argument("--poll-ms", type=float, default=1.0)
    parser.add_argument("--settle", type=float, default=5.0, help="idle seconds before RSS")
    parser.add_argument("--dir", help="where the data directories go (default: a temp dir)")
    args = parser.parse_args()
    compile_millpond()
    frame = metadata_frame()
    poll_s = args.poll_ms / 1000
    names = [args.only] if args.only else ["millpond", "kafka"]
    classpath = kafka_classpath() if "kafka" in names else ""
    results: dict[str, list[Run]] = {name: [] for name in names}
    began = time.monotonic()
    base = Path(tempfile.mkdtemp(prefix="millpond-bench-startup-", dir=args.dir))
    try:
        for i in range(args.runs):
            for name in names:  # interleaved, so drift in the machine hits both alike
                work = base / f"{name}-{i}"
                work.mkdir()
                launcher = (
                    millpond_launcher(work)
                    if name == "millpond"
                    else kafka_launcher(work, classpath)
                )
                run = measure(launcher, frame, poll_s, args.settle)
                results[name].append(run)
                print(
                    f"{name} run {i + 1}: start {run.start_s:.3f} s, "
                    f"idle {run.rss_idle_mb:.1f} MB, "
                    f"1,000 partitions {run.rss_1000_mb:.1f} MB, restart {run.restart_s:.3f} s",
                    file=sys.stderr,
                )
                shutil.rmtree(work)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(report(results, args, time.monotonic() - began))


if __name__ == "__main__":
    main()

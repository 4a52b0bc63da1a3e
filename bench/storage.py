"""Storage benchmark: the log's hot paths against the plain system calls, same disk, same run.

1. Append: :meth:`Log.append` of 16 KiB and ~1 MiB batches (offsets and epoch stamped,
   CRC-32C checked: the leader's produce path) against plain sequential ``pwrite`` of the
   same bytes to a file in the same directory.
2. Read: :meth:`Log.read` returns file regions; send them to a loopback TCP socket (a
   reader thread drains it) with ``os.sendfile`` and with ``pread`` + ``sendall``, against
   the same two mechanisms over the same regions without the log.
3. Open: a data directory of 10,000 partitions after a clean shutdown: time and resident
   memory of :class:`LogManager` start-up (lazy), and of opening the logs themselves.

Goals (the storage issue): append and read at least 80% of plain; open in under 1 s and
under 100 MB. Not a test: run it by hand; it writes ``bench/RESULTS-storage.md``.

    .venv/bin/python bench/storage.py [--dir DIR] [--partitions 10000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from crc32c import crc32c

from millpond.storage.clock import SystemClock
from millpond.storage.config import LogConfig
from millpond.storage.fs import OsFileSystem
from millpond.storage.log import Log
from millpond.storage.segment_read import FileRegion
from millpond.wire.records import NewRecord, build_batch
from millpond.wire.records.batch import HEADER

APPEND_BYTES = 512 * 1024 * 1024
READ_BYTES = 512 * 1024 * 1024
FETCH_MAX = 1024 * 1024
SAMPLES = 5
T0 = 1_700_000_000_000
STAMP = struct.Struct(">qii")  # base offset, batch length, leader epoch


def make_batch(size: int) -> bytearray:
    """One v2 batch of about ``size`` bytes (records of 1 KiB random values)."""
    value = os.urandom(1024)
    n = max(1, size // 1040)
    records = [NewRecord(b"k%d" % i, value, timestamp=T0 + i) for i in range(n)]
    return bytearray(build_batch(records))


def median_rate(samples: list[float], nbytes: int) -> float:
    return nbytes / statistics.median(samples) / 1e9


# -- append ----------------------------------------------------------------------------------


def bare_append(fd: int, batch: bytearray, count: int) -> None:
    """The least a leader's append can do, in CPython, as local code: read the header,
    check magic, length and CRC-32C, stamp offset and epoch, write, keep the sparse
    index. No roll rule, undo state or append report: the bound the log works under."""
    view = memoryview(batch)
    size = len(view)
    next_offset = position = since_entry = 0
    index: list[tuple[int, int]] = []
    for _ in range(count):
        header = HEADER.unpack_from(view)
        if header[3] != 2 or header[1] + 12 != size or crc32c(view[21:]) != header[4]:
            raise ValueError("bad batch")
        STAMP.pack_into(view, 0, next_offset, header[1], 0)
        os.pwrite(fd, view, position)
        if since_entry > 4096:
            index.append((next_offset + header[6], position))
            since_entry = 0
        since_entry += size
        position += size
        next_offset += header[6] + 1


def bench_append(root: Path, batch: bytearray) -> tuple[float, float, float]:
    """GB/s of Log.append, of plain pwrite of the same bytes and of :func:`bare_append`
    (medians)."""
    count = APPEND_BYTES // len(batch)
    config = LogConfig(max_message_bytes=len(batch) + 1024)
    fs, clock = OsFileSystem(), SystemClock()
    log_times, plain_times, bare_times = [], [], []
    for _ in range(SAMPLES):
        d = root / "append-log"
        d.mkdir()
        log = Log(fs, str(d), config, clock, rng=random.Random(1))
        start = time.perf_counter()
        for _ in range(count):
            log.append(batch, assign_offsets=True, leader_epoch=0)
        log_times.append(time.perf_counter() - start)
        log.close()
        shutil.rmtree(d)

        path = root / "append-plain"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        start = time.perf_counter()
        position = 0
        for _ in range(count):
            position += os.pwrite(fd, batch, position)
        plain_times.append(time.perf_counter() - start)
        os.close(fd)
        path.unlink()

        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        start = time.perf_counter()
        bare_append(fd, batch, count)
        bare_times.append(time.perf_counter() - start)
        os.close(fd)
        path.unlink()
    nbytes = count * len(batch)
    rates = [median_rate(t, nbytes) for t in (log_times, plain_times, bare_times)]
    return rates[0], rates[1], rates[2]


# -- read ------------------------------------------------------------------------------------


DRAIN_SCRIPT = r"""
import os, socket, struct, sys
sock = socket.socket(fileno=int(sys.argv[1]))
control, done = int(sys.argv[2]), int(sys.argv[3])
buf = memoryview(bytearray(4 * 1024 * 1024))
while len(want := os.read(control, 8)) == 8:
    left = struct.unpack(">q", want)[0]
    while left > 0:
        n = sock.recv_into(buf)
        if not n:
            sys.exit(0)
        left -= n
    os.write(done, b".")
"""


class Drain:
    """A loopback TCP connection whose far end another process reads and throws away
    (a process, not a thread: a draining thread would contend for the GIL with the
    sender, and penalize whichever side runs more Python per region)."""

    def __init__(self) -> None:
        listener = socket.create_server(("127.0.0.1", 0))
        self.sender = socket.create_connection(listener.getsockname())
        receiver, _ = listener.accept()
        listener.close()
        control_r, self._control = os.pipe()
        self._done, done_w = os.pipe()
        fds = (receiver.fileno(), control_r, done_w)
        self._child = subprocess.Popen(
            [sys.executable, "-c", DRAIN_SCRIPT, *map(str, fds)], pass_fds=fds
        )
        for fd in (control_r, done_w):
            os.close(fd)
        receiver.close()

    def expect(self, nbytes: int) -> None:
        os.write(self._control, nbytes.to_bytes(8, "big"))

    def wait(self) -> None:
        if os.read(self._done, 1) != b".":
            raise RuntimeError("the drain process died")

    def close(self) -> None:
        self.sender.close()
        os.close(self._control)
        self._child.wait(timeout=10)
        os.close(self._done)


def send_sendfile(sock: socket.socket, fd: int, position: int, size: int) -> None:
    out = sock.fileno()
    while size:
        sent = os.sendfile(out, fd, position, size)
        position += sent
        size -= sent


def send_pread(sock: socket.socket, fd: int, position: int, size: int) -> None:
    sock.sendall(os.pread(fd, size, position))


def bench_read(root: Path, batch: bytearray) -> dict[str, float]:
    """GB/s sending a whole log through Log.read regions vs the same regions without the
    log, each by sendfile and by pread + sendall (medians)."""
    d = root / "read-log"
    d.mkdir()
    fs = OsFileSystem()
    log = Log(fs, str(d), LogConfig(max_message_bytes=len(batch) + 1024), SystemClock())
    count = READ_BYTES // len(batch)
    for _ in range(count):
        log.append(batch, assign_offsets=True, leader_epoch=0)
    records_per_batch = log.log_end_offset // count
    total = log.size
    # The regions a consumer fetching FETCH_MAX at a time gets, for the plain baseline.
    regions: list[FileRegion] = []
    offset = 0
    while offset < log.log_end_offset:
        region = log.read(offset, FETCH_MAX).records
        regions.append(region)
        offset += region.size // len(batch) * records_per_batch
    drain = Drain()

    def via_log(send: Callable[[socket.socket, int, int, int], None]) -> None:
        offset = 0
        end = log.log_end_offset
        while offset < end:
            region = log.read(offset, FETCH_MAX).records
            fd = region.file.fileno()
            assert fd is not None
            send(drain.sender, fd, region.position, region.size)
            offset += region.size // len(batch) * records_per_batch

    def plain(send: Callable[[socket.socket, int, int, int], None]) -> None:
        for region in regions:
            fd = region.file.fileno()
            assert fd is not None
            send(drain.sender, fd, region.position, region.size)

    cases: dict[str, Callable[[], None]] = {
        "log sendfile": lambda: via_log(send_sendfile),
        "plain sendfile": lambda: plain(send_sendfile),
        "log pread+send": lambda: via_log(send_pread),
        "plain pread+send": lambda: plain(send_pread),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(SAMPLES):
        for name, run in cases.items():  # interleaved, so drift hits every case alike
            drain.expect(total)
            start = time.perf_counter()
            run()
            drain.wait()
            times[name].append(time.perf_counter() - start)
    drain.close()
    log.close()
    shutil.rmtree(d)
    return {name: median_rate(t, total) for name, t in times.items()}


# -- open 10,000 partitions ------------------------------------------------------------------

OPEN_SCRIPT = r"""
import json, os, resource, sys, time
def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) * 1024
    return 0
def fds():
    return len(os.listdir("/proc/self/fd"))
import random
from millpond.storage.clock import SystemClock
from millpond.storage.config import LogConfig
from millpond.storage.fs import OsFileSystem
from millpond.storage.log_manager import LogManager
root, eager = sys.argv[1], int(sys.argv[2])
out = {"rss_imported": rss(), "fds_before": fds()}
start = time.perf_counter()
lm = LogManager(OsFileSystem(), [root], SystemClock(), cluster_id="bench", node_id=1,
                default_config=LogConfig(), rng=random.Random(1))
out["start_s"] = time.perf_counter() - start
out["rss_started"] = rss()
out["partitions"] = len(lm)
out["clean"] = lm.had_clean_shutdown(root)
opened = 0
start = time.perf_counter()
try:
    for topic, partition in lm.partitions()[:eager]:
        lm.get_log(topic, partition)
        opened += 1
except OSError as exc:
    out["open_error"] = f"{type(exc).__name__}: {exc}"
out["opened"] = opened
out["open_logs_s"] = time.perf_counter() - start
out["rss_opened"] = rss()
out["fds_opened"] = fds()
out["maxrss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps(out))
"""


def create_partitions(root: Path, n: int) -> float:
    """A data directory of ``n`` partitions (3 small batches each, leader epoch 0),
    shut down cleanly. Returns the seconds it took."""
    from millpond.storage.log_manager import LogManager

    start = time.perf_counter()
    small = bytearray(build_batch([NewRecord(b"k", b"v" * 100, timestamp=T0)] * 10))
    for chunk in range(0, n, 2000):  # a written log holds up to 3 descriptors: restart between
        lm = LogManager(
            OsFileSystem(), [str(root)], SystemClock(), cluster_id="bench", node_id=1,
            rng=random.Random(1),
        )  # fmt: skip
        for p in range(chunk, min(n, chunk + 2000)):
            log = lm.get_or_create_log(f"topic-{p // 100}", p % 100, os.urandom(16))
            for _ in range(3):
                log.append(small, assign_offsets=True, leader_epoch=0)
        lm.shutdown()
    return time.perf_counter() - start


def bench_open(root: Path, n: int) -> tuple[float, dict[str, object], dict[str, object]]:
    data = root / "open"
    data.mkdir()
    created = create_partitions(data, n)
    results = []
    # An opened log holds one descriptor (its active .log; an index holds one only once
    # written to) and the limit is RLIMIT_NOFILE, so the eager run opens what fits.
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    for eager in (0, min(n, limit - 200)):
        out = subprocess.run(
            [sys.executable, "-c", OPEN_SCRIPT, str(data), str(eager)],
            check=True, capture_output=True, text=True,
        ).stdout  # fmt: skip
        results.append(json.loads(out))
        restore_clean(data)
    shutil.rmtree(data)
    return created, results[0], results[1]


def restore_clean(data: Path) -> None:
    """Put the clean-shutdown marker back: the measuring process took it and exited
    without a shutdown (which would flush and close what it opened, and is not what is
    measured). It appended nothing, so the logs are as the clean shutdown left them."""
    from millpond.storage.log_dirs import write_clean_shutdown_marker

    write_clean_shutdown_marker(OsFileSystem(), str(data))


# -- report ----------------------------------------------------------------------------------


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{os.cpu_count()} CPUs ({cpu}), Linux {platform.release()}, "
        f"Python {platform.python_version()} ({platform.python_implementation()})"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", help="where to write (default: a temporary dir)")
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--out", default=str(Path(__file__).with_name("RESULTS-storage.md")))
    args = parser.parse_args()
    base = Path(args.dir or tempfile.mkdtemp(prefix="millpond-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(dir=base))
    began = time.perf_counter()
    load = os.getloadavg()[0]
    try:
        appends = {}
        reads = {}
        for label, size in (("16 KiB", 16 * 1024), ("1 MiB", 1000 * 1024)):
            batch = make_batch(size)
            appends[label] = (len(batch), *bench_append(root, batch))
            print(f"append {label}: {appends[label]}", flush=True)
            reads[label] = (len(batch), bench_read(root, batch))
            print(f"read {label}: {reads[label]}", flush=True)
        created, lazy, eager = bench_open(root, args.partitions)
        print(f"open: created in {created:.1f}s; lazy {lazy}; eager {eager}", flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    elapsed = time.perf_counter() - began
    lines = [
        "# Storage: the log against plain system calls",
        "",
        f"Command: `.venv/bin/python bench/storage.py` ({elapsed:.0f} s)  ",
        f"Machine: {machine()}, load average {load:.2f} at start  ",
        f"Disk: the file system of `{base}` (page cache; nothing is fsynced while timing)  ",
        f"Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC  ",
        f"Method: medians of {SAMPLES} samples, log and plain interleaved in the same run.",
        "",
        "## Append (`Log.append`: walk headers, CRC-32C, stamp offsets and epoch, one write)",
        "",
        "| batch | bytes per sample | Log.append | plain pwrite | ratio (goal >= 0.80) "
        "| bare append (`bare_append`) | its ratio |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for label, (size, log_rate, plain_rate, bare_rate) in appends.items():
        lines.append(
            f"| {label} ({size:,} B) | {APPEND_BYTES // size * size:,} | {log_rate:.2f} GB/s "
            f"| {plain_rate:.2f} GB/s | {log_rate / plain_rate:.2f} | {bare_rate:.2f} GB/s "
            f"| {bare_rate / plain_rate:.2f} |"
        )
    lines += [
        "",
        "## Read (`Log.read` regions of at most 1 MiB, sent to a loopback TCP socket)",
        "",
        "| batch | log sendfile | plain sendfile | ratio | log pread+send | plain pread+send "
        "| ratio |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for label, (size, r) in reads.items():
        lines.append(
            f"| {label} ({size:,} B) | {r['log sendfile']:.2f} GB/s "
            f"| {r['plain sendfile']:.2f} GB/s | {r['log sendfile'] / r['plain sendfile']:.2f} "
            f"| {r['log pread+send']:.2f} GB/s | {r['plain pread+send']:.2f} GB/s "
            f"| {r['log pread+send'] / r['plain pread+send']:.2f} |"
        )
    mb = 1024 * 1024
    lines += [
        "",
        f"## Opening {args.partitions:,} partitions after a clean shutdown",
        "",
        f"Set-up (not timed by the goal): {created:.1f} s to create them through "
        "`LogManager.get_or_create_log` (topic id written), 3 batches each at leader epoch 0, "
        "then `shutdown()`. Each measurement is a fresh process; RSS from /proc/self/status.",
        "",
        "| what | time | RSS before -> after | file descriptors |",
        "|---|---:|---:|---:|",
        f"| `LogManager(...)` start-up (lazy: {lazy['partitions']:,} partitions, clean="
        f"{lazy['clean']}) | {float(str(lazy['start_s'])):.3f} s "
        f"| {int(str(lazy['rss_imported'])) / mb:.1f} -> {int(str(lazy['rss_started'])) / mb:.1f}"
        f" MB | {lazy['fds_opened']} |",
        f"| start-up + `get_log` of {eager['opened']:,} partitions (all that fit "
        f"{resource.getrlimit(resource.RLIMIT_NOFILE)[0]:,} descriptors"
        f"{'; stopped by ' + str(eager['open_error']) if 'open_error' in eager else ''}) "
        f"| {float(str(eager['start_s'])) + float(str(eager['open_logs_s'])):.3f} s "
        f"| {int(str(eager['rss_imported'])) / mb:.1f} -> {int(str(eager['rss_opened'])) / mb:.1f}"
        f" MB | {eager['fds_opened']} |",
        "",
    ]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

"""Crash harness: SIGKILL a writing process at seeded moments, then check what a
reopened :class:`LogManager` holds; then damage the tails of closed copies.

What is asserted after each kill (the process died; the page cache did not, so the OS
guarantees every completed write is still there):

- every log holds a prefix of its partition's batch sequence, byte for byte (offsets
  and epoch as the log stamped them), every batch passes its CRC, offsets contiguous;
- nothing acknowledged is lost: at least every batch whose append returned (which
  includes every batch acknowledged as flushed), at most one more (the append that was
  in flight);
- every segment's offset and time index equals a rebuild (``LogSegment.recover``) of a
  copy of the files taken right after the kill.

Then a tail is damaged in a closed copy (truncation inside a batch, garbage appended,
a bit flipped in a CRC-covered byte) and the reopened log must be exactly the batches
before the damage.

Half the rounds stop the writer at a seeded file operation (it announces the stop and
blocks, so the kill lands exactly there: inside rolls, checkpoint writes, index
appends, the shutdown; some appends torn), the other half kill a freely running writer
after a seeded number of acknowledged steps. Nothing waits on wall-clock time.
"""

from __future__ import annotations

import os
import random
import selectors
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from millpond.storage.checkpoints import write_offset_checkpoint
from millpond.storage.clock import ManualClock
from millpond.storage.fs import OsFileSystem, join
from millpond.storage.log import Log
from millpond.storage.log_manager import LogManager
from millpond.storage.names import CLEAN_SHUTDOWN_FILE, RECOVERY_POINT_CHECKPOINT_FILE
from millpond.storage.segment import LogSegment
from millpond.wire.records import RecordBatch, iter_batches

from . import workload
from .workload import CONFIG, EPOCH, LOG_DIRS, PARTITIONS, batch_bytes, record_count

ROUNDS = 50
REPO = Path(__file__).resolve().parents[3]
#: Where the targeted rounds stop the writer: (words the operation holds, how many
#: such operations a run makes at least, roughly).
STOP_POINTS = (
    ("create|.log", 40),  # a roll creating the new segment
    ("rename|recovery-point", 20),  # the checkpoint's atomic replace
    ("append|.log", 150),  # a torn append
    ("append|.timeindex", 30),  # the largest-timestamp entry written on roll
    ("sync|.kafka_cleanshutdown", 2),  # the marker, last step of the shutdown
    ("append|recovery-point", 20),  # the checkpoint's temporary file
)
#: A bound on waiting for the child's next line; a healthy child needs milliseconds.
DEADLINE_S = 60.0


# -- running and killing the writer --------------------------------------------------------


def run_and_kill(
    data: Path, side: Path, seed: int, stop: str, torn: bool, kill_after: int | None
) -> str:
    """Start the writer, wait for its stop (or ``kill_after`` progress lines), SIGKILL it;
    returns the last line it printed."""
    args = [sys.executable, "-m", "tests.storage.crash.writer", str(data), str(side)]
    args += [str(seed), stop, "1" if torn else "0"]
    proc = subprocess.Popen(
        args, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None
    last = ""
    try:
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            buffered = b""
            while True:
                if b"\n" not in buffered:
                    if not sel.select(DEADLINE_S):
                        pytest.fail(f"writer silent for {DEADLINE_S}s (seed {seed})")
                    chunk = os.read(proc.stdout.fileno(), 4096)
                    if not chunk:
                        _, err = proc.communicate()
                        pytest.fail(f"writer exited {proc.returncode}: {err.decode()[-2000:]}")
                    buffered += chunk
                    continue
                line, buffered = buffered.split(b"\n", 1)
                last = line.decode()
                if last.startswith(("S", "D")):
                    break
                if kill_after is not None and int(last.split()[1]) + 1 >= kill_after:
                    break
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=DEADLINE_S)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert proc.returncode == -signal.SIGKILL
    return last


def read_side(side: Path) -> tuple[list[int], list[int]]:
    """Per partition: batches acknowledged as appended, and as flushed."""
    acked, flushed = [0] * len(PARTITIONS), [0] * len(PARTITIONS)
    for line in side.read_text().splitlines():
        kind, p, n = line.split()
        if kind == "A":
            acked[int(p)] = max(acked[int(p)], int(n) + 1)
        else:
            flushed[int(p)] = max(flushed[int(p)], int(n))
    return acked, flushed


# -- checking logs -------------------------------------------------------------------------


def open_manager(data: Path) -> LogManager:
    return workload.open_manager(OsFileSystem(), str(data), ManualClock())


def log_batches(log: Log) -> list[RecordBatch]:
    out: list[RecordBatch] = []
    for segment in log.segments:
        data = segment.read(segment.base_offset, 1 << 30)
        if data is not None:
            out += iter_batches(data.records.read())
    return out


def check_prefix(p: int, log: Log) -> int:
    """The log is a prefix of partition ``p``'s sequence, every batch valid; returns its
    number of batches."""
    offset = 0
    batches = log_batches(log)
    for seq, found in enumerate(batches):
        assert found.is_valid(), f"partition {p}: batch {seq} fails its CRC"
        expected = batch_bytes(p, seq, offset, EPOCH)
        assert bytes(found.buffer) == bytes(expected), f"partition {p}: batch {seq} differs"
        offset += record_count(p, seq)
    assert log.log_end_offset == offset
    return len(batches)


def index_entries(segment: LogSegment) -> tuple[list[object], list[object]]:
    return list(segment.offset_index.all_entries()), list(segment.time_index.all_entries())


def check_indexes(log: Log, copy_dir: str) -> None:
    """Each segment's indexes equal a rebuild from the copy taken right after the kill.
    The last segment's time index may lack the final largest-timestamp entry, which
    Kafka's segment, like ours, writes only on roll or close."""
    fs = OsFileSystem()
    segments = log.segments
    for i, segment in enumerate(segments):
        rebuilt = LogSegment(fs, copy_dir, segment.base_offset, CONFIG, ManualClock())
        rebuilt.recover()
        offsets, times = index_entries(segment)
        want_offsets, want_times = index_entries(rebuilt)
        rebuilt.close()
        where = f"{log.directory} segment {segment.base_offset}"
        assert offsets == want_offsets, f"{where}: offset index differs from a rebuild"
        if i == len(segments) - 1 and times == want_times[:-1]:
            continue
        assert times == want_times, f"{where}: time index differs from a rebuild"


def partition_dir(root: Path, topic: str, partition: int) -> str | None:
    for d in LOG_DIRS:
        path = root / d / f"{topic}-{partition}"
        if path.is_dir():
            return str(path)
    return None


# -- damaging tails ------------------------------------------------------------------------


def damage(root: Path, rng: random.Random, kind: str, full_scan: bool) -> list[int]:
    """Damage every partition of a closed copy; returns, per partition, the batches that
    must survive. ``full_scan`` drops the recovery-point checkpoint (everything is
    scanned); otherwise the recovery point is moved to the last segment's base offset
    and only that segment is damaged."""
    survivors: list[int] = []
    points: dict[tuple[str, int], int] = {}
    for topic, partition in PARTITIONS:
        path = partition_dir(root, topic, partition)
        assert path is not None
        logs = sorted(n for n in os.listdir(path) if n.endswith(".log"))
        files = logs if full_scan else logs[-1:]
        # (file, position, size) of every batch that may be damaged, in log order.
        spots: list[tuple[str, int, int]] = []
        before = 0
        for name in logs:
            data = Path(path, name).read_bytes()
            batches = list(iter_batches(data))
            if name not in files:
                before += len(batches)
                continue
            pos = 0
            for b in batches:
                spots.append((name, pos, b.size_in_bytes))
                pos += b.size_in_bytes
        points[(topic, partition)] = int(files[0].split(".")[0])
        if kind == "garbage" or not spots:
            with open(join(path, files[-1]), "ab") as f:
                f.write(rng.randbytes(rng.randrange(1, 200)))
            survivors.append(before + len(spots))
            continue
        victim = rng.randrange(max(0, len(spots) - 3), len(spots))
        name, pos, size = spots[victim]
        target = join(path, name)
        if kind == "truncate":
            os.truncate(target, pos + rng.randrange(size))
        else:  # flip a bit in a CRC-covered byte, or in the magic or the CRC itself
            at = pos + rng.randrange(16, size)
            with open(target, "r+b") as f:
                f.seek(at)
                byte = f.read(1)[0]
                f.seek(at)
                f.write(bytes([byte ^ (1 << rng.randrange(8))]))
        survivors.append(before + victim)
    for d in LOG_DIRS:
        marker = root / d / CLEAN_SHUTDOWN_FILE
        marker.unlink(missing_ok=True)
        checkpoint = root / d / RECOVERY_POINT_CHECKPOINT_FILE
        if full_scan:
            checkpoint.unlink(missing_ok=True)
        else:
            mine = {tp: o for tp, o in points.items() if partition_dir(root / d, *tp) is not None}
            write_offset_checkpoint(OsFileSystem(), str(checkpoint), mine)
    return survivors


# -- the rounds ----------------------------------------------------------------------------


@pytest.mark.parametrize("round_no", range(ROUNDS))
def test_kill_reopen_and_damage(round_no: int, tmp_path: Path) -> None:
    seed = 7000 + round_no
    rng = random.Random(seed)
    data, side = tmp_path / "data", tmp_path / "side"
    if round_no % 2:  # kill a freely running writer after a seeded number of steps
        last = run_and_kill(data, side, seed, "-1", False, rng.randrange(1, 170))
    elif round_no % 4 == 0:  # stop at a seeded file operation of any kind
        last = run_and_kill(data, side, seed, str(rng.randrange(1100)), False, None)
    else:  # stop inside a roll, a checkpoint write, a torn append...
        words = STOP_POINTS[(round_no // 4) % len(STOP_POINTS)]
        stop = f"{rng.randrange(words[1])}:{words[0]}"
        last = run_and_kill(data, side, seed, stop, words[0] == "append|.log", None)
    acked, flushed = read_side(side)
    print(f"round {round_no}: killed after {last!r}; acked {acked}, flushed {flushed}")
    killed = tmp_path / "killed"
    shutil.copytree(data, killed)

    manager = open_manager(data)
    manager.open_all()
    for p, (topic, partition) in enumerate(PARTITIONS):
        log = manager.get_log(topic, partition)
        if log is None:  # killed before the partition was created
            assert acked[p] == 0, f"{topic}-{partition} lost (last line {last!r})"
            continue
        n = check_prefix(p, log)
        assert flushed[p] <= acked[p] <= n <= acked[p] + 1, (
            f"{topic}-{partition}: {n} batches, acked {acked[p]}, flushed {flushed[p]}"
        )
        copy_dir = partition_dir(killed, topic, partition)
        assert copy_dir is not None
        check_indexes(log, copy_dir)
    manager.shutdown()

    # Tail damage on closed copies of the recovered data.
    kinds = ("truncate", "garbage", "flip")
    kind = kinds[round_no % 3]
    for full_scan in (False, True):
        damaged = tmp_path / f"damaged-{full_scan}"
        shutil.copytree(data, damaged)
        manager = open_manager(damaged)
        manager.open_all()
        for topic, partition in PARTITIONS:
            manager.get_or_create_log(topic, partition)
        manager.shutdown()
        survivors = damage(damaged, rng, kind, full_scan)
        copy = tmp_path / f"damaged-copy-{full_scan}"
        shutil.copytree(damaged, copy)
        manager = open_manager(damaged)
        for p, (topic, partition) in enumerate(PARTITIONS):
            log = manager.get_log(topic, partition)
            assert log is not None
            assert check_prefix(p, log) == survivors[p], f"{kind}: {topic}-{partition}"
            copy_dir = partition_dir(copy, topic, partition)
            assert copy_dir is not None
            check_indexes(log, copy_dir)
        manager.shutdown()

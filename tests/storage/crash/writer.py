"""The crash harness's writer: a process that appends known batches through a
:class:`LogManager` on the real file system until it is killed with SIGKILL.

Usage: ``python -m tests.storage.crash.writer DATA SIDE SEED STOP_AT TORN``

- Each step appends the next batch of a partition chosen by ``SEED``; every few steps
  it flushes every log and writes the recovery-point checkpoint; after
  :data:`~.workload.STEPS` steps it shuts the manager down cleanly.
- ``SIDE`` (opened with O_APPEND) gets ``A <partition> <seq>`` once an append returned
  and ``F <partition> <batches>`` once a flush and checkpoint returned, each line
  fsynced before the step counts as acknowledged; stdout gets ``P <step>`` after it.
- ``STOP_AT`` ``n >= 0`` stops the process at its n-th mutating file operation
  (appends, truncates, syncs, creations, renames, removals), ``k:word|word`` at the
  k-th one whose description (``create /path``...) holds every word; with ``TORN`` 1
  an append writes only a prefix first. It prints ``S <operation>`` and blocks on
  stdin, for the parent to kill it exactly there. ``STOP_AT < 0`` runs freely; the
  parent kills it after a number of ``P`` lines. At the end it prints
  ``D <operations>`` and blocks too.
"""

from __future__ import annotations

import os
import random
import sys
from typing import NoReturn

from millpond.storage.clock import SystemClock
from millpond.storage.fs import Buffer, File, FileSystem, OsFileSystem
from tests.storage.file_helpers import FileWrapper

from .workload import EPOCH, PARTITIONS, STEPS, TOPIC_ID, batch_bytes, open_manager


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def block() -> NoReturn:
    sys.stdin.buffer.read()  # the parent never writes: this waits for SIGKILL
    raise SystemExit(3)


class Stopper:
    """Counts mutating operations and stops at the chosen one: ``stop`` is ``"<n>"`` (the
    n-th operation) or ``"<k>:<word>|<word>..."`` (the k-th one whose description holds
    every word), or negative (never)."""

    def __init__(self, stop: str, torn: bool, rng: random.Random) -> None:
        self.count = 0
        self.hits = 0
        nth, _, words = stop.partition(":")
        self.stop_at = int(nth)
        self.words = words.split("|") if words else []
        self.torn = torn
        self.rng = rng

    def tick(self, what: str, file: File | None = None, data: Buffer | None = None) -> None:
        if self.words:
            stop = all(w in what for w in self.words) and self.hits == self.stop_at
            self.hits += all(w in what for w in self.words)
        else:
            stop = self.count == self.stop_at
        if stop:
            if self.torn and data is not None and file is not None and len(data) > 1:
                file.append(memoryview(data)[: self.rng.randrange(1, len(data))])
            say(f"S {what}")
            block()
        self.count += 1


class HookFile(FileWrapper):
    def __init__(self, inner: File, stopper: Stopper) -> None:
        super().__init__(inner)
        self._stop = stopper

    def append(self, data: Buffer) -> None:
        self._stop.tick(f"append {self.path}", self._inner, data)
        self._inner.append(data)

    def truncate(self, size: int) -> None:
        self._stop.tick(f"truncate {self.path}")
        self._inner.truncate(size)

    def sync(self) -> None:
        self._stop.tick(f"sync {self.path}")
        self._inner.sync()


class HookFs(OsFileSystem):
    def __init__(self, stopper: Stopper) -> None:
        super().__init__()
        self._stop = stopper

    def open(self, path: str, *, create: bool = False) -> File:
        if create and not os.path.exists(path):
            self._stop.tick(f"create {path}")
        return HookFile(super().open(path, create=create), self._stop)

    def rename(self, src: str, dst: str) -> None:
        self._stop.tick(f"rename {src}")
        super().rename(src, dst)

    def remove(self, path: str) -> None:
        self._stop.tick(f"remove {path}")
        super().remove(path)

    def remove_tree(self, path: str) -> None:
        self._stop.tick(f"remove_tree {path}")
        super().remove_tree(path)

    def sync_dir(self, path: str) -> None:
        self._stop.tick(f"sync_dir {path}")
        super().sync_dir(path)


def run(data: str, side_path: str, seed: int, stop: str, torn: bool) -> NoReturn:
    rng = random.Random(seed)  # noqa: S311
    stopper = Stopper(stop, torn, random.Random(seed + 1))  # noqa: S311
    fs: FileSystem = HookFs(stopper)
    side = os.open(side_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def note(line: str) -> None:
        os.write(side, (line + "\n").encode())
        os.fsync(side)

    manager = open_manager(fs, data, SystemClock(), seed)
    logs = [manager.get_or_create_log(t, p, TOPIC_ID) for t, p in PARTITIONS]
    appended = [0] * len(logs)
    flush_every = rng.randrange(4, 16)
    for step in range(STEPS):
        i = rng.randrange(len(logs))
        logs[i].append(batch_bytes(i, appended[i]), assign_offsets=True, leader_epoch=EPOCH)
        note(f"A {i} {appended[i]}")
        appended[i] += 1
        if step % flush_every == flush_every - 1:
            for log in logs:
                log.flush()
            manager.checkpoint_recovery_points()
            for j, n in enumerate(appended):
                note(f"F {j} {n}")
        elif step % 7 == 3:
            manager.flush_dirty()  # syncs rolled segments; moves recovery points
            manager.checkpoint_recovery_points()
        say(f"P {step}")
    manager.shutdown()
    say(f"D {stopper.count}")
    block()


if __name__ == "__main__":
    _, data_dir, side_file, seed_arg, stop_arg, torn_arg = sys.argv
    run(data_dir, side_file, int(seed_arg), stop_arg, torn_arg == "1")

"""The swap: readers of old segments, stale cleanings, and a crash or a failure at every
step, after which the log reads (and reopens to) its old or its new contents."""

from __future__ import annotations

import pytest

from millpond.storage.cleaner.clean import (
    CleaningResult,
    apply_cleaning,
    plan_cleaning,
    run_cleaning,
)
from millpond.storage.cleaner.swap import settle_interrupted_swaps
from millpond.storage.fs import MemFileSystem
from millpond.storage.log import Log
from millpond.storage.log_types import LogOfflineError
from millpond.wire.records import iter_batches

from .cleaner_helpers import SAMPLE_AFTER, SAMPLE_BEFORE, make_sample, open_log, rows
from .log_helpers import DIR, clock


class Crash(Exception):
    """The process died: this operation and every later one never happen."""


class StepFs(MemFileSystem):
    """Counts the directory operations (and opens) of the swap; can fail one of them
    (``fail_at``) or die at one (``die_at``)."""

    def __init__(self) -> None:
        super().__init__()
        self.armed = False
        self.steps = 0
        self.fail_at: int | None = None
        self.die_at: int | None = None

    def _step(self) -> None:
        if not self.armed:
            return
        n = self.steps
        self.steps += 1
        if self.die_at is not None and n >= self.die_at:
            raise Crash(n)
        if n == self.fail_at:
            raise OSError(5, f"injected failure at step {n}")

    def rename(self, src: str, dst: str) -> None:
        self._step()
        super().rename(src, dst)

    def remove(self, path: str) -> None:
        self._step()
        super().remove(path)

    def sync_dir(self, path: str) -> None:
        self._step()
        super().sync_dir(path)


def prepared(fs: StepFs) -> tuple[Log, CleaningResult]:
    """The sample log, flushed (so a crash keeps it), and its cleaning ready to apply."""
    fs.makedirs(DIR)
    c = clock()
    log = open_log(fs, c)
    make_sample(log)
    log.flush()
    task = plan_cleaning(log, None, c.now_ms())
    assert task is not None
    return log, run_cleaning(task)


def reopened(fs: StepFs) -> Log:
    fs.armed = False
    return open_log(fs, clock(), clean=False)


def leftovers(fs: MemFileSystem) -> list[str]:
    return [n for n in fs.listdir(DIR) if n.endswith((".cleaned", ".swap"))]


def swap_steps() -> int:
    fs = StepFs()
    _, result = prepared(fs)
    fs.armed = True
    assert apply_cleaning(result) == 6
    return fs.steps


STEPS = swap_steps()


def test_swap_takes_a_known_number_of_steps() -> None:
    # 3 renames + sync to .swap, 2 segments x 3 files to .deleted, 3 renames + sync.
    assert STEPS == 14


@pytest.mark.parametrize("step", range(STEPS + 1))
def test_crash_at_every_step_reopens_to_old_or_new(step: int) -> None:
    fs = StepFs()
    log, result = prepared(fs)
    fs.armed, fs.die_at = True, step
    if step < STEPS:
        with pytest.raises(Crash):
            apply_cleaning(result)
    else:
        apply_cleaning(result)
    fs.crash()
    log = reopened(fs)
    expected = SAMPLE_BEFORE if step < 3 else SAMPLE_AFTER
    assert rows(log) == expected
    assert leftovers(fs) == []
    assert log.log_end_offset == 7


@pytest.mark.parametrize("step", range(STEPS))
def test_failure_at_every_step_keeps_the_log_readable(step: int) -> None:
    fs = StepFs()
    log, result = prepared(fs)
    fs.armed, fs.fail_at = True, step
    try:
        outcome = apply_cleaning(result)
    except OSError:
        outcome = None
        with pytest.raises(LogOfflineError):
            log.roll()
    if outcome is None:
        assert rows(log) == SAMPLE_BEFORE  # still readable: the old segments
    else:
        assert rows(log) == SAMPLE_AFTER
    fs.crash()
    log = reopened(fs)
    assert rows(log) in (SAMPLE_BEFORE, SAMPLE_AFTER)
    if step < 4:  # failures before the log changed are undone on the spot
        assert rows(log) == SAMPLE_BEFORE
    assert leftovers(fs) == []


def test_reader_of_an_old_segment_keeps_valid_bytes() -> None:
    fs = StepFs()
    log, result = prepared(fs)
    region = log.read(0, 1 << 20).records
    before = region.read()
    assert apply_cleaning(result) == 6
    assert rows(log) == SAMPLE_AFTER
    after = region.read()
    assert after == before
    assert [b.base_offset for b in iter_batches(after)] == [0, 1, 2]
    assert all(b.is_valid() for b in iter_batches(after))
    assert any(n.endswith(".log.deleted") for n in fs.listdir(DIR))


def test_stale_cleaning_is_refused_and_its_files_removed() -> None:
    fs = StepFs()
    log, result = prepared(fs)
    log.truncate_to(2)  # the log moved on (a follower truncating)
    assert apply_cleaning(result) is None
    assert not result.applied
    assert leftovers(fs) == []
    assert rows(log) == SAMPLE_BEFORE[:2]


def test_settle_rolls_back_when_a_cleaned_file_remains() -> None:
    fs = StepFs()
    _, result = prepared(fs)
    # Step 1 half done: the indexes renamed to .swap, the .log still .cleaned.
    fs.armed, fs.die_at = True, 2
    with pytest.raises(Crash):
        apply_cleaning(result)
    fs.armed = False
    names = fs.listdir(DIR)
    assert any(n.endswith(".swap") for n in names) and any(n.endswith(".cleaned") for n in names)
    settle_interrupted_swaps(fs, DIR)
    assert leftovers(fs) == []
    assert rows(reopened(fs)) == SAMPLE_BEFORE

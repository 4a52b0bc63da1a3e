"""Which logs are cleaned and how far: dirty ratio, compaction lags, the high watermark,
retention under compact,delete."""

from __future__ import annotations

import pytest

from millpond.storage.cleaner.clean import clean_log, plan_cleaning
from millpond.storage.cleaner.selection import cleanable_range, filthiest, log_to_clean

from .cleaner_helpers import make_sample, new_fs, open_log, put, rows
from .log_helpers import T0


def test_dirty_ratio_counts_whole_segments() -> None:
    fs, clock = new_fs()
    log = open_log(fs, clock, min_cleanable_dirty_ratio=0.5)
    make_sample(log)
    first = log_to_clean(log, None, clock.now_ms())
    sizes = [s.size for s in log.segments]
    assert (first.clean_bytes, first.cleanable_bytes) == (0, sizes[0] + sizes[1])
    assert first.dirty_ratio == 1.0 and first.should_clean
    result = clean_log(log, None, clock.now_ms())
    assert result is not None
    # One more dirty segment: ratio = its size / (cleaned + it).
    log.roll()
    put(log, (b"q", b"1"))
    log.update_high_watermark(log.log_end_offset)
    clean, dirty = log.segments[0].size, log.segments[1].size
    again = log_to_clean(log, result.end_offset, clock.now_ms())
    assert (again.first_dirty, again.first_uncleanable) == (6, 7)
    assert (again.clean_bytes, again.cleanable_bytes) == (clean, dirty)
    assert again.dirty_ratio == pytest.approx(dirty / (clean + dirty))
    assert again.dirty_ratio < 0.5
    assert plan_cleaning(log, result.end_offset, clock.now_ms()) is None
    lower = open_log(fs, clock, min_cleanable_dirty_ratio=0.2)
    lower.update_high_watermark(lower.log_end_offset)
    assert log_to_clean(lower, result.end_offset, clock.now_ms()).dirty_ratio > 0.2
    assert plan_cleaning(lower, result.end_offset, clock.now_ms()) is not None


def test_min_compaction_lag_keeps_recent_segments_dirty() -> None:
    fs, clock = new_fs()
    log = open_log(fs, clock, min_compaction_lag_ms=5_000)
    put(log, (b"k", b"a"), ts=T0 - 10_000)
    put(log, (b"k", b"b"), ts=T0 - 9_000)
    log.roll()
    put(log, (b"k", b"c"), ts=T0 - 1_000)  # younger than the lag
    log.roll()
    put(log, (b"x", b"1"))
    log.update_high_watermark(log.log_end_offset)
    assert cleanable_range(log, None, clock.now_ms()).first_uncleanable == 2
    result = clean_log(log, None, clock.now_ms())
    assert result is not None and result.end_offset == 2
    assert rows(log) == [(1, b"k", b"b"), (2, b"k", b"c"), (3, b"x", b"1")]
    clock.advance(4_000)  # the second segment's newest record is now 5 s old
    assert cleanable_range(log, 2, clock.now_ms()).first_uncleanable == 3
    again = clean_log(log, 2, clock.now_ms(), force=True)
    assert again is not None and again.end_offset == 3
    assert rows(log) == [(2, b"k", b"c"), (3, b"x", b"1")]


def test_max_compaction_lag_forces_cleaning_below_the_ratio() -> None:
    fs, clock = new_fs()
    log = open_log(fs, clock, min_cleanable_dirty_ratio=1.0, max_compaction_lag_ms=60_000)
    put(log, (b"k", b"a"))
    put(log, (b"k", b"b"))
    log.roll()
    put(log, (b"x", b"1"))
    log.update_high_watermark(log.log_end_offset)
    assert plan_cleaning(log, None, clock.now_ms()) is None  # ratio 1.0 is never exceeded
    clock.advance(60_000)
    assert not log_to_clean(log, None, clock.now_ms()).need_compaction_now
    clock.advance(1)
    candidate = log_to_clean(log, None, clock.now_ms())
    assert candidate.need_compaction_now and candidate.should_clean
    result = clean_log(log, None, clock.now_ms())
    assert result is not None and result.applied
    assert rows(log) == [(1, b"k", b"b"), (2, b"x", b"1")]


def test_cleaning_stops_at_the_high_watermark_and_last_stable_offset() -> None:
    fs, clock = new_fs()
    log = open_log(fs, clock)
    make_sample(log)
    log.update_high_watermark(4)  # inside the second segment: only [0, 3) is cleanable
    assert cleanable_range(log, None, clock.now_ms()).first_uncleanable == 3
    log.update_high_watermark(7)
    assert cleanable_range(log, None, clock.now_ms(), last_stable_offset=5).first_uncleanable == 3
    assert cleanable_range(log, None, clock.now_ms()).first_uncleanable == 6
    log.update_high_watermark(0)
    assert plan_cleaning(log, None, clock.now_ms()) is None


def test_invalid_checkpoints_restart_at_the_log_start() -> None:
    fs, clock = new_fs()
    log = open_log(fs, clock)
    make_sample(log)
    assert cleanable_range(log, 99, clock.now_ms()) == (0, 6, True)
    assert cleanable_range(log, 3, clock.now_ms()) == (3, 6, False)


def test_compact_delete_applies_retention_too() -> None:
    fs, clock = new_fs()
    log = open_log(fs, clock, policy=("compact", "delete"), retention_ms=60_000)
    put(log, (b"k", b"old"), ts=T0 - 120_000)
    log.roll()
    put(log, (b"k", b"a"))
    put(log, (b"k", b"b"))
    log.roll()
    put(log, (b"x", b"1"))
    log.update_high_watermark(log.log_end_offset)
    assert log.delete_old_segments() == 1  # the segment past retention.ms goes whole
    assert log.log_start_offset == 1
    candidate = log_to_clean(log, 0, clock.now_ms())
    assert candidate.reset_checkpoint and candidate.first_dirty == 1
    result = clean_log(log, 0, clock.now_ms())
    assert result is not None and result.applied
    assert rows(log) == [(2, b"k", b"b"), (3, b"x", b"1")]
    assert [s.base_offset for s in log.segments] == [1, 3]


def test_filthiest_log_is_chosen() -> None:
    fs, clock = new_fs()
    log = open_log(fs, clock)
    make_sample(log)
    dirty = log_to_clean(log, None, clock.now_ms())
    clean = log_to_clean(log, 6, clock.now_ms())
    assert filthiest([clean, dirty]) is dirty
    assert filthiest([clean]) is None


def test_delete_policy_logs_are_not_compacted() -> None:
    fs, clock = new_fs()
    log = open_log(fs, clock, policy=("delete",))
    make_sample(log)
    assert plan_cleaning(log, None, clock.now_ms(), force=True) is None

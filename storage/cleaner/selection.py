"""Which part of a log a cleaning may touch, and which log to clean first.

Kafka's vocabulary, kept here:

- The *clean* section is below the first dirty offset (the ``cleaner-offset-checkpoint``
  entry: where the last cleaning stopped); every key there is unique already.
- The *dirty* section runs from there to the first uncleanable offset, which is the
  least of: the last stable offset (never past the high watermark; the broker passes
  it, transactions lower it), the active segment's base offset, and the base of the
  first dirty segment whose newest record is younger than ``min.compaction.lag.ms``;
  then lowered to a segment boundary, since segments are cleaned whole.
- The dirty ratio is dirty bytes / (clean + dirty bytes), counted in whole segments. A log
  is cleaned once its ratio exceeds ``min.cleanable.dirty.ratio``, or sooner when a
  dirty, inactive segment's first batch is older than ``max.compaction.lag.ms`` (and
  there is something cleanable): the lag bounds how long an overwritten value or a
  tombstone's target stays readable. (``max.compaction.lag.ms`` also rolls the active
  segment in time, see :attr:`~millpond.storage.config.LogConfig.max_segment_ms`.)
- A checkpoint below the log start offset (retention of ``compact,delete`` went past it)
  or past the log end (the log was truncated) restarts from the log start offset.

Reads the log's state and, for ``max.compaction.lag.ms``, the first batch header of each
dirty segment (one small read each): call on the thread that owns the log.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from millpond.storage.log import Log
from millpond.storage.segment import LogSegment
from millpond.storage.segment_read import walk_headers

NO_FIRST_TIMESTAMP = 2**63 - 1


class CleanableRange(NamedTuple):
    first_dirty: int
    #: Exclusive end of what may be cleaned, on a segment boundary.
    first_uncleanable: int
    #: The checkpoint was invalid; the caller should store ``first_dirty``.
    reset_checkpoint: bool


def segments_overlapping(segments: Sequence[LogSegment], start: int, end: int) -> list[LogSegment]:
    """The segments holding offsets in [``start``, ``end``): from the one holding
    ``start`` (or the first) to the last based below ``end``; none when the range is
    empty."""
    if start >= end:
        return []
    bases = [s.base_offset for s in segments]
    first = max(0, bisect_right(bases, start) - 1)
    return [s for s in segments[first:] if s.base_offset < end]


def inactive_segments_from(segments: Sequence[LogSegment], start: int) -> list[LogSegment]:
    """The segments from the one holding ``start`` up to, not including, the active one."""
    bases = [s.base_offset for s in segments]
    first = max(0, bisect_right(bases, start) - 1)
    return list(segments[first:-1])


def first_batch_timestamp(segment: LogSegment) -> int:
    """The first batch's max timestamp (Kafka's rolling timestamp), or a huge value for an
    empty segment."""
    header = next(walk_headers(segment.log_file, 0, segment.size), None)
    return header.max_timestamp if header is not None else NO_FIRST_TIMESTAMP


def cleanable_range(
    log: Log, checkpoint: int | None, now_ms: int, last_stable_offset: int | None = None
) -> CleanableRange:
    """The dirty section of ``log`` (see the module docstring)."""
    start, end = log.log_start_offset, log.log_end_offset
    dirty = start if checkpoint is None else checkpoint
    reset = False
    if dirty < start or dirty > end:
        dirty, reset = start, True
    segments = log.segments
    stable = log.high_watermark if last_stable_offset is None else last_stable_offset
    limit = min(stable, log.high_watermark, segments[-1].base_offset)
    lag = log.config.min_compaction_lag_ms
    if lag > 0:
        for segment in inactive_segments_from(segments, dirty):
            if segment.largest_timestamp > now_ms - lag:
                limit = min(limit, segment.base_offset)
                break
    limit = max(dirty, limit)
    # Whole segments only: back off to the base of the segment holding ``limit``.
    inactive = inactive_segments_from(segments, limit)
    boundary = inactive[0].base_offset if inactive else segments[-1].base_offset
    return CleanableRange(dirty, boundary, reset)


def compaction_delay(log: Log, first_dirty: int, now_ms: int) -> int:
    """How far past ``max.compaction.lag.ms`` the oldest dirty inactive segment is (0: not
    overdue). Segments without timestamps never count."""
    timestamps = [
        ts
        for ts in map(first_batch_timestamp, inactive_segments_from(log.segments, first_dirty))
        if ts > 0
    ]
    earliest = min(timestamps, default=NO_FIRST_TIMESTAMP)
    clean_until = now_ms - max(log.config.max_compaction_lag_ms, 0)
    return clean_until - earliest if earliest < clean_until else 0


@dataclass(frozen=True)
class LogToClean:
    """A log's cleaning candidate: its ranges, sizes and urgency."""

    log: Log
    first_dirty: int
    first_uncleanable: int
    clean_bytes: int
    cleanable_bytes: int
    need_compaction_now: bool
    reset_checkpoint: bool = False

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def dirty_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0

    @property
    def should_clean(self) -> bool:
        """Over the dirty ratio threshold, or overdue by max.compaction.lag.ms."""
        if self.cleanable_bytes == 0:
            return False
        if self.need_compaction_now:
            return True
        return self.dirty_ratio > self.log.config.min_cleanable_dirty_ratio


def log_to_clean(
    log: Log, checkpoint: int | None, now_ms: int, last_stable_offset: int | None = None
) -> LogToClean:
    """Measure ``log`` as a cleaning candidate."""
    dirty, uncleanable, reset = cleanable_range(log, checkpoint, now_ms, last_stable_offset)
    segments = log.segments
    clean = sum(s.size for s in segments if s.base_offset < dirty)
    cleanable = sum(s.size for s in segments_overlapping(segments, dirty, uncleanable))
    overdue = compaction_delay(log, dirty, now_ms) > 0
    return LogToClean(log, dirty, uncleanable, clean, cleanable, overdue, reset)


def filthiest(candidates: Iterable[LogToClean]) -> LogToClean | None:
    """The log to clean next: among those that :attr:`~LogToClean.should_clean`, the one
    with the highest dirty ratio (Kafka's choice); None when none needs it."""
    ready = [c for c in candidates if c.total_bytes > 0 and c.should_clean]
    return max(ready, key=lambda c: c.dirty_ratio, default=None)

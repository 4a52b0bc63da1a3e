"""Which segments retention deletes: pure selection, no I/O of its own.

Kafka's rules, as the log applies them on each retention pass:

- Segments are taken oldest first, and the walk stops at the first segment that does
  not qualify: retention never leaves a hole in the middle of a log.
- A segment qualifies only if every offset in it is below the high watermark (so the
  log start offset can never pass it) and, for the rule at hand:
  - log start: the next segment starts at or below the log start offset (everything
    in this one was deleted by DeleteRecords or an earlier pass);
  - ``retention.ms``: its largest timestamp is more than ``retention.ms`` old;
  - ``retention.bytes``: deleting it still leaves the log at least ``retention.bytes``
    big (so the log ends up just above the limit, never below it).
- The last segment, when empty, is never selected. When every segment qualifies, the
  log rolls first, so the segment being deleted is no longer the active one and the
  log keeps an (empty) active segment: an idle topic still empties, as in Kafka.

Not thread-safe; the log serializes retention with appends.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from millpond.storage.segment import LogSegment

#: (segment, the next segment or None) -> may it go?
Predicate = Callable[[LogSegment, LogSegment | None], bool]


def deletable_segments(
    segments: Sequence[LogSegment],
    predicate: Predicate,
    *,
    high_watermark: int,
    log_end_offset: int,
) -> list[LogSegment]:
    """The oldest segments, in order, up to the first that may not be deleted."""
    out: list[LogSegment] = []
    for i, segment in enumerate(segments):
        following = segments[i + 1] if i + 1 < len(segments) else None
        if following is None and segment.size == 0:
            break
        upper = following.base_offset if following is not None else log_end_offset
        if high_watermark < upper or not predicate(segment, following):
            break
        out.append(segment)
    return out


def log_start_breached(log_start_offset: int) -> Predicate:
    """Everything in the segment is below the log start offset."""

    def check(segment: LogSegment, following: LogSegment | None) -> bool:
        del segment
        return following is not None and following.base_offset <= log_start_offset

    return check


def retention_ms_breached(now_ms: int, retention_ms: int) -> Predicate:
    """The segment's newest record is older than ``retention.ms``."""

    def check(segment: LogSegment, following: LogSegment | None) -> bool:
        del following
        return now_ms - segment.largest_timestamp > retention_ms

    return check


def retention_bytes_breached(log_size: int, retention_bytes: int) -> Predicate:
    """Deleting the segment keeps the log at or above ``retention.bytes`` (stateful:
    each accepted segment's size is taken off the excess; use once per pass)."""
    excess = log_size - retention_bytes

    def check(segment: LogSegment, following: LogSegment | None) -> bool:
        nonlocal excess
        del following
        if excess - segment.size < 0:
            return False
        excess -= segment.size
        return True

    return check

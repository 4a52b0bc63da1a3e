"""Reads across a partition log's segments: fetch regions, and ListOffsets' lookups by
timestamp.

Functions over the :class:`~millpond.storage.log.Log`'s segment list (oldest first) and
their base offsets; the log checks the requested offset against its range and calls
them. They read segment files and indexes, never change them.

Not thread-safe on their own: the caller holds the log's lock (Kafka's log lock).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from millpond.storage.leader_epochs import LeaderEpochCache
from millpond.storage.segment import LogSegment
from millpond.storage.segment_read import FetchData, FileRegion, TimestampAndOffset

#: ListOffsets' special targets.
EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3


def read_segments(
    segments: Sequence[LogSegment],
    bases: Sequence[int],
    start_offset: int,
    max_bytes: int,
    upper: int,
    log_end_offset: int,
    min_one_message: bool,
) -> FetchData:
    """Whole batches from the one holding ``start_offset`` (within the log's range), at
    most ``max_bytes`` (the first batch whole if ``min_one_message``), none holding an
    offset at or past ``upper``; an empty region at the end of the active segment when
    there is nothing to read yet."""
    i = max(0, bisect_right(bases, start_offset) - 1)
    while start_offset < upper and i < len(segments):
        segment = segments[i]
        following = bases[i + 1] if i + 1 < len(bases) else log_end_offset
        max_position = segment.size if upper >= following else _position_of(segment, upper)
        data = segment.read(start_offset, max_bytes, max_position, min_one_message)
        if data is not None:
            return data
        i += 1
    active = segments[-1]
    end = active.size
    return FetchData(start_offset, active.base_offset, end, FileRegion(active.log_file, end, 0))


def _position_of(segment: LogSegment, offset: int) -> int:
    """Where reads of ``segment`` must stop to stay below ``offset``."""
    hit = segment.translate_offset(offset)
    return hit.position if hit is not None else segment.size


def find_offset_by_timestamp(
    segments: Sequence[LogSegment],
    timestamp: int,
    log_start_offset: int,
    log_end_offset: int,
    epochs: LeaderEpochCache | None,
) -> TimestampAndOffset | None:
    """The first record with a timestamp >= ``timestamp``, or the special targets
    (:data:`EARLIEST_TIMESTAMP`, :data:`LATEST_TIMESTAMP`, :data:`MAX_TIMESTAMP`: the
    record with the largest timestamp). None when no record is that recent."""
    if timestamp == EARLIEST_TIMESTAMP:
        epoch = epochs.epoch_for_offset(log_start_offset) if epochs else None
        return TimestampAndOffset(-1, log_start_offset, epoch)
    if timestamp == LATEST_TIMESTAMP:
        epoch = epochs.latest_epoch if epochs else None
        return TimestampAndOffset(-1, log_end_offset, epoch)
    if timestamp == MAX_TIMESTAMP:
        newest = max(segments, key=lambda s: s.max_timestamp_so_far.timestamp)
        best = newest.max_timestamp_so_far.timestamp
        if best < 0:
            return None
        return newest.find_offset_by_timestamp(best, log_start_offset)
    for segment in segments:
        if segment.max_timestamp_so_far.timestamp >= timestamp:
            found = segment.find_offset_by_timestamp(timestamp, log_start_offset)
            if found is not None:
                return found
    return None

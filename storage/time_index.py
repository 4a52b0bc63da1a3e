"""The time index (``.timeindex``): which offset to start from for a timestamp.

On-disk format (Kafka's, unchanged): a flat sequence of 12-byte entries, no header, no
checksum, each big-endian:

    timestamp        int64   the greatest batch max-timestamp seen so far in the segment
    relative_offset  int32   offset - base_offset of the batch that carried it

An entry ``(T, O)`` promises that every record with a timestamp above ``T`` comes after
offset ``O``. Entries are added only when the segment's maximum timestamp grows (Kafka's
``maybeAppend`` rule: a timestamp not above the last entry's is silently skipped), so
timestamps are strictly increasing and offsets never decrease. ``lookup(T)`` returns the
entry with the greatest timestamp <= ``T``; below the first entry (or when empty) it
returns ``(-1, base_offset)`` (-1 being Kafka's "no timestamp").

Like Kafka, the index counts itself full one entry early: the last slot is kept for the
entry written when the segment is rolled or closed (``skip_full_check=True``).

The shared machinery (lazy load, truncation, sync, trimming, the differences from
Kafka's mmapped, preallocated files) is in :mod:`index_file`.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from typing import NamedTuple

from millpond.storage.index_file import (
    SWAP_BYTES,
    CorruptIndexError,
    IndexFile,
    IndexFullError,
    IndexOrderError,
    is_non_decreasing,
    is_strictly_increasing,
)
from millpond.wire.records.timestamp_type import NO_TIMESTAMP


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


class TimeIndex(IndexFile):
    """Timestamp -> offset, for one segment (see the module docstring)."""

    __slots__ = (
        "_relative",
        "_timestamps",
    )

    entry_size = 12
    kind = "time index"
    _timestamps: array[int]  # strictly increasing; _relative (the offsets) non-decreasing

    # -- reads ---------------------------------------------------------------------------

    @property
    def is_full(self) -> bool:
        """Full one entry early: the last slot is kept for the roll/close entry."""
        self._ensure_loaded()
        return self._count >= self._max_entries - 1

    @property
    def last_entry(self) -> TimestampOffset:
        """The last entry, or ``(-1, base_offset)`` when the index is empty."""
        self._ensure_loaded()
        if not self._count:
            return TimestampOffset(NO_TIMESTAMP, self._base_offset)
        return TimestampOffset(self._timestamps[-1], self._base_offset + self._relative[-1])

    def entry(self, n: int) -> TimestampOffset:
        self._check_slot(n)
        return TimestampOffset(self._timestamps[n], self._base_offset + self._relative[n])

    def all_entries(self) -> list[TimestampOffset]:
        self._ensure_loaded()
        base = self._base_offset
        return [
            TimestampOffset(t, base + r)
            for t, r in zip(self._timestamps, self._relative, strict=True)
        ]

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """The entry with the greatest timestamp <= ``target_timestamp``, else
        ``(-1, base_offset)``."""
        self._ensure_loaded()
        slot = bisect_right(self._timestamps, target_timestamp) - 1
        if slot < 0:
            return TimestampOffset(NO_TIMESTAMP, self._base_offset)
        return TimestampOffset(self._timestamps[slot], self._base_offset + self._relative[slot])

    # -- writes --------------------------------------------------------------------------

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> bool:
        """Add ``(timestamp, offset)`` if ``timestamp`` is above the last entry's; return
        whether it was added (pending until the next flush, roll or close: see
        :mod:`index_file`).

        Raises :class:`IndexFullError` (unless ``skip_full_check``, used on roll and
        close), and :class:`IndexOrderError` when ``offset`` or ``timestamp`` is below the
        last entry's (equal values are fine: re-offering the last entry is a no-op)."""
        if not self._loaded:
            self._ensure_loaded()
        count = self._count
        if not skip_full_check and count >= self._max_entries - 1:
            raise IndexFullError(f"{self._path} is full ({count} entries)")
        if count:
            last_timestamp = self._timestamps[-1]
            last_offset = self._base_offset + self._relative[-1]
            if offset < last_offset:
                raise IndexOrderError(
                    f"offset {offset} is below the last offset {last_offset} of {self._path}"
                )
            if timestamp < last_timestamp:
                raise IndexOrderError(
                    f"timestamp {timestamp} is below the last timestamp {last_timestamp} "
                    f"of {self._path}"
                )
        else:
            last_timestamp = NO_TIMESTAMP
        if timestamp <= last_timestamp:
            return False
        relative = self.relative_offset(offset)
        self._timestamps.append(timestamp)
        self._relative.append(relative)
        self._count = count + 1
        return True

    # -- hooks ---------------------------------------------------------------------------

    def _load_entries(self, data: memoryview, count: int) -> None:
        # Split the 12-byte entries into three 4-byte words each, then put the two words
        # of each timestamp back together: all in C, no per-entry Python work.
        words = array("i")
        words.frombytes(data)
        halves = array("i", bytes(8 * count))
        halves[0::2] = words[0::3]
        halves[1::2] = words[1::3]
        timestamps = array("q")
        timestamps.frombytes(halves.tobytes())
        relative = words[2::3]
        if SWAP_BYTES:
            timestamps.byteswap()
            relative.byteswap()
        self._timestamps = timestamps
        self._relative = relative

    def _encode_entries(self, start: int) -> bytes:
        timestamps = self._timestamps[start:]
        relative = self._relative[start:]
        if SWAP_BYTES:
            timestamps.byteswap()
            relative.byteswap()
        # Interleave 8-byte and 4-byte fields as three 4-byte words per entry.
        words = array("i", bytes(12 * len(relative)))
        halves = array("i", timestamps.tobytes())
        words[0::3] = halves[0::2]
        words[1::3] = halves[1::2]
        words[2::3] = relative
        return words.tobytes()

    def _truncate_entries(self, n: int) -> None:
        del self._timestamps[n:]
        del self._relative[n:]

    def _check_entries(self) -> None:
        if self._count and self._timestamps[-1] < self._timestamps[0]:
            raise CorruptIndexError(
                f"corrupt time index {self._path}: it has entries but its last timestamp "
                f"{self._timestamps[-1]} is below its first timestamp {self._timestamps[0]}"
            )
        self._check_last_offset()

    def _check_order(self) -> None:
        if not is_strictly_increasing(self._timestamps):
            raise CorruptIndexError(
                f"corrupt time index {self._path}: timestamps are not strictly increasing"
            )
        if self._count and self._relative[0] < 0:
            raise CorruptIndexError(f"corrupt time index {self._path}: offset below base")
        if not is_non_decreasing(self._relative):
            raise CorruptIndexError(
                f"corrupt time index {self._path}: offsets decrease between entries"
            )

"""The sparse offset index (``.index``): where in the ``.log`` to start reading for an offset.

On-disk format (Kafka's, unchanged): a flat sequence of 8-byte entries, no header, no
checksum, each two big-endian int32s:

    relative_offset  int32   offset - base_offset of the segment
    position         int32   byte position in the segment's .log of the batch

The segment writes an entry every ``index.interval.bytes`` of appended batches, for the
batch's last offset and its start position, so entries are strictly increasing in both
fields. A lookup answers "the greatest indexed offset <= target, and its position"; the
reader then scans the log forward from that position. Below the first entry (or in an
empty index) the answer is the segment's start: ``(base_offset, 0)``.

The shared machinery (lazy load, truncation, sync, trimming, the differences from
Kafka's mmapped, preallocated files) is in :mod:`index_file`.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from typing import NamedTuple

from millpond.storage.index_file import (
    INT32_MAX,
    SWAP_BYTES,
    CorruptIndexError,
    IndexFile,
    IndexFullError,
    IndexOffsetOverflowError,
    IndexOrderError,
    is_strictly_increasing,
)


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class OffsetIndex(IndexFile):
    """Offset -> .log position, for one segment (see the module docstring)."""

    __slots__ = (
        "_positions",
        "_relative",
    )

    entry_size = 8
    kind = "offset index"
    _positions: array[int]  # with _relative (strictly increasing): one pair per entry

    # -- reads ---------------------------------------------------------------------------

    @property
    def last_offset(self) -> int:
        """The last indexed offset, or the base offset when the index is empty."""
        self._ensure_loaded()
        if not self._count:
            return self._base_offset
        return self._base_offset + self._relative[-1]

    def entry(self, n: int) -> OffsetPosition:
        self._check_slot(n)
        return OffsetPosition(self._base_offset + self._relative[n], self._positions[n])

    def all_entries(self) -> list[OffsetPosition]:
        self._ensure_loaded()
        base = self._base_offset
        return [
            OffsetPosition(base + r, p)
            for r, p in zip(self._relative, self._positions, strict=True)
        ]

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The entry with the greatest offset <= ``target_offset``, else ``(base_offset, 0)``."""
        self._ensure_loaded()
        slot = bisect_right(self._relative, target_offset - self._base_offset) - 1
        if slot < 0:
            return OffsetPosition(self._base_offset, 0)
        return OffsetPosition(self._base_offset + self._relative[slot], self._positions[slot])

    def lookup_position(self, position: int) -> OffsetPosition | None:
        """The entry with the greatest position <= ``position`` (a batch start at or below
        a byte limit), or None when every entry lies above it."""
        self._ensure_loaded()
        slot = bisect_right(self._positions, position) - 1
        if slot < 0:
            return None
        return OffsetPosition(self._base_offset + self._relative[slot], self._positions[slot])

    def fetch_upper_bound_offset(self, position: int, fetch_size: int) -> OffsetPosition | None:
        """The first entry whose position is >= ``position + fetch_size``: an offset surely
        past a fetch of ``fetch_size`` bytes from ``position`` (not the smallest such); None
        when no entry lies that far."""
        self._ensure_loaded()
        slot = bisect_left(self._positions, position + fetch_size)
        if slot >= self._count:
            return None
        return OffsetPosition(self._base_offset + self._relative[slot], self._positions[slot])

    # -- writes --------------------------------------------------------------------------

    def append(self, offset: int, position: int) -> None:
        """Index ``offset`` (a batch's last offset) at ``position`` in the .log (pending
        until the next flush, roll or close: see :mod:`index_file`).

        Raises :class:`IndexFullError`, :class:`IndexOrderError` when ``offset`` is not
        above the last entry, or :class:`IndexOffsetOverflowError`."""
        if not self._loaded:
            self._ensure_loaded()
        count = self._count
        if count >= self._max_entries:
            raise IndexFullError(f"{self._path} is full ({count} entries)")
        relative = offset - self._base_offset
        if count and relative <= self._relative[-1]:
            raise IndexOrderError(
                f"offset {offset} is not above the last offset "
                f"{self._base_offset + self._relative[-1]} of {self._path}"
            )
        if not 0 <= relative <= INT32_MAX:
            raise IndexOffsetOverflowError(
                f"offset {offset} does not fit {self._path} (base offset {self._base_offset})"
            )
        if not 0 <= position <= INT32_MAX:
            raise ValueError(f"position {position} does not fit {self._path}")
        self._relative.append(relative)
        self._positions.append(position)
        self._count = count + 1

    # -- hooks ---------------------------------------------------------------------------

    def _load_entries(self, data: memoryview, count: int) -> None:
        both = array("i")
        both.frombytes(data)
        if SWAP_BYTES:
            both.byteswap()
        self._relative = both[0::2]
        self._positions = both[1::2]

    def _encode_entries(self, start: int) -> bytes:
        both = array("i", bytes(8 * (self._count - start)))
        both[0::2] = self._relative[start:]
        both[1::2] = self._positions[start:]
        if SWAP_BYTES:
            both.byteswap()
        return both.tobytes()

    def _truncate_entries(self, n: int) -> None:
        del self._relative[n:]
        del self._positions[n:]

    def _check_entries(self) -> None:
        self._check_last_offset()

    def _check_order(self) -> None:
        if not is_strictly_increasing(self._relative):
            raise CorruptIndexError(
                f"corrupt offset index {self._path}: offsets are not strictly increasing"
            )
        if self._count and self._relative[0] < 0:
            raise CorruptIndexError(f"corrupt offset index {self._path}: offset below base")
        if self._count and self._positions[0] < 0:
            raise CorruptIndexError(f"corrupt offset index {self._path}: negative position")
        if not is_strictly_increasing(self._positions):
            raise CorruptIndexError(
                f"corrupt offset index {self._path}: positions are not strictly increasing"
            )

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

import struct
import sys
from array import array
from bisect import bisect_left, bisect_right
from typing import NamedTuple

from millpond.storage.fs import FileSystem
from millpond.storage.index_file import (
    DEFAULT_MAX_INDEX_SIZE,
    INT32_MAX,
    CorruptIndexError,
    IndexFile,
    IndexFullError,
    IndexOrderError,
    is_strictly_increasing,
)

_ENTRY = struct.Struct(">ii")
_SWAP = sys.byteorder == "little"


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class OffsetIndex(IndexFile):
    """Offset -> .log position, for one segment (see the module docstring)."""

    entry_size = 8
    kind = "offset index"

    def __init__(
        self,
        fs: FileSystem,
        path: str,
        base_offset: int,
        max_index_size: int = DEFAULT_MAX_INDEX_SIZE,
    ) -> None:
        super().__init__(fs, path, base_offset, max_index_size)
        self._relative = array("i")  # relative offsets, strictly increasing
        self._positions = array("i")

    # -- reads ---------------------------------------------------------------------------

    @property
    def last_offset(self) -> int:
        """The last indexed offset, or the base offset when the index is empty."""
        self._ensure_loaded()
        if not self._count:
            return self._base_offset
        return self._base_offset + self._relative[-1]

    def entry(self, n: int) -> OffsetPosition:
        self._ensure_loaded()
        if not 0 <= n < self._count:
            raise IndexError(f"entry {n} of {self._path}, which has {self._count} entries")
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

    def to_bytes(self) -> bytes:
        """The valid entries exactly as they are (or should be) on disk."""
        self._ensure_loaded()
        both = array("i", bytes(8 * self._count))
        both[0::2] = self._relative
        both[1::2] = self._positions
        if _SWAP:
            both.byteswap()
        return both.tobytes()

    # -- writes --------------------------------------------------------------------------

    def append(self, offset: int, position: int) -> None:
        """Index ``offset`` (a batch's last offset) at ``position`` in the .log.

        Raises :class:`IndexFullError`, :class:`IndexOrderError` when ``offset`` is not
        above the last entry, or :class:`IndexOffsetOverflowError`."""
        self._ensure_loaded()
        if self._count >= self.max_entries:
            raise IndexFullError(f"{self._path} is full ({self._count} entries)")
        if self._count and offset <= self._base_offset + self._relative[-1]:
            raise IndexOrderError(
                f"offset {offset} is not above the last offset "
                f"{self._base_offset + self._relative[-1]} of {self._path}"
            )
        relative = self.relative_offset(offset)
        if not 0 <= position <= INT32_MAX:
            raise ValueError(f"position {position} does not fit {self._path}")
        self._append_entry(_ENTRY.pack(relative, position))
        self._relative.append(relative)
        self._positions.append(position)

    def truncate_to(self, offset: int) -> None:
        """Drop every entry whose offset is >= ``offset``."""
        self._ensure_loaded()
        self.truncate_to_entries(bisect_left(self._relative, offset - self._base_offset))

    # -- hooks ---------------------------------------------------------------------------

    def _load_entries(self, data: memoryview, count: int) -> None:
        both = array("i")
        both.frombytes(data)
        if _SWAP:
            both.byteswap()
        self._relative = both[0::2]
        self._positions = both[1::2]

    def _truncate_entries(self, n: int) -> None:
        del self._relative[n:]
        del self._positions[n:]

    def _check_entries(self) -> None:
        if self._count and self._relative[-1] < 0:
            raise CorruptIndexError(
                f"corrupt offset index {self._path}: it has entries but its last offset "
                f"{self._base_offset + self._relative[-1]} is below the base offset "
                f"{self._base_offset}"
            )

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

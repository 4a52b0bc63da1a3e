"""Writing one cleaned segment: ``<base>.log.cleaned`` and its indexes.

The segment's own append path is not used because it writes under the live names; this
writes the same files under the ``.cleaned`` suffix, with index entries by the same rule
as :meth:`~millpond.storage.segment.LogSegment.append` (one per batch once more than
``index.interval.bytes`` were written since the last; the time index gets the largest
timestamp so far, and on finish the segment's largest, as a roll records it), so the
segment opened after the swap needs no rebuild. The ``.txnindex.cleaned`` exists only
when aborted transactions were kept.

The indexes are created without the ``segment.index.bytes`` cap: the group's sources
fit it (see :func:`~millpond.storage.cleaner.clean.group_segments`) and a cleaned
segment never takes appends.

Used by the cleaning's thread only, on files nobody else opens until the swap.
"""

from __future__ import annotations

from millpond.storage.cleaner.swap import remove_segment_files, segment_path
from millpond.storage.fs import FileSystem
from millpond.storage.names import (
    CLEANED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
)
from millpond.storage.offset_index import OffsetIndex
from millpond.storage.time_index import TimeIndex, TimestampOffset
from millpond.storage.txn_index import AbortedTxn, TransactionIndex
from millpond.wire.records import RecordBatch

UNCAPPED_INDEX_BYTES = 2**31 - 1


class CleanedSegmentWriter:
    """Appends kept batches to a new ``.cleaned`` segment, then syncs and closes it."""

    def __init__(
        self, fs: FileSystem, directory: str, base_offset: int, index_interval_bytes: int
    ) -> None:
        self.fs, self.directory, self.base_offset = fs, directory, base_offset
        remove_segment_files(fs, directory, base_offset, CLEANED_SUFFIX)
        self._log = fs.open(self._path(LOG_SUFFIX), create=True)
        self._offsets = OffsetIndex(fs, self._path(INDEX_SUFFIX), base_offset, UNCAPPED_INDEX_BYTES)
        self._times = TimeIndex(
            fs, self._path(TIME_INDEX_SUFFIX), base_offset, UNCAPPED_INDEX_BYTES
        )
        self._txns: TransactionIndex | None = None
        self._interval = index_interval_bytes
        self._since_entry = 0
        self._best = TimestampOffset(-1, base_offset)
        self.size = 0
        self.batches = 0

    def _path(self, suffix: str) -> str:
        return segment_path(self.directory, self.base_offset, suffix, CLEANED_SUFFIX)

    def append(self, data: bytes) -> None:
        batch = RecordBatch(data)
        if batch.max_timestamp > self._best.timestamp:
            self._best = TimestampOffset(batch.max_timestamp, batch.last_offset)
        if self._since_entry > self._interval:
            self._offsets.append(batch.last_offset, self.size)
            self._times.maybe_append(*self._best)
            self._since_entry = 0
        self._log.append(data)
        self.size += len(data)
        self._since_entry += len(data)
        self.batches += 1

    def add_aborted(self, txn: AbortedTxn) -> None:
        if self._txns is None:
            self._txns = TransactionIndex(self.fs, self._path(TXN_INDEX_SUFFIX), self.base_offset)
            self._txns.reset()
        self._txns.append(txn)

    def finish(self) -> None:
        """Record the largest timestamp, sync everything, release the files."""
        self._offsets.load()
        self._times.maybe_append(*self._best, skip_full_check=True)
        self._log.sync()
        self._offsets.flush()
        self._times.flush()
        self._log.close()
        self._offsets.close()
        self._times.close()
        if self._txns is not None:
            self._txns.flush()
            self._txns.close()

    def discard(self) -> None:
        """Close and remove whatever was written."""
        self._log.close()
        self._offsets.close()
        self._times.close()
        if self._txns is not None:
            self._txns.close()
        remove_segment_files(self.fs, self.directory, self.base_offset, CLEANED_SUFFIX)

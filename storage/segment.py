"""One log segment: a ``.log`` file of record batches plus its three indexes.

The ``.log`` file is the record batches exactly as produced (v2 batches back to back),
so a fetch is a *region* of the file that the broker sends without looking inside.
Everything here reads batch *headers* only (the 61 bytes :mod:`millpond.wire.records`
describes), never records, except :meth:`LogSegment.find_offset_by_timestamp`, which
decodes the one batch that holds the answer (ListOffsets is not a hot path).

Index entries, as Kafka 4's segment adds them: per batch, once more than
``index.interval.bytes`` were written since the last entry; the entry maps the batch's
*last* offset to the position where the batch starts (a lookup finds the greatest
indexed offset <= the target, and the batch holding the target starts at or after
that position). Recovery rebuilds them by the same rule, so a rebuilt index equals
the one written on append (and Kafka's own, byte for byte).

Failures: a write that raises is undone (the file is cut back to where the append
started) before the error propagates, so the segment never holds a partial batch that
memory does not know about. If even the undo fails the segment is marked
:attr:`LogSegment.failed` and its log must go offline (Kafka fails the log directory).

Not thread-safe; the caller (the partition's :class:`~millpond.storage.log.Log`)
serializes every call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from millpond.storage.clock import Clock
from millpond.storage.config import LogConfig
from millpond.storage.fs import Buffer, File, FileSystem, join
from millpond.storage.index_file import CorruptIndexError
from millpond.storage.names import (
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    segment_file_name,
)
from millpond.storage.offset_index import OffsetIndex
from millpond.storage.segment_read import (
    BatchHeader,
    FetchData,
    FileRegion,
    TimestampAndOffset,
    walk_headers,
)
from millpond.storage.time_index import TimeIndex, TimestampOffset
from millpond.storage.txn_index import TransactionIndex
from millpond.wire.exceptions import DecodeError
from millpond.wire.records import BATCH_HEADER_SIZE, LOG_OVERHEAD, RecordBatch, iter_batches
from millpond.wire.records.batch import HEADER

NO_TIMESTAMP = -1
INT32_MAX = 2**31 - 1
#: Bytes read at a time by recovery, which must read (and CRC) every byte anyway.
RECOVERY_CHUNK = 1024 * 1024


class SegmentOffsetOverflowError(ValueError):
    """An offset too far above the segment's base offset for its 4-byte relative offsets."""


class LogSegment:
    """A segment: its ``.log`` (open for appends and reads) and lazily loaded indexes."""

    __slots__ = (
        "_bytes_since_index_entry",
        "_clock",
        "_created_ms",
        "_dir",
        "_fs",
        "_index_interval",
        "_indexes_checked",
        "_last_modified_ms",
        "_log",
        "_max_ts",
        "_offset_index",
        "_rolling_timestamp",
        "_time_index",
        "_txn_index",
        "base_offset",
        "deleted",
        "failed",
        "roll_jitter_ms",
    )

    def __init__(
        self,
        fs: FileSystem,
        directory: str,
        base_offset: int,
        config: LogConfig,
        clock: Clock,
        *,
        roll_jitter_ms: int = 0,
        create: bool = False,
    ) -> None:
        self._fs = fs
        self._dir = directory
        self.base_offset = base_offset
        self._clock = clock
        self._index_interval = config.index_interval_bytes
        self.roll_jitter_ms = roll_jitter_ms
        self._log = fs.open(self._path(LOG_SUFFIX), create=create)
        size = config.segment_index_bytes
        self._offset_index = OffsetIndex(fs, self._path(INDEX_SUFFIX), base_offset, size)
        self._time_index = TimeIndex(fs, self._path(TIME_INDEX_SUFFIX), base_offset, size)
        self._txn_index = TransactionIndex(fs, self._path(TXN_INDEX_SUFFIX), base_offset)
        self._indexes_checked = False
        self._bytes_since_index_entry = 0
        self._rolling_timestamp: int | None = None  # first batch's max timestamp, if loaded
        self._max_ts: TimestampOffset | None = None  # None: not read from the index yet
        self._created_ms = clock.now_ms()
        self._last_modified_ms = self._created_ms
        self.deleted = False
        self.failed = False

    def _path(self, suffix: str, extra: str = "") -> str:
        return join(self._dir, segment_file_name(self.base_offset, suffix, extra))

    # -- indexes -------------------------------------------------------------------------

    @property
    def offset_index(self) -> OffsetIndex:
        if not self._indexes_checked:
            self._check_indexes()
        return self._offset_index

    @property
    def time_index(self) -> TimeIndex:
        if not self._indexes_checked:
            self._check_indexes()
        return self._time_index

    @property
    def txn_index(self) -> TransactionIndex:
        if not self._indexes_checked:
            self._check_indexes()
        return self._txn_index

    def _check_indexes(self) -> None:
        """On first use, sanity-check the indexes and rebuild them from the ``.log``
        if they are wrong, so a damaged index costs a rebuild, never a wrong read.
        Done lazily because loading every index of every partition at start-up is what
        lazy indexes avoid."""
        self._indexes_checked = True
        try:
            self._offset_index.sanity_check()
            self._time_index.sanity_check()
            self._txn_index.sanity_check()
        except CorruptIndexError:
            self.recover()

    # -- sizes and times -----------------------------------------------------------------

    @property
    def log_file(self) -> File:
        return self._log

    @property
    def size(self) -> int:
        return self._log.size()

    def index_files_exist(self) -> bool:
        """Kafka's load-time check: a segment without its offset index is rebuilt."""
        return self._fs.exists(self._offset_index.path)

    @property
    def max_timestamp_so_far(self) -> TimestampOffset:
        """Largest batch max timestamp and its offset (from the time index until known)."""
        if self._max_ts is None:
            self._max_ts = self.time_index.last_entry
        return self._max_ts

    @property
    def largest_timestamp(self) -> int:
        """The segment's age for retention.ms: its largest record timestamp or, when no
        batch carries one, the last time this process appended to it (Kafka uses the
        file's mtime; the injected file system has none, so a segment loaded without
        timestamps counts from the load)."""
        ts = self.max_timestamp_so_far.timestamp
        return ts if ts >= 0 else self._last_modified_ms

    def time_waited_for_roll(self, now_ms: int, message_timestamp: int) -> int:
        """How long this segment has been filling: by record time when its first batch
        has a timestamp (so replayed old data rolls by its own time), else by wall time
        since the segment was created."""
        if self._rolling_timestamp is None and self.size:
            first = next(walk_headers(self._log, 0, self.size), None)
            self._rolling_timestamp = first.max_timestamp if first else None
        ts = self._rolling_timestamp
        if ts is not None and ts >= 0:
            return message_timestamp - ts
        return now_ms - self._created_ms

    def should_roll(
        self,
        config: LogConfig,
        messages_size: int,
        max_timestamp: int,
        max_offset: int,
        now_ms: int,
    ) -> bool:
        """Kafka's roll rule: the append would pass segment.bytes; the segment is
        non-empty and older than segment.ms minus its jitter; an index is full; or the
        append's last offset cannot be stored relative to this base offset."""
        size = self._log.size()
        if size > config.segment_bytes - messages_size:
            return True
        if size > 0:
            first_ts = self._rolling_timestamp  # inlined time_waited_for_roll: a hot path
            if first_ts is None:
                waited = self.time_waited_for_roll(now_ms, max_timestamp)
            else:
                waited = max_timestamp - first_ts if first_ts >= 0 else now_ms - self._created_ms
            if waited > config.max_segment_ms - self.roll_jitter_ms:
                return True
        if not self._indexes_checked:
            self._check_indexes()
        offset_index = self._offset_index
        return (
            offset_index.is_full
            or self._time_index.is_full
            or not offset_index.can_append_offset(max_offset)
        )

    # -- append --------------------------------------------------------------------------

    def append(
        self, records: Buffer, batches: Sequence[RecordBatch], now_ms: int | None = None
    ) -> None:
        """Write ``records`` (whole, already validated and stamped batches; ``batches``
        are their views, in order) with one file append; ``now_ms`` (the clock's, by
        default) is the time of the append."""
        if records:
            shape = [(b.last_offset, b.max_timestamp, b.size_in_bytes) for b in batches]
            self._append(records, shape, now_ms)

    def append_batch(
        self, records: Buffer, last_offset: int, max_timestamp: int, now_ms: int | None = None
    ) -> None:
        """:meth:`append` of exactly one batch whose header the caller already read (the
        produce path's common case: no batch view needed)."""
        self._append(records, ((last_offset, max_timestamp, len(records)),), now_ms)

    def _append(
        self, records: Buffer, shape: Sequence[tuple[int, int, int]], now_ms: int | None
    ) -> None:
        """The write and the index entries; ``shape`` is each batch's last offset, max
        timestamp and size.

        Index entries follow Kafka's LogSegment: per batch, once more than
        index.interval.bytes were written since the previous entry, an entry (the
        batch's last offset, the batch's position) goes to the offset index and the
        largest timestamp so far to the time index. Recovery rebuilds the same entries.
        """
        if not self._indexes_checked:
            self._check_indexes()
        largest_offset = shape[-1][0]
        if not self._offset_index.can_append_offset(largest_offset):
            raise SegmentOffsetOverflowError(
                f"offset {largest_offset} does not fit segment {self.base_offset}"
            )
        log = self._log
        position = log.size()
        saved = (self._max_ts, self._rolling_timestamp, self._bytes_since_index_entry)
        entries = (self._offset_index.entries, self._time_index.entries)
        try:
            log.append(records)
            if position == 0:
                self._rolling_timestamp = shape[0][1]
            self._index_batches(shape, position)
        except BaseException:
            self._max_ts, self._rolling_timestamp, self._bytes_since_index_entry = saved
            self._undo_append(position, entries)
            raise
        self._last_modified_ms = self._clock.now_ms() if now_ms is None else now_ms

    def _index_batches(self, shape: Sequence[tuple[int, int, int]], position: int) -> None:
        interval = self._index_interval
        since_entry = self._bytes_since_index_entry
        best = self._max_ts
        if best is None:
            best = self.max_timestamp_so_far
        for last_offset, max_timestamp, size in shape:
            if max_timestamp > best.timestamp:
                best = self._max_ts = TimestampOffset(max_timestamp, last_offset)
            if since_entry > interval:
                self._offset_index.append(last_offset, position)
                self._time_index.maybe_append(best.timestamp, best.offset)
                since_entry = 0
            position += size
            since_entry += size
        self._bytes_since_index_entry = since_entry

    def _undo_append(self, position: int, entries: tuple[int, int]) -> None:
        """Cut the ``.log`` back to ``position`` and drop the index entries appended since
        (pending ones: that only touches memory)."""
        try:
            if self._log.size() != position:
                self._log.truncate(position)
            self._offset_index.truncate_to_entries(entries[0])
            self._time_index.truncate_to_entries(entries[1])
        except OSError:
            self.failed = True

    # -- reads ---------------------------------------------------------------------------

    def translate_offset(self, offset: int, start_position: int = 0) -> BatchHeader | None:
        """The first batch whose last offset is >= ``offset`` (the batch holding it, or
        the next one after a gap), or None when the segment ends before it."""
        entry = self.offset_index.lookup(offset)
        for header in walk_headers(self._log, max(entry.position, start_position), self.size):
            if header.last_offset >= offset:
                return header
        return None

    def read(
        self,
        start_offset: int,
        max_size: int,
        max_position: int | None = None,
        min_one_message: bool = True,
    ) -> FetchData | None:
        """Whole batches from the one holding ``start_offset``, at most ``max_size``
        bytes and never past ``max_position`` (a batch boundary: the high watermark's
        position, or the end); the first batch comes whole even if larger than
        ``max_size`` when ``min_one_message`` (Kafka's rule, so a consumer always makes
        progress). None when the segment has nothing at or after ``start_offset``."""
        if max_size < 0:
            raise ValueError(f"invalid max size {max_size}")
        end = self.size if max_position is None else max_position
        first = self.translate_offset(start_offset)
        if first is None:
            return None
        position = first.position
        limit = max(max_size, first.size) if min_one_message else max_size
        stop = end if position + limit >= end else self._boundary_below(position, position + limit)
        region = FileRegion(self._log, position, max(0, stop - position))
        return FetchData(start_offset, self.base_offset, position, region, limit < first.size)

    def _boundary_below(self, position: int, limit: int) -> int:
        """The last batch boundary <= ``limit``, walking from the nearest indexed batch
        start at or after ``position`` (index entries are batch starts), so the walk is
        bounded by index.interval.bytes plus one append, not by the fetch size."""
        below = self.offset_index.lookup_position(limit)
        start = position if below is None else max(position, below.position)
        stop = start
        for header in walk_headers(self._log, start, self.size):
            if header.position + header.size > limit:
                break
            stop = header.position + header.size
        return stop

    def read_next_offset(self) -> int:
        """One past the last offset stored here (walks from the last index entry)."""
        index = self.offset_index
        start = index.entry(index.entries - 1).position if index.entries else 0
        last = self.base_offset - 1
        for header in walk_headers(self._log, start, self.size):
            last = header.last_offset
        return last + 1

    def find_offset_by_timestamp(
        self, timestamp: int, starting_offset: int
    ) -> TimestampAndOffset | None:
        """The first record at or after ``starting_offset`` whose timestamp is >=
        ``timestamp``; None if no record here qualifies. Uses the time index to skip
        ahead, batch max timestamps to skip batches, and decodes one batch."""
        indexed = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(indexed.offset, starting_offset)).position
        for header in walk_headers(self._log, position, self.size):
            if header.max_timestamp < timestamp or header.last_offset < starting_offset:
                continue
            batch = RecordBatch(self._log.read_at(header.position, header.size))
            epoch = batch.partition_leader_epoch
            for record in batch.records():
                if record.timestamp >= timestamp and record.offset >= starting_offset:
                    return TimestampAndOffset(record.timestamp, record.offset, epoch)
        return None

    # -- recovery and truncation -----------------------------------------------------------

    def recover(self, on_batch: Callable[[RecordBatch], None] | None = None) -> int:
        """Validate every batch (length, magic, CRC, offsets increasing and within this
        segment), cut the file at the first bad byte and rebuild the offset and time
        indexes. Returns the number of bytes cut. ``on_batch`` sees each valid batch
        (the log rebuilds its leader-epoch cache from them)."""
        self._indexes_checked = True
        self._offset_index.reset()
        self._time_index.reset()
        self._max_ts = TimestampOffset(NO_TIMESTAMP, self.base_offset)
        size = self.size
        valid, last_entry = 0, 0
        prev_last = self.base_offset - 1
        for batch in self._valid_batches(size):
            if batch.base_offset <= prev_last or batch.last_offset < batch.base_offset:
                break
            if batch.last_offset - self.base_offset > INT32_MAX:
                break
            if batch.max_timestamp > self._max_ts.timestamp:
                self._max_ts = TimestampOffset(batch.max_timestamp, batch.last_offset)
            if valid - last_entry > self._index_interval:
                self._offset_index.append(batch.last_offset, valid)
                self._time_index.maybe_append(*self._max_ts)
                last_entry = valid
            if on_batch is not None:
                on_batch(batch)
            valid += batch.size_in_bytes
            prev_last = batch.last_offset
        if valid < size:
            self._log.truncate(valid)
        try:
            self._txn_index.truncate_to(prev_last + 1)
        except CorruptIndexError:
            self._txn_index.reset()
        self._time_index.maybe_append(*self._max_ts, skip_full_check=True)
        self._bytes_since_index_entry = valid - last_entry
        self._rolling_timestamp = None
        return size - valid

    def _valid_batches(self, size: int) -> Iterator[RecordBatch]:
        """Batches from the start of the file that pass the wire layer's length and
        magic checks and their CRC, stopping at the first that does not."""
        pos = 0
        want = RECOVERY_CHUNK
        while pos < size:
            chunk = self._log.read_at(pos, min(want, size - pos))
            consumed = 0
            try:
                for batch in iter_batches(chunk, allow_truncated_tail=True):
                    if not batch.is_valid():
                        return
                    yield batch
                    consumed += batch.size_in_bytes
            except DecodeError:
                return
            if consumed == 0:
                # Nothing whole in the chunk: a torn tail, or one batch bigger than it.
                if len(chunk) < BATCH_HEADER_SIZE:
                    return
                need = HEADER.unpack_from(chunk)[1] + LOG_OVERHEAD
                if pos + need > size or need <= len(chunk):
                    return
                want = need
                continue
            pos += consumed
            want = RECOVERY_CHUNK

    def truncate_to(self, offset: int) -> int:
        """Remove every batch holding an offset >= ``offset`` (a batch straddling it goes
        whole) and the index entries past it. Returns the bytes removed."""
        hit = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        removed = 0
        if hit is not None:
            removed = self.size - hit.position
            self._log.truncate(hit.position)
        if self.size == 0:
            self._created_ms = self._clock.now_ms()
            self._rolling_timestamp = None
        self._bytes_since_index_entry = 0
        self._max_ts = self._scan_largest_timestamp()
        return removed

    def _scan_largest_timestamp(self) -> TimestampOffset:
        """The time index's last entry, or a larger batch timestamp after it."""
        best = self.time_index.last_entry
        start = self.offset_index.lookup(best.offset).position
        for header in walk_headers(self._log, start, self.size):
            if header.max_timestamp > best.timestamp:
                best = TimestampOffset(header.max_timestamp, header.last_offset)
        return best

    # -- lifecycle -----------------------------------------------------------------------

    def on_become_inactive(self) -> None:
        """On roll: record the largest timestamp in the time index (retention reads it
        from there after a restart), write the pending index entries and trim torn index
        tails, so an inactive segment's index files are complete (the cleaner sizes
        them)."""
        best = self.max_timestamp_so_far
        self.time_index.maybe_append(best.timestamp, best.offset, skip_full_check=True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()

    def flush(self) -> None:
        """fsync the log, then the indexes (an index entry never outlives its data)."""
        self._log.sync()
        self._offset_index.flush()
        self._time_index.flush()
        self._txn_index.flush()

    def close(self) -> None:
        """Record the largest timestamp (as on roll) and release the files."""
        try:
            if self._max_ts is not None and not self.deleted:
                best = self._max_ts
                self._time_index.maybe_append(best.timestamp, best.offset, skip_full_check=True)
        finally:
            self._offset_index.close()
            self._time_index.close()
            self._txn_index.close()
            self._log.close()

    def rename_to_deleted(self) -> None:
        """Rename the four files to ``*.deleted``. The ``.log`` stays open, so regions
        already handed to fetches stay readable until :meth:`delete` (Kafka's reason for
        deleting after ``file.delete.delay.ms``)."""
        if self.deleted:
            return
        for index in (self._offset_index, self._time_index, self._txn_index):
            index.rename_to(index.path + DELETED_SUFFIX)
        self._fs.rename(self._path(LOG_SUFFIX), self._path(LOG_SUFFIX, DELETED_SUFFIX))
        self.deleted = True

    def delete(self) -> None:
        """Close and remove the files, under whichever names they have now."""
        self._log.close()
        extra = DELETED_SUFFIX if self.deleted else ""
        for index in (self._offset_index, self._time_index, self._txn_index):
            index.delete()
        log_path = self._path(LOG_SUFFIX, extra)
        if self._fs.exists(log_path):
            self._fs.remove(log_path)

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size})"

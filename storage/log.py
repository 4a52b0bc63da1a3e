"""A partition's log: segments in one directory, appended to at the end, read anywhere.

The broker's produce path calls :meth:`Log.append` with the request's record bytes:
the log walks the batch headers (no records are decoded), checks length, magic and
CRC, stamps offsets and the leader epoch in place (fields the CRC leaves out), rolls
if needed and writes the whole request with one file append. A fetch calls
:meth:`Log.read` and gets a :class:`~millpond.storage.segment.FileRegion` to send
straight from the segment file.

Clock, file system and randomness (segment jitter) come in through the constructor, so
rolls, retention and recovery are tested with a manual clock and injected faults.

Durability (see :mod:`millpond.storage.config` for ``flush.messages``/``flush.ms``):
nothing is fsynced on the append path by default. :meth:`Log.flush` syncs the
segments up to an offset and advances the *recovery point*; after an unclean shutdown
only what lies past the recovery point is scanned. :meth:`Log.close` flushes all, so
the log manager can then write the clean-shutdown marker and the checkpoints.

Not thread-safe; the caller serializes every call on one log (Kafka's log lock).
"""

from __future__ import annotations

import random
import struct
from bisect import bisect_right
from collections.abc import Callable, Sequence

from millpond.storage import log_read
from millpond.storage.clock import Clock
from millpond.storage.config import LogConfig
from millpond.storage.fs import Buffer, FileSystem
from millpond.storage.leader_epochs import LeaderEpochCache
from millpond.storage.log_loader import load_log, new_segment

# ListOffsets' special targets, re-exported (the broker imports them from here).
from millpond.storage.log_read import EARLIEST_TIMESTAMP as EARLIEST_TIMESTAMP
from millpond.storage.log_read import LATEST_TIMESTAMP as LATEST_TIMESTAMP
from millpond.storage.log_read import MAX_TIMESTAMP as MAX_TIMESTAMP
from millpond.storage.log_types import (
    CorruptRecordError,
    InvalidAppendOffsetError,
    LogAppendInfo,
    LogOfflineError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
)
from millpond.storage.retention import (
    Predicate,
    deletable_segments,
    log_start_breached,
    retention_bytes_breached,
    retention_ms_breached,
)
from millpond.storage.segment import LogSegment
from millpond.storage.segment_read import FetchData, TimestampAndOffset
from millpond.wire.crc32c import crc32c
from millpond.wire.exceptions import DecodeError
from millpond.wire.records import BATCH_HEADER_SIZE, LOG_OVERHEAD, RecordBatch, iter_batches
from millpond.wire.records.batch import ATTRIBUTES_OFFSET, HEADER, MAGIC

_BATCH_LENGTH = struct.Struct(">i")  # at byte 8 of a batch: its size minus LOG_OVERHEAD
#: A batch's first 16 bytes: base offset, batch length, partition leader epoch.
_STAMP = struct.Struct(">qii")


class Log:
    """One partition's log (see the module docstring)."""

    __slots__ = (
        "_bases",
        "_clock",
        "_fs",
        "_high_watermark",
        "_last_flush_ms",
        "_log_end_offset",
        "_log_start_offset",
        "_offline",
        "_pending_deletes",
        "_recovery_point",
        "_rng",
        "_segments",
        "config",
        "directory",
        "leader_epochs",
        "recovered_bytes_cut",
    )

    def __init__(
        self,
        fs: FileSystem,
        directory: str,
        config: LogConfig,
        clock: Clock,
        *,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        had_clean_shutdown: bool = False,
        leader_epochs: LeaderEpochCache | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self._fs = fs
        self.directory = directory
        self.config = config
        self._clock = clock
        self._rng = rng or random.Random()  # noqa: S311 (roll jitter, not security)
        self.leader_epochs = leader_epochs
        loaded = load_log(
            fs,
            directory,
            config,
            clock,
            self._rng,
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            had_clean_shutdown=had_clean_shutdown,
            on_batch=self._note_epoch if leader_epochs is not None else None,
        )
        self._segments = loaded.segments
        self._bases = [s.base_offset for s in self._segments]
        self._log_start_offset = loaded.log_start_offset
        self._recovery_point = loaded.recovery_point
        self._log_end_offset = loaded.log_end_offset
        self.recovered_bytes_cut = loaded.recovered_bytes_cut
        self._high_watermark = loaded.log_start_offset
        self._last_flush_ms = clock.monotonic_ms()
        self._pending_deletes: list[tuple[int, LogSegment]] = []
        self._offline = False
        if leader_epochs is not None:
            leader_epochs.truncate_from_end(self._log_end_offset)
            leader_epochs.truncate_from_start(self._log_start_offset)

    # -- offsets ---------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self._log_end_offset

    @property
    def recovery_point(self) -> int:
        """Offsets below this are on disk (what recovery-point-offset-checkpoint stores)."""
        return self._recovery_point

    @property
    def high_watermark(self) -> int:
        return self._high_watermark

    def update_high_watermark(self, offset: int) -> int:
        """Set the high watermark (the replica manager's decision), clamped to
        [log start, log end]; returns the value kept."""
        self._high_watermark = min(max(offset, self._log_start_offset), self._log_end_offset)
        return self._high_watermark

    @property
    def segments(self) -> list[LogSegment]:
        """The live segments, oldest first (a copy)."""
        return list(self._segments)

    @property
    def active_segment(self) -> LogSegment:
        return self._segments[-1]

    @property
    def size(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def file_system(self) -> FileSystem:
        return self._fs

    # -- append ----------------------------------------------------------------------------

    def append(
        self,
        records: Buffer,
        *,
        assign_offsets: bool,
        leader_epoch: int = -1,
        validate_crc: bool = True,
        batches: list[RecordBatch] | None = None,
    ) -> LogAppendInfo:
        """Append the batches in ``records`` with one write.

        ``assign_offsets`` (the leader's rule) stamps consecutive offsets from the log
        end and ``leader_epoch`` into each batch, and the append time on a
        LogAppendTime topic; pass a writable buffer (a read-only one is copied). Without
        it (replication) the batches keep their offsets, which must start at or after
        the log end and increase. A CRC is checked unless the caller already did.
        A caller that already walked ``records`` (a writable buffer) and checked the
        batches' lengths, sizes and CRCs passes their views as ``batches``, so the
        produce path walks the headers once.
        """
        if self._offline:
            self._check_online()
        view = memoryview(records).cast("B")
        config = self.config
        if batches is None:
            if assign_offsets and view.readonly:
                view = memoryview(bytearray(view))
            size = len(view)
            if size >= BATCH_HEADER_SIZE and assign_offsets and not config.log_append_time:
                header = HEADER.unpack_from(view)
                if header[1] + LOG_OVERHEAD == size:
                    return self._append_one(view, header, leader_epoch, validate_crc)
            batches = self._walk(view, validate_crc, config.max_message_bytes)
        elif assign_offsets and view.readonly:
            raise ValueError("batches to stamp must be views of a writable buffer")
        size = len(view)
        if size > config.segment_bytes:
            raise RecordTooLargeError(f"{size} bytes exceed segment.bytes")
        now = self._clock.now_ms()
        info = self._stamp(batches, assign_offsets, leader_epoch, now, size)
        segment = self._segments[-1]
        if segment.should_roll(config, size, info.max_timestamp, info.last_offset, now):
            segment = self.roll(info.first_offset)
        try:
            segment.append(view, batches, now)
        except BaseException:
            self._offline = segment.failed
            raise
        self._log_end_offset = info.last_offset + 1
        if self.leader_epochs is not None:
            self._note_epochs(batches, assign_offsets, leader_epoch)
        if self._log_end_offset - self._recovery_point >= config.flush_messages:
            self.flush()
        return info

    def _append_one(
        self, view: memoryview, header: tuple[int, ...], epoch: int, validate_crc: bool
    ) -> LogAppendInfo:
        """The leader's append of a request that is exactly one batch (most are): the
        same checks, stamps and bookkeeping as the general path, from the one header
        read, without batch views (a third of the time of a 16 KiB append)."""
        size = len(view)
        config = self.config
        if header[3] != MAGIC:
            raise CorruptRecordError(f"record batch magic {header[3]}, expected {MAGIC}")
        if size > config.max_message_bytes:
            raise RecordTooLargeError(
                f"batch of {size} bytes exceeds max.message.bytes {config.max_message_bytes}"
            )
        if validate_crc and crc32c(view[ATTRIBUTES_OFFSET:]) != header[4]:
            raise CorruptRecordError(f"batch at offset {header[0]} fails its CRC")
        if size > config.segment_bytes:
            raise RecordTooLargeError(f"{size} bytes exceed segment.bytes")
        first = self._log_end_offset
        last = first + header[6]
        _STAMP.pack_into(view, 0, first, header[1], epoch)
        now = self._clock.now_ms()
        max_ts = header[8]
        segment = self._segments[-1]
        if segment.should_roll(config, size, max_ts, last, now):
            segment = self.roll(first)
        try:
            segment.append_batch(view, last, max_ts, now)
        except BaseException:
            self._offline = segment.failed
            raise
        self._log_end_offset = last + 1
        if self.leader_epochs is not None:
            self._assign_epoch(epoch, first)
        if last + 1 - self._recovery_point >= config.flush_messages:
            self.flush()
        return LogAppendInfo(
            first, last, max_ts, last if max_ts >= 0 else -1, -1,
            self._log_start_offset, 1, header[12], size,
        )  # fmt: skip

    @staticmethod
    def _walk(view: memoryview, validate_crc: bool, limit: int) -> list[RecordBatch]:
        """The batches in ``view``, after the length, magic, size and CRC checks."""
        size = len(view)
        try:
            # One batch (most requests): RecordBatch checks it as the walk would.
            one = size >= BATCH_HEADER_SIZE and (
                _BATCH_LENGTH.unpack_from(view, 8)[0] + LOG_OVERHEAD == size
            )
            batches = [RecordBatch(view)] if one else list(iter_batches(view))
        except DecodeError as exc:
            raise CorruptRecordError(str(exc)) from None
        if not batches:
            raise CorruptRecordError("no record batches to append")
        if not validate_crc and size <= limit:
            return batches  # nothing to check: no batch can be over the limit
        for batch in batches:
            if batch.size_in_bytes > limit:
                raise RecordTooLargeError(
                    f"batch of {batch.size_in_bytes} bytes exceeds max.message.bytes {limit}"
                )
            if validate_crc and not batch.is_valid():
                raise CorruptRecordError(f"batch at offset {batch.base_offset} fails its CRC")
        return batches

    def _stamp(
        self, batches: list[RecordBatch], assign: bool, epoch: int, now: int, size: int
    ) -> LogAppendInfo:
        """Stamp (leader) or check (replica) offsets; gather what the append reports
        (``size``: the bytes of the batches, which fill the request exactly)."""
        next_offset = self._log_end_offset
        append_time = now if assign and self.config.log_append_time else -1
        max_ts, offset_of_max, count = -1, -1, 0
        for batch in batches:
            if assign:
                batch.set_base_offset(next_offset)
                batch.set_partition_leader_epoch(epoch)
                if append_time >= 0:
                    batch.set_log_append_time(append_time)
            elif batch.base_offset < next_offset or batch.last_offset < batch.base_offset:
                raise InvalidAppendOffsetError(
                    f"batch at {batch.base_offset} does not follow offset {next_offset - 1}"
                )
            last = batch.last_offset
            next_offset = last + 1
            timestamp = batch.max_timestamp
            if timestamp > max_ts:
                max_ts, offset_of_max = timestamp, last
            count += batch.records_count
        first = batches[0].base_offset
        return LogAppendInfo(
            first, next_offset - 1, max_ts, offset_of_max, append_time,
            self._log_start_offset, len(batches), count, size,
        )  # fmt: skip

    def _note_epochs(self, batches: list[RecordBatch], assigned: bool, epoch: int) -> None:
        if assigned:
            if epoch >= 0:
                self._assign_epoch(epoch, batches[0].base_offset)
            return
        for batch in batches:
            self._note_epoch(batch)

    def _note_epoch(self, batch: RecordBatch) -> None:
        self._assign_epoch(batch.partition_leader_epoch, batch.base_offset)

    def _assign_epoch(self, epoch: int, start_offset: int) -> None:
        cache = self.leader_epochs
        if cache is None or epoch < 0:
            return
        latest = cache.latest_epoch
        if latest is None or epoch > latest:
            # Written at the next flush, as Kafka does since 3.7 (KAFKA-15046): an fsync
            # per partition's first append made produce to many partitions crawl. Entries
            # past the recovery point are rebuilt from the batches if the broker crashes.
            cache.assign(epoch, start_offset, flush=False)

    # -- roll --------------------------------------------------------------------------------

    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Start a new active segment at max(``expected_next_offset``, log end). The old
        one is not synced here (that would stall appends): :meth:`maybe_flush` does it."""
        self._check_online()
        base = max(expected_next_offset or 0, self._log_end_offset)
        active = self._segments[-1]
        if base == active.base_offset and active.size == 0:
            return active  # nothing to roll away from (Kafka recreates it; same result)
        if base < active.base_offset:
            raise ValueError(f"cannot roll to {base}, below the active segment {active}")
        segment = new_segment(self._fs, self.directory, base, self.config, self._clock, self._rng)
        active.on_become_inactive()
        self._segments.append(segment)
        self._bases.append(base)
        return segment

    # -- read ------------------------------------------------------------------------------

    def read(
        self,
        start_offset: int,
        max_bytes: int,
        *,
        max_offset: int | None = None,
        min_one_message: bool = True,
    ) -> FetchData:
        """Whole batches from the one holding ``start_offset``, at most ``max_bytes``
        (but always the first batch whole if ``min_one_message``), and none holding an
        offset at or past ``max_offset`` (the high watermark for consumers, the last
        stable offset for read_committed; the log end by default). An empty region when
        there is nothing to read yet."""
        if not self._log_start_offset <= start_offset <= self._log_end_offset:
            raise OffsetOutOfRangeError(
                f"offset {start_offset} is outside [{self._log_start_offset}, "
                f"{self._log_end_offset}]"
            )
        end = self._log_end_offset
        upper = end if max_offset is None else min(max_offset, end)
        return log_read.read_segments(
            self._segments, self._bases, start_offset, max_bytes, upper, end, min_one_message
        )

    def find_offset_by_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets: the first record with a timestamp >= ``timestamp``, or the
        special targets -2 (earliest), -1 (latest) and -3 (the record with the largest
        timestamp). None when no record is that recent."""
        return log_read.find_offset_by_timestamp(
            self._segments, timestamp, self._log_start_offset, self._log_end_offset,
            self.leader_epochs,
        )  # fmt: skip

    # -- truncation ------------------------------------------------------------------------

    def truncate_to(self, offset: int) -> bool:
        """Remove everything at or after ``offset`` (replication: a follower cutting back
        to its leader's log). True if anything was removed."""
        self._check_online()
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        if offset >= self._log_end_offset:
            if self.leader_epochs is not None:
                self.leader_epochs.truncate_from_end(self._log_end_offset)
            return False
        if self._bases[0] > offset:
            self.truncate_fully_and_start_at(offset)
            return True
        keep = bisect_right(self._bases, offset)
        self._remove_segments(self._segments[keep:])
        self._segments[-1].truncate_to(offset)
        self._log_end_offset = offset
        self._log_start_offset = min(self._log_start_offset, offset)
        self._recovery_point = min(self._recovery_point, offset)
        self._high_watermark = min(self._high_watermark, offset)
        if self.leader_epochs is not None:
            self.leader_epochs.truncate_from_end(offset)
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Empty the log and restart it at ``offset`` (a replica too far behind)."""
        self._check_online()
        self._remove_segments(list(self._segments))
        segment = new_segment(self._fs, self.directory, offset, self.config, self._clock, self._rng)
        self._segments, self._bases = [segment], [offset]
        self._log_start_offset = self._log_end_offset = offset
        self._recovery_point = self._high_watermark = offset
        if self.leader_epochs is not None:
            self.leader_epochs.clear()

    def delete_records(self, new_log_start_offset: int) -> bool:
        """DeleteRecords: advance the log start offset (never past the high watermark);
        the next :meth:`delete_old_segments` removes the segments wholly below it. True
        if the log start offset moved."""
        self._check_online()
        if new_log_start_offset > self._high_watermark:
            raise OffsetOutOfRangeError(
                f"log start offset {new_log_start_offset} would pass the high watermark "
                f"{self._high_watermark}"
            )
        if new_log_start_offset <= self._log_start_offset:
            return False
        self._log_start_offset = new_log_start_offset
        if self.leader_epochs is not None:
            self.leader_epochs.truncate_from_start(new_log_start_offset)
        return True

    # -- retention -------------------------------------------------------------------------

    def delete_old_segments(self) -> int:
        """One retention pass: remove the segments below the log start offset and, under
        cleanup.policy=delete, those past retention.ms or retention.bytes; then finish
        removals whose file.delete.delay.ms has passed. Returns segments removed."""
        self._check_online()
        removed = self._delete_matching(log_start_breached(self._log_start_offset))
        config = self.config
        if config.delete:
            if 0 <= config.retention_bytes <= self.size:
                removed += self._delete_matching(
                    retention_bytes_breached(self.size, config.retention_bytes)
                )
            if config.retention_ms >= 0:
                now = self._clock.now_ms()
                removed += self._delete_matching(retention_ms_breached(now, config.retention_ms))
        self.delete_pending_files()
        return removed

    def _delete_matching(self, predicate: Predicate) -> int:
        doomed = deletable_segments(
            self._segments,
            predicate,
            high_watermark=self._high_watermark,
            log_end_offset=self._log_end_offset,
        )
        if not doomed:
            return 0
        if len(doomed) == len(self._segments):
            self.roll()
        self._remove_segments(doomed)
        self._log_start_offset = max(self._log_start_offset, self._bases[0])
        if self.leader_epochs is not None:
            self.leader_epochs.truncate_from_start(self._log_start_offset)
        return len(doomed)

    def _remove_segments(self, doomed: list[LogSegment]) -> None:
        """Take segments out of the log and rename their files to ``.deleted``; the files
        go after file.delete.delay.ms (fetches may still be sending from them)."""
        due = self._clock.monotonic_ms() + self.config.file_delete_delay_ms
        gone = {id(s) for s in doomed}
        self._segments = [s for s in self._segments if id(s) not in gone]
        self._bases = [s.base_offset for s in self._segments]
        for segment in doomed:
            segment.rename_to_deleted()
            self._pending_deletes.append((due, segment))

    def delete_pending_files(self) -> int:
        """Remove the ``.deleted`` files whose delay has passed; returns how many segments."""
        now = self._clock.monotonic_ms()
        ready = [s for due, s in self._pending_deletes if due <= now]
        self._pending_deletes = [(due, s) for due, s in self._pending_deletes if due > now]
        for segment in ready:
            segment.delete()
        return len(ready)

    # -- compaction ------------------------------------------------------------------------

    def replace_segments(
        self, old: Sequence[LogSegment], new_bases: Sequence[int], install: Callable[[], None]
    ) -> None:
        """Compaction's swap (:mod:`millpond.storage.cleaner.swap`): retire ``old``, a run
        of live inactive segments, as retention does (``.deleted``, files kept open for
        file.delete.delay.ms so regions already handed out stay valid), call ``install``
        (which gives the new segments their final names), open the segments at
        ``new_bases`` in their place. A failure leaves the old segments in memory (still
        readable) and the log offline; its reopen finishes the swap from the files."""
        self._check_online()
        at = next((i for i, s in enumerate(self._segments) if s is old[0]), len(self._segments))
        if self._segments[at : at + len(old)] != list(old) or at + len(old) >= len(self._segments):
            raise ValueError(f"{list(old)} are not live inactive segments of {self.directory}")
        before, pending = list(self._segments), list(self._pending_deletes)
        try:
            self._remove_segments(list(old))
            install()
            new = [
                LogSegment(self._fs, self.directory, b, self.config, self._clock) for b in new_bases
            ]
        except BaseException:
            self._segments, self._pending_deletes, self._offline = before, pending, True
            self._bases = [s.base_offset for s in self._segments]
            raise
        self._segments[at:at] = new
        self._bases = [s.base_offset for s in self._segments]

    @property
    def offline(self) -> bool:
        """Whether a failed write took the log offline (every change refused)."""
        return self._offline

    def mark_offline(self) -> None:
        """Refuse every further change until the log is reopened (a write that could not
        be undone left the files in a state only the loader settles)."""
        self._offline = True

    # -- flush and close -------------------------------------------------------------------

    def flush(self, up_to: int | None = None) -> None:
        """fsync the segments holding offsets below ``up_to`` (default: the log end) and
        advance the recovery point to it. A failed fsync raises and leaves the recovery
        point where it was, so the unsynced data is recovered (or lost) as a whole."""
        self._check_online()
        offset = self._log_end_offset if up_to is None else min(up_to, self._log_end_offset)
        if offset <= self._recovery_point:
            return
        first = max(0, bisect_right(self._bases, self._recovery_point) - 1)
        last = bisect_right(self._bases, offset - 1)
        for segment in self._segments[first:last]:
            segment.flush()
        if any(s.base_offset >= self._recovery_point for s in self._segments[first:last]):
            self._fs.sync_dir(self.directory)
        if self.leader_epochs is not None:
            self.leader_epochs.flush()
        self._recovery_point = offset
        self._last_flush_ms = self._clock.monotonic_ms()

    def maybe_flush(self) -> None:
        """The periodic task: apply flush.ms, and sync segments rolled since the last flush
        (Kafka flushes a rolled segment in the background right after the roll)."""
        if self._clock.monotonic_ms() - self._last_flush_ms >= self.config.flush_ms:
            self.flush()
        elif self._segments[-1].base_offset > self._recovery_point:
            self.flush(self._segments[-1].base_offset)

    def close(self, flush: bool = True) -> None:
        """Flush everything and release the files: after this the log manager may write
        the clean-shutdown marker, and a reopen will not scan anything. A deleted log is
        closed without the flush (Kafka's ``closeHandlers``): its data is thrown away."""
        if flush and not self._offline:
            self.flush()
        for segment in self._segments:
            segment.close()
        for _, segment in self._pending_deletes:
            segment.log_file.close()

    def _check_online(self) -> None:
        if self._offline:
            raise LogOfflineError(5, f"log {self.directory} is offline after a failed write")

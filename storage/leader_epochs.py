"""The leader epoch cache of one partition: which leader epoch began at which offset.

Every leader writes its epoch into the batches it appends; the first offset written in
each epoch is recorded here and persisted in the partition's ``leader-epoch-checkpoint``
(format in :mod:`millpond.storage.checkpoints`). Followers and consumers ask
OffsetForLeaderEpoch "where did epoch E end?" to find where their log diverges from the
leader's, and truncate there. The rules below are Kafka's (``LeaderEpochFileCache``):

* Entries are strictly increasing in both epoch and start offset. Assigning an entry
  first drops every entry whose epoch or start offset is not below the new one's (a new
  leader may have truncated the log), then appends. Re-assigning the latest epoch at the
  same or a later offset changes nothing; negative epochs or offsets are refused.
* ``end_offset_for(E, log_end_offset)``: for the undefined epoch (-1), ``(-1, -1)``; for
  the latest epoch, ``(E, log_end_offset)``; for an epoch above every known epoch,
  ``(-1, -1)``; otherwise the start offset of the first epoch above E, paired with the
  greatest known epoch <= E, or with E itself when E is older than every known epoch
  (the data was deleted; the follower should start from what the leader still has).
* ``truncate_from_end(offset)`` drops entries starting at or after ``offset`` (the log
  was truncated to ``offset``); ``truncate_from_start(offset)`` drops entries wholly
  before ``offset`` and moves the start of the one covering it up to ``offset`` (the log
  start moved, by retention or DeleteRecords).

Every change is written to the checkpoint before it takes effect in memory, so a failed
write leaves both as they were. Kafka writes truncations asynchronously to keep fsync
off the replica fetcher threads; callers that want that pass ``flush=False`` and call
:meth:`LeaderEpochCache.flush` later (a stale file is repaired at the next load, when
the log truncates the cache again).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Final, NamedTuple

from millpond.storage.checkpoints import (
    read_leader_epoch_checkpoint,
    write_leader_epoch_checkpoint,
)
from millpond.storage.fs import FileSystem

UNDEFINED_EPOCH: Final = -1
UNDEFINED_EPOCH_OFFSET: Final = -1


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class LeaderEpochCache:
    """The epochs of one partition, backed by its ``leader-epoch-checkpoint`` at ``path``
    (a missing file is an empty cache; it is created at the first change)."""

    __slots__ = (
        "_dirty",
        "_entries",
        "_fs",
        "_path",
    )

    def __init__(self, fs: FileSystem, path: str) -> None:
        self._fs = fs
        self._path = path
        entries: list[EpochEntry] = []
        for epoch, start_offset in read_leader_epoch_checkpoint(fs, path):
            # Loaded through the same rules as assign, so a file with conflicting
            # entries loads as what assigning them in order would have left.
            entries = _assigned(entries, EpochEntry(epoch, start_offset)) or entries
        self._entries = entries
        self._dirty = False

    @property
    def path(self) -> str:
        return self._path

    # -- queries ----------------------------------------------------------------------------

    def entries(self) -> list[EpochEntry]:
        """All entries, oldest first."""
        return list(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def latest_entry(self) -> EpochEntry | None:
        return self._entries[-1] if self._entries else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        return self._entries[0] if self._entries else None

    @property
    def latest_epoch(self) -> int | None:
        return self._entries[-1].epoch if self._entries else None

    def previous_epoch(self, epoch: int) -> int | None:
        """The greatest known epoch below ``epoch``."""
        i = bisect.bisect_left(self._entries, epoch, key=_epoch)
        return self._entries[i - 1].epoch if i else None

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch the record at ``offset`` was written in, if the cache knows."""
        i = bisect.bisect_right(self._entries, offset, key=_start_offset)
        return self._entries[i - 1].epoch if i else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """``(epoch, end_offset)`` as OffsetForLeaderEpoch answers (see the module doc)."""
        entries = self._entries
        if requested_epoch == UNDEFINED_EPOCH:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if entries and entries[-1].epoch == requested_epoch:
            return requested_epoch, log_end_offset
        higher = bisect.bisect_right(entries, requested_epoch, key=_epoch)
        if higher == len(entries):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        end_offset = entries[higher].start_offset
        if higher == 0:
            return requested_epoch, end_offset
        return entries[higher - 1].epoch, end_offset

    # -- changes ----------------------------------------------------------------------------

    def assign(self, epoch: int, start_offset: int, *, flush: bool = True) -> bool:
        """Record that ``epoch`` began at ``start_offset``; True when the cache changed
        (and, with ``flush``, the checkpoint was written)."""
        updated = _assigned(self._entries, EpochEntry(epoch, start_offset))
        if updated is None:
            return False
        self._commit(updated, flush=flush)
        return True

    def assign_all(self, entries: Iterable[tuple[int, int]]) -> bool:
        """Assign several entries in order with one checkpoint write."""
        current = self._entries
        for epoch, start_offset in entries:
            current = _assigned(current, EpochEntry(epoch, start_offset)) or current
        if current is self._entries:
            return False
        self._commit(current, flush=True)
        return True

    def truncate_from_end(self, end_offset: int, *, flush: bool = True) -> list[EpochEntry]:
        """Drop the entries that start at or after ``end_offset``; returns them."""
        entries = self._entries
        if end_offset < 0 or not entries or entries[-1].start_offset < end_offset:
            return []
        keep = bisect.bisect_left(entries, end_offset, key=_start_offset)
        self._commit(entries[:keep], flush=flush)
        return entries[keep:]

    def truncate_from_start(self, start_offset: int, *, flush: bool = True) -> list[EpochEntry]:
        """Drop the entries that start at or before ``start_offset``, except that the last
        of them stays with its start moved to ``start_offset``; returns the dropped ones
        (the moved entry as it was). ``truncate_from_start(6)`` keeps an entry at 6."""
        entries = self._entries
        drop = bisect.bisect_right(entries, start_offset, key=_start_offset)
        if drop == 0 or (drop == 1 and entries[0].start_offset == start_offset):
            return []  # nothing changes: no checkpoint rewrite (every log open does this)
        moved = EpochEntry(entries[drop - 1].epoch, start_offset)
        self._commit([moved, *entries[drop:]], flush=flush)
        return entries[:drop]

    def clear(self, *, flush: bool = True) -> None:
        """Forget every entry (the log was emptied)."""
        self._commit([], flush=flush)

    def flush(self) -> None:
        """Write the checkpoint if a change was made with ``flush=False``."""
        if self._dirty:
            write_leader_epoch_checkpoint(self._fs, self._path, self._entries)
            self._dirty = False

    def _commit(self, entries: list[EpochEntry], *, flush: bool) -> None:
        if flush:
            write_leader_epoch_checkpoint(self._fs, self._path, entries)
        self._entries = entries
        self._dirty = not flush

    def __repr__(self) -> str:
        return f"LeaderEpochCache({self._path!r}, {self._entries!r})"


def _epoch(entry: EpochEntry) -> int:
    return entry.epoch


def _start_offset(entry: EpochEntry) -> int:
    return entry.start_offset


def _assigned(entries: list[EpochEntry], new: EpochEntry) -> list[EpochEntry] | None:
    """``entries`` after assigning ``new``, or None when nothing would change."""
    if new.epoch < 0 or new.start_offset < 0:
        raise ValueError(f"invalid leader epoch entry {new}: epoch and offset must be >= 0")
    if entries:
        latest = entries[-1]
        if new.epoch == latest.epoch and new.start_offset >= latest.start_offset:
            return None
    keep = len(entries)
    while keep and (
        entries[keep - 1].epoch >= new.epoch or entries[keep - 1].start_offset >= new.start_offset
    ):
        keep -= 1
    return [*entries[:keep], new]

"""Idempotent (and, later, transactional) producer state of one partition.

Kafka's ``ProducerStateManager`` and ``ProducerAppendInfo``, sans I/O: the leader asks
:meth:`ProducerStateManager.check_and_prepare` about a produce request's batches before
it appends them, appends only if the answer is clean, then calls
:meth:`ProducerStateManager.commit` with the log's :class:`LogAppendInfo`. Nothing
changes before ``commit``, so a failed append (disk full, roll error) leaves the state
as it was and the client's retry is judged afresh.

The rules (Kafka 4.x, ``ProducerAppendInfo`` / ``UnifiedLog.analyzeAndValidateProducerState``):

* A batch whose epoch and sequence range equal one of the producer's last 5 batches is
  a *duplicate*: nothing is appended and the client is answered ``NONE`` with the
  original batch's offsets (never ``DUPLICATE_SEQUENCE_NUMBER``, which Kafka no longer
  sends). An older retry no longer among the 5 fails the sequence check below.
* An epoch older than the producer's is fenced: ``INVALID_PRODUCER_EPOCH`` (47);
  Kafka replaced ``PRODUCER_FENCED`` here in 2.7 so that clients may recover.
* A newer epoch must start at sequence 0, else ``OUT_OF_ORDER_SEQUENCE_NUMBER`` (45);
  the same epoch must continue the last sequence (int32 max wraps to 0), else 45.
* A producer this partition does not know (new, expired, or whose writes were all
  deleted) is accepted at any sequence. Kafka 4 never answers ``UNKNOWN_PRODUCER_ID``
  (59) on produce: KIP-360 (2.5) dropped it in favour of this rule.
* A non-transactional batch while the producer's transaction is open:
  ``INVALID_TXN_STATE`` (48). A control batch or an idempotent batch without a sequence
  from a client: ``INVALID_RECORD`` (87) (Kafka's ``LogValidator``, checked here too so
  that the state never sees them).

Each snapshot (Kafka's ``.snapshot`` format, :mod:`millpond.storage.producer_snapshots`)
keeps the last batch of every producer; loading takes the newest valid snapshot and
replays the batch headers after it (:meth:`ProducerStateManager.replay_batch`), so a
retry that arrives after a restart is still recognised.

Not thread-safe: the caller serialises all calls on one partition (Kafka's log lock).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import Enum
from types import MappingProxyType
from typing import Final, NamedTuple

from millpond.storage.clock import Clock, SystemClock
from millpond.storage.fs import FileSystem
from millpond.storage.log_types import LogAppendInfo
from millpond.storage.producer_append import (
    AppendRejected,
    CompletedTxn,
    PendingBatch,
    ProducerAppendInfo,
    pending_batch,
)
from millpond.storage.producer_snapshots import (
    CorruptSnapshotError,
    list_snapshots,
    read_snapshot,
    snapshot_path,
    write_snapshot,
)
from millpond.storage.producer_state_entry import BatchMetadata, ProducerStateEntry
from millpond.wire.errors import ErrorCode
from millpond.wire.records import RecordBatch

__all__ = [
    "PRODUCER_ID_EXPIRATION_MS_DEFAULT",
    "AppendCheck",
    "AppendOrigin",
    "AppendRejected",
    "BatchMetadata",
    "CompletedTxn",
    "ProducerStateEntry",
    "ProducerStateManager",
]

#: ``producer.id.expiration.ms``: how long a partition leader keeps an idle producer id
#: (KIP-854; Kafka's default is one day). ``transactional.id.expiration.ms`` (7 days)
#: is the transaction coordinator's, not this.
PRODUCER_ID_EXPIRATION_MS_DEFAULT: Final = 86_400_000


class AppendOrigin(Enum):
    """Who appends, which decides how much is checked (Kafka's ``AppendOrigin``)."""

    #: A produce request: epochs, sequences and duplicates are all checked.
    CLIENT = "client"
    #: The group or transaction coordinator (offset commits, markers): epochs only.
    COORDINATOR = "coordinator"
    #: A follower copying the leader (or a replay of the log): nothing is rejected.
    REPLICATION = "replication"


class AppendCheck(NamedTuple):
    """The verdict of :meth:`ProducerStateManager.check_and_prepare`.

    ``error`` NONE and no ``duplicate``: append, then :meth:`~ProducerStateManager.commit`.
    ``duplicate``: append nothing and answer NONE with ``duplicate.first_offset`` as the
    base offset (Kafka also reports ``duplicate.timestamp`` as the log append time).
    Any other ``error``: append nothing and answer it with ``message``.
    """

    error: ErrorCode
    message: str
    duplicate: BatchMetadata | None
    batches: tuple[PendingBatch, ...]
    state_version: int

    @property
    def ok(self) -> bool:
        """The batches may be appended."""
        return self.error == ErrorCode.NONE and self.duplicate is None


class ProducerStateManager:
    """Per-partition producer state (see the module docstring).

    ``clock.now_ms()`` is compared with the producers' *record* timestamps for expiry,
    as in Kafka (a producer writing old timestamps expires sooner).
    """

    __slots__ = (
        "_clock",
        "_last_snap_offset",
        "_map_end_offset",
        "_ongoing_txns",
        "_producers",
        "_snapshots",
        "_version",
        "partition",
        "producer_id_expiration_ms",
    )

    def __init__(
        self,
        partition: str,
        max_producer_id_expiration_ms: int = PRODUCER_ID_EXPIRATION_MS_DEFAULT,
        clock: Clock | None = None,
    ) -> None:
        self.partition = partition
        self.producer_id_expiration_ms = max_producer_id_expiration_ms
        self._clock: Clock = clock or SystemClock()
        self._producers: dict[int, ProducerStateEntry] = {}
        self._ongoing_txns: dict[int, int] = {}  # first offset -> producer id
        self._snapshots: list[int] = []  # offsets of the snapshot files, ascending
        self._map_end_offset = 0
        self._last_snap_offset = 0
        self._version = 0  # bumped by every change, so a stale AppendCheck is refused

    # -- queries ------------------------------------------------------------------------

    @property
    def map_end_offset(self) -> int:
        """The offset up to which (exclusive) the state reflects the log."""
        return self._map_end_offset

    @property
    def active_producers(self) -> Mapping[int, ProducerStateEntry]:
        return MappingProxyType(self._producers)

    @property
    def is_empty(self) -> bool:
        return not self._producers

    @property
    def snapshot_offsets(self) -> list[int]:
        return list(self._snapshots)

    def last_entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    def first_undecided_offset(self) -> int | None:
        """The first offset of the oldest open transaction (for the last stable offset)."""
        return min(self._ongoing_txns, default=None)

    # -- the append path ----------------------------------------------------------------

    def check_and_prepare(
        self,
        batches: Iterable[RecordBatch],
        origin: AppendOrigin = AppendOrigin.CLIENT,
        transaction_version: int = 0,
    ) -> AppendCheck:
        """Judge a request's batches against the state, changing nothing.

        Call it for every append, idempotent or not (:meth:`commit` then advances the
        map end offset, which snapshots are named after). Offsets need not be assigned
        yet: the rules depend on epochs and sequences only. ``transaction_version`` is
        the one the coordinator's WriteTxnMarkers names (2 tightens the marker epoch
        rule); data batches ignore it.
        """
        infos: dict[int, ProducerAppendInfo] = {}
        pending: list[PendingBatch] = []
        relative = 0
        try:
            for batch in batches:
                first = relative
                relative += batch.last_offset_delta + 1
                if not batch.has_producer_id:
                    continue
                p = pending_batch(batch, first, origin is AppendOrigin.CLIENT)
                if origin is AppendOrigin.CLIENT:
                    current = self._producers.get(p.producer_id)
                    duplicate = None
                    if current is not None:
                        duplicate = current.find_duplicate(p.epoch, p.first_seq, p.last_seq)
                    if duplicate is not None:
                        return AppendCheck(ErrorCode.NONE, "", duplicate, (), self._version)
                self._info(infos, p.producer_id, origin).append(
                    p, first, first + p.offset_delta, p.timestamp, transaction_version
                )
                pending.append(p)
        except AppendRejected as exc:
            return AppendCheck(exc.error, exc.message, None, (), self._version)
        return AppendCheck(ErrorCode.NONE, "", None, tuple(pending), self._version)

    def commit(self, check: AppendCheck, result: LogAppendInfo) -> list[CompletedTxn]:
        """Apply a clean ``check`` once its batches are in the log at ``result``'s
        offsets (assigned consecutively from ``result.first_offset``); returns the
        transactions that the appended markers completed."""
        if not check.ok:
            raise ValueError("only a clean AppendCheck can be committed")
        if check.state_version != self._version:
            raise ValueError("producer state changed between check_and_prepare and commit")
        append_time = result.log_append_time
        infos: dict[int, ProducerAppendInfo] = {}
        completed: list[CompletedTxn] = []
        for p in check.batches:
            first = result.first_offset + p.relative_offset
            timestamp = append_time if append_time >= 0 else p.timestamp
            info = self._info(infos, p.producer_id, AppendOrigin.REPLICATION)
            txn = info.append(p, first, first + p.offset_delta, timestamp, 0)
            if txn is not None:
                completed.append(txn)
        self._merge(infos.values(), completed)
        self.update_map_end_offset(result.last_offset + 1)
        return completed

    def fence(self, producer_id: int) -> int | None:
        """Bump a producer's epoch as if a newer instance had taken its id (the control
        endpoint's "fence a producer"): its next batch at the old epoch is refused with
        INVALID_PRODUCER_EPOCH. Held in memory only: a restart replays the log's epochs.
        The new epoch, or None for a producer this partition does not know."""
        entry = self._producers.get(producer_id)
        if entry is None:
            return None
        epoch = entry.producer_epoch + 1
        self._producers[producer_id] = ProducerStateEntry(
            producer_id, epoch, entry.coordinator_epoch, entry.last_timestamp
        )
        self._version += 1
        return epoch

    def replay_batch(self, batch: RecordBatch) -> CompletedTxn | None:
        """Apply a batch already in the log, unchecked: the log load's replay after a
        snapshot, and a follower's appends. Batches must come in offset order. Only a
        transaction marker's record is decoded; an unreadable one raises
        :class:`AppendRejected` (INVALID_RECORD), as Kafka's load fails on it."""
        completed: CompletedTxn | None = None
        if batch.has_producer_id:
            infos: dict[int, ProducerAppendInfo] = {}
            p = pending_batch(batch, 0, False)
            info = self._info(infos, p.producer_id, AppendOrigin.REPLICATION)
            completed = info.append(p, batch.base_offset, batch.last_offset, p.timestamp, 0)
            self._merge(infos.values(), [] if completed is None else [completed])
        self.update_map_end_offset(batch.last_offset + 1)
        return completed

    def update_map_end_offset(self, offset: int) -> None:
        self._map_end_offset = offset
        self._version += 1

    def _info(
        self, infos: dict[int, ProducerAppendInfo], producer_id: int, origin: AppendOrigin
    ) -> ProducerAppendInfo:
        info = infos.get(producer_id)
        if info is None:
            current = self._producers.get(producer_id) or ProducerStateEntry(producer_id)
            info = ProducerAppendInfo(
                self.partition,
                producer_id,
                current,
                validate_epoch=origin is not AppendOrigin.REPLICATION,
                validate_sequence=origin is AppendOrigin.CLIENT,
            )
            infos[producer_id] = info
        return info

    def _merge(self, infos: Iterable[ProducerAppendInfo], completed: list[CompletedTxn]) -> None:
        """Kafka's ``update`` and ``completeTxn``: fold the appends into the state."""
        for info in infos:
            current = self._producers.get(info.producer_id)
            if current is not None:
                current.update(info.updated)
            else:
                self._producers[info.producer_id] = info.updated
            for first_offset in info.started_transactions:
                self._ongoing_txns[first_offset] = info.producer_id
        for txn in completed:
            self._ongoing_txns.pop(txn.first_offset, None)
        self._version += 1

    # -- expiry -------------------------------------------------------------------------

    def _is_expired(self, now_ms: int, entry: ProducerStateEntry) -> bool:
        return (
            entry.current_txn_first_offset is None
            and now_ms - entry.last_timestamp >= self.producer_id_expiration_ms
        )

    def remove_expired_producers(self, now_ms: int | None = None) -> list[int]:
        """Forget producers idle for ``producer.id.expiration.ms`` (never one with an open
        transaction); Kafka runs this every ``producer.id.expiration.check.interval.ms``
        (10 minutes). Returns the ids removed."""
        now = self._clock.now_ms() if now_ms is None else now_ms
        expired = [pid for pid, e in self._producers.items() if self._is_expired(now, e)]
        for pid in expired:
            del self._producers[pid]
        if expired:
            self._version += 1
        return expired

    # -- snapshots ----------------------------------------------------------------------

    def take_snapshot(
        self, fs: FileSystem, directory: str, offset: int | None = None
    ) -> str | None:
        """Write a snapshot at ``offset`` (the new segment's base offset at a roll, the
        log end at a clean shutdown), which becomes the map end offset; by default at the
        map end offset. Skipped (None) unless the offset is past the last snapshot, as
        in Kafka. Returns the file's path."""
        if offset is not None:
            if offset < self._map_end_offset:
                raise ValueError(
                    f"snapshot offset {offset} is below the state's {self._map_end_offset}"
                )
            self.update_map_end_offset(offset)
        if self._map_end_offset <= self._last_snap_offset:
            return None
        entries = [self._producers[pid].to_snapshot_entry() for pid in sorted(self._producers)]
        path = write_snapshot(fs, directory, self._map_end_offset, entries)
        if self._map_end_offset not in self._snapshots:
            self._snapshots.append(self._map_end_offset)
            self._snapshots.sort()
        self._last_snap_offset = self._map_end_offset
        return path

    def load(
        self, fs: FileSystem, directory: str, log_start_offset: int, log_end_offset: int
    ) -> int:
        """Load the state of a log being opened; returns the offset from which the caller
        must replay batches (through :meth:`replay_batch`) up to ``log_end_offset``, and
        should then :meth:`take_snapshot` at the log end, as Kafka does."""
        self._snapshots = list_snapshots(fs, directory)
        self._map_end_offset = -1  # force the reload even for an empty log
        return self.truncate_and_reload(fs, directory, log_start_offset, log_end_offset)

    def truncate_and_reload(
        self, fs: FileSystem, directory: str, log_start_offset: int, log_end_offset: int
    ) -> int:
        """After the log was truncated (or on load): drop snapshots past the log end or at
        or below the log start, then, unless the state already ends at the log end,
        reload from the newest remaining snapshot (corrupt ones are deleted and the next
        older one tried). Returns the offset to replay from, as :meth:`load`."""
        for offset in list(self._snapshots):
            if offset > log_end_offset or offset <= log_start_offset:
                self._delete_snapshot(fs, directory, offset)
        if log_end_offset == self._map_end_offset:
            self.on_log_start_offset_incremented(log_start_offset)
            return self._map_end_offset
        self._producers.clear()
        self._ongoing_txns.clear()
        self._version += 1
        now = self._clock.now_ms()
        while self._snapshots:
            offset = self._snapshots[-1]
            try:
                loaded = read_snapshot(fs, snapshot_path(directory, offset))
            except (CorruptSnapshotError, FileNotFoundError):
                self._delete_snapshot(fs, directory, offset)
                continue
            for e in loaded:
                entry = ProducerStateEntry.from_snapshot_entry(e)
                if not self._is_expired(now, entry):
                    self._producers[entry.producer_id] = entry
                    if entry.current_txn_first_offset is not None:
                        self._ongoing_txns[entry.current_txn_first_offset] = entry.producer_id
            self._map_end_offset = self._last_snap_offset = offset
            return offset
        self._map_end_offset = self._last_snap_offset = log_start_offset
        return log_start_offset

    def truncate_fully_and_start_at(self, fs: FileSystem, directory: str, offset: int) -> None:
        """The log was emptied to restart at ``offset``: forget everything."""
        self._producers.clear()
        self._ongoing_txns.clear()
        for snap in list(self._snapshots):
            self._delete_snapshot(fs, directory, snap)
        self._last_snap_offset = 0
        self.update_map_end_offset(offset)

    def on_log_start_offset_incremented(self, log_start_offset: int) -> None:
        """Retention or DeleteRecords moved the log start (the state is kept: producers
        whose writes are gone are forgotten only on the next reload or by expiry)."""
        self._map_end_offset = max(self._map_end_offset, log_start_offset)
        self._last_snap_offset = self._snapshots[-1] if self._snapshots else log_start_offset
        self._version += 1

    def delete_snapshots_before(self, fs: FileSystem, directory: str, offset: int) -> None:
        """Remove the snapshots below ``offset`` (their segments were deleted)."""
        for snap in [s for s in self._snapshots if s < offset]:
            self._delete_snapshot(fs, directory, snap)

    def _delete_snapshot(self, fs: FileSystem, directory: str, offset: int) -> None:
        if offset in self._snapshots:
            self._snapshots.remove(offset)
        path = snapshot_path(directory, offset)
        if fs.exists(path):
            fs.remove(path)

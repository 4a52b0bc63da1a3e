"""The Raft core's log as Kafka keeps it: ``__cluster_metadata-0``, record batches v2.

Entries map to batches as Kafka's raft client writes them: consecutive data entries (the
controller's records, already framed) share one data batch, uncompressed, up to 8 MiB;
each run of control entries is one control batch, a LeaderChangeMessage (control type 2)
or a VotersRecord (type 6, with a KRaftVersionRecord, type 5, before it as Kafka's
leader writes at the start of an epoch). Every batch carries the leader's epoch, which
the partition's leader-epoch cache follows, so ``end_offset_for_epoch`` is Kafka's
OffsetForLeaderEpoch answer. Records travel between replicas as the batches' bytes.

Snapshots sit beside the segments in Kafka's ``.checkpoint`` format (:mod:`.snapshots`):
the state machine writes its own (:meth:`KafkaRaftLog.create_snapshot`), a follower
receives the leader's in chunks and installs it in place of its log, and
:meth:`KafkaRaftLog.clean` applies Kafka's metadata retention, moving the log start to a
snapshot and deleting the segments before it. At open, partial downloads are dropped and
a snapshot past the log replaces it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import NamedTuple

from millpond.controller.raft.keys import (
    BOOTSTRAP_SNAPSHOT,
    Endpoint,
    OffsetAndEpoch,
    ReplicaKey,
    Voter,
    VoterSet,
)
from millpond.controller.raft.log import Entry, LeaderChange, VotersChange
from millpond.controller.raft.snapshots import (
    DELETED_SUFFIX,
    PART_SUFFIX,
    SUFFIX,
    SnapshotContents,
    SnapshotFormatError,
    SnapshotHeader,
    data_batches,
    encode_snapshot,
    parse_snapshot_name,
    read_header,
    read_snapshot,
    snapshot_name,
)
from millpond.storage.clock import Clock
from millpond.storage.fs import File, join
from millpond.storage.log import Log
from millpond.wire import primitives
from millpond.wire.generated.data import voters_record as vr
from millpond.wire.generated.data.k_raft_version_record import KRaftVersionRecord
from millpond.wire.generated.data.leader_change_message import LeaderChangeMessage
from millpond.wire.generated.data.leader_change_message import Voter as LeaderChangeVoter
from millpond.wire.records import (
    ControlRecordType,
    NewRecord,
    RecordBatch,
    build_batch,
    build_control_key,
    iter_batches,
    parse_control_key,
)

__all__ = ["KafkaRaftLog", "MetadataRetention", "decode_voters", "encode_voters"]

#: Enough of a snapshot's start to hold its header batch (header, kraft.version, voters).
HEADER_READ_BYTES = 64 * 1024
LEADER_CHANGE_VERSION = 0
#: How much one read of the log asks for.
READ_BYTES = 1024 * 1024
VOTERS_VERSION = 0
KRAFT_VERSION_VERSION = 0
#: The kraft.version whose logs hold the voters (VotersRecords); 0 configures them.
RECONFIG_KRAFT_VERSION = 1


class MetadataRetention(NamedTuple):
    """How much metadata log and how many snapshots are kept, by Kafka's defaults."""

    #: metadata.max.retention.bytes: the log and its snapshots together (below 1: any).
    max_bytes: int = 100 * 1024 * 1024
    #: metadata.max.retention.ms: the age of the oldest snapshot's last record (-1: any).
    max_ms: int = 7 * 24 * 60 * 60 * 1000


def encode_voters(voters: VoterSet) -> bytes:
    record = vr.VotersRecord(
        version=VOTERS_VERSION,
        voters=[
            vr.Voter(
                voter_id=v.key.id,
                voter_directory_id=v.key.directory_id or primitives.ZERO_UUID,
                endpoints=[
                    vr.Endpoint(name=e.listener, host=e.host, port=e.port) for e in v.endpoints
                ],
                k_raft_version_feature=vr.KRaftVersionFeature(
                    min_supported_version=v.kraft_versions[0],
                    max_supported_version=v.kraft_versions[1],
                ),
            )
            for v in sorted(voters, key=lambda v: v.key.id)
        ],
    )
    return record.encode(VOTERS_VERSION)


def decode_voters(value: bytes | memoryview) -> VoterSet:
    record = vr.VotersRecord.decode(value, VOTERS_VERSION)
    return VoterSet(
        Voter(
            ReplicaKey(
                v.voter_id,
                None
                if v.voter_directory_id == primitives.ZERO_UUID
                else bytes(v.voter_directory_id),
            ),
            tuple(Endpoint(e.name, e.host, e.port) for e in v.endpoints),
            (
                v.k_raft_version_feature.min_supported_version,
                v.k_raft_version_feature.max_supported_version,
            ),
        )
        for v in record.voters
    )


class KafkaRaftLog:
    """A :class:`~millpond.controller.raft.log.RaftLog` over a partition
    :class:`~millpond.storage.log.Log` (see the module docstring)."""

    def __init__(
        self,
        log: Log,
        clock: Clock,
        retention: MetadataRetention | None = None,
    ) -> None:
        assert log.leader_epochs is not None, "the metadata log keeps a leader-epoch cache"
        self._log = log
        self._fs = log.file_system
        self._clock = clock
        self.retention = retention or MetadataRetention()
        #: Snapshot id -> size in bytes.
        self._snapshots: dict[OffsetAndEpoch, int] = {}
        #: The leader's snapshot being received, into its ``.part`` file.
        self._receiving: tuple[OffsetAndEpoch, File] | None = None
        self._scan_snapshots()
        self._truncate_to_latest_snapshot()
        latest = self.latest_snapshot()
        if self.start_offset > 0 and (latest is None or latest.offset < self.start_offset):
            raise SnapshotFormatError(
                f"the metadata log in {log.directory} starts at offset {self.start_offset},"
                " but no snapshot reaches that far (were .checkpoint files removed?)"
            )

    @property
    def log(self) -> Log:
        return self._log

    def bootstrap_checkpoint(self) -> SnapshotContents | None:
        """The checkpoint ``format`` wrote at offset 0 (the first voters, the bootstrap
        features), if it is still held: it seeds the quorum and is never replicated."""
        if BOOTSTRAP_SNAPSHOT not in self._snapshots:
            return None
        return self.snapshot_contents(BOOTSTRAP_SNAPSHOT)

    def write_bootstrap_checkpoint(
        self, voters: VoterSet | None, payloads: Iterable[bytes]
    ) -> None:
        """Write the offset-0 checkpoint of a freshly formatted directory: ``voters``
        (kraft.version 1) or none (static voters), and the bootstrap records."""
        if self.end_offset > 0 or self._snapshots:
            raise ValueError(f"the metadata log in {self._log.directory} is not empty")
        batches = encode_snapshot(
            BOOTSTRAP_SNAPSHOT,
            payloads,
            last_contained_timestamp=self._clock.now_ms(),
            now=self._clock.now_ms(),
            kraft_version=0 if voters is None else 1,
            voters_record=None if voters is None else encode_voters(voters),
        )
        self._write_snapshot(BOOTSTRAP_SNAPSHOT, batches)

    # -- positions ---------------------------------------------------------------------

    @property
    def end_offset(self) -> int:
        return self._log.log_end_offset

    @property
    def start_offset(self) -> int:
        return self._log.log_start_offset

    def last_fetched_epoch(self) -> int:
        cache = self._log.leader_epochs
        assert cache is not None
        latest = cache.latest_epoch
        if latest is not None:
            return latest
        snapshot = self.latest_snapshot()
        return 0 if snapshot is None else snapshot.epoch

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        cache = self._log.leader_epochs
        assert cache is not None
        found_epoch, end = cache.end_offset_for(epoch, self.end_offset)
        if found_epoch < 0:
            return OffsetAndEpoch(self.last_fetched_epoch(), self.end_offset)
        snapshot = self.earliest_snapshot()
        if snapshot is not None and end == snapshot.offset and found_epoch < snapshot.epoch:
            return snapshot  # the epochs before it may be gone with the log (Kafka's rule)
        return OffsetAndEpoch(found_epoch, end)

    # -- writes ------------------------------------------------------------------------

    def append_as_leader(self, epoch: int, entries: Sequence[Entry]) -> list[tuple[int, VoterSet]]:
        out = bytearray()
        now = self._clock.now_ms()
        for built in self._batches(entries, epoch, now):
            out += built
        first = self.end_offset
        self._log.append(out, assign_offsets=True, leader_epoch=epoch)
        changes: list[tuple[int, VoterSet]] = []
        offset = first
        for batch in iter_batches(out):
            if batch.is_control:
                changes += [(offset + o - batch.base_offset, v) for o, v in _voter_changes(batch)]
            offset += batch.last_offset_delta + 1
        return changes

    def _batches(self, entries: Sequence[Entry], epoch: int, now: int) -> Iterator[bytes]:
        run: list[bytes] = []
        for entry in entries:
            if isinstance(entry, bytes):
                run.append(entry)
                continue
            yield from data_batches(run, epoch=epoch, timestamp=now)
            run = []
            yield build_batch(
                self._control_records(entry, now),
                base_timestamp=now,
                partition_leader_epoch=epoch,
                is_control=True,
            )
        yield from data_batches(run, epoch=epoch, timestamp=now)

    def _control_records(self, entry: LeaderChange | VotersChange, now: int) -> list[NewRecord]:
        if isinstance(entry, LeaderChange):
            message = LeaderChangeMessage(
                version=LEADER_CHANGE_VERSION,
                leader_id=entry.leader_id,
                voters=[LeaderChangeVoter(voter_id=i) for i in entry.voters],
                granting_voters=[LeaderChangeVoter(voter_id=i) for i in entry.granting_voters],
            )
            key = build_control_key(ControlRecordType.LEADER_CHANGE)
            return [NewRecord(key=key, value=message.encode(LEADER_CHANGE_VERSION), timestamp=now)]
        version = KRaftVersionRecord(
            version=KRAFT_VERSION_VERSION, k_raft_version=RECONFIG_KRAFT_VERSION
        )
        return [
            NewRecord(
                key=build_control_key(ControlRecordType.KRAFT_VERSION),
                value=version.encode(KRAFT_VERSION_VERSION),
                timestamp=now,
            ),
            NewRecord(
                key=build_control_key(ControlRecordType.KRAFT_VOTERS),
                value=encode_voters(entry.voters),
                timestamp=now,
            ),
        ]

    def append_as_follower(self, records: object, epoch: int) -> list[tuple[int, VoterSet]]:
        assert isinstance(records, bytes | bytearray | memoryview)
        accepted = bytearray()
        changes: list[tuple[int, VoterSet]] = []
        for batch in iter_batches(records):
            if batch.partition_leader_epoch > epoch:
                break  # from an epoch this replica has not heard of yet
            if batch.is_control:
                changes += _voter_changes(batch)
            accepted += batch.buffer
        if accepted:
            self._log.append(accepted, assign_offsets=False)
        return changes

    def read(self, offset: int, max_bytes: int) -> object | None:
        if offset >= self.end_offset:
            return None
        data = self._log.read(offset, max_bytes)
        raw = bytes(data.records.read())
        return raw or None

    def truncate_to(self, offset: int) -> None:
        self._log.truncate_to(offset)

    def flush(self) -> None:
        self._log.flush()

    def batches(
        self, start: int, end: int | None = None, max_bytes: int | None = None
    ) -> Iterator[RecordBatch]:
        """The batches holding offsets from ``start`` up to ``end`` (the log end by
        default), whole; reading stops after about ``max_bytes`` when given."""
        offset = max(start, self.start_offset)
        end = self.end_offset if end is None else end
        read = 0
        while offset < end and (max_bytes is None or read < max_bytes):
            raw = self._log.read(offset, READ_BYTES, max_offset=end).records.read()
            if not raw:
                return
            read += len(raw)
            for batch in iter_batches(raw):
                if batch.last_offset >= offset:
                    yield batch
                offset = max(offset, batch.next_offset)

    def voter_history(self) -> list[tuple[int, VoterSet]]:
        history: list[tuple[int, VoterSet]] = []
        latest = self.latest_snapshot()
        start = self.start_offset
        if latest is not None and latest.offset > 0:
            voters = self.snapshot_header(latest).voters_record
            if voters is not None:
                history.append((latest.offset - 1, decode_voters(voters)))
            start = max(start, latest.offset)
        for batch in self.batches(start):
            if batch.is_control:
                history += _voter_changes(batch)
        return history

    # -- snapshots ---------------------------------------------------------------------

    def _scan_snapshots(self) -> None:
        """Find the snapshots; finish deletions and drop partial downloads a crash left."""
        directory = self._log.directory
        for name in self._fs.listdir(directory):
            parsed = parse_snapshot_name(name)
            if parsed is None:
                continue
            snapshot_id, suffix = parsed
            path = join(directory, name)
            if suffix == SUFFIX:
                self._snapshots[snapshot_id] = self._fs.file_size(path)
            else:
                self._fs.remove(path)

    def _truncate_to_latest_snapshot(self) -> None:
        """A snapshot past the log (a crash between installing a leader's snapshot and
        emptying the log, or a log lost behind our back) replaces the log, as Kafka's."""
        latest = self.latest_snapshot()
        if latest is None:
            return
        epoch = self._log.leader_epochs.latest_epoch if self._log.leader_epochs else None
        log_epoch = -1 if epoch is None else epoch
        if latest.epoch > log_epoch or (
            latest.epoch == log_epoch and latest.offset > self.end_offset
        ):
            self._log.truncate_fully_and_start_at(latest.offset)
            self._forget_snapshots_before(latest)

    def latest_snapshot(self) -> OffsetAndEpoch | None:
        return max(self._snapshots, key=_offset) if self._snapshots else None

    def earliest_snapshot(self) -> OffsetAndEpoch | None:
        return min(self._snapshots, key=_offset) if self._snapshots else None

    def snapshots(self) -> list[OffsetAndEpoch]:
        """Every snapshot held, oldest first."""
        return sorted(self._snapshots, key=_offset)

    def snapshot_size(self, snapshot_id: OffsetAndEpoch) -> int | None:
        return self._snapshots.get(snapshot_id)

    def snapshot_path(self, snapshot_id: OffsetAndEpoch, suffix: str = SUFFIX) -> str:
        return join(self._log.directory, snapshot_name(snapshot_id, suffix))

    def read_snapshot(self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int) -> bytes:
        if snapshot_id not in self._snapshots:
            raise LookupError(f"no snapshot {snapshot_id} in {self._log.directory}")
        file = self._fs.open(self.snapshot_path(snapshot_id))
        try:
            return file.read_at(position, max(0, min(max_bytes, file.size() - position)))
        finally:
            file.close()

    def snapshot_contents(self, snapshot_id: OffsetAndEpoch) -> SnapshotContents:
        """The snapshot read back whole and checked (:class:`SnapshotFormatError`)."""
        size = self._snapshots.get(snapshot_id)
        if size is None:
            raise LookupError(f"no snapshot {snapshot_id} in {self._log.directory}")
        try:
            return read_snapshot(self.read_snapshot(snapshot_id, 0, size))
        except SnapshotFormatError as exc:
            raise SnapshotFormatError(f"{self.snapshot_path(snapshot_id)}: {exc}") from None

    def create_snapshot(
        self,
        snapshot_id: OffsetAndEpoch,
        payloads: Iterable[bytes],
        *,
        last_contained_timestamp: int,
        voters: VoterSet | None = None,
    ) -> bool:
        """Write the state machine's snapshot through ``snapshot_id.offset - 1``, a
        committed offset whose batch has the id's epoch, with ``voters`` when the log
        holds them there (kraft.version 1). False if it exists already."""
        if snapshot_id in self._snapshots:
            return False
        found = self.end_offset_for_epoch(snapshot_id.epoch)
        if snapshot_id.offset > self.end_offset or found.epoch != snapshot_id.epoch:
            raise ValueError(
                f"snapshot {snapshot_id} does not match the log (end {self.end_offset},"
                f" epoch {snapshot_id.epoch} ends at {found})"
            )
        batches = encode_snapshot(
            snapshot_id,
            payloads,
            last_contained_timestamp=last_contained_timestamp,
            now=self._clock.now_ms(),
            kraft_version=0 if voters is None else RECONFIG_KRAFT_VERSION,
            voters_record=None if voters is None else encode_voters(voters),
        )
        self._write_snapshot(snapshot_id, batches)
        return True

    def _write_snapshot(self, snapshot_id: OffsetAndEpoch, chunks: Iterable[bytes]) -> None:
        part = self.snapshot_path(snapshot_id, PART_SUFFIX)
        if self._fs.exists(part):
            self._fs.remove(part)
        file = self._fs.open(part, create=True)
        try:
            for chunk in chunks:
                file.append(chunk)
            file.sync()
        finally:
            file.close()
        self._freeze(snapshot_id)

    def _freeze(self, snapshot_id: OffsetAndEpoch) -> None:
        """The whole, fsynced ``.part`` file becomes the snapshot."""
        path = self.snapshot_path(snapshot_id)
        self._fs.rename(self.snapshot_path(snapshot_id, PART_SUFFIX), path)
        self._fs.sync_dir(self._log.directory)
        self._snapshots[snapshot_id] = self._fs.file_size(path)

    def begin_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        self._discard_receiving()
        part = self.snapshot_path(snapshot_id, PART_SUFFIX)
        if self._fs.exists(part):
            self._fs.remove(part)
        self._receiving = (snapshot_id, self._fs.open(part, create=True))

    def _discard_receiving(self) -> None:
        if self._receiving is not None:
            snapshot_id, file = self._receiving
            self._receiving = None
            file.close()
            self._fs.remove(self.snapshot_path(snapshot_id, PART_SUFFIX))

    def write_snapshot_chunk(self, snapshot_id: OffsetAndEpoch, position: int, data: bytes) -> int:
        receiving = self._receiving
        if receiving is None or receiving[0] != snapshot_id:
            raise ValueError(f"snapshot {snapshot_id} is not being received")
        file = receiving[1]
        if position != file.size():
            raise ValueError(f"snapshot chunk at {position}, but {file.size()} bytes are here")
        file.append(data)
        return file.size()

    def install_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        receiving = self._receiving
        if receiving is None or receiving[0] != snapshot_id:
            raise ValueError(f"snapshot {snapshot_id} is not being received")
        file = receiving[1]
        try:
            # The leader's bytes are checked before they replace this replica's log.
            read_snapshot(file.read_at(0, file.size()))
            file.sync()
        except SnapshotFormatError:
            self._discard_receiving()
            raise
        file.close()
        self._receiving = None
        self._freeze(snapshot_id)
        self._log.truncate_fully_and_start_at(snapshot_id.offset)
        self._forget_snapshots_before(snapshot_id)

    def _forget_snapshots_before(self, snapshot_id: OffsetAndEpoch) -> None:
        for old in [s for s in self._snapshots if s.offset < snapshot_id.offset]:
            del self._snapshots[old]
            path = self.snapshot_path(old)
            deleted = self.snapshot_path(old, DELETED_SUFFIX)
            self._fs.rename(path, deleted)
            self._fs.remove(deleted)

    def snapshot_timestamp(self, snapshot_id: OffsetAndEpoch) -> int:
        """The append time of the last record the snapshot covers (its header's)."""
        return self.snapshot_header(snapshot_id).last_contained_timestamp

    def snapshot_header(self, snapshot_id: OffsetAndEpoch) -> SnapshotHeader:
        """The snapshot's first batch, read alone (:class:`SnapshotFormatError`)."""
        head = self.read_snapshot(snapshot_id, 0, HEADER_READ_BYTES)
        batch = next(iter_batches(head, allow_truncated_tail=True), None)
        try:
            if batch is None:
                raise SnapshotFormatError("no header batch")
            return read_header(batch)
        except SnapshotFormatError as exc:
            raise SnapshotFormatError(f"{self.snapshot_path(snapshot_id)}: {exc}") from None

    def clean(self, high_watermark: int) -> bool:
        """Kafka's metadata log retention: while the log and its snapshots exceed
        ``metadata.max.retention.bytes``, or the oldest snapshot covers records older
        than ``metadata.max.retention.ms`` (:attr:`retention`; below 1 and below 0 turn
        each off), drop the oldest snapshot and start the log at the next one, never past
        the latest snapshot or the high watermark. The segments wholly before the new log
        start go. True if the log start moved."""
        retention_bytes, retention_ms = self.retention
        now = self._clock.now_ms()
        moved = False
        ordered = self.snapshots()
        for snapshot, following in zip(ordered, ordered[1:], strict=False):
            size = self._log.size + sum(self._snapshots.values())
            expired = (retention_bytes >= 1 and size > retention_bytes) or (
                retention_ms >= 0 and now - self.snapshot_timestamp(snapshot) > retention_ms
            )
            if not expired or not self._delete_before(following, high_watermark):
                break
            moved = True
        return moved

    def _delete_before(self, snapshot_id: OffsetAndEpoch, high_watermark: int) -> bool:
        if snapshot_id.offset <= self.start_offset or snapshot_id.offset > high_watermark:
            return False
        self._log.update_high_watermark(high_watermark)
        self._log.delete_records(snapshot_id.offset)
        self._log.delete_old_segments()
        self._forget_snapshots_before(snapshot_id)
        return True


def _voter_changes(batch: RecordBatch) -> list[tuple[int, VoterSet]]:
    found: list[tuple[int, VoterSet]] = []
    for record in batch.records():
        key = parse_control_key(record.key)
        if key.type == ControlRecordType.KRAFT_VOTERS and record.value is not None:
            found.append((record.offset, decode_voters(record.value)))
    return found


def _offset(snapshot_id: OffsetAndEpoch) -> int:
    return snapshot_id.offset

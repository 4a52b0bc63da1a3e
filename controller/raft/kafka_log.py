"""The Raft core's log as Kafka keeps it: ``__cluster_metadata-0``, record batches v2.

Entries map to batches as Kafka's raft client writes them: consecutive data entries (the
controller's records, already framed) share one data batch, uncompressed, up to 8 MiB;
each run of control entries is one control batch, a LeaderChangeMessage (control type 2)
or a VotersRecord (type 6, with a KRaftVersionRecord, type 5, before it as Kafka's
leader writes at the start of an epoch). Every batch carries the leader's epoch, which
the partition's leader-epoch cache follows, so ``end_offset_for_epoch`` is Kafka's
OffsetForLeaderEpoch answer. Records travel between replicas as the batches' bytes.

Snapshots are not written yet: the log always starts at 0, so no fetch is ever answered
with a snapshot id, and a leader that sends one is refused.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from millpond.controller.raft.keys import Endpoint, OffsetAndEpoch, ReplicaKey, Voter, VoterSet
from millpond.controller.raft.log import Entry, LeaderChange, VotersChange
from millpond.storage.clock import Clock
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

__all__ = ["KafkaRaftLog", "decode_voters", "encode_voters"]

#: Kafka's raft caps a batch at 8 MiB; more entries go in the next batch.
MAX_BATCH_BYTES = 8 * 1024 * 1024
#: Per-record framing beyond the value, a safe upper bound for sizing batches.
_RECORD_OVERHEAD = 32
LEADER_CHANGE_VERSION = 0
#: How much one read of the log asks for.
READ_BYTES = 1024 * 1024
VOTERS_VERSION = 0
KRAFT_VERSION_VERSION = 0


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

    def __init__(self, log: Log, clock: Clock, kraft_version: int = 1) -> None:
        assert log.leader_epochs is not None, "the metadata log keeps a leader-epoch cache"
        self._log = log
        self._clock = clock
        self._kraft_version = kraft_version

    @property
    def log(self) -> Log:
        return self._log

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
        return 0 if latest is None else latest

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        cache = self._log.leader_epochs
        assert cache is not None
        found_epoch, end = cache.end_offset_for(epoch, self.end_offset)
        if found_epoch < 0:
            return OffsetAndEpoch(self.last_fetched_epoch(), self.end_offset)
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
        data: list[NewRecord] = []
        size = 0
        for entry in entries:
            if isinstance(entry, bytes):
                if data and size + len(entry) + _RECORD_OVERHEAD > MAX_BATCH_BYTES:
                    yield build_batch(data, base_timestamp=now, partition_leader_epoch=epoch)
                    data, size = [], 0
                data.append(NewRecord(value=entry, timestamp=now))
                size += len(entry) + _RECORD_OVERHEAD
                continue
            if data:
                yield build_batch(data, base_timestamp=now, partition_leader_epoch=epoch)
                data, size = [], 0
            yield build_batch(
                self._control_records(entry, now),
                base_timestamp=now,
                partition_leader_epoch=epoch,
                is_control=True,
            )
        if data:
            yield build_batch(data, base_timestamp=now, partition_leader_epoch=epoch)

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
            version=KRAFT_VERSION_VERSION, k_raft_version=self._kraft_version
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
        for batch in self.batches(self.start_offset):
            if batch.is_control:
                history += _voter_changes(batch)
        return history

    # -- snapshots (none yet) --------------------------------------------------------------

    def latest_snapshot(self) -> OffsetAndEpoch | None:
        return None

    def earliest_snapshot(self) -> OffsetAndEpoch | None:
        return None

    def snapshot_size(self, snapshot_id: OffsetAndEpoch) -> int | None:
        return None

    def read_snapshot(self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int) -> bytes:
        raise LookupError(f"no snapshot {snapshot_id}: this log writes none")

    def begin_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        raise NotImplementedError(
            f"the leader sent snapshot {snapshot_id}, but millpond cannot install metadata"
            " snapshots yet; let this replica catch up from a leader that keeps its log"
        )

    def write_snapshot_chunk(self, snapshot_id: OffsetAndEpoch, position: int, data: bytes) -> int:
        self.begin_snapshot(snapshot_id)
        return 0

    def install_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        self.begin_snapshot(snapshot_id)


def _voter_changes(batch: RecordBatch) -> list[tuple[int, VoterSet]]:
    found: list[tuple[int, VoterSet]] = []
    for record in batch.records():
        key = parse_control_key(record.key)
        if key.type == ControlRecordType.KRAFT_VOTERS and record.value is not None:
            found.append((record.offset, decode_voters(record.value)))
    return found

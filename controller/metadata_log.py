"""The one-voter metadata log: ``__cluster_metadata-0`` in KRaft's layout and formats.

The log is an ordinary partition :class:`~millpond.storage.log.Log` in
``<metadata.log.dir or first log dir>/__cluster_metadata-0``. What goes in it is what
Kafka's raft layer writes:

* **data batches**: v2 batches, uncompressed, ``CreateTime``, no producer id, the
  partition leader epoch set to the controller's epoch, base and max timestamp the
  append time, each record with a null key, no headers, timestamp delta 0, and a value
  framed by :mod:`millpond.controller.record_serde`.
* **control batches**: at the start of each epoch the leader appends one control batch
  holding a LeaderChangeMessage (control key version 0, type 2; value the message at
  version 0) naming itself as leader, voter and granting voter. This is Kafka's
  ``kraft.version`` 0 (static voter set) shape: no KRaftVersionRecord/VotersRecord.

Epochs: ``quorum-state`` (Kafka's JSON, ``data_version`` 0) keeps the latest epoch, so
:meth:`MetadataLog.become_leader` always starts an epoch above every epoch seen, even if
the log lost its tail; the leader epoch cache (``leader-epoch-checkpoint``) follows the
batches as for any partition.

Commit: with one voter a record is committed once it is on this voter's disk, so each
append is fsynced before it returns and the high watermark is then the log end. That is
an fsync per controller operation: acceptable, because metadata changes are rare
(topic creations, config changes, registrations), never per produce request. A failed
write or fsync leaves the log *failed*: every later call raises, because what reached
the page cache may or may not survive, and only a restart (recovery, then replay) can
tell. Kafka's controller treats such a fault as fatal too.

Start-up always recovers the whole log (CRC checks, a torn tail cut): the metadata log is
small and its recovery point is not checkpointed. Snapshots (``.checkpoint`` files) are
a later step; :meth:`MetadataLog.latest_snapshot` is the hook replay starts from.

Not thread-safe: the controller owns it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

from millpond.controller.image import MetadataDelta, MetadataImage
from millpond.controller.record_serde import (
    ApiMessageAndVersion,
    MetadataParseError,
    UnknownMetadataRecordError,
    decode_metadata_record,
    encode_metadata_record,
)
from millpond.storage.clock import Clock
from millpond.storage.config import LogConfig
from millpond.storage.fs import FileSystem, join, write_atomic
from millpond.storage.leader_epochs import LeaderEpochCache
from millpond.storage.log import Log
from millpond.storage.names import LEADER_EPOCH_CHECKPOINT_FILE
from millpond.wire.exceptions import DecodeError
from millpond.wire.generated.data.leader_change_message import LeaderChangeMessage, Voter
from millpond.wire.records import (
    ControlRecordType,
    NewRecord,
    RecordBatch,
    build_batch,
    build_control_key,
    iter_batches,
    parse_control_key,
)

__all__ = [
    "METADATA_PARTITION_DIR",
    "METADATA_TOPIC",
    "MetadataLog",
    "MetadataLogError",
    "MetadataLogFailedError",
    "ReplayResult",
]

METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION_DIR = "__cluster_metadata-0"
QUORUM_STATE_FILE = "quorum-state"
LEADER_CHANGE_VERSION = 0
#: Kafka's raft caps a batch at 8 MiB; a larger change is split into several batches.
MAX_BATCH_BYTES = 8 * 1024 * 1024
#: How much one read of the log asks for when replaying.
READ_BYTES = 1024 * 1024


class MetadataLogError(Exception):
    """The metadata log holds something that is not a metadata log (bad framing)."""


class MetadataLogFailedError(OSError):
    """A write or fsync of the metadata log failed; restart to recover and replay."""


def metadata_log_config() -> LogConfig:
    """The metadata log's settings: Kafka's defaults for ``metadata.log.segment.bytes``
    and the raft batch cap; no time retention (snapshots will bound it)."""
    return LogConfig(
        max_message_bytes=MAX_BATCH_BYTES + 1024,
        retention_ms=-1,
        segment_ms=7 * 24 * 60 * 60 * 1000,
    )


class ReplayResult(NamedTuple):
    image: MetadataImage
    #: Records skipped with a warning (unknown or irrelevant types).
    skipped_records: int
    #: The greatest epoch seen in the log (-1 for an empty log).
    last_epoch: int


class MetadataLog:
    """``__cluster_metadata-0`` under ``log_dir`` (see the module docstring)."""

    def __init__(
        self,
        fs: FileSystem,
        log_dir: str,
        clock: Clock,
        *,
        node_id: int,
        config: LogConfig | None = None,
    ) -> None:
        self._fs = fs
        self._clock = clock
        self.node_id = node_id
        self.directory = join(log_dir, METADATA_PARTITION_DIR)
        fs.makedirs(self.directory)
        epochs = LeaderEpochCache(fs, join(self.directory, LEADER_EPOCH_CHECKPOINT_FILE))
        self._log = Log(
            fs,
            self.directory,
            config or metadata_log_config(),
            clock,
            recovery_point=0,
            had_clean_shutdown=False,
            leader_epochs=epochs,
        )
        self._log.update_high_watermark(self._log.log_end_offset)
        self._epoch = -1
        self._failed = False

    # -- positions -------------------------------------------------------------------------

    @property
    def log_end_offset(self) -> int:
        return self._log.log_end_offset

    @property
    def high_watermark(self) -> int:
        """Everything below is committed (on disk; one voter is a majority)."""
        return self._log.high_watermark

    @property
    def epoch(self) -> int:
        """The epoch this node leads (-1 until :meth:`become_leader`)."""
        return self._epoch

    @property
    def log(self) -> Log:
        return self._log

    # -- leadership ------------------------------------------------------------------------

    def _quorum_state_path(self) -> str:
        return join(self.directory, QUORUM_STATE_FILE)

    def _stored_epoch(self) -> int:
        path = self._quorum_state_path()
        if not self._fs.exists(path):
            return -1
        handle = self._fs.open(path)
        try:
            text = handle.read_at(0, handle.size())
        finally:
            handle.close()
        try:
            epoch = json.loads(text)["leaderEpoch"]
        except (ValueError, KeyError, TypeError) as exc:
            raise MetadataLogError(f"{path}: unreadable quorum state: {exc}") from None
        if not isinstance(epoch, int):
            raise MetadataLogError(f"{path}: leaderEpoch {epoch!r} is not an integer")
        return epoch

    def become_leader(self) -> int:
        """Start a new epoch led by this node: persist it in ``quorum-state``, then
        append (and fsync) the LeaderChangeMessage. Returns the new epoch."""
        self._check_healthy()
        cache = self._log.leader_epochs
        last_in_log = -1 if cache is None or cache.latest_epoch is None else cache.latest_epoch
        epoch = max(self._stored_epoch(), last_in_log) + 1
        state = {
            "clusterId": "",
            "leaderId": self.node_id,
            "leaderEpoch": epoch,
            "votedId": -1,
            "appliedOffset": 0,
            "currentVoters": [{"voterId": self.node_id}],
            "data_version": 0,
        }
        self._guard(
            lambda: write_atomic(self._fs, self._quorum_state_path(), json.dumps(state).encode())
        )
        self._epoch = epoch
        message = LeaderChangeMessage(
            version=LEADER_CHANGE_VERSION,
            leader_id=self.node_id,
            voters=[Voter(voter_id=self.node_id)],
            granting_voters=[Voter(voter_id=self.node_id)],
        )
        now = self._clock.now_ms()
        batch = build_batch(
            [
                NewRecord(
                    key=build_control_key(ControlRecordType.LEADER_CHANGE),
                    value=message.encode(LEADER_CHANGE_VERSION),
                    timestamp=now,
                )
            ],
            base_timestamp=now,
            partition_leader_epoch=epoch,
            is_control=True,
        )
        self._append_and_commit(bytearray(batch))
        return epoch

    # -- append ----------------------------------------------------------------------------

    def append(self, records: Sequence[ApiMessageAndVersion]) -> tuple[int, int]:
        """Append ``records`` in this epoch and commit them (fsync); returns the offsets
        of the first and last record. Raises :class:`MetadataLogFailedError` if the
        write or the fsync fails (and the log stays failed)."""
        assert records, "nothing to append"
        if self._epoch < 0:
            raise RuntimeError("the metadata log is appended to only by its leader")
        self._check_healthy()
        now = self._clock.now_ms()
        out = bytearray()
        chunk: list[NewRecord] = []
        size = 0
        for record in records:
            value = encode_metadata_record(record)
            if chunk and size + len(value) + 32 > MAX_BATCH_BYTES:
                out += self._data_batch(chunk, now)
                chunk, size = [], 0
            chunk.append(NewRecord(value=value, timestamp=now))
            size += len(value) + 32
        out += self._data_batch(chunk, now)
        first = self._log.log_end_offset
        self._append_and_commit(out)
        return first, self._log.log_end_offset - 1

    def _data_batch(self, records: list[NewRecord], now: int) -> bytes:
        return build_batch(records, base_timestamp=now, partition_leader_epoch=self._epoch)

    def _append_and_commit(self, batches: bytearray) -> None:
        def write() -> None:
            self._log.append(batches, assign_offsets=True, leader_epoch=self._epoch)
            self._log.flush()

        self._guard(write)
        self._log.update_high_watermark(self._log.log_end_offset)

    def _guard(self, action: Callable[[], None]) -> None:
        try:
            action()
        except OSError as exc:
            self._failed = True
            raise MetadataLogFailedError(
                exc.errno, f"metadata log {self.directory} failed: {exc}"
            ) from exc

    def _check_healthy(self) -> None:
        if self._failed:
            raise MetadataLogFailedError(5, f"metadata log {self.directory} failed earlier")

    # -- read and replay ---------------------------------------------------------------------

    def batches(self, start_offset: int = 0) -> Iterator[RecordBatch]:
        """The committed batches holding offsets at or after ``start_offset``."""
        offset = max(start_offset, self._log.log_start_offset)
        end = self._log.high_watermark
        while offset < end:
            data = self._log.read(offset, READ_BYTES, max_offset=end)
            raw = data.records.read()
            if not raw:
                return
            for batch in iter_batches(raw):
                if batch.last_offset >= offset:
                    yield batch
                offset = max(offset, batch.next_offset)

    def latest_snapshot(self) -> MetadataImage | None:
        """The hook for snapshots: the image of the newest snapshot at or below the high
        watermark, to replay the log from. None until snapshots are written."""
        return None

    def replay(self, base: MetadataImage) -> ReplayResult:
        """Rebuild the image: ``base`` (or the latest snapshot), then every committed
        batch after it. Control batches only move the offset and the epoch."""
        image = self.latest_snapshot() or base
        delta = MetadataDelta(image)
        last_epoch = image.epoch
        for batch in self.batches(image.offset + 1):
            epoch = batch.partition_leader_epoch
            last_epoch = max(last_epoch, epoch)
            try:
                records = list(batch.records())
            except DecodeError as exc:
                raise MetadataLogError(f"batch at offset {batch.base_offset}: {exc}") from None
            if batch.is_control:
                for record in records:
                    key = parse_control_key(record.key)
                    if key.type != ControlRecordType.LEADER_CHANGE:
                        delta.skip(f"control record type {key.type}")
                delta.set_offset(batch.last_offset, epoch)
                continue
            for record in records:
                try:
                    decoded = decode_metadata_record(record.value)
                except UnknownMetadataRecordError as exc:
                    delta.skip(str(exc))
                    delta.set_offset(record.offset, epoch)
                    continue
                except MetadataParseError as exc:
                    raise MetadataLogError(f"record at offset {record.offset}: {exc}") from None
                delta.replay(decoded.message, record.offset, epoch)
            delta.set_offset(batch.last_offset, epoch)
        return ReplayResult(delta.apply(), delta.skipped, last_epoch)

    def close(self) -> None:
        if not self._failed:
            self._log.close()

"""The rules for one producer's batches in one append: Kafka's ``ProducerAppendInfo``.

Split from :mod:`millpond.storage.producer_state` (which says what the rules are and
when they run). A :class:`ProducerAppendInfo` starts from the producer's committed
entry and builds, batch by batch, the entry the append would leave behind; each batch
is checked against the batches before it in the same request, then against the
committed state. Breaking a rule raises :class:`AppendRejected` with Kafka's error code.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from millpond.storage.producer_state_entry import (
    NO_PRODUCER_EPOCH,
    NO_SEQUENCE,
    ProducerStateEntry,
    in_sequence,
)
from millpond.wire.errors import ErrorCode
from millpond.wire.exceptions import DecodeError
from millpond.wire.records import (
    ControlRecordType,
    RecordBatch,
    parse_control_key,
    parse_end_txn_marker,
)

__all__ = [
    "AppendRejected",
    "CompletedTxn",
    "PendingBatch",
    "ProducerAppendInfo",
    "pending_batch",
]

#: The transaction version a data batch is checked with (Kafka's ``TV_UNKNOWN``).
TV_UNKNOWN: Final = -1
_INT16_MAX: Final = 0x7FFF


class AppendRejected(Exception):
    """A batch breaks a producer-state rule; ``error`` is what the client is told."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error
        self.message = message


class CompletedTxn(NamedTuple):
    """A transaction ended by a marker: its first offset and the marker's offset (for the
    transaction index and the last stable offset)."""

    producer_id: int
    first_offset: int
    last_offset: int
    is_aborted: bool


class PendingBatch(NamedTuple):
    """What the state needs of a batch, copied off its header so that an ``AppendCheck``
    holds no buffer. ``relative_offset`` is the batch's base offset minus the request's.
    ``marker`` is ``(is_abort, coordinator_epoch)`` for a transaction marker."""

    producer_id: int
    epoch: int
    first_seq: int
    last_seq: int
    relative_offset: int
    offset_delta: int
    timestamp: int
    is_transactional: bool
    is_control: bool
    marker: tuple[bool, int] | None


def pending_batch(batch: RecordBatch, relative_offset: int, from_client: bool) -> PendingBatch:
    """Copy a batch's header; a client's control batch or missing sequence is refused
    with INVALID_RECORD (Kafka's ``LogValidator``), an unreadable marker likewise."""
    if from_client:
        if batch.is_control:
            raise AppendRejected(
                ErrorCode.INVALID_RECORD, "Clients are not allowed to write control records"
            )
        if batch.base_sequence < 0:
            raise AppendRejected(
                ErrorCode.INVALID_RECORD,
                f"Invalid sequence number {batch.base_sequence} in record batch with "
                f"producerId {batch.producer_id}",
            )
    timestamp = batch.max_timestamp
    marker = None
    if batch.is_control:
        try:
            for record in batch.records():
                key = parse_control_key(record.key)
                if key.type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
                    raise DecodeError(f"control record type {key.type} is not a transaction marker")
                value = parse_end_txn_marker(record.value)
                marker = (key.type == ControlRecordType.ABORT, value.coordinator_epoch)
                timestamp = record.timestamp
                break
        except DecodeError as exc:
            raise AppendRejected(
                ErrorCode.INVALID_RECORD, f"bad transaction marker: {exc}"
            ) from None
    return PendingBatch(
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        batch.last_sequence,
        relative_offset,
        batch.last_offset_delta,
        timestamp,
        batch.is_transactional,
        batch.is_control,
        marker,
    )


class ProducerAppendInfo:
    """One producer's part of one append (see the module docstring).

    ``validate_epoch`` is off for replication and replay (the leader already judged);
    ``validate_sequence`` is on for clients only (coordinators write without sequences).
    """

    def __init__(
        self,
        partition: str,
        producer_id: int,
        current: ProducerStateEntry,
        *,
        validate_epoch: bool,
        validate_sequence: bool,
    ) -> None:
        self.partition = partition
        self.producer_id = producer_id
        self.current = current
        self.updated = current.without_batches()
        self.started_transactions: list[int] = []
        self._validate_epoch = validate_epoch
        self._validate_sequence = validate_sequence

    def append(
        self,
        p: PendingBatch,
        first_offset: int,
        last_offset: int,
        timestamp: int,
        transaction_version: int,
    ) -> CompletedTxn | None:
        if not p.is_control:
            self._append_data(p, first_offset, last_offset, timestamp)
            return None
        if p.marker is None:
            return None  # compaction removed the marker's record: nothing to apply
        return self._append_marker(p, p.marker, first_offset, timestamp, transaction_version)

    def _append_data(
        self, p: PendingBatch, first_offset: int, last_offset: int, timestamp: int
    ) -> None:
        self._check_epoch(p.epoch, first_offset, TV_UNKNOWN)
        if self._validate_sequence:
            self._check_sequence(p.epoch, p.first_seq, first_offset)
        self.updated.add_batch(
            p.epoch, p.last_seq, last_offset, last_offset - first_offset, timestamp
        )
        open_txn = self.updated.current_txn_first_offset
        if open_txn is not None and not p.is_transactional:
            if self._validate_epoch:
                raise AppendRejected(
                    ErrorCode.INVALID_TXN_STATE,
                    f"Expected transactional write from producer {self.producer_id} at offset "
                    f"{first_offset} in partition {self.partition}",
                )
        elif open_txn is None and p.is_transactional:
            self.updated.current_txn_first_offset = first_offset
            self.started_transactions.append(first_offset)

    def _append_marker(
        self,
        p: PendingBatch,
        marker: tuple[bool, int],
        offset: int,
        timestamp: int,
        transaction_version: int,
    ) -> CompletedTxn | None:
        is_abort, coordinator_epoch = marker
        self._check_epoch(p.epoch, offset, max(transaction_version, 0))
        if self.updated.coordinator_epoch > coordinator_epoch and self._validate_epoch:
            raise AppendRejected(
                ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                f"Invalid coordinator epoch for producerId {self.producer_id} at offset "
                f"{offset} in partition {self.partition}: {coordinator_epoch} (zombie), "
                f"{self.updated.coordinator_epoch} (current)",
            )
        first = self.updated.current_txn_first_offset
        completed = None
        if first is not None:
            completed = CompletedTxn(self.producer_id, first, offset, is_abort)
        self.updated.end_transaction(p.epoch, coordinator_epoch, timestamp)
        return completed

    def _check_epoch(self, epoch: int, offset: int, transaction_version: int) -> None:
        """An older epoch is fenced. A TV2 marker must carry a newer epoch (the
        coordinator bumps it for each marker), except a retry of one already written."""
        current = self.updated.producer_epoch
        tv2 = transaction_version >= 2
        if not (epoch <= current if tv2 else epoch < current):
            return
        if (
            tv2
            and epoch == current
            and (self.updated.current_txn_first_offset is None or epoch == _INT16_MAX)
        ):
            return
        if self._validate_epoch:
            raise AppendRejected(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"Epoch of producer {self.producer_id} at offset {offset} in "
                f"{self.partition} is {epoch}, which is {'<=' if tv2 else '<'} the last "
                f"seen epoch {current}",
            )

    def _check_sequence(self, epoch: int, first_seq: int, offset: int) -> None:
        """A new epoch starts at 0; the same epoch continues the last sequence; a
        producer without an epoch here (unknown to this partition) may start anywhere."""
        updated, current = self.updated, self.current
        if epoch != updated.producer_epoch:
            if first_seq != 0 and updated.producer_epoch != NO_PRODUCER_EPOCH:
                raise AppendRejected(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"Invalid sequence number for new epoch of producer {self.producer_id} at "
                    f"offset {offset} in partition {self.partition}: {epoch} (request epoch), "
                    f"{first_seq} (seq. number), {updated.producer_epoch} (current epoch)",
                )
            return
        if not updated.is_empty:
            last_seq = updated.last_seq
        elif epoch == current.producer_epoch:
            last_seq = current.last_seq
        else:
            last_seq = NO_SEQUENCE
        if current.producer_epoch != NO_PRODUCER_EPOCH and not in_sequence(last_seq, first_seq):
            raise AppendRejected(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"Out of order sequence number for producer {self.producer_id} at offset "
                f"{offset} in partition {self.partition}: {first_seq} (incoming seq. number), "
                f"{last_seq} (current end sequence number)",
            )

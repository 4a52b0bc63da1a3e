"""Committed metadata batches replayed into image changes, metadata transactions held back.

One replay serves the active controller's restart, a standby controller, a broker
following the log and the tools that read a data directory. Control batches only move
the image's offset (and epoch). Data records go into the caller's
:class:`~millpond.controller.image.MetadataDelta`, except inside a metadata transaction:

* a BeginTransactionRecord opens one (Kafka's controller writes one around an operation
  too large for one batch); the records after it are held, not replayed, and the image
  stays at the offset before it, so nothing ever acts on half an operation;
* an EndTransactionRecord replays what was held, and the image moves past it;
* an AbortTransactionRecord drops what was held (the image is the one before the
  transaction, at the abort's offset).

A transaction may span many deliveries: the :class:`MetadataReplayer` keeps what it holds
between calls. Unknown record types are skipped and counted, never fatal.
"""

from __future__ import annotations

from typing import NamedTuple

from millpond.controller.image import MetadataDelta
from millpond.controller.record_serde import (
    MetadataParseError,
    UnknownMetadataRecordError,
    decode_metadata_record,
)
from millpond.wire.exceptions import DecodeError
from millpond.wire.generated.metadata.abort_transaction_record import AbortTransactionRecord
from millpond.wire.generated.metadata.begin_transaction_record import BeginTransactionRecord
from millpond.wire.generated.metadata.end_transaction_record import EndTransactionRecord
from millpond.wire.message import Message
from millpond.wire.records import ControlRecordType, RecordBatch, parse_control_key

__all__ = ["MetadataLogError", "MetadataReplayer"]

#: Control records that only move the offset (and the epoch) of the image.
_CONTROL_TYPES = {
    ControlRecordType.LEADER_CHANGE,
    ControlRecordType.KRAFT_VERSION,
    ControlRecordType.KRAFT_VOTERS,
}


class MetadataLogError(Exception):
    """The metadata log holds something that is not a metadata log (bad framing)."""


class _Held(NamedTuple):
    record: Message
    offset: int
    epoch: int


class MetadataReplayer:
    """Replays batches in log order (see the module docstring)."""

    def __init__(self) -> None:
        #: The open transaction's records; None outside a transaction.
        self._held: list[_Held] | None = None
        #: The offset of the open transaction's BeginTransactionRecord.
        self.transaction_start = -1

    @property
    def in_transaction(self) -> bool:
        return self._held is not None

    def abandon(self) -> None:
        """Forget an open transaction (its writer is gone and an abort follows)."""
        self._held = None
        self.transaction_start = -1

    def replay(self, delta: MetadataDelta, batch: RecordBatch) -> None:
        """Replay one committed batch into ``delta``. :class:`MetadataLogError` for a
        batch or record that cannot be a metadata log's."""
        epoch = batch.partition_leader_epoch
        try:
            records = list(batch.records())
        except DecodeError as exc:
            raise MetadataLogError(f"batch at offset {batch.base_offset}: {exc}") from None
        if batch.is_control:
            for record in records:
                key = parse_control_key(record.key)
                if key.type not in _CONTROL_TYPES:
                    delta.skip(f"control record type {key.type}")
            self._moved(delta, batch.last_offset, epoch)
            return
        for record in records:
            try:
                decoded = decode_metadata_record(record.value)
            except UnknownMetadataRecordError as exc:
                delta.skip(str(exc))
                self._moved(delta, record.offset, epoch)
                continue
            except MetadataParseError as exc:
                raise MetadataLogError(f"record at offset {record.offset}: {exc}") from None
            self._record(delta, decoded.message, record.offset, epoch)
        self._moved(delta, batch.last_offset, epoch)

    def _moved(self, delta: MetadataDelta, offset: int, epoch: int) -> None:
        if self._held is None:
            delta.set_offset(offset, epoch)

    def _record(self, delta: MetadataDelta, message: Message, offset: int, epoch: int) -> None:
        held = self._held
        if isinstance(message, BeginTransactionRecord):
            if held is not None:
                delta.skip(f"BeginTransactionRecord at {offset} inside a transaction")
                return
            self._held = []
            self.transaction_start = offset
        elif isinstance(message, EndTransactionRecord | AbortTransactionRecord):
            if held is None:
                delta.skip(f"{message.NAME} at {offset} outside a transaction")
                delta.set_offset(offset, epoch)
                return
            self.abandon()
            if isinstance(message, EndTransactionRecord):
                for r in held:
                    delta.replay(r.record, r.offset, r.epoch)
            delta.set_offset(offset, epoch)
        elif held is not None:
            held.append(_Held(message, offset, epoch))
        else:
            delta.replay(message, offset, epoch)

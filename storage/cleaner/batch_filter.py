"""What one batch keeps when its segment is cleaned: Kafka's batch and record rules.

A batch is copied unchanged when every record stays and it needs no delete horizon;
otherwise it is rebuilt with :func:`millpond.wire.records.build_batch` at its own base
offset, last offset delta, producer id, epoch and base sequence (so a producer's last
sequence survives), codec, timestamp type, transactional and control flags and leader
epoch. Records keep their offsets, timestamps, keys, values, headers and attributes.

Per record (data batches):

- past the offset map's last offset: kept (this cleaning does not reach it);
- no key: dropped. Kafka's cleaner counts it as invalid and drops it; produce refuses
  keyless records on compacted topics, so only a topic switched to ``compact`` later
  carries them;
- an older offset than the key's latest in the map: dropped;
- a tombstone (null value): kept until the batch's delete horizon has passed.

Per batch:

- aborted transaction data: its records go (the batch may stay empty, below);
- transaction markers: kept until their transaction has no data left and their own
  delete horizon has passed (:mod:`.txn_state`);
- delete horizon (KIP-534): a kept batch holding a tombstone, or a marker that may go,
  gets ``horizon = cleaning time + delete.retention.ms`` the first time a cleaning sees
  it (the ``has_delete_horizon`` attribute, the horizon in the base timestamp); later
  cleanings compare against it and never move it;
- a batch left with no records is still written (header only, as Kafka's empty batch)
  when it is its producer's last data batch (or, for a producer whose last entry is a
  marker, a marker of its current epoch): the producer's next sequence number and epoch
  must outlive the records; when it ends right at the high watermark; and, millpond's
  addition, when it is the last batch of a cleaned group (``keep_empty``): the cleaned
  segment then ends at the same offset as the segments it replaces, which lets a reload
  after a crash mid-swap find all of them (see :mod:`.swap`) and keeps the segment
  contiguous with the next one, as the loader's hole check wants.

Pure functions over one batch; thread-safe.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from millpond.storage.cleaner.offset_map import OffsetMap
from millpond.storage.cleaner.txn_state import TxnState
from millpond.wire.records import NewRecord, Record, RecordBatch, build_batch


class LastRecord(NamedTuple):
    """A producer's latest entry in the log (Kafka's ``LastRecord``): the last offset
    of its last data batch (None when only markers remain) and its epoch."""

    last_data_offset: int | None
    producer_epoch: int


@dataclass
class CleanerStats:
    batches_read: int = 0
    records_read: int = 0
    bytes_read: int = 0
    records_kept: int = 0
    bytes_written: int = 0
    batches_rebuilt: int = 0
    invalid_records: int = 0


@dataclass
class BatchFilter:
    """The rules of one cleaning (see the module docstring)."""

    offset_map: OffsetMap
    txns: TxnState
    now_ms: int
    delete_retention_ms: int
    producers: Mapping[int, LastRecord]
    high_watermark: int
    stats: CleanerStats = field(default_factory=CleanerStats)

    def filter(self, batch: RecordBatch, *, keep_empty: bool = False) -> bytes | None:
        """The bytes to write for ``batch`` (None: nothing)."""
        stats = self.stats
        stats.batches_read += 1
        stats.bytes_read += batch.size_in_bytes
        if batch.is_control:
            may_go = self.txns.on_control_batch(batch)
            horizon = batch.delete_horizon_ms
            discard_records = may_go and horizon is not None and horizon <= self.now_ms
            empty_txn_marker = may_go
        else:
            discard_records = self.txns.on_data_batch(batch)
            empty_txn_marker = False
        retain_empty = (
            keep_empty
            or (batch.has_producer_id and self._is_producers_last(batch))
            or batch.next_offset == self.high_watermark
        )
        if discard_records and not retain_empty:
            return None
        kept: list[Record] = []
        all_kept = True
        tombstones = False
        for record in batch.records():
            stats.records_read += 1
            if not discard_records and self._retain(batch, record):
                kept.append(record)
                tombstones = tombstones or record.value is None
            else:
                all_kept = False
        if not kept:
            return self._empty(batch) if retain_empty else None
        stats.records_kept += len(kept)
        set_horizon = (tombstones or empty_txn_marker) and batch.delete_horizon_ms is None
        if all_kept and not set_horizon:
            data = bytes(batch.buffer)
        else:
            horizon = (
                self.now_ms + self.delete_retention_ms if set_horizon else batch.delete_horizon_ms
            )
            data = _rebuild(batch, kept, horizon)
            stats.batches_rebuilt += 1
        stats.bytes_written += len(data)
        return data

    def _is_producers_last(self, batch: RecordBatch) -> bool:
        last = self.producers.get(batch.producer_id)
        if last is None:
            return False
        if last.last_data_offset is not None:
            return batch.last_offset == last.last_data_offset
        return batch.is_control and batch.producer_epoch == last.producer_epoch

    def _retain(self, batch: RecordBatch, record: Record) -> bool:
        if batch.is_control:
            return True
        if record.offset > self.offset_map.latest_offset:
            return True
        if record.key is None:
            self.stats.invalid_records += 1
            return False
        if record.offset < self.offset_map.get(record.key):
            return False
        if record.value is not None:
            return True
        horizon = batch.delete_horizon_ms
        return horizon is None or self.now_ms < horizon

    def _empty(self, batch: RecordBatch) -> bytes:
        """A header-only batch with the original's offsets and producer fields (Kafka's
        empty batch: no records, uncompressed, both timestamps the max timestamp)."""
        data = build_batch(
            [],
            base_offset=batch.base_offset,
            last_offset_delta=batch.last_offset_delta,
            partition_leader_epoch=batch.partition_leader_epoch,
            timestamp_type=batch.timestamp_type,
            base_timestamp=batch.max_timestamp,
            max_timestamp=batch.max_timestamp,
            producer_id=batch.producer_id,
            producer_epoch=batch.producer_epoch,
            base_sequence=batch.base_sequence,
            is_transactional=batch.is_transactional,
            is_control=batch.is_control,
        )
        self.stats.bytes_written += len(data)
        return data


def _rebuild(batch: RecordBatch, kept: list[Record], horizon: int | None) -> bytes:
    """``batch`` with only ``kept`` records (see the module docstring)."""
    base = batch.base_offset
    records = [
        NewRecord(
            key=r.key,
            value=r.value,
            headers=r.headers,
            timestamp=r.timestamp,
            offset_delta=r.offset - base,
            attributes=r.attributes,
        )
        for r in kept
    ]
    return build_batch(
        records,
        base_offset=base,
        partition_leader_epoch=batch.partition_leader_epoch,
        compression=batch.compression,
        timestamp_type=batch.timestamp_type,
        producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch,
        base_sequence=batch.base_sequence,
        is_transactional=batch.is_transactional,
        is_control=batch.is_control,
        delete_horizon_ms=horizon,
        last_offset_delta=batch.last_offset_delta,
    )

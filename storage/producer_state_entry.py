"""One producer's state on one partition: Kafka's ``ProducerStateEntry`` and ``BatchMetadata``.

Split from :mod:`millpond.storage.producer_state` (the manager and the append rules) so
that each module stays readable. An entry holds what the leader needs to judge the
producer's next batch: its epoch, the metadata of its last
:data:`NUM_BATCHES_TO_RETAIN` batches (a client keeps at most 5 requests in flight per
connection with idempotence on, so a retry can only duplicate one of the last 5
batches), the transaction coordinator's epoch, the first offset of its open
transaction and the timestamp of its last write (for expiry).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Final, NamedTuple

from millpond.storage.producer_snapshots import ProducerEntry

__all__ = [
    "INT32_MAX",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "NUM_BATCHES_TO_RETAIN",
    "BatchMetadata",
    "ProducerStateEntry",
    "decrement_sequence",
    "in_sequence",
    "increment_sequence",
]

#: Kafka's ``ProducerStateEntry.NUM_BATCHES_TO_RETAIN``: the retries a client can have
#: in flight (``max.in.flight.requests.per.connection`` <= 5 with idempotence).
NUM_BATCHES_TO_RETAIN: Final = 5
NO_PRODUCER_ID: Final = -1
NO_PRODUCER_EPOCH: Final = -1
NO_SEQUENCE: Final = -1
NO_TIMESTAMP: Final = -1
INT32_MAX: Final = 0x7FFFFFFF


def increment_sequence(sequence: int, increment: int) -> int:
    """``sequence + increment``, wrapping past int32 max to 0 as producers do."""
    if sequence > INT32_MAX - increment:
        return increment - (INT32_MAX - sequence) - 1
    return sequence + increment


def decrement_sequence(sequence: int, decrement: int) -> int:
    """``sequence - decrement``, wrapping below 0 to int32 max (Kafka's exact rule,
    which maps a last sequence of -1 to int32 max: such entries never match a client
    batch, whose sequences are never negative)."""
    if sequence < decrement:
        return INT32_MAX - (decrement - sequence) + 1
    return sequence - decrement


def in_sequence(last_sequence: int, next_sequence: int) -> bool:
    """Whether ``next_sequence`` directly follows ``last_sequence`` (with the wrap from
    int32 max to 0). A last sequence of -1 (none yet) is followed by 0 only."""
    return next_sequence == last_sequence + 1 or (next_sequence == 0 and last_sequence == INT32_MAX)


class BatchMetadata(NamedTuple):
    """One retained batch, as Kafka keeps it: the first sequence and offset are derived
    from the last ones and ``offset_delta`` (so the snapshot's single batch carries
    enough to answer a retry with the original offsets)."""

    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_seq(self) -> int:
        return decrement_sequence(self.last_seq, self.offset_delta)

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


class ProducerStateEntry:
    """The state of one producer id (see the module docstring); batches oldest first."""

    __slots__ = (
        "batches",
        "coordinator_epoch",
        "current_txn_first_offset",
        "last_timestamp",
        "producer_epoch",
        "producer_id",
    )

    def __init__(
        self,
        producer_id: int,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        coordinator_epoch: int = -1,
        last_timestamp: int = NO_TIMESTAMP,
        current_txn_first_offset: int | None = None,
        batches: Iterable[BatchMetadata] = (),
    ) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = last_timestamp
        self.current_txn_first_offset = current_txn_first_offset
        self.batches: deque[BatchMetadata] = deque(batches, maxlen=NUM_BATCHES_TO_RETAIN)

    @property
    def is_empty(self) -> bool:
        """No retained batch (a new producer, or one known only from a marker)."""
        return not self.batches

    @property
    def first_seq(self) -> int:
        return self.batches[0].first_seq if self.batches else NO_SEQUENCE

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    @property
    def first_data_offset(self) -> int:
        return self.batches[0].first_offset if self.batches else -1

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    @property
    def last_offset_delta(self) -> int:
        return self.batches[-1].offset_delta if self.batches else 0

    def without_batches(self) -> ProducerStateEntry:
        """A copy with no batches: Kafka's ``withProducerId``, the start of the state an
        append builds up before it is merged back with :meth:`update`."""
        return ProducerStateEntry(
            self.producer_id,
            self.producer_epoch,
            self.coordinator_epoch,
            self.last_timestamp,
            self.current_txn_first_offset,
        )

    def copy(self) -> ProducerStateEntry:
        return ProducerStateEntry(
            self.producer_id,
            self.producer_epoch,
            self.coordinator_epoch,
            self.last_timestamp,
            self.current_txn_first_offset,
            self.batches,
        )

    def _maybe_update_epoch(self, producer_epoch: int) -> None:
        # Sequences restart with each epoch, so batches of an older epoch can never be
        # duplicates of (or predecessors to) newer ones.
        if self.producer_epoch != producer_epoch:
            self.batches.clear()
            self.producer_epoch = producer_epoch

    def add_batch(
        self,
        producer_epoch: int,
        last_seq: int,
        last_offset: int,
        offset_delta: int,
        timestamp: int,
    ) -> None:
        """Record a written data batch (the oldest retained one drops out)."""
        self._maybe_update_epoch(producer_epoch)
        self.batches.append(BatchMetadata(last_seq, last_offset, offset_delta, timestamp))
        self.last_timestamp = timestamp

    def update(self, other: ProducerStateEntry) -> None:
        """Merge the state an append built (``other``, from :meth:`without_batches`)."""
        self._maybe_update_epoch(other.producer_epoch)
        self.batches.extend(other.batches)
        self.coordinator_epoch = other.coordinator_epoch
        self.current_txn_first_offset = other.current_txn_first_offset
        self.last_timestamp = other.last_timestamp

    def end_transaction(self, producer_epoch: int, coordinator_epoch: int, timestamp: int) -> None:
        """A transaction marker was written: the transaction is over."""
        self._maybe_update_epoch(producer_epoch)
        self.coordinator_epoch = coordinator_epoch
        self.current_txn_first_offset = None
        self.last_timestamp = timestamp

    def find_duplicate(
        self, producer_epoch: int, first_seq: int, last_seq: int
    ) -> BatchMetadata | None:
        """The retained batch with exactly this epoch and sequence range, if any."""
        if producer_epoch != self.producer_epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None

    def to_snapshot_entry(self) -> ProducerEntry:
        """Kafka's snapshot keeps only the last batch of each producer."""
        return ProducerEntry(
            producer_id=self.producer_id,
            epoch=self.producer_epoch,
            last_sequence=self.last_seq,
            last_offset=self.last_data_offset,
            offset_delta=self.last_offset_delta,
            timestamp=self.last_timestamp,
            coordinator_epoch=self.coordinator_epoch,
            current_txn_first_offset=(
                -1 if self.current_txn_first_offset is None else self.current_txn_first_offset
            ),
        )

    @classmethod
    def from_snapshot_entry(cls, e: ProducerEntry) -> ProducerStateEntry:
        entry = cls(
            e.producer_id,
            e.epoch,
            e.coordinator_epoch,
            e.timestamp,
            e.current_txn_first_offset if e.current_txn_first_offset >= 0 else None,
        )
        if e.last_offset >= 0:
            entry.add_batch(e.epoch, e.last_sequence, e.last_offset, e.offset_delta, e.timestamp)
        return entry

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ProducerStateEntry):
            return NotImplemented
        return (
            self.producer_id == other.producer_id
            and self.producer_epoch == other.producer_epoch
            and self.coordinator_epoch == other.coordinator_epoch
            and self.last_timestamp == other.last_timestamp
            and self.current_txn_first_offset == other.current_txn_first_offset
            and list(self.batches) == list(other.batches)
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"ProducerStateEntry(producer_id={self.producer_id}, "
            f"producer_epoch={self.producer_epoch}, coordinator_epoch={self.coordinator_epoch}, "
            f"last_timestamp={self.last_timestamp}, "
            f"current_txn_first_offset={self.current_txn_first_offset}, "
            f"batches={list(self.batches)})"
        )

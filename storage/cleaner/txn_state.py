"""Transactions as the cleaner walks a log: which data batches were aborted, and which
transaction markers have nothing left to mark.

The aborted transactions come from the segments' ``.txnindex`` entries (producer id,
first offset, last offset). Walking batches in offset order, a transaction becomes
"ongoing aborted" for its producer once the walk reaches its first offset; the
producer's transactional data batches are then aborted until its ABORT marker.

The rules, as in Kafka's cleaner:

- Data batches of an aborted transaction are dropped (their records; the batch itself
  may be kept empty for producer state, see :mod:`.batch_filter`), and they never enter
  the offset map.
- An ABORT marker is kept (and its transaction re-entered in the cleaned segment's
  ``.txnindex``, which read_committed fetches consult) while any data batch of that
  transaction was seen in this walk; otherwise it may go.
- A COMMIT marker may go when no data batch of its transaction was seen in this walk.
- A marker that "may go" still waits for its delete horizon (it is treated like a
  tombstone): the first cleaning that finds it removable stamps the horizon, a later one
  past the horizon drops it. Consumers that read the data before the cleaning so still
  see the marker.

Because every cleaning re-reads the log from its start, "seen in this walk" means
"still in the log": a marker goes only after all its data went.

One walk, one thread; not thread-safe.
"""

from __future__ import annotations

from collections.abc import Iterable

from millpond.storage.txn_index import AbortedTxn
from millpond.wire.exceptions import DecodeError
from millpond.wire.records import ControlRecordType, RecordBatch, parse_control_key


class TxnState:
    """The walk's view of transactions (see the module docstring)."""

    def __init__(self, aborted: Iterable[AbortedTxn] = ()) -> None:
        self._pending = sorted(aborted, key=lambda t: t.first_offset, reverse=True)
        self._ongoing_aborted: dict[int, tuple[AbortedTxn, bool]] = {}
        self._ongoing_committed: set[int] = set()
        #: Aborted transactions whose markers were kept, for the cleaned ``.txnindex``.
        self.retained_aborted: list[AbortedTxn] = []

    def add_aborted(self, aborted: Iterable[AbortedTxn]) -> None:
        self._pending.extend(aborted)
        self._pending.sort(key=lambda t: t.first_offset, reverse=True)

    def _start_aborted_up_to(self, offset: int) -> None:
        pending = self._pending
        while pending and pending[-1].first_offset <= offset:
            txn = pending.pop()
            self._ongoing_aborted.setdefault(txn.producer_id, (txn, False))

    def on_data_batch(self, batch: RecordBatch) -> bool:
        """Note a data batch; True if it belongs to an aborted transaction."""
        self._start_aborted_up_to(batch.last_offset)
        if not batch.is_transactional:
            return False
        ongoing = self._ongoing_aborted.get(batch.producer_id)
        if ongoing is not None:
            self._ongoing_aborted[batch.producer_id] = (ongoing[0], True)
            return True
        self._ongoing_committed.add(batch.producer_id)
        return False

    def on_control_batch(self, batch: RecordBatch) -> bool:
        """Note a control batch; True if it may be removed (its transaction has no data
        left in the log, or it is already empty)."""
        self._start_aborted_up_to(batch.last_offset)
        try:
            first = next(iter(batch.records()), None)
        except DecodeError:
            return False
        if first is None:
            return True
        try:
            kind = parse_control_key(first.key).type
        except DecodeError:
            return False
        producer = batch.producer_id
        if kind == ControlRecordType.ABORT:
            ongoing = self._ongoing_aborted.pop(producer, None)
            if ongoing is not None and ongoing[1]:
                self.retained_aborted.append(ongoing[0])
                return False
            return True
        if kind == ControlRecordType.COMMIT:
            if producer in self._ongoing_committed:
                self._ongoing_committed.discard(producer)
                return False
            return True
        return False

"""Producer ids for InitProducerId: allocation in blocks, and the request's logic.

Producer ids must never repeat across the cluster or across restarts: a partition
keeps the state of each id it has seen (:mod:`millpond.storage.producer_state`), and a
new producer given an old id would be judged by the old one's sequences. Kafka
therefore lets the controller hand each broker a block of
:data:`PRODUCER_ID_BLOCK_SIZE` ids at a time, recorded as a ``ProducerIdsRecord`` in the
metadata log (``AllocateProducerIds``), and the broker claims ids from its block. The
:class:`ProducerIdManager` here is that broker side, fed by an injected ``next_block``
callable so the controller can supply the blocks; :class:`LocalProducerIdBlocks` is the
controller side's arithmetic (``ProducerIdControlManager``) for a single node, whose
records the controller must persist for ids to stay unique after a restart.

:func:`init_producer_id` is the request's logic for what this broker can answer before
the transaction coordinator exists, following Kafka 4's ``KafkaApis`` and
``TransactionCoordinator.handleInitProducerId``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, NamedTuple

from millpond.wire.errors import ErrorCode
from millpond.wire.generated.metadata.producer_ids_record import ProducerIdsRecord

__all__ = [
    "PRODUCER_ID_BLOCK_SIZE",
    "TRANSACTION_MAX_TIMEOUT_MS_DEFAULT",
    "InitProducerIdResult",
    "LocalProducerIdBlocks",
    "ProducerIdManager",
    "ProducerIdUnavailableError",
    "ProducerIdsBlock",
    "bump_producer_epoch",
    "init_producer_id",
    "init_producer_id_error_for_version",
    "is_epoch_exhausted",
]

#: Kafka's ``ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE``.
PRODUCER_ID_BLOCK_SIZE: Final = 1000
#: ``transaction.max.timeout.ms`` default (15 minutes).
TRANSACTION_MAX_TIMEOUT_MS_DEFAULT: Final = 900_000
#: Kafka prefetches the next block once 90% of the current one is claimed.
_PREFETCH_THRESHOLD: Final = 0.9
_INT64_MAX: Final = 2**63 - 1
_INT16_MAX: Final = 2**15 - 1
NO_PRODUCER_ID: Final = -1
NO_PRODUCER_EPOCH: Final = -1


class ProducerIdsBlock(NamedTuple):
    """``size`` ids from ``first_producer_id``, assigned to one broker."""

    assigned_broker_id: int
    first_producer_id: int
    size: int

    @property
    def last_producer_id(self) -> int:
        return self.first_producer_id + self.size - 1

    @property
    def next_block_first_id(self) -> int:
        return self.first_producer_id + self.size

    @classmethod
    def from_record(cls, record: ProducerIdsRecord) -> ProducerIdsBlock:
        """The block a ``ProducerIdsRecord`` granted: the record names the id *after* it."""
        first = record.next_producer_id - PRODUCER_ID_BLOCK_SIZE
        return cls(record.broker_id, first, PRODUCER_ID_BLOCK_SIZE)


class ProducerIdUnavailableError(Exception):
    """No id can be handed out now. Kafka answers COORDINATOR_LOAD_IN_PROGRESS (14), a
    retriable code old clients do not treat as fatal, while the next block is on its way."""

    error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


class ProducerIdManager:
    """Claims producer ids from blocks that ``next_block`` supplies (Kafka's
    ``RPCProducerIdManager``).

    ``next_block`` returns the next block, or None while none is available yet (the
    controller may answer asynchronously: return None and have the block ready for a
    later call). It is asked once the current block is 90% claimed, so the next one is
    usually there before it is needed, and again whenever a block runs out.
    """

    def __init__(self, next_block: Callable[[], ProducerIdsBlock | None]) -> None:
        self._next_block = next_block
        self._current: ProducerIdsBlock | None = None
        self._next: ProducerIdsBlock | None = None
        self._counter = 0

    def generate_producer_id(self) -> int:
        """A fresh producer id; :class:`ProducerIdUnavailableError` if none is at hand."""
        if self._current is None or self._counter > self._current.last_producer_id:
            self._switch_block()
        assert self._current is not None
        producer_id = self._counter
        self._counter += 1
        prefetch_at = self._current.first_producer_id + int(
            self._current.size * _PREFETCH_THRESHOLD
        )
        if producer_id == prefetch_at:
            self._maybe_fetch_next()
        return producer_id

    def _switch_block(self) -> None:
        self._maybe_fetch_next()
        block = self._next
        if block is None:
            raise ProducerIdUnavailableError("Producer ID block is full. Waiting for next block")
        self._next = None
        self._current = block
        self._counter = block.first_producer_id

    def _maybe_fetch_next(self) -> None:
        if self._next is not None:
            return
        block = self._next_block()
        if block is None:
            return
        if block.size <= 0 or block.first_producer_id < 0:
            raise ValueError(f"invalid producer id block {block}")
        if self._current is not None and block.first_producer_id <= self._current.last_producer_id:
            raise ValueError(f"producer id block {block} overlaps the current {self._current}")
        self._next = block


class LocalProducerIdBlocks:
    """The controller's block arithmetic (``ProducerIdControlManager``) for one node:
    each call hands out the next block and leaves in :attr:`last_record` the
    ``ProducerIdsRecord`` the controller must write so the ids survive a restart."""

    def __init__(self, broker_id: int, broker_epoch: int = -1, next_producer_id: int = 0) -> None:
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self.next_producer_id = next_producer_id
        self.last_record: ProducerIdsRecord | None = None

    def replay(self, record: ProducerIdsRecord) -> None:
        """Apply a record read back from the metadata log."""
        self.next_producer_id = record.next_producer_id

    def __call__(self) -> ProducerIdsBlock:
        first = self.next_producer_id
        if first > _INT64_MAX - PRODUCER_ID_BLOCK_SIZE:
            raise ProducerIdUnavailableError("Exhausted all producerIds")
        block = ProducerIdsBlock(self.broker_id, first, PRODUCER_ID_BLOCK_SIZE)
        self.next_producer_id = block.next_block_first_id
        self.last_record = ProducerIdsRecord(
            broker_id=self.broker_id,
            broker_epoch=self.broker_epoch,
            next_producer_id=block.next_block_first_id,
        )
        return block


class InitProducerIdResult(NamedTuple):
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


def init_producer_id(
    *,
    transactional_id: str | None,
    transaction_timeout_ms: int,
    producer_id: int,
    producer_epoch: int,
    generate_producer_id: Callable[[], int],
    transaction_max_timeout_ms: int = TRANSACTION_MAX_TIMEOUT_MS_DEFAULT,
    enable_2pc: bool = False,
    keep_prepared_txn: bool = False,
) -> InitProducerIdResult:
    """InitProducerId as Kafka 4 answers it, up to the transaction coordinator.

    * ``producer_id`` and ``producer_epoch`` both -1, or both set; else INVALID_REQUEST.
    * No transactional id: *always* a new producer id with epoch 0, whatever id and
      epoch the request carries and without checking the timeout (Kafka's coordinator
      "blindly accepts" these; an idempotent producer bumps its epoch locally, KIP-360,
      and comes here only for a new id).
    * An empty transactional id: INVALID_REQUEST. 2PC (KIP-939) is off by default:
      TRANSACTIONAL_ID_AUTHORIZATION_FAILED; ``keep_prepared_txn``: UNSUPPORTED_VERSION.
    * ``transaction_timeout_ms`` not in (0, ``transaction.max.timeout.ms``]:
      INVALID_TRANSACTION_TIMEOUT (tansu's finding #7: librdkafka's tests rely on it).
    * Otherwise COORDINATOR_NOT_AVAILABLE (retriable) until the transaction coordinator
      exists; it will use :func:`bump_producer_epoch`.

    Errors carry producer id and epoch -1, as Kafka's do.
    """
    if (producer_id == NO_PRODUCER_ID) != (producer_epoch == NO_PRODUCER_EPOCH):
        return InitProducerIdResult(ErrorCode.INVALID_REQUEST)
    if transactional_id is None:
        try:
            return InitProducerIdResult(ErrorCode.NONE, generate_producer_id(), 0)
        except ProducerIdUnavailableError as exc:
            return InitProducerIdResult(exc.error)
    if not transactional_id:
        return InitProducerIdResult(ErrorCode.INVALID_REQUEST)
    if enable_2pc:
        return InitProducerIdResult(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if keep_prepared_txn:
        return InitProducerIdResult(ErrorCode.UNSUPPORTED_VERSION)
    if not 0 < transaction_timeout_ms <= transaction_max_timeout_ms:
        return InitProducerIdResult(ErrorCode.INVALID_TRANSACTION_TIMEOUT)
    return InitProducerIdResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)


def init_producer_id_error_for_version(error: ErrorCode, version: int) -> ErrorCode:
    """InitProducerId before v4 cannot carry PRODUCER_FENCED (90): Kafka sends
    INVALID_PRODUCER_EPOCH (47) instead, which those clients handle the same way."""
    if version < 4 and error == ErrorCode.PRODUCER_FENCED:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


def is_epoch_exhausted(producer_epoch: int) -> bool:
    """Kafka keeps the last epoch (int16 max) for fencing, so an epoch of int16 max - 1
    or more cannot be bumped again."""
    return producer_epoch >= _INT16_MAX - 1


def bump_producer_epoch(
    producer_id: int, producer_epoch: int, generate_producer_id: Callable[[], int]
) -> tuple[int, int]:
    """The next (id, epoch) of a producer the transaction coordinator re-initialises:
    the same id with the epoch + 1 (a new producer, epoch -1, gets 0), or a new id with
    epoch 0 once the epoch is exhausted (Kafka's ``prepareIncrementProducerEpoch`` /
    ``prepareProducerIdRotation``)."""
    if is_epoch_exhausted(producer_epoch):
        return generate_producer_id(), 0
    return producer_id, producer_epoch + 1

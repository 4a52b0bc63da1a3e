"""Producer id blocks and InitProducerId as Kafka 4 answers it without a coordinator."""

from __future__ import annotations

import pytest

from millpond.broker.producer_ids import (
    PRODUCER_ID_BLOCK_SIZE,
    InitProducerIdResult,
    LocalProducerIdBlocks,
    ProducerIdManager,
    ProducerIdsBlock,
    ProducerIdUnavailableError,
    bump_producer_epoch,
    init_producer_id,
    init_producer_id_error_for_version,
    is_epoch_exhausted,
)
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.metadata.producer_ids_record import ProducerIdsRecord


class Blocks:
    """A controller stand-in that can be told to have no block ready."""

    def __init__(self, size: int = 10) -> None:
        self.next_first = 0
        self.size = size
        self.ready = True
        self.calls = 0

    def __call__(self) -> ProducerIdsBlock | None:
        self.calls += 1
        if not self.ready:
            return None
        block = ProducerIdsBlock(1, self.next_first, self.size)
        self.next_first += self.size
        return block


def test_ids_are_claimed_in_order_across_blocks_with_prefetch() -> None:
    blocks = Blocks(10)
    manager = ProducerIdManager(blocks)
    ids = [manager.generate_producer_id() for _ in range(25)]
    assert ids == list(range(25))
    # one call at the start, then one at each block's 90% mark (ids 9 and 19)
    assert blocks.calls == 3


def test_no_block_is_coordinator_load_in_progress_then_recovers() -> None:
    blocks = Blocks(10)
    blocks.ready = False
    manager = ProducerIdManager(blocks)
    with pytest.raises(ProducerIdUnavailableError) as info:
        manager.generate_producer_id()
    assert info.value.error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert int(info.value.error) == 14
    blocks.ready = True
    assert manager.generate_producer_id() == 0


def test_prefetch_failure_is_retried_when_the_block_runs_out() -> None:
    blocks = Blocks(10)
    manager = ProducerIdManager(blocks)
    for _ in range(9):
        manager.generate_producer_id()
    blocks.ready = False
    assert manager.generate_producer_id() == 9  # the 90% prefetch gets nothing
    with pytest.raises(ProducerIdUnavailableError):
        manager.generate_producer_id()
    blocks.ready = True
    assert manager.generate_producer_id() == 10


def test_overlapping_or_bad_blocks_are_refused() -> None:
    supplied = iter([ProducerIdsBlock(1, 0, 10), ProducerIdsBlock(1, 5, 10)])
    manager = ProducerIdManager(lambda: next(supplied))
    for _ in range(9):
        manager.generate_producer_id()
    with pytest.raises(ValueError, match="overlaps"):
        manager.generate_producer_id()
    with pytest.raises(ValueError, match="invalid"):
        ProducerIdManager(lambda: ProducerIdsBlock(1, -1, 10)).generate_producer_id()


def test_local_blocks_write_the_controllers_record() -> None:
    local = LocalProducerIdBlocks(broker_id=1, broker_epoch=7)
    block = local()
    assert block == ProducerIdsBlock(1, 0, PRODUCER_ID_BLOCK_SIZE)
    record = local.last_record
    assert record is not None
    assert (record.broker_id, record.broker_epoch, record.next_producer_id) == (1, 7, 1000)
    assert ProducerIdsBlock.from_record(record) == block
    # after a restart the replayed record keeps ids unique
    again = LocalProducerIdBlocks(broker_id=1)
    again.replay(ProducerIdsRecord(broker_id=1, broker_epoch=7, next_producer_id=1000))
    assert again().first_producer_id == 1000
    manager = ProducerIdManager(LocalProducerIdBlocks(broker_id=1))
    assert [manager.generate_producer_id() for _ in range(1001)][-1] == 1000


def test_local_blocks_refuse_to_overflow_int64() -> None:
    local = LocalProducerIdBlocks(broker_id=1, next_producer_id=2**63 - 999)
    with pytest.raises(ProducerIdUnavailableError):
        local()


def ids() -> ProducerIdManager:
    return ProducerIdManager(LocalProducerIdBlocks(broker_id=1, next_producer_id=5000))


def test_idempotent_producer_gets_a_new_id_with_epoch_zero() -> None:
    manager = ids()
    first = init_producer_id(
        transactional_id=None, transaction_timeout_ms=60_000, producer_id=-1,
        producer_epoch=-1, generate_producer_id=manager.generate_producer_id,
    )  # fmt: skip
    assert first == InitProducerIdResult(ErrorCode.NONE, 5000, 0)
    # Kafka 4 "blindly" hands out a fresh id even when the producer names its own,
    # and never checks the timeout without a transactional id
    again = init_producer_id(
        transactional_id=None, transaction_timeout_ms=10**9, producer_id=5000,
        producer_epoch=3, generate_producer_id=manager.generate_producer_id,
    )  # fmt: skip
    assert again == InitProducerIdResult(ErrorCode.NONE, 5001, 0)


def test_half_given_id_and_epoch_is_invalid_request() -> None:
    for pid, epoch in ((-1, 0), (7, -1)):
        result = init_producer_id(
            transactional_id=None, transaction_timeout_ms=1, producer_id=pid,
            producer_epoch=epoch, generate_producer_id=ids().generate_producer_id,
        )  # fmt: skip
        assert result == InitProducerIdResult(ErrorCode.INVALID_REQUEST, -1, -1)


def test_no_id_available_is_coordinator_load_in_progress() -> None:
    def none() -> int:
        raise ProducerIdUnavailableError("no block")

    result = init_producer_id(
        transactional_id=None, transaction_timeout_ms=1, producer_id=-1, producer_epoch=-1,
        generate_producer_id=none,
    )  # fmt: skip
    assert result.error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


@pytest.mark.parametrize(
    ("txn_id", "timeout", "kwargs", "error"),
    [
        ("", 60_000, {}, ErrorCode.INVALID_REQUEST),
        ("t", 60_000, {"enable_2pc": True}, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
        ("t", 60_000, {"keep_prepared_txn": True}, ErrorCode.UNSUPPORTED_VERSION),
        ("t", 900_001, {}, ErrorCode.INVALID_TRANSACTION_TIMEOUT),
        ("t", 0, {}, ErrorCode.INVALID_TRANSACTION_TIMEOUT),
        ("t", 2_000, {"transaction_max_timeout_ms": 1_000}, ErrorCode.INVALID_TRANSACTION_TIMEOUT),
        ("t", 900_000, {}, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    ],
)
def test_transactional_ids_until_the_coordinator_exists(
    txn_id: str, timeout: int, kwargs: dict[str, object], error: ErrorCode
) -> None:
    result = init_producer_id(
        transactional_id=txn_id, transaction_timeout_ms=timeout, producer_id=-1,
        producer_epoch=-1, generate_producer_id=ids().generate_producer_id,
        **kwargs,  # type: ignore[arg-type]
    )  # fmt: skip
    assert result == InitProducerIdResult(error, -1, -1)


def test_producer_fenced_before_v4_is_invalid_producer_epoch() -> None:
    assert init_producer_id_error_for_version(ErrorCode.PRODUCER_FENCED, 3) == 47
    assert init_producer_id_error_for_version(ErrorCode.PRODUCER_FENCED, 4) == 90
    assert init_producer_id_error_for_version(ErrorCode.NONE, 0) == 0


def test_epoch_bump_and_rotation() -> None:
    manager = ids()
    assert bump_producer_epoch(42, -1, manager.generate_producer_id) == (42, 0)
    assert bump_producer_epoch(42, 5, manager.generate_producer_id) == (42, 6)
    assert bump_producer_epoch(42, 32765, manager.generate_producer_id) == (42, 32766)
    assert is_epoch_exhausted(32766) and not is_epoch_exhausted(32765)
    assert bump_producer_epoch(42, 32766, manager.generate_producer_id) == (5000, 0)

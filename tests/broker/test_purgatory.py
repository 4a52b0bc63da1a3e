"""The purgatory without sockets: keyed wake-ups, expiry on a manual clock, produce
completion by the high watermark, cancellation, and its asyncio edge on a frozen
broker clock."""

from __future__ import annotations

import asyncio
import time

import pytest

from millpond.broker import purgatory_timer
from millpond.broker.control.clock import ControlledClock
from millpond.broker.handlers.produce import DelayedProduce, _Pending
from millpond.broker.partition import Partition
from millpond.broker.purgatory import DelayedOperation, Purgatory
from millpond.storage.clock import ManualClock, SystemClock
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.produce_response import PartitionProduceResponse

from .test_partition import append, follow, partition, registration

A = ("a", 0)
B = ("b", 0)


class Op(DelayedOperation):
    """Completes when ``ready``; records how it was tried and how it ended."""

    def __init__(self, delay_ms: int) -> None:
        super().__init__(delay_ms)
        self.ready = False
        self.tries = 0
        self.completions: list[bool] = []

    def try_complete(self) -> bool:
        self.tries += 1
        return self.ready

    def on_complete(self, expired: bool) -> None:
        self.completions.append(expired)


def test_an_operation_that_can_complete_at_once_never_waits() -> None:
    purgatory: Purgatory[tuple[str, int]] = Purgatory(ManualClock())
    op = Op(100)
    op.ready = True
    assert purgatory.try_complete_else_watch(op, [A])
    assert op.completions == [False]
    assert len(purgatory) == 0
    assert purgatory.watching(A) == 0


def test_a_change_wakes_only_the_operations_watching_its_key() -> None:
    purgatory: Purgatory[tuple[str, int]] = Purgatory(ManualClock())
    on_a, on_b, on_both = Op(100), Op(100), Op(100)
    for op, keys in ((on_a, [A]), (on_b, [B]), (on_both, [A, B])):
        assert not purgatory.try_complete_else_watch(op, keys)
    assert (purgatory.watching(A), purgatory.watching(B)) == (2, 2)
    on_b.ready = on_both.ready = True
    assert purgatory.check_and_complete(A) == 1  # on_both; on_b is not asked
    assert on_b.tries == 1  # only its first try
    assert on_both.completions == [False]
    assert purgatory.watching(B) == 1  # on_both left both keys
    assert purgatory.check_and_complete(B) == 1
    assert on_b.completions == [False]
    assert on_a.completions == []
    assert len(purgatory) == 1


def test_deadlines_pass_only_when_the_clock_moves() -> None:
    clock = ManualClock()
    purgatory: Purgatory[tuple[str, int]] = Purgatory(clock)
    early, late = Op(100), Op(300)
    purgatory.try_complete_else_watch(late, [A])
    purgatory.try_complete_else_watch(early, [A])
    assert purgatory.next_deadline_ms() == clock.monotonic_ms() + 100
    assert purgatory.expire() == 0  # a clock that stands still expires nothing
    clock.advance(99)
    assert purgatory.expire() == 0
    clock.advance(1)
    assert purgatory.expire() == 1
    assert early.completions == [True]
    assert purgatory.next_deadline_ms() == clock.monotonic_ms() + 200
    late.ready = True
    assert purgatory.check_and_complete(A) == 1
    clock.advance(1000)
    assert purgatory.expire() == 0  # completed once, never again
    assert late.completions == [False]
    assert purgatory.next_deadline_ms() is None


def test_a_cancelled_operation_never_completes() -> None:
    clock = ManualClock()
    purgatory: Purgatory[tuple[str, int]] = Purgatory(clock)
    op = Op(10)
    purgatory.try_complete_else_watch(op, [A, B])
    purgatory.cancel(op)
    assert len(purgatory) == 0
    assert (purgatory.watching(A), purgatory.watching(B)) == (0, 0)
    op.ready = True
    clock.advance(100)
    assert purgatory.check_and_complete(A) == 0
    assert purgatory.expire() == 0
    assert op.completions == []


class _Open:
    def __init__(self) -> None:
        self.open = True

    def is_open(self, topic: str, index: int) -> bool:
        return self.open


def _delayed_produce(
    timeout_ms: int, min_isr: int = 1
) -> tuple[DelayedProduce, PartitionProduceResponse, Partition, _Open]:
    p = partition(registration(replicas=(1, 2)))
    end = append(p, 3)
    response = PartitionProduceResponse(index=0, base_offset=0)
    replicas = _Open()
    op = DelayedProduce(timeout_ms, [_Pending(p, end, min_isr, response)], replicas)  # type: ignore[arg-type]
    return op, response, p, replicas


def test_an_acks_all_produce_completes_when_the_watermark_covers_it() -> None:
    purgatory: Purgatory[tuple[str, int]] = Purgatory(ManualClock())
    op, response, p, _ = _delayed_produce(30_000)
    assert not purgatory.try_complete_else_watch(op, [("t", 0)])
    assert follow(p, 2, 2)  # offsets 0-1 only: not yet
    assert purgatory.check_and_complete(("t", 0)) == 0
    follow(p, 2, 3)
    assert purgatory.check_and_complete(("t", 0)) == 1
    assert response.error_code == ErrorCode.NONE
    assert response.base_offset == 0


def test_an_acks_all_produce_times_out_with_request_timed_out() -> None:
    clock = ManualClock()
    purgatory: Purgatory[tuple[str, int]] = Purgatory(clock)
    op, response, _, _ = _delayed_produce(1500)
    purgatory.try_complete_else_watch(op, [("t", 0)])
    clock.advance(1500)
    assert purgatory.expire() == 1
    assert response.error_code == ErrorCode.REQUEST_TIMED_OUT
    assert response.base_offset == 0  # kept, as Kafka keeps it


def test_a_produce_whose_partition_stopped_is_answered_not_leader() -> None:
    purgatory: Purgatory[tuple[str, int]] = Purgatory(ManualClock())
    op, response, _, replicas = _delayed_produce(30_000)
    purgatory.try_complete_else_watch(op, [("t", 0)])
    replicas.open = False
    assert purgatory.check_and_complete(("t", 0)) == 1
    assert response.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_the_wait_clock_runs_while_the_broker_clock_is_frozen_and_jumps_with_it() -> None:
    base = ManualClock()
    clock = ControlledClock(base)
    waits = clock.wait_clock()
    start = waits.monotonic_ms()
    clock.freeze()
    base.advance(100)  # real time passes while frozen
    assert clock.monotonic_ms() == 0
    assert waits.monotonic_ms() == start + 100
    clock.advance(50)
    assert waits.monotonic_ms() == start + 150
    clock.resume()  # the frozen time never passed for the broker clock, but did for waits
    assert waits.monotonic_ms() == start + 150
    base.advance(10)
    assert waits.monotonic_ms() == start + 160


def test_a_frozen_broker_clock_does_not_hang_a_wait() -> None:
    clock = ControlledClock(SystemClock())
    clock.freeze()
    purgatory: Purgatory[tuple[str, int]] = Purgatory(clock.wait_clock())
    op = Op(50)

    async def run() -> float:
        started = time.monotonic()
        await asyncio.wait_for(purgatory_timer.wait(purgatory, op, [A]), 5)
        return time.monotonic() - started

    elapsed = asyncio.run(run())
    assert op.completions == [True]
    assert 0.04 <= elapsed < 5


def test_an_advance_expires_a_wait_at_once() -> None:
    clock = ControlledClock(SystemClock())
    clock.freeze()
    purgatory: Purgatory[tuple[str, int]] = Purgatory(clock.wait_clock())
    op = Op(60_000)

    async def run() -> None:
        task = asyncio.create_task(purgatory_timer.wait(purgatory, op, [A]))
        for _ in range(10):  # until the task has parked the operation
            if len(purgatory):
                break
            await asyncio.sleep(0)
        assert len(purgatory) == 1
        clock.advance(60_000)
        purgatory_timer.poke(purgatory)
        await asyncio.wait_for(task, 5)

    asyncio.run(run())
    assert op.completions == [True]


def test_a_wait_whose_request_is_cancelled_leaves_the_purgatory() -> None:
    purgatory: Purgatory[tuple[str, int]] = Purgatory(SystemClock())
    op = Op(60_000)

    async def run() -> None:
        task = asyncio.create_task(purgatory_timer.wait(purgatory, op, [A]))
        for _ in range(10):
            if len(purgatory):
                break
            await asyncio.sleep(0)
        assert purgatory.watching(A) == 1
        task.cancel()  # the connection closed
        with pytest.raises(asyncio.CancelledError):
            await task
        assert len(purgatory) == 0
        assert purgatory.next_deadline_ms() is None
        op.ready = True
        assert purgatory.check_and_complete(A) == 0

    asyncio.run(run())
    assert op.completions == []


class Broken(Op):
    def try_complete(self) -> bool:
        self.tries += 1
        if self.ready:
            raise RuntimeError("a bug in the operation")
        return False


def test_a_failing_operation_ends_and_its_waiter_raises_not_the_waker() -> None:
    purgatory: Purgatory[tuple[str, int]] = Purgatory(ManualClock())
    op = Broken(60_000)

    async def run() -> None:
        task = asyncio.create_task(purgatory_timer.wait(purgatory, op, [A]))
        for _ in range(10):
            if len(purgatory):
                break
            await asyncio.sleep(0)
        op.ready = True
        assert purgatory.check_and_complete(A) == 1  # the waker (an append) goes on
        with pytest.raises(RuntimeError, match="a bug"):
            await task

    asyncio.run(run())
    assert op.completions == []  # it never answered
    assert len(purgatory) == 0

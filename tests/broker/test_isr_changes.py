"""The queue of ISR changes (pure): all that waits goes in one request, one request at a
time; a second change for a queued partition is not attempted; a partition missing from
the answer, or an answer refused as a whole, stays queued; each answer maps to what the
leader does, as Kafka's leader handles AlterPartition errors."""

from __future__ import annotations

import asyncio
from typing import cast

import pytest

from millpond.broker.partition import Partition
from millpond.broker.replication.isr_changes import IsrChangeQueue, IsrChangeSender, outcome_of
from millpond.broker.replication.leader import IsrProposal
from millpond.controller.alter_partition import AlterPartitionAnswer, PartitionResult
from millpond.controller.results import NO_ERROR, ApiError
from millpond.wire.errors import ErrorCode


class _Leader:
    def __init__(self, topic_id: bytes, index: int) -> None:
        self.topic_id = topic_id
        self.index = index


def leader(topic: int, index: int) -> Partition:
    return cast(Partition, _Leader(bytes([topic]) * 16, index))


PROPOSAL = IsrProposal(3, 7, ((1, 10), (2, 20)))


def test_everything_queued_goes_in_one_request_one_at_a_time() -> None:
    queue = IsrChangeQueue()
    a, b, c = leader(1, 0), leader(1, 1), leader(2, 0)
    for p in (a, b, c):
        assert queue.submit(p, PROPOSAL)
    assert not queue.submit(a, PROPOSAL)  # one queued already: not attempted
    request = queue.next_batch(1, 99)
    assert request is not None and (request.broker_id, request.broker_epoch) == (1, 99)
    assert [(t, [ch.partition_index for ch in chs]) for t, chs in request.topics] == [
        (bytes([1]) * 16, [0, 1]),
        (bytes([2]) * 16, [0]),
    ]
    [change] = request.topics[1][1]
    assert (change.leader_epoch, change.partition_epoch) == (3, 7)
    assert [(m.broker_id, m.broker_epoch) for m in change.new_isr] == [(1, 10), (2, 20)]
    assert queue.next_batch(1, 99) is None  # in flight
    # c is missing from the answer: it stays queued and goes next time.
    answer = (
        NO_ERROR,
        [(bytes([1]) * 16, [PartitionResult(0, NO_ERROR), PartitionResult(1, NO_ERROR)])],
    )
    done = queue.answered(answer)
    assert [(p, o.action) for p, _, o in done] == [(a, "taken"), (b, "taken")]
    again = queue.next_batch(1, 99)
    assert again is not None and [t for t, _ in again.topics] == [bytes([2]) * 16]


def test_an_answer_refused_whole_or_lost_keeps_everything_queued() -> None:
    queue = IsrChangeQueue()
    queue.submit(leader(1, 0), PROPOSAL)
    queue.next_batch(1, 5)
    assert queue.answered((ApiError(ErrorCode.STALE_BROKER_EPOCH), [])) == []
    queue.next_batch(1, 5)
    assert queue.answered(None) == []
    assert len(queue) == 1 and queue.next_batch(1, 6) is not None


@pytest.mark.parametrize(
    ("code", "action"),
    [
        (ErrorCode.NONE, "taken"),
        (ErrorCode.INELIGIBLE_REPLICA, "undo"),
        (ErrorCode.OPERATION_NOT_ATTEMPTED, "undo"),
        (ErrorCode.FENCED_LEADER_EPOCH, "wait"),
        (ErrorCode.INVALID_UPDATE_VERSION, "wait"),
        (ErrorCode.UNKNOWN_TOPIC_ID, "wait"),
        (ErrorCode.NEW_LEADER_ELECTED, "wait"),
        (ErrorCode.UNKNOWN_SERVER_ERROR, "again"),
    ],
)
def test_each_answer_tells_the_leader_what_to_do(code: ErrorCode, action: str) -> None:
    assert outcome_of(PartitionResult(0, ApiError(code))).action == action


def test_a_send_that_fails_unexpectedly_is_sent_again() -> None:
    calls: list[object] = []
    actions: list[str] = []

    async def send(request: object) -> AlterPartitionAnswer:
        calls.append(request)
        if len(calls) == 1:
            raise RuntimeError("a bug in the send")
        return NO_ERROR, [(bytes([1]) * 16, [PartitionResult(0, NO_ERROR)])]

    async def run() -> None:
        sender = IsrChangeSender(send, lambda _p, _pr, a, _r: actions.append(a), lambda: 9, 1)
        sender.submit(leader(1, 0), PROPOSAL)
        for _ in range(100):
            if actions:
                break
            await asyncio.sleep(0.01)
        await sender.close()

    asyncio.run(run())
    assert (len(calls), actions) == (2, ["taken"])

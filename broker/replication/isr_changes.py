"""The ISR changes a broker's partition leaders send the controller, as Kafka's
``AlterPartitionManager`` sends them: every change waiting goes in the next
AlterPartition, and only one request is in flight at a time.

- A second change for a partition whose first is still queued is not attempted (the
  leader goes back to its committed ISR and may try again later).
- A partition missing from an answer stays queued and goes again with the next
  request; an answer's own error (STALE_BROKER_EPOCH, a controller that went away, ...)
  sends the whole batch again after a short back-off.
- Each partition's answer goes back to its leader (:meth:`Partition.on_isr_answer`,
  through the replica manager, which wakes what waits on a moved high watermark):
  taken, undone (OPERATION_NOT_ATTEMPTED, INELIGIBLE_REPLICA), left in flight until
  the metadata says more (stale epochs, unknown topic, NEW_LEADER_ELECTED), or asked
  again at once (anything else).

:class:`IsrChangeQueue` is the pure part; :class:`IsrChangeSender` the asyncio edge.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Literal, NamedTuple

from millpond.controller.alter_partition import (
    AlterPartitionAnswer,
    AlterPartitionRequest,
    IsrChange,
    IsrMember,
    PartitionResult,
)
from millpond.wire.errors import ErrorCode

if TYPE_CHECKING:
    from millpond.broker.partition import Partition
    from millpond.broker.replication.leader import IsrProposal
    from millpond.controller.image import PartitionRegistration

__all__ = ["IsrAction", "IsrChangeQueue", "IsrChangeSender", "Outcome", "outcome_of"]

_log = logging.getLogger("millpond.broker")

#: Kafka's back-off before a refused batch goes again.
RETRY_BACKOFF_MS = 50

#: (topic id, partition index)
Key = tuple[bytes, int]


#: What a leader does with the controller's answer to its ISR change: take it, undo it,
#: wait (in flight until the metadata replaces it) or ask again.
IsrAction = Literal["taken", "undo", "wait", "again"]


class Outcome(NamedTuple):
    action: IsrAction
    result: PartitionResult


_UNDO = frozenset({ErrorCode.OPERATION_NOT_ATTEMPTED, ErrorCode.INELIGIBLE_REPLICA})
_WAIT = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.INVALID_UPDATE_VERSION,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.NEW_LEADER_ELECTED,
    }
)


def outcome_of(result: PartitionResult) -> Outcome:
    code = result.error.code
    if code == ErrorCode.NONE:
        return Outcome("taken", result)
    if code in _UNDO:
        return Outcome("undo", result)
    if code in _WAIT:
        return Outcome("wait", result)
    return Outcome("again", result)


class IsrChangeQueue:
    """The changes waiting to go, and the batch in flight (pure)."""

    def __init__(self) -> None:
        self._queued: dict[Key, tuple[Partition, IsrProposal]] = {}
        self.in_flight: list[Key] | None = None

    def __len__(self) -> int:
        return len(self._queued)

    def submit(self, partition: Partition, proposal: IsrProposal) -> bool:
        """Queue ``proposal``; False (not attempted) if the partition has one queued."""
        key = (partition.topic_id, partition.index)
        if key in self._queued:
            return False
        self._queued[key] = (partition, proposal)
        return True

    def next_batch(self, broker_id: int, broker_epoch: int) -> AlterPartitionRequest | None:
        """Everything queued, as one request (None: nothing, or a request in flight)."""
        if self.in_flight is not None or not self._queued:
            return None
        self.in_flight = list(self._queued)
        by_topic: dict[bytes, list[IsrChange]] = {}
        for (topic_id, index), (_, proposal) in self._queued.items():
            by_topic.setdefault(topic_id, []).append(
                IsrChange(
                    index,
                    proposal.leader_epoch,
                    proposal.partition_epoch,
                    [IsrMember(b, e) for b, e in proposal.isr],
                    proposal.leader_recovery_state,
                )
            )
        return AlterPartitionRequest(broker_id, broker_epoch, list(by_topic.items()))

    def answered(
        self, answer: AlterPartitionAnswer | None
    ) -> list[tuple[Partition, IsrProposal, Outcome]]:
        """The batch in flight was answered (None: no answer came): the partitions
        answered leave the queue, with what their leaders should do."""
        self.in_flight = None
        if answer is None or answer[0].is_failure:
            return []
        done = []
        for topic_id, results in answer[1]:
            for result in results:
                entry = self._queued.pop((topic_id, result.partition_index), None)
                if entry is not None:
                    done.append((*entry, outcome_of(result)))
        return done


#: Sends one AlterPartition to the active controller.
Send = Callable[[AlterPartitionRequest], Awaitable[AlterPartitionAnswer]]
#: Hands a partition's answer to its leader: (partition, proposal, action, the
#: partition as the controller answered it).
OnAnswer = Callable[["Partition", "IsrProposal", IsrAction, "PartitionRegistration | None"], None]


class IsrChangeSender:
    """Sends the queue's batches, one at a time, while there are any."""

    def __init__(
        self, send: Send, on_answer: OnAnswer, broker_epoch: Callable[[], int], broker_id: int
    ) -> None:
        self.queue = IsrChangeQueue()
        self._send = send
        self._on_answer = on_answer
        self._broker_epoch = broker_epoch
        self._broker_id = broker_id
        self._task: asyncio.Task[None] | None = None

    def submit(self, partition: Partition, proposal: IsrProposal) -> None:
        if not self.queue.submit(partition, proposal):
            self._on_answer(partition, proposal, "undo", None)
            return
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        while True:
            request = self.queue.next_batch(self._broker_id, self._broker_epoch())
            if request is None:
                return
            try:
                answer: AlterPartitionAnswer | None = await self._send(request)
            except ConnectionError as exc:
                _log.info("AlterPartition not answered: %s; sending it again", exc)
                answer = None
            except Exception:  # noqa: BLE001 (a bug must not stop every ISR change for good)
                _log.exception("AlterPartition failed; sending it again")
                answer = None
            if answer is not None and answer[0].is_failure:
                _log.info("AlterPartition refused: %s; sending it again", answer[0].message)
            outcomes = self.queue.answered(answer)
            for partition, proposal, outcome in outcomes:
                self._on_answer(partition, proposal, outcome.action, outcome.result.registration)
                if outcome.action == "again":
                    self.queue.submit(partition, proposal)
            if answer is None or answer[0].is_failure:
                await asyncio.sleep(RETRY_BACKOFF_MS / 1000)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

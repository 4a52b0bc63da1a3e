"""Delayed operations and their purgatory, as Kafka's ``DelayedOperationPurgatory``:
requests that cannot be answered yet (an ``acks=all`` produce until the high watermark
covers it, a fetch until ``min_bytes`` have gathered) wait here, watched under the keys
of the partitions they depend on, until a change to one of those partitions lets them
complete or their time runs out.

An operation first tries to complete at once (:meth:`Purgatory.try_complete_else_watch`);
otherwise it waits. :meth:`Purgatory.check_and_complete` retries only the operations
watching one key, so an append to one partition never wakes a fetch that waits on
others. :meth:`Purgatory.expire` completes those whose deadline has passed on the
purgatory's clock. Each operation completes exactly once, either way; one that is
cancelled (its connection closed) never completes.

Sans-I/O: the caller reads the clock through the purgatory, and an edge
(:mod:`millpond.broker.purgatory_timer`) calls :meth:`Purgatory.expire` when
:meth:`Purgatory.next_deadline_ms` says. Not thread-safe.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable, Iterable
from typing import Generic, TypeVar

from millpond.storage.clock import Clock

K = TypeVar("K", bound=Hashable)


class DelayedOperation:
    """An operation that completes once: when :meth:`try_complete` says it can, or at
    its deadline. Subclasses say what "can" means and what completing does."""

    __slots__ = ("deadline_ms", "delay_ms", "done", "failure", "on_done")

    def __init__(self, delay_ms: int) -> None:
        self.delay_ms = delay_ms
        self.deadline_ms = 0
        self.done = False
        #: Called after :meth:`on_complete` (the edge resolves its future here).
        self.on_done: Callable[[], None] | None = None
        #: What a try or the completion raised: the operation ends there, and its
        #: waiter raises it (not whoever's change happened to wake it).
        self.failure: Exception | None = None

    def try_complete(self) -> bool:
        """Whether the operation can complete now (it does not complete itself)."""
        raise NotImplementedError

    def on_complete(self, expired: bool) -> None:
        """Build the answer: ``expired`` when the deadline came first."""
        raise NotImplementedError


class Purgatory(Generic[K]):
    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self._watchers: dict[K, dict[DelayedOperation, None]] = {}
        self._deadlines: list[tuple[int, int, DelayedOperation]] = []
        self._order = itertools.count()
        #: The keys each waiting operation watches.
        self._keys_of: dict[DelayedOperation, tuple[K, ...]] = {}

    def __len__(self) -> int:
        """Operations waiting."""
        return len(self._keys_of)

    def watching(self, key: K) -> int:
        """How many waiting operations watch ``key``."""
        return len(self._watchers.get(key, ()))

    def try_complete_else_watch(self, operation: DelayedOperation, keys: Iterable[K]) -> bool:
        """Complete ``operation`` now if it can (True), else watch it under ``keys``
        until :meth:`check_and_complete` or its deadline completes it (False)."""
        if _attempt(operation):
            self._complete(operation, expired=False)
            return True
        watched = tuple(keys)
        self._keys_of[operation] = watched
        operation.deadline_ms = self.clock.monotonic_ms() + max(0, operation.delay_ms)
        for key in watched:
            self._watchers.setdefault(key, {})[operation] = None
        heapq.heappush(self._deadlines, (operation.deadline_ms, next(self._order), operation))
        return False

    def check_and_complete(self, key: K) -> int:
        """Retry the operations watching ``key`` (its partition changed); how many
        completed."""
        watchers = self._watchers.get(key)
        if not watchers:
            return 0
        completed = 0
        for operation in list(watchers):
            if not operation.done and _attempt(operation):
                self._complete(operation, expired=False)
                completed += 1
        return completed

    def expire(self) -> int:
        """Complete every operation whose deadline has passed; how many."""
        now = self.clock.monotonic_ms()
        deadlines = self._deadlines
        expired = 0
        while deadlines and deadlines[0][0] <= now:
            operation = heapq.heappop(deadlines)[2]
            if not operation.done:
                self._complete(operation, expired=True)
                expired += 1
        return expired

    def next_deadline_ms(self) -> int | None:
        """The earliest deadline of a waiting operation, on the purgatory's clock."""
        deadlines = self._deadlines
        while deadlines and deadlines[0][2].done:
            heapq.heappop(deadlines)
        return deadlines[0][0] if deadlines else None

    def cancel(self, operation: DelayedOperation) -> None:
        """Forget a waiting operation without completing it (nobody awaits its answer)."""
        if operation.done:
            return
        operation.done = True
        self._unwatch(operation)

    def _complete(self, operation: DelayedOperation, *, expired: bool) -> None:
        operation.done = True
        self._unwatch(operation)
        if operation.failure is None:
            try:
                operation.on_complete(expired)
            except Exception as exc:  # noqa: BLE001 (handed to the operation's waiter)
                operation.failure = exc
        if operation.on_done is not None:
            operation.on_done()

    def _unwatch(self, operation: DelayedOperation) -> None:
        for key in self._keys_of.pop(operation, ()):
            watchers = self._watchers.get(key)
            if watchers is not None:
                watchers.pop(operation, None)
                if not watchers:
                    del self._watchers[key]


def _attempt(operation: DelayedOperation) -> bool:
    """Try ``operation``; one whose try raises is done, with the failure kept for its
    waiter."""
    try:
        return operation.try_complete()
    except Exception as exc:  # noqa: BLE001 (handed to the operation's waiter)
        operation.failure = exc
        return True

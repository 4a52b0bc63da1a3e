"""Keyed deadlines of a coordinator shard (for groups: a member's session, a group's
join and sync phases). Scheduling a key again replaces its deadline, as Kafka's
coordinator timer does, so a heartbeat simply reschedules its member's key.

No clock and no threads: the owner asks which actions are due at a time it gives. The
runtime keeps one per loaded partition and drops it on unload, so a shard's timers die
with its leadership.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

Action = Callable[[], None]


class Timers:
    def __init__(self) -> None:
        self._heap: list[tuple[int, int, str]] = []
        self._live: dict[str, tuple[int, Action, int]] = {}  # key -> (sequence, action, deadline)
        self._sequence = itertools.count()

    def schedule(self, key: str, deadline_ms: int, action: Action) -> None:
        sequence = next(self._sequence)
        self._live[key] = (sequence, action, deadline_ms)
        heapq.heappush(self._heap, (deadline_ms, sequence, key))

    def cancel(self, key: str) -> None:
        self._live.pop(key, None)

    def is_scheduled(self, key: str) -> bool:
        return key in self._live

    def deadline(self, key: str) -> int | None:
        live = self._live.get(key)
        return None if live is None else live[2]

    def next_deadline(self) -> int | None:
        """The earliest pending deadline (stale heap entries are dropped on the way)."""
        heap = self._heap
        while heap:
            deadline, sequence, key = heap[0]
            live = self._live.get(key)
            if live is not None and live[0] == sequence:
                return deadline
            heapq.heappop(heap)
        return None

    def pop_due(self, now_ms: int) -> Action | None:
        """The next action due at ``now_ms`` (removed), or None. One at a time, because
        an action may schedule or cancel others."""
        deadline = self.next_deadline()
        if deadline is None or deadline > now_ms:
            return None
        _, _, key = heapq.heappop(self._heap)
        _, action, _ = self._live.pop(key)
        return action

    def run_due(self, now_ms: int, at: Callable[[int], None]) -> None:
        """Run every action due at ``now_ms`` in deadline order, telling ``at`` each
        action's deadline first: an action runs at its own time, so what it schedules
        counts from then."""
        while (deadline := self.next_deadline()) is not None and deadline <= now_ms:
            at(deadline)
            action = self.pop_due(deadline)
            assert action is not None
            action()

    def clear(self) -> None:
        self._heap.clear()
        self._live.clear()

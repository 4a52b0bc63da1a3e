"""The asyncio edge of a :class:`~millpond.broker.purgatory.Purgatory`: one timer per
purgatory, set for its earliest deadline, that expires what is due and sets itself for
the next; and :func:`wait`, which parks a delayed operation until it completes. A
request whose connection closes while it waits is cancelled in the purgatory, so
nothing answers it later.

The timer converts the purgatory's clock into real seconds when it sets itself; when it
fires early (the clock was frozen) it finds nothing due and sets itself again, and when
the clock jumps, :func:`poke` expires at once what the jump made due.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Hashable, Iterable
from typing import Any

from millpond.broker.purgatory import DelayedOperation, Purgatory

#: Never wait less than this between firings (a clock that stands still, e.g. a
#: frozen test clock, must not make the timer spin).
_MIN_DELAY_S = 0.001


class _Timer:
    def __init__(self, purgatory: Purgatory[Any]) -> None:
        self._purgatory = purgatory
        self._handle: asyncio.TimerHandle | None = None
        self._due_ms: int | None = None

    def arm(self) -> None:
        """Set the timer for the purgatory's earliest deadline (if it is not already)."""
        deadline = self._purgatory.next_deadline_ms()
        if deadline == self._due_ms and (self._handle is not None or deadline is None):
            return
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._due_ms = deadline
        if deadline is None:
            return
        delay_s = max(_MIN_DELAY_S, (deadline - self._purgatory.clock.monotonic_ms()) / 1000)
        self._handle = asyncio.get_running_loop().call_later(delay_s, self._fire)

    def _fire(self) -> None:
        self._handle = None
        self._due_ms = None
        self._purgatory.expire()
        self.arm()

    def poke(self) -> None:
        """The clock may have jumped: expire what is due and set the timer again."""
        self._purgatory.expire()
        if self._handle is not None or self._purgatory.next_deadline_ms() is not None:
            self._due_ms = None
            if self._handle is not None:
                self._handle.cancel()
                self._handle = None
            self.arm()


_timers: weakref.WeakKeyDictionary[Purgatory[Any], _Timer] = weakref.WeakKeyDictionary()


def _timer(purgatory: Purgatory[Any]) -> _Timer:
    timer = _timers.get(purgatory)
    if timer is None:
        timer = _timers[purgatory] = _Timer(purgatory)
    return timer


async def wait(
    purgatory: Purgatory[Any], operation: DelayedOperation, keys: Iterable[Hashable]
) -> None:
    """Complete ``operation`` now or park it in ``purgatory`` under ``keys`` until it
    completes (by a change to one of them, or at its deadline); raises what its try or
    completion raised."""
    done = asyncio.get_running_loop().create_future()

    def resolve() -> None:
        if not done.done():
            done.set_result(None)

    operation.on_done = resolve
    if not purgatory.try_complete_else_watch(operation, keys):
        timer = _timer(purgatory)
        timer.arm()
        try:
            await done
        finally:
            if not operation.done:
                purgatory.cancel(operation)
                timer.arm()
    if operation.failure is not None:
        raise operation.failure


def poke(purgatory: Purgatory[Any]) -> None:
    """Act on a jump of the purgatory's clock now, not when the timer next fires."""
    timer = _timers.get(purgatory)
    if timer is not None:
        timer.poke()

"""Time, injected: every storage decision that depends on the clock (segment.ms rolls,
retention.ms, compaction lags, delete horizons) asks a :class:`Clock`, so tests drive it
with a :class:`ManualClock` instead of sleeping.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Wall-clock milliseconds since the epoch (what record timestamps compare to)."""
        ...

    def monotonic_ms(self) -> int:
        """Milliseconds on a clock that never goes backwards (for durations)."""
        ...


class SystemClock:
    """The real clock: the only place in storage that reads the time."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when told to; both readings advance together."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self._now_ms = now_ms
        self._monotonic_ms = 0

    def now_ms(self) -> int:
        return self._now_ms

    def monotonic_ms(self) -> int:
        return self._monotonic_ms

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError("a manual clock only moves forwards; use set_now_ms to jump back")
        self._now_ms += ms
        self._monotonic_ms += ms

    def set_now_ms(self, now_ms: int) -> None:
        """Move the wall clock (even backwards, as NTP may); the monotonic one stays."""
        self._now_ms = now_ms

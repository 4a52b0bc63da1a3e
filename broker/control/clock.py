"""The broker's clock, under the control endpoint's command: it runs with the system
clock until told to freeze, and jumps forwards when told to advance, so session
timeouts, retention and producer expiry can be made to happen now instead of waited for.

Both readings (wall and monotonic) move together; a jump never goes backwards.
"""

from __future__ import annotations

from millpond.storage.clock import Clock, SystemClock


class ControlledClock:
    def __init__(self, base: Clock | None = None) -> None:
        self._base = base or SystemClock()
        self._offset_ms = 0
        self._frozen: tuple[int, int] | None = None  # (wall, monotonic) while frozen
        self._advanced_ms = 0  # every jump so far; resuming never takes one back

    def now_ms(self) -> int:
        if self._frozen is not None:
            return self._frozen[0]
        return self._base.now_ms() + self._offset_ms

    def monotonic_ms(self) -> int:
        if self._frozen is not None:
            return self._frozen[1]
        return self._base.monotonic_ms() + self._offset_ms

    @property
    def frozen(self) -> bool:
        return self._frozen is not None

    @property
    def offset_ms(self) -> int:
        """How far ahead of the system clock this one is (while running)."""
        return self._offset_ms

    def advance(self, ms: int) -> None:
        if ms < 0:
            raise ValueError(f"the clock only moves forwards: {ms} ms is negative")
        if self._frozen is not None:
            wall, mono = self._frozen
            self._frozen = (wall + ms, mono + ms)
        self._offset_ms += ms
        self._advanced_ms += ms

    def freeze(self) -> None:
        if self._frozen is None:
            self._frozen = (self.now_ms(), self.monotonic_ms())

    def resume(self) -> None:
        """Run again from the frozen instant (the time spent frozen never passed)."""
        if self._frozen is None:
            return
        wall, _ = self._frozen
        self._frozen = None
        self._offset_ms = wall - self._base.now_ms()

    def wait_clock(self) -> WaitClock:
        """The clock that bounds waits (long polls, ``acks=all``): see :class:`WaitClock`."""
        return WaitClock(self._base, self)


class WaitClock:
    """The system's clock plus every jump of a :class:`ControlledClock`: a wait ends
    after its time has passed for real even while the controlled clock is frozen (so a
    frozen test clock never hangs a long poll), and at once when a jump covers it."""

    def __init__(self, base: Clock, controlled: ControlledClock) -> None:
        self._base = base
        self._controlled = controlled

    def now_ms(self) -> int:
        return self._base.now_ms() + self._controlled._advanced_ms

    def monotonic_ms(self) -> int:
        return self._base.monotonic_ms() + self._controlled._advanced_ms

"""Wall-clock faults for the rig's nodes, through libfaketime.

Each node runs with libfaketime preloaded and reads its offset from a file of its own, on
every call (``FAKETIME_NO_CACHE``), so the harness moves one node's clock by rewriting
that file. Only the wall clock moves (``FAKETIME_DONT_FAKE_MONOTONIC``): as on a machine
whose NTP steps the clock, durations measured on the monotonic clock keep running, while
record timestamps, retention and everything else read from the wall clock jump.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Collection, Mapping
from pathlib import Path

#: Where Debian's ``faketime`` package puts the multithreaded library.
DEFAULT_LIBRARY = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"


def library() -> str:
    path = os.environ.get("MILLPOND_LIBFAKETIME", DEFAULT_LIBRARY)
    if not Path(path).is_file():
        raise RuntimeError(
            f"libfaketime not found at {path}: install it (apt-get install faketime) or set "
            "MILLPOND_LIBFAKETIME to its libfaketimeMT.so.1"
        )
    return path


class Clocks:
    """One offset file per node, under ``root``; every node starts on the true time."""

    def __init__(self, root: Path, node_ids: Collection[int]) -> None:
        self._library = library()
        self._root = root
        self.offsets: dict[int, float] = {}
        for node_id in node_ids:
            self.set(node_id, 0.0)

    def _file(self, node_id: int) -> Path:
        return self._root / f"clock-{node_id}"

    def env(self, node_id: int) -> Mapping[str, str]:
        """The environment that puts node ``node_id`` on its own clock."""
        return {
            "LD_PRELOAD": self._library,
            "FAKETIME_TIMESTAMP_FILE": str(self._file(node_id)),
            "FAKETIME_NO_CACHE": "1",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        }

    def set(self, node_id: int, offset_s: float) -> None:
        """Put the node's wall clock ``offset_s`` seconds off the true time. The file is
        replaced whole (a rename), so the node never reads half of it."""
        staged = self._file(node_id).with_suffix(".new")
        staged.write_text(f"{offset_s:+.3f}\n")
        staged.replace(self._file(node_id))
        self.offsets[node_id] = offset_s

    def strobe(
        self, node_id: int, delta_s: float, period_s: float, hold_s: float, rng: random.Random
    ) -> None:
        """The clock flipping between the true time and ``delta_s`` off it every
        ``period_s`` (jittered), for ``hold_s``; then the true time."""
        deadline = time.monotonic() + hold_s
        off = False
        while time.monotonic() < deadline:
            off = not off
            self.set(node_id, delta_s if off else 0.0)
            time.sleep(period_s * rng.uniform(0.5, 1.5))
        self.set(node_id, 0.0)

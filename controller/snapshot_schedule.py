"""When a node snapshots its metadata: Kafka's two triggers, counted on committed records.

Every node of the quorum (active controller, standby, broker following the log) writes
its own snapshots of the committed image, as Kafka's controllers and brokers do:

* ``metadata.log.max.record.bytes.between.snapshots``: once the committed batches since
  the last snapshot (or the start) reach this many bytes;
* ``metadata.log.max.snapshot.interval.ms``: once this long has passed since the last
  snapshot (or the start) and some records committed since; 0 turns it off.

Pure: sizes and monotonic times in, a yes or no out.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["SnapshotSchedule", "SnapshotTriggers"]


class SnapshotTriggers(NamedTuple):
    #: metadata.log.max.record.bytes.between.snapshots
    max_bytes: int = 20 * 1024 * 1024
    #: metadata.log.max.snapshot.interval.ms (0: off)
    max_interval_ms: int = 60 * 60 * 1000


class SnapshotSchedule:
    def __init__(self, triggers: SnapshotTriggers, now: int) -> None:
        self.triggers = triggers
        #: Bytes of committed batches not in a snapshot yet.
        self.pending_bytes = 0
        self._since = now

    def committed(self, size: int) -> None:
        self.pending_bytes += size

    def reset(self, now: int) -> None:
        """A snapshot was written or loaded: count from here."""
        self.pending_bytes = 0
        self._since = now

    def due(self, now: int) -> bool:
        if self.pending_bytes <= 0:
            return False
        if self.pending_bytes >= self.triggers.max_bytes:
            return True
        interval = self.triggers.max_interval_ms
        return interval > 0 and now - self._since >= interval

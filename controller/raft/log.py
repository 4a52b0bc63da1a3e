"""What the Raft core needs of its log and of the file that keeps its vote.

The core never opens a file: it is given a :class:`RaftLog` (Kafka's ``ReplicatedLog``)
and an :class:`ElectionStore` (Kafka's ``QuorumStateStore``). The broker's are files in
Kafka's formats (``__cluster_metadata-0`` and its ``quorum-state``); the simulation's keep
a flushed and an unflushed part in memory, so that a kill loses exactly what a crash
would. Each call returns when done; :meth:`RaftLog.flush` and
:meth:`ElectionStore.write` return only once their data is durable.

Entries the leader appends are data (opaque bytes, the state machine's records) or the
control entries below, which the log encodes as Kafka does (control batches holding a
LeaderChangeMessage, a KRaftVersionRecord, a VotersRecord).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol

from millpond.controller.raft.keys import OffsetAndEpoch, ReplicaKey, VoterSet

__all__ = [
    "ElectionState",
    "ElectionStore",
    "Entry",
    "LeaderChange",
    "RaftLog",
    "VotersChange",
]


class LeaderChange(NamedTuple):
    """The first entry of every epoch: who leads, who voted, who granted."""

    leader_id: int
    voters: tuple[int, ...]
    granting_voters: tuple[int, ...]


class VotersChange(NamedTuple):
    """A new voter set (VotersRecord); in force from its append, undone by truncation."""

    voters: VoterSet


Entry = bytes | LeaderChange | VotersChange


class ElectionState(NamedTuple):
    """What ``quorum-state`` keeps: the epoch, its leader if known, this node's vote."""

    epoch: int
    leader_id: int = -1
    voted: ReplicaKey | None = None


class ElectionStore(Protocol):
    def read(self) -> ElectionState | None: ...

    def write(self, state: ElectionState) -> None:
        """Persist ``state`` durably before returning (write, fsync, rename)."""


class RaftLog(Protocol):
    """A replica's copy of the metadata log and its snapshots."""

    @property
    def end_offset(self) -> int:
        """The log end offset: one past the last entry."""

    @property
    def start_offset(self) -> int:
        """The first offset still in the log (the latest snapshot's end after cleaning)."""

    def last_fetched_epoch(self) -> int:
        """The epoch of the last entry; the latest snapshot's when the log past it is
        empty; 0 for an empty replica."""

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """The largest epoch at or below ``epoch`` and the offset where it ends (the
        start of the next epoch, or the log end); for a log with no epochs,
        ``(last_fetched_epoch, end_offset)``."""

    def append_as_leader(self, epoch: int, entries: Sequence[Entry]) -> list[tuple[int, VoterSet]]:
        """Append ``entries`` at the log end, stamped with ``epoch`` (not flushed);
        returns the voter sets among them by the offset they landed at (an entry may
        take more than one offset)."""

    def append_as_follower(self, records: object, epoch: int) -> list[tuple[int, VoterSet]]:
        """Append records read from the leader's log (batches whose epoch is above
        ``epoch`` are refused); returns the voter sets they carry, by offset."""

    def read(self, offset: int, max_bytes: int) -> object | None:
        """Whole entries from ``offset``, up to about ``max_bytes`` (at least one);
        None at the log end."""

    def truncate_to(self, offset: int) -> None:
        """Drop every entry at or after ``offset``."""

    def flush(self) -> None:
        """Make every appended entry durable."""

    def voter_history(self) -> list[tuple[int, VoterSet]]:
        """The voter sets in the latest snapshot (at its end offset - 1) and in the log
        after it, by offset."""

    # -- snapshots -------------------------------------------------------------------

    def latest_snapshot(self) -> OffsetAndEpoch | None: ...

    def earliest_snapshot(self) -> OffsetAndEpoch | None: ...

    def snapshot_size(self, snapshot_id: OffsetAndEpoch) -> int | None:
        """The snapshot's size in bytes, or None if there is no such snapshot."""

    def read_snapshot(self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int) -> bytes:
        """Up to ``max_bytes`` of the snapshot from ``position`` (not batch-aligned)."""

    def begin_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        """Start receiving the leader's snapshot ``snapshot_id`` (discarding a partial
        one)."""

    def write_snapshot_chunk(self, snapshot_id: OffsetAndEpoch, position: int, data: bytes) -> int:
        """Write the next chunk of a snapshot being received; returns its size so far."""

    def install_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        """Make the received snapshot durable and the log start at its end offset: the
        entries before it are gone and so is everything after it."""

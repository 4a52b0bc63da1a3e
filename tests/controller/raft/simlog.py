"""A replica's disk in simulation: a log and a quorum-state file that a crash can cut.

:class:`SimLog` keeps its entries in memory with a flushed length: a kill keeps only the
flushed prefix, a wipe keeps nothing. Each entry carries a *chain* value, a hash of its
content, its epoch and the chain before it, so two logs agree on a whole prefix exactly
when they agree on the chain at its last offset; the checkers compare chains instead of
logs. A snapshot is the chain and the voter set at its last offset, as bytes, so
FetchSnapshot moves it in chunks like any snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import NamedTuple

from millpond.controller.raft.keys import OffsetAndEpoch, ReplicaKey, Voter, VoterSet
from millpond.controller.raft.log import ElectionState, Entry, VotersChange

__all__ = ["SimEntry", "SimLog", "SimStore", "chain_of"]

#: Bytes an entry counts for against a fetch's max_bytes.
ENTRY_BYTES = 64
_MASK = (1 << 61) - 1


def chain_of(previous: int, epoch: int, content: int) -> int:
    return (previous * 1_000_003 + epoch * 7_919 + content * 104_729 + 1) & _MASK


class SimEntry(NamedTuple):
    offset: int
    epoch: int
    entry: Entry
    content: int


class _Snapshot(NamedTuple):
    id: OffsetAndEpoch
    chain: int
    data: bytes


def encode_snapshot(chain: int, voters: VoterSet) -> bytes:
    return json.dumps(
        {
            "chain": chain,
            "voters": [
                [v.key.id, v.key.directory_id.hex() if v.key.directory_id else None]
                for v in sorted(voters, key=lambda v: v.key.id)
            ],
        }
    ).encode()


def decode_snapshot(data: bytes) -> tuple[int, VoterSet]:
    body = json.loads(data)
    voters = VoterSet(
        Voter(ReplicaKey(i, bytes.fromhex(d) if d else None)) for i, d in body["voters"]
    )
    return int(body["chain"]), voters


class SimLog:
    """A :class:`~millpond.controller.raft.log.RaftLog` in memory (module docstring)."""

    def __init__(self, content_id: Callable[[Entry], int]) -> None:
        self._content_id = content_id
        self.entries: list[SimEntry] = []
        self.chains: list[int] = []
        self.start = 0
        #: Chain at start - 1 (0 for an empty prefix) and the epoch of that entry.
        self.start_chain = 0
        self.start_epoch = 0
        self.flushed = 0  # entries[:flushed] survive a crash
        self.snapshots: dict[OffsetAndEpoch, _Snapshot] = {}
        self._receiving: tuple[OffsetAndEpoch, bytearray] | None = None
        #: Called before every truncation with the offset (the checkers watch it).
        self.on_truncate: Callable[[int], None] = lambda offset: None
        #: Called after each appended entry with (offset, epoch, chain).
        self.on_append: Callable[[int, int, int], None] = lambda o, e, c: None

    # -- positions ---------------------------------------------------------------------

    @property
    def end_offset(self) -> int:
        return self.start + len(self.entries)

    @property
    def start_offset(self) -> int:
        return self.start

    def chain_at(self, offset: int) -> int | None:
        """The chain through ``offset`` (None if not held; start - 1 is the snapshot's)."""
        if offset == self.start - 1:
            return self.start_chain
        index = offset - self.start
        if 0 <= index < len(self.chains):
            return self.chains[index]
        return None

    def last_fetched_epoch(self) -> int:
        if self.entries:
            return self.entries[-1].epoch
        return self.start_epoch

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        # Epoch boundaries: (epoch, start offset) of each run of entries.
        floor: int | None = None
        if self.start > 0 and self.start_epoch <= epoch:
            floor = self.start_epoch
        for entry in self.entries:
            if entry.epoch > epoch:
                if floor is None:
                    return OffsetAndEpoch(epoch, entry.offset)
                return OffsetAndEpoch(floor, entry.offset)
            floor = entry.epoch
        if floor is None:
            return OffsetAndEpoch(self.last_fetched_epoch(), self.end_offset)
        return OffsetAndEpoch(floor, self.end_offset)

    # -- writes ------------------------------------------------------------------------

    def _push(self, epoch: int, entry: Entry) -> None:
        offset = self.end_offset
        content = self._content_id(entry)
        previous = self.chains[-1] if self.chains else self.start_chain
        chain = chain_of(previous, epoch, content)
        self.entries.append(SimEntry(offset, epoch, entry, content))
        self.chains.append(chain)
        self.on_append(offset, epoch, chain)

    def append_as_leader(self, epoch: int, entries: Sequence[Entry]) -> list[tuple[int, VoterSet]]:
        changes: list[tuple[int, VoterSet]] = []
        for entry in entries:
            if isinstance(entry, VotersChange):
                changes.append((self.end_offset, entry.voters))
            self._push(epoch, entry)
        return changes

    def append_as_follower(self, records: object, epoch: int) -> list[tuple[int, VoterSet]]:
        assert isinstance(records, tuple)
        changes: list[tuple[int, VoterSet]] = []
        for item in records:
            assert isinstance(item, SimEntry)
            if item.epoch > epoch:
                break
            if item.offset != self.end_offset:
                raise AssertionError(f"follower append at {item.offset}, log end {self.end_offset}")
            self._push(item.epoch, item.entry)
            if isinstance(item.entry, VotersChange):
                changes.append((item.offset, item.entry.voters))
        return changes

    def read(self, offset: int, max_bytes: int) -> object | None:
        index = offset - self.start
        if index < 0 or index >= len(self.entries):
            return None
        count = max(1, max_bytes // ENTRY_BYTES)
        return tuple(self.entries[index : index + count])

    def truncate_to(self, offset: int) -> None:
        if offset >= self.end_offset:
            return
        self.on_truncate(offset)
        index = max(0, offset - self.start)
        del self.entries[index:]
        del self.chains[index:]
        self.flushed = min(self.flushed, len(self.entries))

    def flush(self) -> None:
        self.flushed = len(self.entries)

    def voter_history(self) -> list[tuple[int, VoterSet]]:
        history: list[tuple[int, VoterSet]] = []
        latest = self.latest_snapshot()
        if latest is not None and latest.offset > 0:
            _, voters = decode_snapshot(self.snapshots[latest].data)
            history.append((latest.offset - 1, voters))
        for entry in self.entries:
            if isinstance(entry.entry, VotersChange):
                history.append((entry.offset, entry.entry.voters))
        return history

    # -- snapshots -------------------------------------------------------------------

    def latest_snapshot(self) -> OffsetAndEpoch | None:
        return max(self.snapshots, key=lambda s: s.offset) if self.snapshots else None

    def earliest_snapshot(self) -> OffsetAndEpoch | None:
        return min(self.snapshots, key=lambda s: s.offset) if self.snapshots else None

    def snapshot_size(self, snapshot_id: OffsetAndEpoch) -> int | None:
        snapshot = self.snapshots.get(snapshot_id)
        return None if snapshot is None else len(snapshot.data)

    def read_snapshot(self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int) -> bytes:
        return self.snapshots[snapshot_id].data[position : position + max_bytes]

    def begin_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        self._receiving = (snapshot_id, bytearray())

    def write_snapshot_chunk(self, snapshot_id: OffsetAndEpoch, position: int, data: bytes) -> int:
        assert self._receiving is not None and self._receiving[0] == snapshot_id
        buffer = self._receiving[1]
        assert position == len(buffer)
        buffer += data
        return len(buffer)

    def install_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        assert self._receiving is not None and self._receiving[0] == snapshot_id
        data = bytes(self._receiving[1])
        self._receiving = None
        chain, _ = decode_snapshot(data)
        self.snapshots = {snapshot_id: _Snapshot(snapshot_id, chain, data)}
        self.entries.clear()
        self.chains.clear()
        self.flushed = 0
        self.start = snapshot_id.offset
        self.start_chain = chain
        self.start_epoch = snapshot_id.epoch

    def take_snapshot(self, offset: int, voters: VoterSet) -> OffsetAndEpoch:
        """The state machine's snapshot through ``offset - 1`` (a committed offset)."""
        index = offset - 1 - self.start
        assert 0 <= index < len(self.entries), (offset, self.start, self.end_offset)
        snapshot_id = OffsetAndEpoch(self.entries[index].epoch, offset)
        chain = self.chains[index]
        self.snapshots[snapshot_id] = _Snapshot(snapshot_id, chain, encode_snapshot(chain, voters))
        return snapshot_id

    def clean(self) -> None:
        """Drop the log before the latest snapshot and older snapshots (Kafka keeps
        more; cleaning at once makes lagging followers fetch snapshots)."""
        latest = self.latest_snapshot()
        if latest is None or latest.offset <= self.start:
            return
        if latest.offset > self.start + self.flushed:
            return  # only what is durable may replace the log
        index = latest.offset - self.start
        snapshot = self.snapshots[latest]
        del self.entries[:index]
        del self.chains[:index]
        self.flushed -= index
        self.start = latest.offset
        self.start_chain = snapshot.chain
        self.start_epoch = latest.epoch
        self.snapshots = {latest: snapshot}

    # -- crashes ---------------------------------------------------------------------

    def crash(self) -> None:
        """Lose what was not flushed, and any snapshot being received."""
        del self.entries[self.flushed :]
        del self.chains[self.flushed :]
        self._receiving = None


class SimStore:
    """``quorum-state`` in simulation: every write is durable at once."""

    def __init__(self, on_write: Callable[[ElectionState], None]) -> None:
        self.state: ElectionState | None = None
        self._on_write = on_write

    def read(self) -> ElectionState | None:
        return self.state

    def write(self, state: ElectionState) -> None:
        self._on_write(state)
        self.state = state

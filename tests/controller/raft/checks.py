"""The quorum's safety invariants (R1-R9), checked as the simulation runs.

Every log entry has a chain value (see :mod:`tests.controller.raft.simlog`): equal
chains at an offset mean equal prefixes. The checker keeps, per (offset, epoch), the
chain first seen there (R4), and the committed chain at every offset as high watermarks
pass it (R5); the rest compare a node's chains with those.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.controller.raft.keys import ReplicaKey
from millpond.controller.raft.log import ElectionState
from millpond.controller.raft.node import Role

if TYPE_CHECKING:
    from tests.controller.raft.sim import SimNode

__all__ = ["Checker", "Violation"]


class Violation(AssertionError):
    pass


class Checker:
    def __init__(self) -> None:
        self.violations: list[str] = []
        self.leaders: dict[int, int] = {}  # epoch -> node id (R1)
        self.votes: dict[tuple[ReplicaKey, int], ReplicaKey] = {}  # (voter, epoch) -> candidate
        self.persisted_epoch: dict[ReplicaKey, int] = {}  # R2
        self.at: dict[tuple[int, int], int] = {}  # (offset, epoch) -> chain (R4)
        self.committed: list[int] = []  # chain at each committed offset (R5)
        self.committed_content: list[int] = []  # the entry's content id at each
        self.now = 0

    def fail(self, message: str) -> None:
        self.violations.append(f"t={self.now}: {message}")
        raise Violation(self.violations[-1])

    # -- hooks called by the disk and the nodes ---------------------------------------

    def on_election_write(self, node: SimNode, state: ElectionState) -> None:
        key = node.key
        previous = self.persisted_epoch.get(key, -1)
        if state.epoch < previous:
            self.fail(f"R2: {key.id} persisted epoch {state.epoch} after {previous}")
        self.persisted_epoch[key] = state.epoch
        if state.voted is not None:
            vote = (key, state.epoch)
            earlier = self.votes.setdefault(vote, state.voted)
            if earlier.id != state.voted.id:
                self.fail(
                    f"R1: {key.id} voted for {earlier.id} and {state.voted.id}"
                    f" in epoch {state.epoch}"
                )

    def on_append(self, node: SimNode, offset: int, epoch: int, chain: int) -> None:
        seen = self.at.setdefault((offset, epoch), chain)
        if seen != chain:
            self.fail(f"R4: {node.key.id} holds another prefix at offset {offset} epoch {epoch}")

    def on_truncate(self, node: SimNode, offset: int) -> None:
        raft = node.raft
        if raft is None:
            return
        if raft.role is Role.LEADER:
            self.fail(
                f"R3: leader {node.key.id} truncated its log to {offset} in epoch {raft.epoch}"
            )
        if offset < raft.high_watermark:
            self.fail(
                f"R7: {node.key.id} truncated to {offset} below its high watermark"
                f" {raft.high_watermark}"
            )

    # -- after every event -------------------------------------------------------------

    def after_event(self, nodes: list[SimNode]) -> None:
        for node in nodes:
            raft = node.raft
            if raft is None:
                continue
            self._check_committed(node)
            if raft.role is Role.LEADER:
                self._check_leader(node)
            self._check_snapshots(node)
        self._check_durable(nodes)

    def _check_leader(self, node: SimNode) -> None:
        raft = node.raft
        assert raft is not None
        leader = self.leaders.setdefault(raft.epoch, node.key.id)
        if leader != node.key.id:
            self.fail(f"R1: {leader} and {node.key.id} both led epoch {raft.epoch}")
        if node.led_epoch != raft.epoch:
            node.led_epoch = raft.epoch
            node.leader_hw = -1
            # R6: a new leader holds everything committed so far.
            if self.committed and not self._holds(node, len(self.committed) - 1):
                self.fail(
                    f"R6: leader {node.key.id} of epoch {raft.epoch} lacks committed offset"
                    f" {len(self.committed) - 1}"
                )
        if raft.high_watermark < node.leader_hw:
            self.fail(f"R7: leader {node.key.id} high watermark fell to {raft.high_watermark}")
        if raft.high_watermark > node.leader_hw:
            node.leader_hw = raft.high_watermark
            # R7: a majority of the voters hold the committed prefix durably.
            last = raft.high_watermark - 1
            holders = 0
            for voter in raft.voters:
                if node.sim.acknowledged(voter.key, last, self.committed[last]):
                    holders += 1
            if holders < raft.voters.majority:
                detail = [
                    (v.key.id, p.durable_end() if p else None)
                    for v in raft.voters
                    for p in [node.sim.node_by_key(v.key)]
                ]
                self.fail(
                    f"R7: leader {node.key.id} committed {raft.high_watermark} held durably by"
                    f" {holders} of {len(raft.voters)} voters {detail}"
                )

    def _holds(self, node: SimNode, offset: int) -> bool:
        """Whether ``node``'s log (or snapshot) holds the committed prefix through offset."""
        log = node.log
        chain = log.chain_at(offset)
        if chain is not None:
            return chain == self.committed[offset]
        if offset < log.start - 1:
            # Inside the snapshot: the snapshot's own chain must be committed.
            return (
                log.start - 1 < len(self.committed)
                and log.start_chain == self.committed[log.start - 1]
            )
        return False

    def _check_committed(self, node: SimNode) -> None:
        raft = node.raft
        assert raft is not None
        hw = raft.high_watermark
        log = node.log
        first = max(node.checked_hw, log.start - 1, 0)
        for offset in range(first, hw):
            chain = log.chain_at(offset)
            if chain is None:
                continue
            if offset < len(self.committed):
                if self.committed[offset] != chain:
                    self.fail(f"R5: {node.key.id} committed another entry at offset {offset}")
            elif offset == len(self.committed):
                self.committed.append(chain)
                index = offset - log.start
                self.committed_content.append(log.entries[index].content if index >= 0 else -1)
            else:
                self.fail(f"R5: {node.key.id} committed offset {offset} past a gap")
        node.checked_hw = max(node.checked_hw, hw)

    def _check_snapshots(self, node: SimNode) -> None:
        log = node.log
        latest = log.latest_snapshot()
        if latest is None:
            return
        if latest.offset < log.start:
            self.fail(f"R9: {node.key.id} log starts at {log.start} after its snapshot {latest}")
        snapshot = log.snapshots[latest]
        last = latest.offset - 1
        if last < len(self.committed) and self.committed[last] != snapshot.chain:
            self.fail(f"R9: {node.key.id} snapshot {latest} is not the committed state")

    def _check_durable(self, nodes: list[SimNode]) -> None:
        """R8: the last committed entry is on some voter's disk (flushed or snapshot)."""
        if not self.committed:
            return
        last = len(self.committed) - 1
        for node in nodes:
            if node.durable_holds(last, self.committed[last]):
                return
        self.fail(f"R8: no node holds committed offset {last} durably")

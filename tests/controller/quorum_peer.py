"""A controller node in a two-voter quorum whose other voter the test drives: nothing
commits until :meth:`TwoVoters.replicate` lets the peer fetch, as a real quorum's high
watermark waits for its voters. Messages pass in memory, in order, with no loss."""

from __future__ import annotations

import random

from millpond.controller.metadata_log import open_raft_client
from millpond.controller.raft.config import RaftConfig
from millpond.controller.raft.keys import ReplicaKey, Voter, VoterSet
from millpond.storage.clock import ManualClock
from millpond.storage.fs import FileSystem

VOTERS = VoterSet([Voter(ReplicaKey(1)), Voter(ReplicaKey(2))])
PEER_DIR = "/peer"
#: Node 1 stands within 2 ms of the clock moving; the peer never stands.
QUICK = RaftConfig(kraft_version=0, election_timeout_ms=1)
PATIENT = RaftConfig(kraft_version=0, election_timeout_ms=1 << 40, fetch_timeout_ms=1 << 40)


class TwoVoters:
    def __init__(self, fs: FileSystem, log_dir: str, clock: ManualClock) -> None:
        self.clock = clock
        fs.makedirs(PEER_DIR)
        self.client = open_raft_client(
            fs, log_dir, clock, random.Random(1), node_id=1, voters=VOTERS, config=QUICK
        )
        self.peer = open_raft_client(
            fs, PEER_DIR, clock, random.Random(2), node_id=2, voters=VOTERS, config=PATIENT
        )
        self._nodes = {1: self.client, 2: self.peer}

    def elect(self) -> None:
        """Make node 1 the leader (its LeaderChange not committed yet)."""
        self.clock.advance(2)  # past node 1's election timeout; then no time passes
        for _ in range(10):
            if self.client.is_leader:
                return
            self._exchange()
        raise AssertionError(f"node 1 did not win: {self.client.node.role}")

    def replicate(self) -> None:
        """Let the peer fetch until it has everything and the leader knows it."""
        for _ in range(100):
            if not self._exchange():
                return
        raise AssertionError("the two voters did not settle")

    def _exchange(self) -> bool:
        """One round: both poll, then each message goes across. True if any did."""
        now = self.clock.monotonic_ms()
        moved = False
        for node in self._nodes.values():
            node.poll(now)
        for source, node in self._nodes.items():
            for out in node.take_outbox():
                moved = True
                self._nodes[out.destination].handle(
                    now, source, out.correlation, out.message, is_response=out.is_response
                )
        return moved

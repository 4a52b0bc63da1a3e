"""A controller node in a two-voter quorum whose other voter the test drives: nothing
commits until :meth:`TwoVoters.replicate` lets the peer fetch, as a real quorum's high
watermark waits for its voters. Messages pass in memory, in order, with no loss."""

from __future__ import annotations

import random

from millpond.controller.metadata_log import MetadataLogConfig, open_raft_client
from millpond.controller.raft.client import RaftClient
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
    def __init__(
        self,
        fs: FileSystem,
        log_dir: str,
        clock: ManualClock,
        log_config: MetadataLogConfig | None = None,
    ) -> None:
        self.clock = clock
        self._fs = fs
        self._log_config = log_config
        fs.makedirs(PEER_DIR)
        self.client = self._open(1, log_dir, QUICK)
        self.peer = self._open(2, PEER_DIR, PATIENT)
        self._nodes = {1: self.client, 2: self.peer}

    def add_observer(self, node_id: int, log_dir: str) -> RaftClient:
        """A replica that follows the log without voting (a broker), from now on."""
        self._fs.makedirs(log_dir)
        observer = self._open(node_id, log_dir, PATIENT, can_become_voter=False)
        self._nodes[node_id] = observer
        return observer

    def _open(
        self, node_id: int, log_dir: str, config: RaftConfig, *, can_become_voter: bool = True
    ) -> RaftClient:
        return open_raft_client(
            self._fs,
            log_dir,
            self.clock,
            random.Random(node_id),
            node_id=node_id,
            voters=VOTERS,
            config=config,
            can_become_voter=can_become_voter,
            log_config=self._log_config,
        )

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

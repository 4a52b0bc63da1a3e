"""The Raft client: one replica's node and log, and what the state machine is told.

Kafka splits KRaft the same way: ``KafkaRaftClient`` runs the protocol and tells its
listeners (the controller, a broker's metadata loader) two things, the batches that
committed, in log order, and who leads which epoch. :class:`RaftClient` is that, over a
:class:`~millpond.controller.raft.node.RaftNode` and a
:class:`~millpond.controller.raft.kafka_log.KafkaRaftLog`.

Snapshots come first: a listener is handed the latest snapshot before any batch after
it, at start and whenever a follower installs one of the leader's in place of its log
(Kafka's ``handleLoadSnapshot``). The state machine writes its own snapshots through
:meth:`RaftClient.create_snapshot` and the log's retention then runs (:meth:`clean`).

Two rules carry over from Kafka. A batch is delivered once it lies wholly below the high
watermark, and never again, whatever the replica's role. And the news that this replica
leads is given only after every batch before its epoch's first offset was delivered, so
a controller that becomes active has replayed all the log that earlier leaders wrote.

A failed write or fsync of the log or of ``quorum-state`` leaves the client *failed*:
what reached the page cache may or may not survive and the node's state may be halfway
through a transition, so every later call raises :class:`RaftLogFailedError`; a restart
recovers the log. Kafka's raft client treats such a fault as fatal too.

Sans-I/O like the node: the driver hands in the time, messages and ticks, and sends the
outbox.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple, Protocol, TypeVar

from millpond.controller.raft.kafka_log import KafkaRaftLog
from millpond.controller.raft.keys import OffsetAndEpoch
from millpond.controller.raft.messages import DescribeQuorumResponse, Message
from millpond.controller.raft.node import Outgoing, RaftNode, Role
from millpond.wire.records import RecordBatch

__all__ = ["LeaderAndEpoch", "LoadedSnapshot", "RaftClient", "RaftListener", "RaftLogFailedError"]

_log = logging.getLogger(__name__)

T = TypeVar("T")

#: How much of the log one delivery reads.
DELIVERY_BYTES = 1024 * 1024


class RaftLogFailedError(OSError):
    """A write or fsync of the metadata log or its quorum-state failed; restart to
    recover the log and replay it."""


class LeaderAndEpoch(NamedTuple):
    epoch: int
    #: -1 while no leader is known.
    leader_id: int


class LoadedSnapshot(NamedTuple):
    snapshot_id: OffsetAndEpoch
    #: The snapshot's data batches (the state machine's records), in order.
    batches: list[RecordBatch]
    #: The append time of the last record it covers.
    last_contained_timestamp: int


class RaftListener(Protocol):
    def handle_load_snapshot(self, snapshot: LoadedSnapshot) -> None:
        """The state as of ``snapshot`` replaces everything delivered before; the next
        batches follow its end offset."""

    def handle_commit(self, batches: Sequence[RecordBatch]) -> None:
        """Committed batches (data and control), in log order, each delivered once."""

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        """A new epoch or a newly known leader. When it names this replica, every
        batch before the epoch's first offset has been delivered."""


class RaftClient:
    """One replica and its listener (see the module docstring)."""

    def __init__(self, node: RaftNode, log: KafkaRaftLog) -> None:
        self.node = node
        self.log = log
        self._listener: RaftListener | None = None
        #: The next offset to deliver.
        self._delivered = log.start_offset
        #: Whether the listener was fed yet (the latest snapshot comes first).
        self._loaded = False
        self._told: LeaderAndEpoch | None = None
        self._failure: RaftLogFailedError | None = None
        self._waker: Callable[[], None] | None = None

    # -- what the state machine reads ----------------------------------------------------

    @property
    def node_id(self) -> int:
        return self.node.key.id

    @property
    def leader(self) -> LeaderAndEpoch:
        """The epoch and its leader; a leader stepping down (or restarted) leads no more."""
        node = self.node
        if node.leader_id == node.key.id and node.role is not Role.LEADER:
            return LeaderAndEpoch(node.epoch, -1)
        return LeaderAndEpoch(node.epoch, node.leader_id)

    @property
    def high_watermark(self) -> int:
        return self.node.high_watermark

    @property
    def kraft_version(self) -> int:
        return self.node.kraft_version

    @property
    def is_leader(self) -> bool:
        return self.node.role is Role.LEADER

    @property
    def end_offset(self) -> int:
        return self.log.end_offset

    def describe(self, now: int) -> DescribeQuorumResponse:
        return self.node.describe(now)

    def set_waker(self, waker: Callable[[], None]) -> None:
        """Called after every step that may have left messages to send (an append
        answers parked fetches): how the driver learns it has work."""
        self._waker = waker

    # -- the listener --------------------------------------------------------------------

    def register(self, listener: RaftListener) -> None:
        """Start delivering to ``listener``: what is committed already, at once."""
        assert self._listener is None, "one listener per client"
        self._listener = listener
        self._deliver()

    def _deliver(self) -> None:
        listener = self._listener
        if listener is None:
            return
        latest = self.log.latest_snapshot()
        if latest is not None and (
            latest.offset > self._delivered or (not self._loaded and latest.offset > 0)
        ):
            # At start, or the leader's snapshot replaced this replica's log.
            contents = self.log.snapshot_contents(latest)
            self._delivered = latest.offset
            listener.handle_load_snapshot(
                LoadedSnapshot(latest, contents.batches, contents.header.last_contained_timestamp)
            )
        self._loaded = True
        hw = self.node.high_watermark
        while self._delivered < hw:
            batches = list(self.log.batches(self._delivered, hw, DELIVERY_BYTES))
            if not batches:
                break
            self._delivered = batches[-1].next_offset
            listener.handle_commit(batches)
        leader = self.leader
        if leader == self._told:
            return
        if leader.leader_id == self.node_id and self._delivered < self.node.epoch_start_offset:
            return  # told once the earlier epochs' batches are all delivered
        self._told = leader
        listener.handle_leader_change(leader)

    # -- the driver's entry points ---------------------------------------------------------

    def _guarded(self, action: Callable[[], T]) -> T:
        if self._failure is not None:
            raise self._failure
        try:
            result = action()
        except OSError as exc:
            self._failure = RaftLogFailedError(
                exc.errno, f"metadata log {self.log.log.directory} failed: {exc}"
            )
            raise self._failure from exc
        self._deliver()
        if self._waker is not None:
            self._waker()
        return result

    def append(self, now: int, payloads: Sequence[bytes]) -> int:
        """Append records as the leader (flushed); returns the offset of the last one.
        :class:`~millpond.controller.raft.node.NotLeaderError` if this is not the leader."""
        return self._guarded(lambda: self.node.append(now, payloads))

    def handle(
        self, now: int, source: int, correlation: int, message: Message, *, is_response: bool
    ) -> None:
        self._guarded(
            lambda: self.node.handle(now, source, correlation, message, is_response=is_response)
        )

    def unreachable(self, now: int, destination: int, correlation: int) -> None:
        self._guarded(lambda: self.node.unreachable(now, destination, correlation))

    def poll(self, now: int) -> None:
        self._guarded(lambda: self.node.poll(now))

    def resign(self, now: int) -> None:
        self._guarded(lambda: self.node.resign(now))

    def upgrade_kraft_version(self, now: int, version: int, *, validate_only: bool) -> bool:
        """See :meth:`~millpond.controller.raft.node.RaftNode.upgrade_kraft_version`."""
        return self._guarded(
            lambda: self.node.upgrade_kraft_version(now, version, validate_only=validate_only)
        )

    # -- snapshots ----------------------------------------------------------------------

    def create_snapshot(
        self, last_offset: int, epoch: int, payloads: Iterable[bytes], last_timestamp: int
    ) -> OffsetAndEpoch | None:
        """Write the state machine's snapshot of every record through ``last_offset``
        (delivered, so committed; its batch of epoch ``epoch``); the snapshot's id is
        ``(epoch, last_offset + 1)``. None if it exists already. An I/O error is raised
        but does not fail the client: the log is untouched and the next snapshot may
        succeed."""
        if self._failure is not None:
            raise self._failure
        snapshot_id = OffsetAndEpoch(epoch, last_offset + 1)
        if snapshot_id.offset > self._delivered:
            raise ValueError(
                f"snapshot {snapshot_id} is past what was delivered ({self._delivered})"
            )
        created = self.log.create_snapshot(
            snapshot_id,
            payloads,
            last_contained_timestamp=last_timestamp,
            voters=(
                self.node.voters_at(last_offset)
                if self.node.kraft_version_at(last_offset) >= 1
                else None
            ),
        )
        return snapshot_id if created else None

    def clean(self) -> bool:
        """Apply the metadata log's retention (see
        :meth:`~millpond.controller.raft.kafka_log.KafkaRaftLog.clean`); True if the
        log start moved. An I/O error is logged and leaves the log as it was."""
        if self._failure is not None:
            return False
        try:
            return self.log.clean(self.node.high_watermark)
        except OSError as exc:
            _log.error("raft: cleaning the metadata log failed: %s", exc)
            return False

    def take_outbox(self) -> list[Outgoing]:
        return self.node.take_outbox()

    def wakeup_at(self) -> int:
        return self.node.wakeup_at()

    def close(self) -> None:
        if self._failure is None:
            self.log.log.close()

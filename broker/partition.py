"""One partition as its leader serves it: the log, the producer state, and the
replication state around them, as Kafka 4.4's ``Partition`` keeps it.

The metadata image's partition registration says the replicas, the ISR and the leader
and partition epochs (:meth:`Partition.update_registration`); followers' fetches say
how far their logs reach (:meth:`Partition.record_follower_fetch`). What follows from
them, which followers are caught up, which may join or must leave the ISR, and where
the high watermark may go, is :class:`~millpond.broker.replication.leader.LeaderReplication`.
With a single replica the high watermark simply follows the leader's appends. The last
stable offset equals the high watermark until transactions exist.

``min.insync.replicas`` counts through :meth:`Partition.effective_min_isr`, which caps
it at the replica count as Kafka does: a single-replica partition accepts ``acks=all``
whatever the topic says. An ``acks=all`` append to a partition whose committed ISR is
smaller is refused before it is written (NOT_ENOUGH_REPLICAS); one whose maximal ISR
shrank below it while it waited is answered NOT_ENOUGH_REPLICAS_AFTER_APPEND once the
high watermark covers it.

Sans-I/O apart from the log it holds; times come in as arguments. Not thread-safe (the
broker's event loop makes every call).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from millpond.broker.replication.leader import Eligible, IsrProposal, LeaderReplication

if TYPE_CHECKING:
    from millpond.broker.replication.isr_changes import IsrAction
from millpond.controller.image import PartitionRegistration
from millpond.storage.log import Log
from millpond.storage.producer_state import ProducerStateManager
from millpond.storage.segment_read import FetchData, TimestampAndOffset
from millpond.wire.errors import ErrorCode

ACKS_ALL = -1
#: replica.lag.time.max.ms's default.
REPLICA_LAG_TIME_MAX_MS = 30_000


def _anyone(replica: int, broker_epoch: int) -> bool:
    return True


class Partition:
    __slots__ = (
        "_eligible",
        "_min_isr",
        "_node_id",
        "index",
        "log",
        "producers",
        "registration",
        "replication",
        "topic",
        "topic_id",
    )

    def __init__(
        self,
        topic: str,
        index: int,
        topic_id: bytes,
        log: Log,
        producers: ProducerStateManager,
        node_id: int,
        *,
        max_lag_ms: int = REPLICA_LAG_TIME_MAX_MS,
        min_isr: Callable[[], int] = lambda: 1,
        eligible: Eligible = _anyone,
    ) -> None:
        self.topic = topic
        self.index = index
        self.topic_id = topic_id
        self.log = log
        self.producers = producers
        self._node_id = node_id
        #: The topic's ``min.insync.replicas`` (read when the high watermark may move).
        self._min_isr = min_isr
        #: Whether the metadata lets a broker, fetching with an epoch, join the ISR.
        self._eligible = eligible
        self.replication = LeaderReplication(node_id, max_lag_ms)
        #: The image's registration last applied (None before the first).
        self.registration: PartitionRegistration | None = None

    def __repr__(self) -> str:
        return f"Partition({self.topic}-{self.index}, epoch {self.leader_epoch})"

    @property
    def leader_epoch(self) -> int:
        return self.replication.leader_epoch

    @property
    def replicas(self) -> tuple[int, ...]:
        return self.replication.replicas

    @property
    def isr(self) -> frozenset[int]:
        """The committed ISR (the controller's)."""
        return self.replication.isr

    # -- registration ----------------------------------------------------------------

    def update_registration(self, registration: PartitionRegistration, now_ms: int = 0) -> bool:
        """Take the image's view of the partition (leader epoch, replicas, ISR); True
        when the high watermark moved. A new leader epoch is noted in the leader epoch
        cache at the current log end before anything is written in it, as Kafka's
        leader does, so followers asking where the previous epoch ended are answered."""
        self.registration = registration
        before = self.replication.leader_epoch
        end = self.log.log_end_offset
        self.replication.update(
            registration.replicas,
            registration.isr,
            registration.leader_epoch,
            registration.partition_epoch,
            log_end=end,
            now_ms=now_ms,
        )
        epochs = self.log.leader_epochs
        if epochs is not None and self.replication.leader_epoch > before:
            epochs.assign(self.replication.leader_epoch, end)
        return self.maybe_advance_high_watermark(now_ms)

    def record_follower_fetch(
        self,
        replica: int,
        fetch_offset: int,
        log_start: int,
        now_ms: int,
        leader_end: int,
        broker_epoch: int,
    ) -> bool:
        """A follower's fetch said how far its log reaches (``leader_end``: this log's
        end when the fetch came); True if the high watermark advanced."""
        if replica == self._node_id or replica not in self.replicas:
            return False
        moved = self.replication.record_fetch(
            replica, fetch_offset, log_start, now_ms, leader_end, broker_epoch
        )
        return moved and self.maybe_advance_high_watermark(now_ms)

    def propose_expand(self, replica: int) -> IsrProposal | None:
        """The ISR change adding ``replica``, if it qualifies now."""
        return self.replication.propose_expand(replica, self.high_watermark, self._eligible)

    def propose_shrink(self, now_ms: int) -> IsrProposal | None:
        """The ISR change dropping the members that are not caught up, if any."""
        return self.replication.propose_shrink(self.log.log_end_offset, now_ms)

    def on_isr_answer(
        self,
        proposal: IsrProposal,
        action: IsrAction,
        registration: PartitionRegistration | None,
        now_ms: int,
    ) -> bool:
        """The controller's answer to an ISR change (see
        :mod:`millpond.broker.replication.isr_changes`); True if the high watermark moved."""
        if action == "taken" and registration is not None:
            taken = self.replication.on_committed(
                proposal, registration.isr, registration.leader_epoch, registration.partition_epoch
            )
            return taken and self.maybe_advance_high_watermark(now_ms)
        if action in ("undo", "wait"):
            self.replication.on_refused(proposal, undo=action == "undo")
        return False

    def replica_end_offset(self, replica: int) -> int:
        """A replica's log end offset as known here (-1: never heard of)."""
        if replica == self._node_id:
            return self.log.log_end_offset
        return self.replication.follower_end(replica)

    # -- offsets ---------------------------------------------------------------------

    @property
    def high_watermark(self) -> int:
        return self.log.high_watermark

    @property
    def last_stable_offset(self) -> int:
        """Equal to the high watermark: no transaction is ever open yet."""
        return self.log.high_watermark

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    def maybe_advance_high_watermark(self, now_ms: int = 0) -> bool:
        """Move the high watermark as far as the replication rule lets it; True if it
        moved."""
        log = self.log
        end = log.log_end_offset
        if len(self.replication.replicas) == 1:
            candidate: int | None = end
        else:
            candidate = self.replication.high_watermark_candidate(
                end, now_ms, self._min_isr, self._eligible
            )
        if candidate is None or candidate <= log.high_watermark:
            return False
        log.update_high_watermark(candidate)
        return True

    # -- acks=all --------------------------------------------------------------------

    def effective_min_isr(self, min_insync_replicas: int) -> int:
        """``min.insync.replicas`` capped at the replica count, as Kafka counts it."""
        return min(min_insync_replicas, len(self.replicas))

    def check_enough_replicas(self, acks: int, min_insync_replicas: int) -> ErrorCode:
        """Before an append: NOT_ENOUGH_REPLICAS for ``acks=all`` with an ISR smaller
        than the effective minimum, else NONE."""
        if acks != ACKS_ALL or len(self.isr) >= self.effective_min_isr(min_insync_replicas):
            return ErrorCode.NONE
        return ErrorCode.NOT_ENOUGH_REPLICAS

    def acks_all_reached(
        self, required_offset: int, min_insync_replicas: int
    ) -> tuple[bool, ErrorCode]:
        """Whether an ``acks=all`` append ending before ``required_offset`` is committed
        (the high watermark covers it), and with which answer."""
        if self.log.high_watermark < required_offset:
            return False, ErrorCode.NONE
        maximal = self.replication.maximal_isr
        if len(maximal) < self.effective_min_isr(min_insync_replicas):
            return True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return True, ErrorCode.NONE

    # -- reads -----------------------------------------------------------------------

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        committed: bool,
        min_one_message: bool,
        follower: bool = False,
    ) -> FetchData:
        """Whole batches from ``offset``: below the high watermark for consumers (the
        last stable offset for read_committed), up to the log end for followers."""
        if follower:
            limit = None
        else:
            limit = self.last_stable_offset if committed else self.log.high_watermark
        return self.log.read(offset, max_bytes, max_offset=limit, min_one_message=min_one_message)

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(epoch, end offset) of the largest epoch at most ``epoch`` in the leader
        epoch cache; (-1, -1) without one."""
        epochs = self.log.leader_epochs
        if epochs is None:
            return -1, -1
        return epochs.end_offset_for(epoch, self.log.log_end_offset)

    def fetch_offset_for_timestamp(self, timestamp: int) -> TimestampAndOffset | None:
        """ListOffsets: the first record at or after ``timestamp`` (or the special
        earliest and max-timestamp targets), as the log finds it."""
        return self.log.find_offset_by_timestamp(timestamp)

    def delete_records_before(self, offset: int) -> int:
        """DeleteRecords on the leader: move the log start up to ``offset`` (records
        below it go with their segments) and tell the producer state; returns the log
        start offset. The log raises for an offset out of range."""
        if self.log.delete_records(offset):
            self.producers.on_log_start_offset_incremented(self.log.log_start_offset)
        return self.log.log_start_offset

    @property
    def compacted_only(self) -> bool:
        """cleanup.policy=compact without delete (DeleteRecords is refused there)."""
        config = self.log.config
        return config.compact and not config.delete

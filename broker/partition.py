"""One partition as its leader serves it: the log, the producer state, and the
replication state around them, as Kafka 4.4's ``Partition`` keeps it.

The metadata image's partition registration says the replicas, the ISR and the leader
epoch (:meth:`Partition.update_registration`); the partition keeps the log end offset
of every other replica as followers report it (none fetch yet). The high watermark is
the smallest log end offset among the ISR members, never moved backwards
(:meth:`Partition.maybe_advance_high_watermark`): with the ISR {leader} it follows the
leader's appends, by the same rule a replicated partition will use. The last stable
offset equals the high watermark until transactions exist.

``min.insync.replicas`` counts through :meth:`Partition.effective_min_isr`, which caps
it at the replica count as Kafka does: a single-replica partition accepts ``acks=all``
whatever the topic says. An ``acks=all`` append to a partition whose ISR is smaller is
refused before it is written (NOT_ENOUGH_REPLICAS); one whose ISR shrank while it
waited is answered NOT_ENOUGH_REPLICAS_AFTER_APPEND once the high watermark covers it.

Sans-I/O apart from the log it holds; not thread-safe (the broker's event loop makes
every call).
"""

from __future__ import annotations

from millpond.controller.image import PartitionRegistration
from millpond.storage.log import Log
from millpond.storage.producer_state import ProducerStateManager
from millpond.storage.segment_read import FetchData, TimestampAndOffset
from millpond.wire.errors import ErrorCode

ACKS_ALL = -1


class Partition:
    __slots__ = (
        "_follower_end_offsets",
        "_node_id",
        "index",
        "isr",
        "leader_epoch",
        "log",
        "producers",
        "registration",
        "replicas",
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
    ) -> None:
        self.topic = topic
        self.index = index
        self.topic_id = topic_id
        self.log = log
        self.producers = producers
        self._node_id = node_id
        self.leader_epoch = -1
        self.replicas: tuple[int, ...] = (node_id,)
        self.isr: frozenset[int] = frozenset((node_id,))
        #: The image's registration last applied (None before the first).
        self.registration: PartitionRegistration | None = None
        #: Followers' log end offsets, as their fetches report them.
        self._follower_end_offsets: dict[int, int] = {}

    def __repr__(self) -> str:
        return f"Partition({self.topic}-{self.index}, epoch {self.leader_epoch})"

    # -- registration ----------------------------------------------------------------

    def update_registration(self, registration: PartitionRegistration) -> bool:
        """Take the image's view of the partition (leader epoch, replicas, ISR); True
        when the high watermark moved (an ISR that shrank to caught-up members, or the
        first registration of a log a previous run wrote, lets it advance)."""
        self.registration = registration
        replicas = registration.replicas
        self.leader_epoch = registration.leader_epoch
        self.replicas = replicas
        self.isr = frozenset(registration.isr)
        for gone in [r for r in self._follower_end_offsets if r not in replicas]:
            del self._follower_end_offsets[gone]
        return self.maybe_advance_high_watermark()

    def update_follower_end_offset(self, replica: int, end_offset: int) -> bool:
        """A follower's fetch said how far its log reaches; True if the high watermark
        advanced."""
        if replica == self._node_id or replica not in self.replicas:
            return False
        self._follower_end_offsets[replica] = end_offset
        return self.maybe_advance_high_watermark()

    def replica_end_offset(self, replica: int) -> int:
        """A replica's log end offset as known here (-1: never heard of)."""
        if replica == self._node_id:
            return self.log.log_end_offset
        return self._follower_end_offsets.get(replica, -1)

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

    def maybe_advance_high_watermark(self) -> bool:
        """Move the high watermark to the smallest log end offset among the ISR
        members, if that is higher; True if it moved."""
        candidate = self.log.log_end_offset
        for replica in self.isr:
            if replica != self._node_id:
                candidate = min(candidate, self._follower_end_offsets.get(replica, -1))
        log = self.log
        if candidate <= log.high_watermark:
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
        if len(self.isr) < self.effective_min_isr(min_insync_replicas):
            return True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return True, ErrorCode.NONE

    # -- reads -----------------------------------------------------------------------

    def read(
        self, offset: int, max_bytes: int, *, committed: bool, min_one_message: bool
    ) -> FetchData:
        """Whole batches from ``offset``, below the high watermark (or the last stable
        offset for read_committed)."""
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

"""What a group coordinator shard holds for the groups of one ``__consumer_offsets``
partition: the groups, their committed offsets, the timers and the shard's time, and
the configs it obeys. Membership (:mod:`~millpond.broker.groups.membership`), offsets
(:mod:`~millpond.broker.groups.offsets`) and storage
(:mod:`~millpond.broker.groups.storage`) each work on this state; the hooks declared
here are the few calls one of them makes into another.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from millpond.broker.coordinator.runtime import AppendError
from millpond.broker.coordinator.timers import Timers
from millpond.broker.groups import placement
from millpond.broker.groups.classic import ClassicGroup
from millpond.broker.groups.records import GroupRecord, OffsetRecord

Record = OffsetRecord | GroupRecord
#: Appends records to the shard's partition now, or raises :class:`StorageError`.
Append = Callable[[Sequence[Record]], None]
#: A failed append, with the Kafka error the partition answered.
StorageError = AppendError


@dataclass(frozen=True)
class GroupConfig:
    """The ``group.*`` and ``offsets.*`` broker configs the coordinator obeys."""

    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3000
    max_size: int = 2**31 - 1
    #: How long a new member may wait for its first join to complete (Kafka: 5 minutes).
    new_member_join_timeout_ms: int = 300_000
    offset_metadata_max_bytes: int = 4096
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    num_partitions: int = 50


@dataclass
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int = -1


class ShardState:
    def __init__(
        self,
        config: GroupConfig,
        append: Append,
        *,
        new_id: Callable[[], str] | None = None,
        timers: Timers | None = None,
    ) -> None:
        self.config = config
        self._append = append
        counter = itertools.count(1)
        self._new_id = new_id or (lambda: f"{next(counter):032x}")
        self.timers = timers if timers is not None else Timers()
        self.groups: dict[str, ClassicGroup] = {}
        #: group -> (topic, partition) -> committed offset
        self.offsets: dict[str, dict[tuple[str, int], CommittedOffset]] = {}
        self.now_ms = 0

    # -- time ----------------------------------------------------------------------------

    def advance(self, now_ms: int) -> None:
        """Fire every deadline due at ``now_ms`` (in deadline order)."""
        self.timers.run_due(now_ms, self._at)
        self.now_ms = max(self.now_ms, now_ms)

    def _at(self, deadline_ms: int) -> None:
        self.now_ms = max(self.now_ms, deadline_ms)

    def next_deadline(self) -> int | None:
        return self.timers.next_deadline()

    def _partition(self, group_id: str) -> int:
        return placement.partition_for(group_id, self.config.num_partitions)

    # -- hooks between the parts -------------------------------------------------------------

    def replay(self, record: Record) -> None:
        raise NotImplementedError

    def _store_group(
        self, group: ClassicGroup, assignment: dict[str, bytes], *, members: bool = True
    ) -> None:
        raise NotImplementedError

    def _schedule_session(self, group: ClassicGroup, member_id: str, timeout_ms: int) -> None:
        raise NotImplementedError

    def _cancel_session(self, group: ClassicGroup, member_id: str) -> None:
        raise NotImplementedError

    def _forget(self, group: ClassicGroup) -> None:
        raise NotImplementedError


# -- timer keys -------------------------------------------------------------------------------


def join_key(group_id: str) -> str:
    return f"join\0{group_id}"


def sync_key(group_id: str) -> str:
    return f"sync\0{group_id}"


def session_key(group_id: str, member_id: str) -> str:
    return f"session\0{group_id}\0{member_id}"

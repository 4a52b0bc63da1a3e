"""The classic group coordinator of one ``__consumer_offsets`` partition: a shard of the
coordinator runtime (:mod:`millpond.broker.coordinator.runtime`), and a deterministic
state machine fed requests and time.

Its parts: membership (:mod:`~millpond.broker.groups.membership`: JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, rebalances and sessions), offsets
(:mod:`~millpond.broker.groups.offsets`: commits, fetches, deletions, expiry) and
storage (:mod:`~millpond.broker.groups.storage`: the records written and replayed).
Records go out through the ``append`` it is given (the runtime's, bound to the shard's
partition, or a test's); deadlines are the shard's timers, fired by :meth:`advance`. So
the whole protocol runs in tests with a manual clock and random schedules, and the
asyncio service (:mod:`millpond.broker.groups.service`) only feeds it requests and time.
"""

from __future__ import annotations

from millpond.broker.groups.classic import GroupState
from millpond.broker.groups.membership import Caller, Membership, join_error
from millpond.broker.groups.offsets import Offsets, OffsetToCommit
from millpond.broker.groups.shard_state import (
    CommittedOffset,
    GroupConfig,
    Record,
    StorageError,
)
from millpond.broker.groups.storage import GroupStorage
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.sync_group_response import SyncGroupResponse


class GroupCoordinator(Offsets, Membership, GroupStorage):
    def on_unloaded(self) -> None:
        """This broker no longer leads the partition: answer every JoinGroup and
        SyncGroup still parked NOT_COORDINATOR (the member finds the new coordinator),
        as Kafka does when it unloads a shard."""
        for group in self.groups.values():
            for member in group.members.values():
                join, sync = member.awaiting_join, member.awaiting_sync
                member.awaiting_join = member.awaiting_sync = None
                if join is not None:
                    join(join_error(ErrorCode.NOT_COORDINATOR, member.member_id))
                if sync is not None:
                    sync(SyncGroupResponse(error_code=ErrorCode.NOT_COORDINATOR))
            group.transition(GroupState.DEAD, self.now_ms)
        self.groups.clear()
        self.offsets.clear()
        self.timers.clear()


__all__ = [
    "Caller",
    "CommittedOffset",
    "GroupConfig",
    "GroupCoordinator",
    "OffsetToCommit",
    "Record",
    "StorageError",
]

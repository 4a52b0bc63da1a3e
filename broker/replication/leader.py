"""A partition leader's view of its followers and of its ISR, as Kafka's ``Partition``
and ``Replica`` keep them. Pure: times, offsets and the metadata's verdicts come in as
arguments; what to ask the controller comes out (:class:`IsrProposal`).

*Followers.* Each follower's last fetch says how far its log reaches. A follower is
*caught up* when it has reached the leader's log end, or did so within
``replica.lag.time.max.ms``: its caught-up time is the fetch time when the fetch reached
the leader's end *as it was when the fetch came*, else the previous fetch's time when
this fetch reached the end as the previous one saw it.

*The ISR.* The controller's ISR is the *committed* one. One change at a time goes to the
controller (``in_flight``): adding a follower (its log reaches the high watermark and
the start of the current leader epoch, and the metadata says it may join: registered,
unfenced, not shutting down, with the broker epoch it fetches with) or dropping those
not caught up. While an addition is in flight the *maximal* ISR counts the new member
already; a pending removal counts nobody out until the controller has agreed.

*The high watermark* moves to the lowest log end among the maximal ISR and the
followers that are caught up and may join, never backwards, and not at all while the
committed ISR is smaller than the effective ``min.insync.replicas`` (the configured
value capped at the replica count): what is below it then is not committed, whatever
the producer's acks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

from millpond.controller.image import LeaderRecoveryState

__all__ = ["FollowerState", "IsrProposal", "LeaderReplication"]


class FollowerState(NamedTuple):
    """A follower as its fetches have shown it (-1: not known yet)."""

    log_start_offset: int = -1
    log_end_offset: int = -1
    last_caught_up_ms: int = 0
    #: The leader's log end when the previous fetch came, and that fetch's time.
    last_fetch_leader_end: int = 0
    last_fetch_ms: int = 0
    #: The broker epoch the follower fetched with (None: it has not fetched; -1: it
    #: fetched without one, as Fetch below v15 does).
    broker_epoch: int | None = None

    def after_fetch(
        self, fetch_offset: int, log_start: int, now_ms: int, leader_end: int, broker_epoch: int
    ) -> FollowerState:
        if fetch_offset >= leader_end:
            caught_up = max(self.last_caught_up_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_end:
            caught_up = max(self.last_caught_up_ms, self.last_fetch_ms)
        else:
            caught_up = self.last_caught_up_ms
        return FollowerState(
            log_start,
            fetch_offset,
            caught_up,
            max(leader_end, self.last_fetch_leader_end),
            now_ms,
            broker_epoch,
        )

    def is_caught_up(self, leader_end: int, now_ms: int, max_lag_ms: int) -> bool:
        return self.log_end_offset == leader_end or now_ms - self.last_caught_up_ms <= max_lag_ms


class IsrProposal(NamedTuple):
    """An AlterPartition entry: the ISR this leader asks for, with what it knows."""

    leader_epoch: int
    partition_epoch: int
    #: (broker id, broker epoch or -1), the leader first.
    isr: tuple[tuple[int, int], ...]
    leader_recovery_state: int = LeaderRecoveryState.RECOVERED


#: Whether a broker may join the ISR: (broker id, the epoch it fetched with) -> verdict
#: of the metadata (registered, unfenced, not shutting down, that epoch or -1).
Eligible = Callable[[int, int], bool]


class LeaderReplication:
    """One partition's replication state while this broker leads it."""

    __slots__ = (
        "_added",
        "_proposal",
        "epoch_start_offset",
        "followers",
        "isr",
        "leader_epoch",
        "max_lag_ms",
        "node_id",
        "partition_epoch",
        "replicas",
    )

    def __init__(self, node_id: int, max_lag_ms: int) -> None:
        self.node_id = node_id
        self.max_lag_ms = max_lag_ms
        self.replicas: tuple[int, ...] = (node_id,)
        #: The committed ISR (the controller's).
        self.isr: frozenset[int] = frozenset((node_id,))
        self.followers: dict[int, FollowerState] = {}
        self.leader_epoch = -1
        self.partition_epoch = -1
        #: This broker's log end when its current leader epoch began.
        self.epoch_start_offset = -1
        self._proposal: IsrProposal | None = None
        self._added: int | None = None

    # -- metadata ----------------------------------------------------------------------

    def update(
        self,
        replicas: Iterable[int],
        isr: Iterable[int],
        leader_epoch: int,
        partition_epoch: int,
        *,
        log_end: int,
        now_ms: int,
    ) -> bool:
        """Take the metadata's registration of the partition (Kafka's ``makeLeader``);
        False when it is older than what this leader has (its partition epoch is below
        the one an AlterPartition answer gave). A new leader epoch starts at ``log_end``
        and resets what is known of the followers: those in the ISR count as caught up
        now."""
        if partition_epoch < self.partition_epoch:
            return False
        self.replicas = tuple(replicas)
        self.isr = frozenset(isr)
        self._proposal, self._added = None, None
        if leader_epoch > self.leader_epoch:
            new_leader = self.leader_epoch < 0
            self.followers = {
                r: _reset(self.followers.get(r), new_leader, r in self.isr, now_ms, log_end)
                for r in self.replicas
                if r != self.node_id
            }
            self.leader_epoch = leader_epoch
            self.epoch_start_offset = log_end
        else:
            self.followers = {
                r: self.followers.get(r, FollowerState())
                for r in self.replicas
                if r != self.node_id
            }
        self.partition_epoch = partition_epoch
        return True

    @property
    def in_flight(self) -> bool:
        return self._proposal is not None

    @property
    def maximal_isr(self) -> frozenset[int]:
        return self.isr if self._added is None else self.isr | {self._added}

    # -- followers ---------------------------------------------------------------------

    def record_fetch(
        self,
        replica: int,
        fetch_offset: int,
        log_start: int,
        now_ms: int,
        leader_end: int,
        broker_epoch: int,
    ) -> bool:
        """A follower fetched at ``fetch_offset`` (its log end); ``leader_end`` is the
        leader's log end when the fetch came. True if the follower's log end moved. A
        replica outside the assignment is not tracked (the caller refuses its fetch)."""
        state = self.followers.get(replica)
        if state is None:
            return False
        self.followers[replica] = state.after_fetch(
            fetch_offset, log_start, now_ms, leader_end, broker_epoch
        )
        return state.log_end_offset != fetch_offset

    def follower_end(self, replica: int) -> int:
        state = self.followers.get(replica)
        return -1 if state is None else state.log_end_offset

    # -- the ISR -----------------------------------------------------------------------

    def propose_expand(
        self, replica: int, high_watermark: int, eligible: Eligible
    ) -> IsrProposal | None:
        """The AlterPartition adding ``replica``, if it qualifies now and no change is in
        flight (Kafka's ``maybeExpandIsr``; the lag time does not matter here)."""
        state = self.followers.get(replica)
        if self.in_flight or state is None or replica in self.isr:
            return None
        if state.broker_epoch is None or not eligible(replica, state.broker_epoch):
            return None
        end = state.log_end_offset
        if end < high_watermark or self.epoch_start_offset < 0 or end < self.epoch_start_offset:
            return None
        self._added = replica
        return self._propose((*self._ordered(self.isr), replica))

    def propose_shrink(self, leader_end: int, now_ms: int) -> IsrProposal | None:
        """The AlterPartition dropping the ISR members that are not caught up, if any
        and no change is in flight (Kafka's ``maybeShrinkIsr``, run every
        ``replica.lag.time.max.ms`` / 2)."""
        out = set(self.out_of_sync(leader_end, now_ms))
        if not out:
            return None
        return self._propose(tuple(r for r in self._ordered(self.isr) if r not in out))

    def out_of_sync(self, leader_end: int, now_ms: int) -> list[int]:
        """ISR members other than the leader that are not caught up."""
        if self.in_flight:
            return []
        out = []
        for replica in self._ordered(self.isr):
            if replica == self.node_id:
                continue
            state = self.followers.get(replica)
            if state is None or not state.is_caught_up(leader_end, now_ms, self.max_lag_ms):
                out.append(replica)
        return out

    def on_committed(
        self, proposal: IsrProposal, isr: Iterable[int], leader_epoch: int, partition_epoch: int
    ) -> bool:
        """The controller accepted ``proposal`` and answered with the partition as it now
        is; True if that answer was taken (it is for the leader epoch this leader is in,
        and not older than what it has)."""
        if proposal is not self._proposal:
            return False
        if leader_epoch != self.leader_epoch or partition_epoch < self.partition_epoch:
            return False  # stays in flight until the metadata says more
        self.isr = frozenset(isr)
        self.partition_epoch = partition_epoch
        self._proposal, self._added = None, None
        return True

    def on_refused(self, proposal: IsrProposal, *, undo: bool) -> None:
        """The controller refused ``proposal``. ``undo`` (OPERATION_NOT_ATTEMPTED,
        INELIGIBLE_REPLICA): back to the committed ISR, free to try again; otherwise it
        stays in flight until the metadata replaces it (stale epochs, unknown topic)."""
        if proposal is self._proposal and undo:
            self._proposal, self._added = None, None

    @property
    def proposal(self) -> IsrProposal | None:
        """The change in flight."""
        return self._proposal

    def _propose(self, isr: tuple[int, ...]) -> IsrProposal:
        members = tuple((r, self._epoch_of(r)) for r in isr)
        self._proposal = IsrProposal(self.leader_epoch, self.partition_epoch, members)
        return self._proposal

    def _epoch_of(self, replica: int) -> int:
        state = self.followers.get(replica)
        epoch = None if state is None else state.broker_epoch
        return -1 if epoch is None else epoch

    def _ordered(self, members: Iterable[int]) -> list[int]:
        """The leader first, then the others in assignment order."""
        chosen = set(members)
        rest = [r for r in self.replicas if r in chosen and r != self.node_id]
        return ([self.node_id] if self.node_id in chosen else []) + rest

    # -- the high watermark --------------------------------------------------------------

    def high_watermark_candidate(
        self, leader_end: int, now_ms: int, min_isr: Callable[[], int], eligible: Eligible
    ) -> int | None:
        """Where the high watermark may move (the caller keeps it if that is not
        higher); None while the committed ISR is under the effective min ISR. The topic's
        min ISR is read only when the ISR is short of the replicas (on every append of a
        partition with a full ISR it could not matter)."""
        short = len(self.isr) < len(self.replicas)
        if short and len(self.isr) < min(min_isr(), len(self.replicas)):
            return None
        candidate = leader_end
        maximal = self.maximal_isr
        for replica, state in self.followers.items():
            end = state.log_end_offset
            if end >= candidate:
                continue
            waits = (
                replica in maximal
                or state.is_caught_up(leader_end, now_ms, self.max_lag_ms)
                and state.broker_epoch is not None
                and eligible(replica, state.broker_epoch)
            )
            if waits:
                candidate = end
        return candidate


def _reset(
    old: FollowerState | None, new_leader: bool, in_isr: bool, now_ms: int, epoch_start: int
) -> FollowerState:
    """A follower's state when this broker begins a leader epoch (Kafka's
    ``resetReplicaState``): members of the ISR count as caught up now."""
    caught_up = now_ms if in_isr else 0
    if new_leader or old is None:
        return FollowerState(-1, -1, caught_up, -1, 0, None)
    return old._replace(
        last_caught_up_ms=caught_up,
        last_fetch_leader_end=epoch_start,
        last_fetch_ms=now_ms if in_isr else 0,
    )

"""A classic consumer group's state: members, generation, leader, protocol; Kafka's
states and the transitions allowed between them.

Plain data with invariants; no timers, no I/O. The coordinator
(:mod:`millpond.broker.groups.membership`) drives it and holds the replies that wait
on it (a member's pending JoinGroup or SyncGroup answer is a callback stored here).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.join_group_response import (
    JoinGroupResponse,
    JoinGroupResponseMember,
)
from millpond.wire.generated.api.sync_group_response import SyncGroupResponse

CONSUMER_PROTOCOL = "consumer"
JoinReply = Callable[[JoinGroupResponse], None]
SyncReply = Callable[[SyncGroupResponse], None]


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.PREPARING_REBALANCE: frozenset(
        {GroupState.STABLE, GroupState.COMPLETING_REBALANCE, GroupState.EMPTY}
    ),
    GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
    GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
    GroupState.DEAD: frozenset(GroupState),
}


class GroupError(Exception):
    """A request the group refuses, with the Kafka error code to answer."""

    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message or str(code))
        self.code = code


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    #: (name, metadata) in the member's order of preference.
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    awaiting_join: JoinReply | None = None
    awaiting_sync: SyncReply | None = None
    #: Joined but not yet through a join phase: may expire while awaiting join.
    is_new: bool = False

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        return b""

    def vote(self, candidates: set[str]) -> str:
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def has_satisfied_heartbeat(self) -> bool:
        """Whether a session expiry spares this member: one waiting for the rebalance
        answers is alive by definition, unless it never completed a join."""
        if self.is_new:
            return False
        return self.awaiting_join is not None or self.awaiting_sync is not None


@dataclass
class ClassicGroup:
    group_id: str
    state: GroupState = GroupState.EMPTY
    previous_state: GroupState = GroupState.EMPTY
    state_timestamp_ms: int = -1
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    #: Insertion-ordered, so a new leader is the oldest remaining member, as in Kafka.
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    pending_join_members: set[str] = field(default_factory=set)
    pending_sync_members: set[str] = field(default_factory=set)
    supported_protocols: dict[str, int] = field(default_factory=dict)
    new_member_added: bool = False
    #: Topics the members subscribe to (consumer protocol), None when unknown.
    subscribed_topics: frozenset[str] | None = None

    # -- state ---------------------------------------------------------------------------

    def transition(self, target: GroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[target]:
            raise AssertionError(f"group {self.group_id}: {self.state} -> {target} is invalid")
        self.previous_state = self.state
        self.state = target
        self.state_timestamp_ms = now_ms

    def can_rebalance(self) -> bool:
        return self.state in _VALID_PREVIOUS[GroupState.PREPARING_REBALANCE]

    @property
    def is_empty(self) -> bool:
        return self.state is GroupState.EMPTY

    # -- members -------------------------------------------------------------------------

    def has_member(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def static_member_id(self, instance_id: str) -> str | None:
        return self.static_members.get(instance_id)

    def add(self, member: Member, reply: JoinReply | None) -> None:
        if member.group_instance_id is not None:
            if member.group_instance_id in self.static_members:
                raise AssertionError(f"instance {member.group_instance_id} is already a member")
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._count_protocols(member, 1)
        member.awaiting_join = reply
        self.pending_join_members.discard(member.member_id)

    def remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self._count_protocols(member, -1)
            if member.group_instance_id is not None:
                self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_join_members.discard(member_id)
        self.pending_sync_members.discard(member_id)

    def update_member(
        self,
        member: Member,
        protocols: list[tuple[str, bytes]],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        reply: JoinReply | None,
    ) -> None:
        self._count_protocols(member, -1)
        member.protocols = protocols
        self._count_protocols(member, 1)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        member.awaiting_join = reply

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> Member:
        """The member of ``instance_id`` under a new id (a restarted static member); its
        pending answers are fenced."""
        old = self.members.pop(old_id)
        self._fence(old)
        new = Member(
            new_id, old.group_instance_id, old.client_id, old.client_host,
            old.rebalance_timeout_ms, old.session_timeout_ms, old.protocol_type,
            old.protocols, old.assignment,
        )  # fmt: skip
        self.members[new_id] = new
        if self.leader_id == old_id:
            self.leader_id = new_id
        self.static_members[instance_id] = new_id
        return new

    @staticmethod
    def _fence(member: Member) -> None:
        if member.awaiting_join is not None:
            reply, member.awaiting_join = member.awaiting_join, None
            reply(
                JoinGroupResponse(
                    error_code=ErrorCode.FENCED_INSTANCE_ID,
                    member_id=member.member_id,
                    protocol_type=None,
                    protocol_name=None,
                    leader="",
                )
            )
        if member.awaiting_sync is not None:
            sync_reply, member.awaiting_sync = member.awaiting_sync, None
            sync_reply(
                SyncGroupResponse(
                    error_code=ErrorCode.FENCED_INSTANCE_ID, protocol_type=None, protocol_name=None
                )
            )

    def _count_protocols(self, member: Member, delta: int) -> None:
        for name in member.protocol_names():
            self.supported_protocols[name] = self.supported_protocols.get(name, 0) + delta

    def validate_member(self, member_id: str, instance_id: str | None) -> None:
        """Kafka's member check: a static member must be the current holder of its
        instance id (FENCED_INSTANCE_ID), and any member must exist (UNKNOWN_MEMBER_ID)."""
        if instance_id is not None:
            existing = self.static_members.get(instance_id)
            if existing is None:
                raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)
            if existing != member_id:
                raise GroupError(ErrorCode.FENCED_INSTANCE_ID)
        if member_id not in self.members:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)

    def generation_error(
        self, member_id: str, instance_id: str | None, generation_id: int
    ) -> int | None:
        """What SyncGroup and Heartbeat check first, in Kafka's order: a dead group
        (COORDINATOR_NOT_AVAILABLE), the member (:meth:`validate_member`), its generation
        (ILLEGAL_GENERATION); None when all hold."""
        if self.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        try:
            self.validate_member(member_id, instance_id)
        except GroupError as exc:
            return exc.code
        if generation_id != self.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        return None

    # -- join phase ----------------------------------------------------------------------

    def awaiting_join_count(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join is not None)

    def has_all_members_joined(self) -> bool:
        return (
            all(m.awaiting_join is not None for m in self.members.values())
            and not self.pending_join_members
        )

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def supports_protocols(self, protocol_type: str, names: Iterable[str]) -> bool:
        names = list(names)
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(names)
        count = len(self.members)
        return self.protocol_type == protocol_type and any(
            self.supported_protocols.get(name, 0) == count for name in names
        )

    def select_protocol(self) -> str:
        count = len(self.members)
        candidates = {n for n, c in self.supported_protocols.items() if c == count}
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = member.vote(candidates)
            votes[choice] = votes.get(choice, 0) + 1
        return max(votes, key=lambda name: votes[name])

    def maybe_elect_new_joined_leader(self) -> bool:
        """Keep a leader that rejoined, else pick a member that did; False when none did."""
        if self.leader_id is None:
            return False
        leader = self.members.get(self.leader_id)
        if leader is not None and leader.awaiting_join is not None:
            return True
        for member in self.members.values():
            if member.awaiting_join is not None:
                self.leader_id = member.member_id
                return True
        return False

    def init_next_generation(
        self, now_ms: int, topics_of: Callable[[bytes], frozenset[str] | None]
    ) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.subscribed_topics = self.compute_subscribed_topics(topics_of)
            self.transition(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.subscribed_topics = self.compute_subscribed_topics(topics_of)
            self.transition(GroupState.EMPTY, now_ms)
        self.pending_sync_members.clear()

    @property
    def uses_consumer_protocol(self) -> bool:
        return self.protocol_type == CONSUMER_PROTOCOL

    def compute_subscribed_topics(
        self, topics_of: Callable[[bytes], frozenset[str] | None]
    ) -> frozenset[str] | None:
        """The union of the members' subscriptions for a consumer group; None (unknown)
        for other protocols or metadata that does not parse, which keeps its offsets
        from expiring while members exist."""
        if not self.uses_consumer_protocol:
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            parsed = topics_of(member.metadata(self.protocol_name))
            if parsed is None:
                return None
            topics |= parsed
        return frozenset(topics)

    def is_subscribed_to(self, topic: str) -> bool:
        if self.subscribed_topics is None:
            return self.uses_consumer_protocol
        return topic in self.subscribed_topics

    def current_members(self) -> list[JoinGroupResponseMember]:
        """The member list the leader gets: ids and metadata for the chosen protocol."""
        return [
            JoinGroupResponseMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                metadata=m.metadata(self.protocol_name),
            )
            for m in self.members.values()
        ]

    def assignments(self) -> dict[str, bytes]:
        return {m.member_id: m.assignment for m in self.members.values()}

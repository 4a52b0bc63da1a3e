"""Classic group membership: Kafka's JoinGroup / SyncGroup / Heartbeat / LeaveGroup protocol
over the groups of a shard, as Apache Kafka 4.4's ``GroupMetadataManager`` runs it for
classic groups: the states, the KIP-394 member-id round trip, KIP-345 static members,
the initial rebalance delay, the pending-sync expiry, the error codes and the order in
which they are checked.

A JoinGroup or SyncGroup answer may come much later than its request (when the join
phase completes, or the leader's assignment is stored): the reply callback it leaves
is kept on the member and called then. Deadlines (sessions, the join and sync phases)
are the shard's timers. What is stored goes through
:mod:`~millpond.broker.groups.storage`, and the membership decides what to do when
storing fails.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from millpond.broker.coordinator.runtime import coordinator_error
from millpond.broker.groups.classic import (
    ClassicGroup,
    GroupError,
    GroupState,
    JoinReply,
    Member,
    SyncReply,
)
from millpond.broker.groups.shard_state import (
    ShardState,
    StorageError,
    join_key,
    session_key,
    sync_key,
)
from millpond.broker.groups.subscription import subscribed_topics
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.heartbeat_request import HeartbeatRequest
from millpond.wire.generated.api.join_group_request import JoinGroupRequest
from millpond.wire.generated.api.join_group_response import JoinGroupResponse
from millpond.wire.generated.api.leave_group_request import MemberIdentity
from millpond.wire.generated.api.leave_group_response import MemberResponse
from millpond.wire.generated.api.sync_group_request import SyncGroupRequest
from millpond.wire.generated.api.sync_group_response import SyncGroupResponse

log = logging.getLogger("millpond.groups")

#: JoinGroup v4+ must rejoin with the member id the coordinator hands out (KIP-394).
REQUIRES_KNOWN_MEMBER_ID_VERSION = 4
#: JoinGroup v9+ lets a rejoining static leader skip the assignment (KIP-814).
SKIP_ASSIGNMENT_VERSION = 9


@dataclass(frozen=True)
class Caller:
    """Who sent a request: what a new member records about itself."""

    client_id: str
    client_host: str


class Membership(ShardState):
    # -- JoinGroup -----------------------------------------------------------------------

    def join(
        self,
        caller: Caller,
        request: JoinGroupRequest,
        version: int,
        now_ms: int,
        reply: JoinReply,
    ) -> None:
        self.advance(now_ms)
        member_id = request.member_id
        if not request.group_id:
            reply(join_error(ErrorCode.INVALID_GROUP_ID, member_id))
            return
        timeout = request.session_timeout_ms
        if not (
            self.config.min_session_timeout_ms <= timeout <= self.config.max_session_timeout_ms
        ):
            reply(join_error(ErrorCode.INVALID_SESSION_TIMEOUT, member_id))
            return
        unknown = member_id == ""
        group = self.groups.get(request.group_id)
        is_new_group = group is None
        if group is None:
            if not unknown:
                reply(join_error(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
                return
            group = self.groups[request.group_id] = ClassicGroup(request.group_id)
            group.state_timestamp_ms = now_ms
        if not self._accept_joining_member(group, member_id):
            group.remove(member_id)
            reply(join_error(ErrorCode.GROUP_MAX_SIZE_REACHED, ""))
        elif unknown:
            self._join_new_member(caller, request, version, group, reply)
        else:
            self._join_existing_member(caller, request, group, reply)
        if is_new_group:
            try:
                self._store_group(group, {}, members=False)
            except StorageError as exc:
                log.warning("group %s: storing the new group failed: %s", group.group_id, exc)

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        limit = self.config.max_size
        if group.state in (GroupState.EMPTY, GroupState.DEAD):
            return True
        if group.state is GroupState.PREPARING_REBALANCE:
            member = group.members.get(member_id)
            return (
                member is not None and member.awaiting_join is not None
            ) or group.awaiting_join_count() < limit
        return group.has_member(member_id) or len(group.members) < limit

    def _join_new_member(
        self,
        caller: Caller,
        request: JoinGroupRequest,
        version: int,
        group: ClassicGroup,
        reply: JoinReply,
    ) -> None:
        names = [p.name for p in request.protocols]
        if group.state is GroupState.DEAD:
            reply(join_error(ErrorCode.COORDINATOR_NOT_AVAILABLE, ""))
            return
        if not group.supports_protocols(request.protocol_type, names):
            reply(join_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, ""))
            return
        instance_id = request.group_instance_id
        new_member_id = self._unused_member_id(group, instance_id or caller.client_id)
        if instance_id is not None:
            existing = group.static_member_id(instance_id)
            if existing is not None:
                self._replace_static_member(request, version, group, existing, new_member_id, reply)
            else:
                self._add_member(caller, request, group, new_member_id, reply)
        elif version >= REQUIRES_KNOWN_MEMBER_ID_VERSION:
            group.pending_join_members.add(new_member_id)
            self._schedule_session(group, new_member_id, request.session_timeout_ms)
            reply(join_error(ErrorCode.MEMBER_ID_REQUIRED, new_member_id))
        else:
            self._add_member(caller, request, group, new_member_id, reply)

    def _unused_member_id(self, group: ClassicGroup, prefix: str) -> str:
        """A member id no member of ``group`` holds or was offered, loaded ones included."""
        while True:
            member_id = f"{prefix}-{self._new_id()}"
            if not group.has_member(member_id) and member_id not in group.pending_join_members:
                return member_id

    def _join_existing_member(
        self, caller: Caller, request: JoinGroupRequest, group: ClassicGroup, reply: JoinReply
    ) -> None:
        member_id = request.member_id
        names = [p.name for p in request.protocols]
        if group.state is GroupState.DEAD:
            reply(join_error(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id))
            return
        if not group.supports_protocols(request.protocol_type, names):
            reply(join_error(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        if member_id in group.pending_join_members:
            self._add_member(caller, request, group, member_id, reply)
            return
        try:
            group.validate_member(member_id, request.group_instance_id)
        except GroupError as exc:
            response = join_error(exc.code, member_id)
            response.protocol_type = response.protocol_name = None
            reply(response)
            return
        member = group.members[member_id]
        protocols = [(p.name, p.metadata) for p in request.protocols]
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            self._update_member_and_rebalance(request, group, member, reply)
        elif state is GroupState.COMPLETING_REBALANCE:
            if member.protocols == protocols:
                reply(
                    self._join_response(group, member_id, with_members=group.is_leader(member_id))
                )
            else:
                self._update_member_and_rebalance(request, group, member, reply)
        elif state is GroupState.STABLE:
            if group.is_leader(member_id) or member.protocols != protocols:
                self._update_member_and_rebalance(request, group, member, reply)
            else:
                reply(self._join_response(group, member_id, with_members=False))
        else:  # Empty: a member id from an earlier life of the group
            reply(join_error(ErrorCode.UNKNOWN_MEMBER_ID, member_id))

    def _add_member(
        self,
        caller: Caller,
        request: JoinGroupRequest,
        group: ClassicGroup,
        member_id: str,
        reply: JoinReply,
    ) -> None:
        member = Member(
            member_id=member_id,
            group_instance_id=request.group_instance_id,
            client_id=caller.client_id,
            client_host=caller.client_host,
            rebalance_timeout_ms=_rebalance_timeout(request),
            session_timeout_ms=request.session_timeout_ms,
            protocol_type=request.protocol_type,
            protocols=[(p.name, p.metadata) for p in request.protocols],
            is_new=True,
        )
        if (
            group.state is GroupState.PREPARING_REBALANCE
            and group.previous_state is GroupState.EMPTY
        ):
            group.new_member_added = True
        group.add(member, reply)
        self._schedule_session(group, member_id, self.config.new_member_join_timeout_ms)
        self._maybe_prepare_rebalance_or_complete_join(group)

    def _update_member_and_rebalance(
        self, request: JoinGroupRequest, group: ClassicGroup, member: Member, reply: JoinReply
    ) -> None:
        protocols = [(p.name, p.metadata) for p in request.protocols]
        group.update_member(
            member, protocols, _rebalance_timeout(request), request.session_timeout_ms, reply
        )
        self._maybe_prepare_rebalance_or_complete_join(group)

    def _replace_static_member(
        self,
        request: JoinGroupRequest,
        version: int,
        group: ClassicGroup,
        old_id: str,
        new_id: str,
        reply: JoinReply,
    ) -> None:
        """A static member rejoining with no member id (a restart): it takes over its
        instance's place; in a Stable group with unchanged protocols, without a
        rebalance (KIP-345)."""
        instance_id = request.group_instance_id
        assert instance_id is not None
        current_leader = group.leader_id
        member = group.replace_static_member(instance_id, old_id, new_id)
        self._cancel_session(group, old_id)
        self._schedule_session(group, new_id, member.session_timeout_ms)
        saved = (member.protocols, member.rebalance_timeout_ms, member.session_timeout_ms)
        protocols = [(p.name, p.metadata) for p in request.protocols]
        group.update_member(
            member, protocols, _rebalance_timeout(request), request.session_timeout_ms, reply
        )
        if group.state is GroupState.STABLE:
            if group.protocol_name == group.select_protocol():
                try:
                    self._store_group(group, group.assignments())
                except StorageError as exc:
                    group.update_member(member, saved[0], saved[1], saved[2], None)
                    group.replace_static_member(instance_id, new_id, old_id)
                    self._cancel_session(group, new_id)
                    self._schedule_session(group, old_id, saved[2])
                    response = self._join_response(group, "", with_members=False)
                    response.error_code = coordinator_error(exc.code)
                    response.leader = current_leader or ""
                    reply(response)
                    return
                if version >= SKIP_ASSIGNMENT_VERSION:
                    leader = group.is_leader(new_id)
                    response = self._join_response(group, new_id, with_members=leader)
                    response.skip_assignment = leader
                else:
                    response = self._join_response(group, new_id, with_members=False)
                    response.leader = current_leader or ""
                _complete_join(member, response)
                return
            self._maybe_prepare_rebalance_or_complete_join(group)
            return
        if group.state is GroupState.COMPLETING_REBALANCE:
            self._prepare_rebalance(group)
            return
        self._maybe_complete_join_phase(group)

    # -- rebalance -------------------------------------------------------------------------

    def _maybe_prepare_rebalance_or_complete_join(self, group: ClassicGroup) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group)
        else:
            self._maybe_complete_join_phase(group)

    def _prepare_rebalance(self, group: ClassicGroup) -> None:
        if group.state is GroupState.COMPLETING_REBALANCE:
            for member in group.members.values():
                member.assignment = b""
            self._propagate_assignment(group, ErrorCode.REBALANCE_IN_PROGRESS)
        self._remove_sync_expiration(group)
        initial = group.state is GroupState.EMPTY
        group.transition(GroupState.PREPARING_REBALANCE, self.now_ms)
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._schedule_initial_join(group, delay, remaining)
            return
        if group.has_all_members_joined():
            self._complete_join(group)
        else:
            self._schedule_join(group, group.rebalance_timeout_ms())

    def _schedule_initial_join(self, group: ClassicGroup, delay: int, remaining: int) -> None:
        group_id = group.group_id

        def fire() -> None:
            current = self.groups.get(group_id)
            if current is None:
                return
            if current.new_member_added and remaining != 0:
                current.new_member_added = False
                next_delay = min(self.config.initial_rebalance_delay_ms, remaining)
                self._schedule_initial_join(current, next_delay, max(remaining - delay, 0))
            else:
                self._complete_join(current)

        self.timers.schedule(join_key(group_id), self.now_ms + delay, fire)

    def _schedule_join(self, group: ClassicGroup, timeout_ms: int) -> None:
        group_id = group.group_id

        def fire() -> None:
            current = self.groups.get(group_id)
            if current is not None:
                self._complete_join(current)

        self.timers.schedule(join_key(group_id), self.now_ms + timeout_ms, fire)

    def _maybe_complete_join_phase(self, group: ClassicGroup) -> None:
        if (
            group.state is GroupState.PREPARING_REBALANCE
            and group.previous_state is not GroupState.EMPTY
            and group.has_all_members_joined()
        ):
            self._complete_join(group)

    def _complete_join(self, group: ClassicGroup) -> None:
        self.timers.cancel(join_key(group.group_id))
        if group.state is not GroupState.PREPARING_REBALANCE:
            return
        for member in list(group.members.values()):
            if member.awaiting_join is None and member.group_instance_id is None:
                group.remove(member.member_id)
                self._cancel_session(group, member.member_id)
        if not group.maybe_elect_new_joined_leader() and group.members:
            self._schedule_join(group, group.rebalance_timeout_ms())
            return
        group.init_next_generation(self.now_ms, subscribed_topics)
        if group.is_empty:
            try:
                self._store_group(group, {})
            except StorageError as exc:
                log.warning("group %s: storing its empty state failed: %s", group.group_id, exc)
            return
        for member in group.members.values():
            rejoined = member.awaiting_join is not None
            response = self._join_response(
                group, member.member_id, with_members=group.is_leader(member.member_id)
            )
            _complete_join(member, response)
            # Only a member that rejoined gets a fresh session. Kafka renews every
            # member's: a static member that died then stays for as long as each join
            # phase ends within its session timeout. A new member that times out of
            # every join phase just before it ends, and rejoins at once to start the
            # next (which cancels the dead member's pending-sync expiry), then never
            # gets in, and the dead member never leaves.
            key = session_key(group.group_id, member.member_id)
            if rejoined or not self.timers.is_scheduled(key):
                self._schedule_session(group, member.member_id, member.session_timeout_ms)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        self._schedule_pending_sync(group)

    def _schedule_pending_sync(self, group: ClassicGroup) -> None:
        group_id, generation = group.group_id, group.generation_id

        def fire() -> None:
            current = self.groups.get(group_id)
            if current is None or current.generation_id != generation:
                return
            if (
                current.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE)
                and current.pending_sync_members
            ):
                for member_id in list(current.pending_sync_members):
                    current.remove(member_id)
                    self._cancel_session(current, member_id)
                self._prepare_rebalance(current)

        self.timers.schedule(sync_key(group_id), self.now_ms + group.rebalance_timeout_ms(), fire)

    def _remove_sync_expiration(self, group: ClassicGroup) -> None:
        group.pending_sync_members.clear()
        self.timers.cancel(sync_key(group.group_id))

    def _join_response(
        self, group: ClassicGroup, member_id: str, *, with_members: bool
    ) -> JoinGroupResponse:
        return JoinGroupResponse(
            error_code=ErrorCode.NONE,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader_id or "",
            skip_assignment=False,
            member_id=member_id,
            members=group.current_members() if with_members else [],
        )

    # -- sessions --------------------------------------------------------------------------

    def _schedule_session(self, group: ClassicGroup, member_id: str, timeout_ms: int) -> None:
        group_id = group.group_id

        def fire() -> None:
            current = self.groups.get(group_id)
            if current is not None:
                self._expire_session(current, member_id)

        self.timers.schedule(session_key(group_id, member_id), self.now_ms + timeout_ms, fire)

    def _cancel_session(self, group: ClassicGroup, member_id: str) -> None:
        self.timers.cancel(session_key(group.group_id, member_id))

    def _expire_session(self, group: ClassicGroup, member_id: str) -> None:
        if group.state is GroupState.DEAD:
            return
        if member_id in group.pending_join_members:
            group.remove(member_id)
            if group.state is GroupState.PREPARING_REBALANCE and group.has_all_members_joined():
                self._complete_join(group)
            return
        member = group.members.get(member_id)
        if member is None or member.has_satisfied_heartbeat():
            return
        log.info("group %s: member %s's session expired", group.group_id, member_id)
        self._remove_member(group, member)

    def _remove_member(self, group: ClassicGroup, member: Member) -> None:
        _complete_join(member, join_error(ErrorCode.UNKNOWN_MEMBER_ID, ""))
        group.remove(member.member_id)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance_or_complete_join(group)
        elif group.state is GroupState.PREPARING_REBALANCE and group.has_all_members_joined():
            self._complete_join(group)

    # -- SyncGroup -------------------------------------------------------------------------

    def sync(self, request: SyncGroupRequest, now_ms: int, reply: SyncReply) -> None:
        self.advance(now_ms)
        if not request.group_id:
            reply(SyncGroupResponse(error_code=ErrorCode.INVALID_GROUP_ID))
            return
        group = self.groups.get(request.group_id)
        if group is None or group.is_empty:
            reply(SyncGroupResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID))
            return
        error = self._validate_sync(group, request)
        if error is not None:
            reply(SyncGroupResponse(error_code=error))
        elif group.state is GroupState.PREPARING_REBALANCE:
            reply(SyncGroupResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS))
        elif group.state is GroupState.COMPLETING_REBALANCE:
            member = group.members[request.member_id]
            member.awaiting_sync = reply
            self._remove_pending_sync_member(group, request.member_id)
            if group.is_leader(request.member_id):
                self._store_assignment(group, request)
        elif group.state is GroupState.STABLE:
            self._remove_pending_sync_member(group, request.member_id)
            member = group.members[request.member_id]
            reply(
                SyncGroupResponse(
                    error_code=ErrorCode.NONE,
                    protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name,
                    assignment=member.assignment,
                )
            )

    def _validate_sync(self, group: ClassicGroup, request: SyncGroupRequest) -> int | None:
        error = group.generation_error(
            request.member_id, request.group_instance_id, request.generation_id
        )
        if error is not None:
            return error
        if _inconsistent(request.protocol_type, group.protocol_type) or _inconsistent(
            request.protocol_name, group.protocol_name
        ):
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        return None

    def _remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if group.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            if not group.pending_sync_members:
                self.timers.cancel(sync_key(group.group_id))
        else:
            self.timers.cancel(sync_key(group.group_id))

    def _store_assignment(self, group: ClassicGroup, request: SyncGroupRequest) -> None:
        assignment = {a.member_id: a.assignment for a in request.assignments}
        for member_id in group.members:
            assignment.setdefault(member_id, b"")
        try:
            self._store_group(group, assignment)
        except StorageError as exc:
            log.warning("group %s: storing the assignment failed: %s", group.group_id, exc)
            for member in group.members.values():
                member.assignment = b""
            self._propagate_assignment(group, coordinator_error(exc.code))
            self._maybe_prepare_rebalance_or_complete_join(group)
            return
        for member in group.members.values():
            member.assignment = assignment.get(member.member_id, b"")
        self._propagate_assignment(group, ErrorCode.NONE)
        group.transition(GroupState.STABLE, self.now_ms)

    def _propagate_assignment(self, group: ClassicGroup, error: int) -> None:
        ok = error == ErrorCode.NONE
        for member in group.members.values():
            reply = member.awaiting_sync
            if reply is None:
                continue
            member.awaiting_sync = None
            reply(
                SyncGroupResponse(
                    error_code=error,
                    protocol_type=group.protocol_type if ok else None,
                    protocol_name=group.protocol_name if ok else None,
                    assignment=member.assignment,
                )
            )
            self._schedule_session(group, member.member_id, member.session_timeout_ms)

    # -- Heartbeat -------------------------------------------------------------------------

    def heartbeat(self, request: HeartbeatRequest, now_ms: int) -> int:
        """The heartbeat's error code."""
        self.advance(now_ms)
        if not request.group_id:
            return ErrorCode.INVALID_GROUP_ID
        group = self.groups.get(request.group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        error = group.generation_error(
            request.member_id, request.group_instance_id, request.generation_id
        )
        if error is not None:
            return error
        if group.state is GroupState.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        member = group.members[request.member_id]
        self._schedule_session(group, member.member_id, member.session_timeout_ms)
        if group.state is GroupState.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    # -- LeaveGroup ------------------------------------------------------------------------

    def leave(
        self, group_id: str, members: Iterable[MemberIdentity], now_ms: int
    ) -> tuple[int, list[MemberResponse]]:
        """(top-level error, per-member answers) of a LeaveGroup."""
        self.advance(now_ms)
        identities = list(members)
        if not group_id:
            return ErrorCode.INVALID_GROUP_ID, []
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE, [
                _member_response(m, ErrorCode.UNKNOWN_MEMBER_ID) for m in identities
            ]
        if group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        answers: list[MemberResponse] = []
        left = False
        for identity in identities:
            code = self._leave_one(group, identity)
            answers.append(_member_response(identity, code))
            left = left or code == ErrorCode.NONE
        if left:
            if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
                self._maybe_prepare_rebalance_or_complete_join(group)
            elif group.state is GroupState.PREPARING_REBALANCE:
                self._maybe_complete_join_phase(group)
        return ErrorCode.NONE, answers

    def _leave_one(self, group: ClassicGroup, identity: MemberIdentity) -> int:
        member_id, instance_id = identity.member_id, identity.group_instance_id
        if member_id == "":
            existing = group.static_member_id(instance_id) if instance_id is not None else None
            if existing is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            self._remove_current_member(group, existing)
            return ErrorCode.NONE
        if member_id in group.pending_join_members:
            group.remove(member_id)
            self._cancel_session(group, member_id)
            return ErrorCode.NONE
        try:
            group.validate_member(member_id, instance_id)
        except GroupError as exc:
            return exc.code
        self._remove_current_member(group, member_id)
        return ErrorCode.NONE

    def _remove_current_member(self, group: ClassicGroup, member_id: str) -> None:
        """Remove a member that left, answering what it has parked: a static member
        removed by instance id (the admin's member removal) may be awaiting its
        SyncGroup answer, which would otherwise never come (Kafka leaves it to the
        client's request timeout)."""
        member = group.members[member_id]
        self._cancel_session(group, member_id)
        _complete_join(member, join_error(ErrorCode.UNKNOWN_MEMBER_ID, ""))
        _complete_sync(member, ErrorCode.UNKNOWN_MEMBER_ID)
        group.remove(member_id)

    def session_deadline(self, group_id: str, member_id: str) -> int | None:
        """When the member's session ends unless it heartbeats (None: no session runs)."""
        return self.timers.deadline(session_key(group_id, member_id))

    def force_rebalance(self, group_id: str, now_ms: int) -> int:
        """A rebalance on command (the control endpoint): members learn of it from their
        next heartbeat (REBALANCE_IN_PROGRESS) and rejoin. GROUP_ID_NOT_FOUND for no
        such group; an empty group, or one already rebalancing, is left as it is."""
        self.advance(now_ms)
        group = self.groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group)
        return ErrorCode.NONE

    def _forget(self, group: ClassicGroup) -> None:
        group.transition(GroupState.DEAD, self.now_ms)
        for member_id in list(group.members):
            self._cancel_session(group, member_id)
        self.timers.cancel(join_key(group.group_id))
        self.timers.cancel(sync_key(group.group_id))
        del self.groups[group.group_id]
        self.offsets.pop(group.group_id, None)

    def list_groups(
        self, states: Iterable[str] = (), types: Iterable[str] = ()
    ) -> list[ClassicGroup]:
        """The groups, filtered as ListGroups v4/v5 filter them (case-insensitively)."""
        wanted_states = {s.lower() for s in states}
        wanted_types = {t.lower() for t in types}
        if wanted_types and "classic" not in wanted_types:
            return []
        return [
            g
            for g in self.groups.values()
            if g.state is not GroupState.DEAD
            and (not wanted_states or g.state.value.lower() in wanted_states)
        ]


# -- helpers -------------------------------------------------------------------------------


def _rebalance_timeout(request: JoinGroupRequest) -> int:
    """JoinGroup v0 has no rebalance timeout: Kafka uses the session timeout."""
    timeout = request.rebalance_timeout_ms
    return timeout if timeout >= 0 else request.session_timeout_ms


def join_error(code: int, member_id: str) -> JoinGroupResponse:
    return JoinGroupResponse(error_code=code, member_id=member_id, protocol_name=None)


def _complete_join(member: Member, response: JoinGroupResponse) -> None:
    reply = member.awaiting_join
    if reply is not None:
        member.awaiting_join = None
        reply(response)


def _complete_sync(member: Member, error: int) -> None:
    reply = member.awaiting_sync
    if reply is not None:
        member.awaiting_sync = None
        reply(SyncGroupResponse(error_code=error, protocol_type=None, protocol_name=None))


def _inconsistent(requested: str | None, current: str | None) -> bool:
    return requested is not None and requested != current


def _member_response(identity: MemberIdentity, code: int) -> MemberResponse:
    return MemberResponse(
        member_id=identity.member_id, group_instance_id=identity.group_instance_id, error_code=code
    )

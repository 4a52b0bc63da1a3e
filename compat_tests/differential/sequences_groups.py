"""Differential sequences of the classic group protocol: JoinGroup, SyncGroup, Heartbeat,
LeaveGroup, static members; error paths first (see group_helpers.py for the conventions)."""

from __future__ import annotations

from compat_tests.differential.group_helpers import (
    RANGE,
    commit,
    coordinator_ready,
    heartbeat,
    join_new,
    join_request,
    registry,
    stable_member,
    subscription,
    sync,
    wait_state,
)
from compat_tests.differential.runner import Session
from compat_tests.differential.sequences import create_quiet
from millpond.wire.generated.api.consumer_group_describe_request import (
    ConsumerGroupDescribeRequest,
)
from millpond.wire.generated.api.consumer_group_heartbeat_request import (
    ConsumerGroupHeartbeatRequest,
)
from millpond.wire.generated.api.describe_groups_request import DescribeGroupsRequest
from millpond.wire.generated.api.leave_group_request import LeaveGroupRequest, MemberIdentity

SEQUENCES, sequence = registry()


def describe(s: Session, *group_ids: str, version: int = 5, label: str = "describe") -> None:
    s.send(DescribeGroupsRequest(groups=list(group_ids)), version, label)


# --- JoinGroup ------------------------------------------------------------------------------


@sequence
def join_group_errors(s: Session) -> None:
    g = s.group("g")
    coordinator_ready(s, g)
    for version in (0, 5, 9):
        s.send(join_request(""), version, f"empty group id v{version}")
    s.send(join_request(g, session_ms=1000), 9, "session timeout below the minimum")
    s.send(join_request(g, session_ms=3_600_000), 9, "session timeout above the maximum")
    s.send(join_request(g, "nobody"), 9, "unknown member id, no group")
    s.send(join_request(g, "nobody"), 3, "unknown member id, no group v3")
    s.send(join_request(g, protocol_type=""), 9, "empty protocol type")
    s.send(join_request(g, protocols=[]), 9, "no protocols")
    describe(s, g, label="still no group")


@sequence
def join_group_member_id_required(s: Session) -> None:
    g = s.group("g")
    coordinator_ready(s, g)
    joined = join_new(s, g, version=4, protocols=[(RANGE, subscription("t"))])
    member, generation = joined["member_id"], joined["generation_id"]
    describe(s, g, label="completing rebalance")
    sync(s, g, generation, member, {member: b"assigned"}, version=4)
    heartbeat(s, g, generation, member)
    describe(s, g, label="stable")
    # The same member joins again unchanged: the leader's rejoin starts a new generation.
    s.send(join_request(g, member, protocols=[(RANGE, subscription("t"))]), 9, "leader rejoins")
    s.send(join_request(g, "", protocol_type="connect"), 9, "new member, other protocol type")
    s.send(join_request(g, "", protocols=[("roundrobin", b"")]), 9, "new member, other protocol")
    s.send(join_request(g, "bogus"), 9, "unknown member id")
    s.send(join_request(g, member, protocol_type="connect"), 9, "member, other protocol type")


@sequence
def join_group_old_versions(s: Session) -> None:
    g = s.group("g")
    coordinator_ready(s, g)
    # Before v4 a new member gets its id with its first answer.
    first = s.send(join_request(g), 0, "v0 join")
    member, generation = first["member_id"], first["generation_id"]
    sync(s, g, generation, member, {member: b"x"}, version=0)
    heartbeat(s, g, generation, member, version=0)
    s.send(LeaveGroupRequest(group_id=g, member_id=member), 0, "leave v0")
    describe(s, g, version=0, label="empty")
    again = s.send(join_request(g), 3, "v3 join")
    sync(
        s, g, again["generation_id"], again["member_id"], {}, version=3, label="sync, no assignment"
    )
    describe(s, g, version=3, label="stable, empty assignment")


@sequence
def join_group_pending_members(s: Session) -> None:
    """Members between MEMBER_ID_REQUIRED and their second join: not members yet, but
    known (they may leave); a static member rejoining with a member id it never had."""
    g = s.group("g")
    coordinator_ready(s, g)
    # (Not described here: Kafka's DescribeGroups reads the last committed state, which
    # may or may not have the group a MEMBER_ID_REQUIRED answer created yet.)
    pending = s.send(join_request(g), 9, "a: member id required")["member_id"]
    heartbeat(s, g, 0, pending, label="a: heartbeat while pending")
    sync(s, g, 0, pending, label="a: sync while pending")
    leave(s, g, (pending, None), label="a: leaves while pending")
    s.send(join_request(g, pending), 9, "a: joins after leaving")
    s.send(join_request(g, "made-up", instance="i9"), 9, "static member with a made-up id")
    b = join_new(s, g, label="b")["member_id"]
    # b changes its subscription while the group waits for its sync: a new generation.
    s.send(join_request(g, b, protocols=[(RANGE, b"other")]), 9, "b: rejoins changed")
    s.send(join_request(g, b, protocols=[(RANGE, b"other")]), 9, "b: rejoins unchanged")
    describe(s, g, label="b alone")


# --- SyncGroup, Heartbeat -------------------------------------------------------------------


@sequence
def sync_group_errors(s: Session) -> None:
    g = s.group("g")
    coordinator_ready(s, g)
    for version in (0, 5):
        sync(s, "", 1, "m", version=version, label=f"empty group id v{version}")
    sync(s, g, 1, "nobody", label="no such group")
    joined = join_new(s, g)
    member, generation = joined["member_id"], joined["generation_id"]
    sync(s, g, generation, "nobody", label="unknown member")
    sync(s, g, generation + 1, member, label="illegal generation")
    sync(s, g, generation, member, protocol_type="connect", label="other protocol type")
    sync(s, g, generation, member, protocol_name="roundrobin", label="other protocol name")
    sync(s, g, generation, member, protocol_type=None, label="v5 without protocol type")
    sync(s, g, generation, member, protocol_name=None, label="v5 without protocol name")
    sync(s, g, generation, member, {member: b"a", "nobody": b"b"}, label="leader")
    sync(s, g, generation, member, {member: b"ignored"}, label="again, once stable")
    sync(s, g, generation, member, version=3, label="again v3")
    describe(s, g)


@sequence
def heartbeat_errors(s: Session) -> None:
    g = s.group("g")
    coordinator_ready(s, g)
    for version in (0, 4):
        heartbeat(s, "", 1, "m", version=version, label=f"empty group id v{version}")
    heartbeat(s, g, 1, "nobody", label="no such group")
    joined = join_new(s, g)
    member, generation = joined["member_id"], joined["generation_id"]
    heartbeat(s, g, generation, member, label="completing rebalance")
    heartbeat(s, g, generation, "nobody", label="unknown member")
    heartbeat(s, g, generation + 1, member, label="illegal generation")
    heartbeat(s, g, generation, member, instance="i", label="unknown instance id")
    sync(s, g, generation, member, {member: b"a"})
    heartbeat(s, g, generation, member, label="stable")
    heartbeat(s, g, generation - 1, member, version=0, label="illegal generation v0")
    s.send(LeaveGroupRequest(group_id=g, member_id=member), 0, "leave")
    heartbeat(s, g, generation, member, label="after leaving")
    heartbeat(s, g, generation + 1, member, label="after leaving, next generation")


@sequence
def group_rebalance_in_progress(s: Session) -> None:
    """A second member joins a Stable group: the first learns of the rebalance from its
    heartbeat, sync and commit, rejoins, and both get the next generation."""
    g, topic = s.group("g"), s.topic("t")
    coordinator_ready(s, g)
    a, generation = stable_member(s, g, topic, label="a")
    other = s.connection()
    b = other.send(join_request(g), 9, "b: member id required")["member_id"]
    pending = other.begin(join_request(g, b), 9)
    wait_state(s, g, "PreparingRebalance", members=2)
    describe(s, g, label="preparing rebalance")
    heartbeat(s, g, generation, a, label="a: heartbeat")
    sync(s, g, generation, a, {a: b"x"}, label="a: sync, old generation")
    heartbeat(s, g, generation + 1, a, label="a: heartbeat, next generation")
    heartbeat(s, g, generation, b, label="b: heartbeat while joining")
    s.send(join_request(g, "bogus"), 9, "unknown member joins meanwhile")
    rejoined = s.send(join_request(g, a), 9, "a: rejoins")
    other.finish(pending, "b: joined")
    generation = rejoined["generation_id"]
    heartbeat(s, g, generation, b, label="b: heartbeat, completing rebalance")
    sync(s, g, generation - 1, b, label="b: sync, old generation")
    sync(s, g, generation, a, {a: b"for a", b: b"for b"}, label="a: leader's sync")
    sync(other, g, generation, b, label="b: sync")
    describe(s, g, label="stable")
    heartbeat(s, g, generation, a, label="a: heartbeat")
    # b leaves: a is told to rejoin, and rejoining alone completes the next generation.
    other.send(LeaveGroupRequest(group_id=g, members=[MemberIdentity(member_id=b)]), 5, "b leaves")
    heartbeat(s, g, generation, a, label="a: heartbeat after b left")
    s.send(join_request(g, a), 9, "a: rejoins alone")


# --- LeaveGroup -----------------------------------------------------------------------------


def leave(s: Session, group_id: str, *members: tuple[str, str | None], label: str) -> None:
    """LeaveGroup v5 of (member id, group instance id) pairs."""
    identities = [MemberIdentity(member_id=m, group_instance_id=i) for m, i in members]
    s.send(LeaveGroupRequest(group_id=group_id, members=identities), 5, label)


@sequence
def leave_group_errors(s: Session) -> None:
    g = s.group("g")
    coordinator_ready(s, g)
    s.send(LeaveGroupRequest(group_id="", member_id="m"), 0, "empty group id v0")
    leave(s, "", ("m", None), label="empty group id v5")
    s.send(LeaveGroupRequest(group_id=g, member_id="nobody"), 0, "no such group v0")
    s.send(LeaveGroupRequest(group_id=g, member_id="nobody"), 2, "no such group v2")
    leave(s, g, ("nobody", None), ("", "i"), label="no such group v5")
    stable_member(s, g)
    s.send(LeaveGroupRequest(group_id=g, member_id="nobody"), 1, "unknown member v1")
    leave(s, g, label="no members v5")
    leave(s, g, ("nobody", None), label="unknown member v5")
    describe(s, g, label="still stable")


@sequence
def leave_group_batched(s: Session) -> None:
    """One LeaveGroup names a dynamic member, two static members (one by instance id
    alone, one under a member id that is not its own), an unknown member and an unknown
    instance: each is answered on its own, and the members that left are gone."""
    g = s.group("g")
    coordinator_ready(s, g)
    a = join_new(s, g, label="a")["member_id"]
    other = s.connection()
    pending_b = other.begin(join_request(g, instance="ib"), 9)
    wait_state(s, g, "PreparingRebalance", members=2)
    third = s.connection()
    pending_c = third.begin(join_request(g, instance="ic"), 9)
    wait_state(s, g, "PreparingRebalance", members=3)
    # a's rejoin completes all three joins; the static members' answers are recorded
    # first, so their (new) member ids are numbered before the leader's list names them.
    pending_a = s.begin(join_request(g, a), 9)
    b = other.finish(pending_b, "b: joined")["member_id"]
    c = third.finish(pending_c, "c: joined")["member_id"]
    generation = s.finish(pending_a, "a: rejoined")["generation_id"]
    sync(s, g, generation, a, {a: b"1", b: b"2", c: b"3"}, label="a: leader's sync")
    describe(s, g, label="three members")
    leave(
        s,
        g,
        ("nobody", None),
        ("", "ib"),
        (a, "ic"),
        ("", "unknown-instance"),
        (a, None),
        label="a mix",
    )
    describe(s, g, label="c remains")
    leave(s, g, (c, "ic"), (c, "ic"), label="c twice")
    describe(s, g, label="empty")


# --- static members ---------------------------------------------------------------------


@sequence
def static_member_fenced(s: Session) -> None:
    """A static member restarts (joins again under its instance id, with no member id): it
    takes its old place under a new member id without a rebalance, and the old member id
    is fenced wherever it shows up."""
    g, topic = s.group("g"), s.topic("t")
    create_quiet(s, "t")
    coordinator_ready(s, g)
    protocols = [(RANGE, subscription(topic))]
    first = s.send(join_request(g, instance="i1", protocols=protocols), 9, "static join")
    old, generation = first["member_id"], first["generation_id"]
    sync(s, g, generation, old, {old: b"kept"}, instance="i1")
    restarted = s.send(join_request(g, instance="i1", protocols=protocols), 9, "restart v9")
    new = restarted["member_id"]
    describe(s, g, label="same generation, new member id")
    heartbeat(s, g, generation, old, instance="i1", label="old id: heartbeat")
    heartbeat(s, g, generation, old, label="old id without instance: heartbeat")
    sync(s, g, generation, old, instance="i1", label="old id: sync")
    s.send(join_request(g, old, instance="i1", protocols=protocols), 9, "old id: join")
    commit(
        s, g, {topic: {0: 1}}, generation=generation, member_id=old, instance="i1",
        label="old id: commit",
    )  # fmt: skip
    leave(s, g, (old, "i1"), label="old id: leave")
    heartbeat(s, g, generation, new, instance="i1", label="new id: heartbeat")
    sync(s, g, generation, new, instance="i1", label="new id: sync")
    restarted_v5 = s.send(join_request(g, instance="i1", protocols=protocols), 5, "restart v5")
    heartbeat(s, g, generation, new, instance="i1", label="the id before: heartbeat")
    heartbeat(
        s,
        g,
        generation,
        restarted_v5["member_id"],
        instance="i1",
        label="the v5 restart's id: heartbeat",
    )
    s.send(
        join_request(g, instance="i1", protocols=[(RANGE, subscription(topic, "other"))]),
        9,
        "restart with another subscription",
    )
    describe(s, g, label="rebalanced")
    leave(s, g, ("", "i1"), label="leave by instance id")
    describe(s, g, label="empty")


# --- the consumer group protocol (KIP-848), with the brokers' protocols classic only ------


@sequence
def consumer_protocol_refused(s: Session) -> None:
    """With ``group.coordinator.rebalance.protocols=classic`` (the session brokers'), the
    consumer protocol's APIs are advertised but refused: what makes a librdkafka consumer
    with ``group.protocol=consumer`` fail instead of waiting."""
    g = s.group("g")
    coordinator_ready(s, g)
    join = ConsumerGroupHeartbeatRequest(
        group_id=g,
        member_id="m" * 22,
        member_epoch=0,
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=[s.topic("t")],
        topic_partitions=[],
    )
    for version in (0, 1):
        s.send(join, version, f"first heartbeat v{version}")
    s.send(ConsumerGroupHeartbeatRequest(group_id=""), 1, "empty group id")
    s.send(
        ConsumerGroupHeartbeatRequest(group_id=g, member_id="m" * 22, member_epoch=-1),
        1,
        "leave",
    )
    for version in (0, 1):
        describe_them = ConsumerGroupDescribeRequest(group_ids=[g, s.group("other"), ""])
        s.send(describe_them, version, f"describe v{version}")
    describe(s, g, label="no group was made")


ALL = sorted(SEQUENCES.items())

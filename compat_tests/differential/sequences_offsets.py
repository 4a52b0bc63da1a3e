"""Differential sequences of committed offsets and group administration: OffsetCommit,
OffsetFetch, DescribeGroups, ListGroups, DeleteGroups, OffsetDelete; error paths first (see
group_helpers.py for the conventions)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from compat_tests.differential.group_helpers import (
    commit,
    coordinator_ready,
    join_new,
    join_request,
    registry,
    stable_member,
    sync,
)
from compat_tests.differential.runner import Session
from compat_tests.differential.sequences import UNKNOWN_ID, create_quiet
from millpond.wire.generated.api.delete_groups_request import DeleteGroupsRequest
from millpond.wire.generated.api.describe_groups_request import DescribeGroupsRequest
from millpond.wire.generated.api.leave_group_request import LeaveGroupRequest, MemberIdentity
from millpond.wire.generated.api.list_groups_request import ListGroupsRequest
from millpond.wire.generated.api.offset_commit_request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from millpond.wire.generated.api.offset_delete_request import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from millpond.wire.generated.api.offset_fetch_request import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)

SEQUENCES, sequence = registry()


def fetch_v7(
    s: Session, group_id: str, topics: dict[str, list[int]] | None, label: str, version: int = 7
) -> Any:
    """OffsetFetch (one group, before v8) of ``topics`` (full names), or every topic."""
    wanted = None
    if topics is not None:
        wanted = [OffsetFetchRequestTopic(name=t, partition_indexes=ps) for t, ps in topics.items()]
    return s.send(OffsetFetchRequest(group_id=group_id, topics=wanted), version, label)


def fetch_group(group_id: str, topics: dict[str, list[int]] | None) -> OffsetFetchRequestGroup:
    wanted = None
    if topics is not None:
        wanted = [
            OffsetFetchRequestTopics(name=t, partition_indexes=ps) for t, ps in topics.items()
        ]
    return OffsetFetchRequestGroup(group_id=group_id, topics=wanted)


def describe(s: Session, *group_ids: str, version: int = 5, label: str = "describe") -> None:
    s.send(DescribeGroupsRequest(groups=list(group_ids)), version, label)


def delete_offsets(s: Session, group_id: str, topics: dict[str, list[int]], label: str) -> None:
    request = OffsetDeleteRequest(
        group_id=group_id,
        topics=[
            OffsetDeleteRequestTopic(
                name=t, partitions=[OffsetDeleteRequestPartition(partition_index=p) for p in ps]
            )
            for t, ps in topics.items()
        ],
    )
    s.send(request, 0, label)


# --- OffsetCommit ---------------------------------------------------------------------------


@sequence
def offset_commit_errors(s: Session) -> None:
    g, t = s.group("g"), s.topic("t")
    create_quiet(s, "t", 2)
    coordinator_ready(s, g)
    commit(s, g, {s.topic("nope"): {0: 1}, t: {7: 1}}, label="unknown topic and partition")
    describe(s, g, label="no group: nothing was committed")
    commit(s, g, {t: {0: 5, 1: 6}}, metadata="x" * 4097, label="metadata too large")
    commit(s, g, {t: {0: 5}, s.topic("nope"): {0: 1}}, metadata="m", label="simple commit")
    describe(s, g, label="a simple group")
    fetch_v7(s, g, {t: [0, 1]}, "committed")
    for version in (2, 5, 8):
        commit(s, g, {t: {1: 7}}, version=version, label=f"simple commit v{version}")
    fetch_v7(s, g, None, "every offset v7")


@sequence
def offset_commit_generations(s: Session) -> None:
    g, t = s.group("g"), s.topic("t")
    create_quiet(s, "t", 2)
    coordinator_ready(s, g)
    for version in (2, 8, 9):
        commit(
            s, s.group("none"), {t: {0: 1}}, generation=1, member_id="m", version=version,
            label=f"generation 1 to no group v{version}",
        )  # fmt: skip
    member, generation = stable_member(s, g, t)
    commit(s, g, {t: {0: 1}}, label="simple commit to a group with members")
    commit(s, g, {t: {0: 1}}, generation=generation, member_id="nobody", label="unknown member")
    commit(s, g, {t: {0: 1}}, generation=generation + 1, member_id=member, label="illegal gen")
    commit(s, g, {t: {0: 1}}, generation=-1, member_id=member, label="member, no generation")
    commit(s, g, {t: {0: 2}}, generation=generation, member_id=member, label="member's commit")
    commit(s, g, {t: {1: 3}}, generation=generation, member_id=member, version=2, label="v2")
    fetch_v7(s, g, {t: [0, 1]}, "committed")
    # The member rejoins: in CompletingRebalance its commits wait for the assignment.
    rejoined = s.send(join_request(g, member), 9, "rejoin")
    commit(
        s, g, {t: {0: 4}}, generation=rejoined["generation_id"], member_id=member,
        label="completing rebalance",
    )  # fmt: skip
    commit(s, g, {t: {0: 4}}, generation=generation, member_id=member, label="old generation")


# --- OffsetFetch ----------------------------------------------------------------------------


@sequence
def offset_fetch_paths(s: Session) -> None:
    g, g2, t, u = s.group("g"), s.group("g2"), s.topic("t"), s.topic("u")
    create_quiet(s, "t", 3)
    create_quiet(s, "u", 1)
    coordinator_ready(s, g)
    coordinator_ready(s, g2)
    nope = s.topic("nope")
    for version in (1, 5, 7):
        fetch_v7(s, g, {t: [0]}, f"no group v{version}", version)
    fetch_v7(s, g, None, "no group, every offset")
    commit(s, g, {t: {0: 10, 2: 12}, u: {0: 20}}, metadata="meta", label="commit to g")
    commit(s, g2, {u: {0: 30}}, label="commit to g2")
    fetch_v7(s, g, {t: [0, 1, 2, 9], nope: [0]}, "known, uncommitted and unknown")
    fetch_v7(s, g, None, "every offset v2", 2)
    fetch_v7(s, g, None, "every offset v7")
    for version in (8, 9):
        request = OffsetFetchRequest(
            groups=[
                fetch_group(g, {t: [0, 1], nope: [0]}),
                fetch_group(g2, None),
                fetch_group(s.group("none"), None),
                fetch_group(s.group("none2"), {u: [0]}),
            ],
            require_stable=True,
        )
        s.send(request, version, f"batched groups v{version}")
    topic_id = s.wait_for_topic(t).topic_id
    request = OffsetFetchRequest(
        groups=[
            OffsetFetchRequestGroup(
                group_id=g,
                topics=[
                    OffsetFetchRequestTopics(topic_id=topic_id, partition_indexes=[0, 1]),
                    OffsetFetchRequestTopics(topic_id=UNKNOWN_ID, partition_indexes=[0]),
                ],
            ),
            fetch_group(g2, None),
        ]
    )
    s.send(request, 10, "topic ids v10")


# --- DescribeGroups, ListGroups --------------------------------------------------------------


@sequence
def describe_groups_states(s: Session) -> None:
    g_simple, g_stable, g_joining = s.group("simple"), s.group("stable"), s.group("joining")
    t = s.topic("t")
    create_quiet(s, "t", 1)
    for g in (g_simple, g_stable, g_joining):
        coordinator_ready(s, g)
    nope = s.group("nope")
    for version in (0, 3, 5, 6):
        s.send(
            DescribeGroupsRequest(groups=[nope, "", nope], include_authorized_operations=True)
            if version >= 3
            else DescribeGroupsRequest(groups=[nope, "", nope]),
            version,
            f"unknown groups v{version}",
        )
    commit(s, g_simple, {t: {0: 1}}, label="simple group")
    stable_member(s, g_stable, t, label="stable")
    # A static member's first join completes at once: the group waits for its sync.
    s.send(join_request(g_joining, instance="i1"), 9, "joining: a static member")
    groups = [g_simple, g_stable, g_joining, nope]
    for version in (0, 3, 4, 5, 6):
        s.send(
            DescribeGroupsRequest(groups=groups, include_authorized_operations=version >= 3),
            version,
            f"each state v{version}",
        )


def list_groups(
    s: Session, version: int, label: str, states: Sequence[str] = (), types: Sequence[str] = ()
) -> None:
    """ListGroups, its answer kept to this sequence's groups (both brokers coordinate the
    groups of every other sequence too) and sorted by id (Kafka lists them from a hash map)."""
    request = ListGroupsRequest(states_filter=list(states), types_filter=list(types))
    data = s.request(request, version).to_data()
    data["groups"] = sorted(
        (g for g in data["groups"] if g["group_id"].startswith(s.namespace)),
        key=lambda g: g["group_id"],
    )
    s.record(label, "ListGroups", version, data)


@sequence
def list_groups_filters(s: Session) -> None:
    t = s.topic("t")
    create_quiet(s, "t", 1)
    g_simple, g_stable, g_joining, g_left = (
        s.group(n) for n in ("simple", "stable", "joining", "left")
    )
    for g in (g_simple, g_stable, g_joining, g_left):
        coordinator_ready(s, g)
    commit(s, g_simple, {t: {0: 1}}, label="simple group")
    stable_member(s, g_stable, t, label="stable")
    join_new(s, g_joining, protocol_type="connect", label="joining")
    left = join_new(s, g_left, label="left")["member_id"]
    s.send(join_request(g_left, left, protocol_type="consumer"), 9, "left: rejoin")
    s.send(LeaveGroupRequest(group_id=g_left, member_id=left), 0, "left: leaves")
    for version in (0, 3, 4, 5):
        list_groups(s, version, f"every group v{version}")
    list_groups(s, 4, "stable", states=["Stable"])
    list_groups(s, 4, "empty or completing", states=[" empty ", "COMPLETINGREBALANCE"])
    list_groups(s, 4, "unknown state", states=["bogus"])
    list_groups(s, 5, "classic", types=["classic"])
    list_groups(s, 5, "CLASSIC and stable", types=["CLASSIC"], states=["stable"])
    list_groups(s, 5, "consumer", types=["consumer"])
    list_groups(s, 5, "unknown type", types=["bogus"])
    list_groups(s, 5, "classic with spaces", types=[" classic"])


# --- DeleteGroups, OffsetDelete -------------------------------------------------------------


@sequence
def delete_groups_paths(s: Session) -> None:
    t = s.topic("t")
    create_quiet(s, "t", 1)
    g_simple, g_stable, nope = s.group("simple"), s.group("stable"), s.group("nope")
    for g in (g_simple, g_stable, nope):
        coordinator_ready(s, g)
    for version in (0, 2, 3):
        s.send(DeleteGroupsRequest(groups_names=[nope, ""]), version, f"unknown v{version}")
    commit(s, g_simple, {t: {0: 1}}, label="simple group")
    stable_member(s, g_stable, t, label="stable")
    s.send(
        DeleteGroupsRequest(groups_names=[g_stable, g_simple, nope, g_simple]), 3, "delete three"
    )
    describe(s, g_simple, g_stable, label="simple gone, stable stays")
    fetch_v7(s, g_simple, {t: [0]}, "offsets gone")
    s.send(DeleteGroupsRequest(groups_names=[g_simple]), 1, "delete again")
    commit(s, g_simple, {t: {0: 2}}, label="a commit makes it again")
    describe(s, g_simple, label="simple again")


@sequence
def offset_delete_paths(s: Session) -> None:
    t, u, nope = s.topic("t"), s.topic("u"), s.topic("nope")
    create_quiet(s, "t", 2)
    create_quiet(s, "u", 1)
    g_simple, g_consumer, g_connect = s.group("simple"), s.group("consumer"), s.group("connect")
    for g in (g_simple, g_consumer, g_connect):
        coordinator_ready(s, g)
    delete_offsets(s, "", {t: [0]}, "empty group id")
    delete_offsets(s, s.group("none"), {t: [0], nope: [0]}, "no such group")
    commit(s, g_simple, {t: {0: 1, 1: 2}, u: {0: 3}}, label="simple commits")
    delete_offsets(s, g_simple, {t: [0, 5], nope: [0, 1], u: [0]}, "partitions and topics")
    delete_offsets(s, g_simple, {nope: [0]}, "only an unknown topic")
    fetch_v7(s, g_simple, None, "what is left")
    member, generation = stable_member(s, g_consumer, t, label="consumer")
    commit(s, g_consumer, {t: {0: 1}, u: {0: 2}}, generation=generation, member_id=member)
    delete_offsets(s, g_consumer, {t: [0], u: [0], nope: [0]}, "subscribed and not")
    fetch_v7(s, g_consumer, None, "consumer: what is left")
    joined = join_new(s, g_connect, protocol_type="connect", label="connect")
    sync(s, g_connect, joined["generation_id"], joined["member_id"], protocol_type="connect")
    delete_offsets(s, g_connect, {u: [0]}, "a non-consumer group with members")


@sequence
def offset_paths_edge_cases(s: Session) -> None:
    """Topic ids in OffsetCommit v10, OffsetFetch with a member (v9) of a classic group,
    ListGroups for "Dead", OffsetDelete and DeleteGroups of a consumer group its last
    member left."""
    g, t = s.group("g"), s.topic("t")
    topic_id = create_quiet(s, "t", 2).topic_id
    coordinator_ready(s, g)
    member, generation = stable_member(s, g, t)
    request = OffsetCommitRequest(
        group_id=g,
        generation_id_or_member_epoch=generation,
        member_id=member,
        topics=[
            OffsetCommitRequestTopic(
                topic_id=topic_id,
                partitions=[
                    OffsetCommitRequestPartition(partition_index=0, committed_offset=3),
                    OffsetCommitRequestPartition(partition_index=9, committed_offset=3),
                ],
            ),
            OffsetCommitRequestTopic(
                topic_id=UNKNOWN_ID,
                partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=3)],
            ),
        ],
    )
    s.send(request, 10, "commit by topic id v10")
    for member_id, epoch, label in (
        (member, generation, "the member"),
        (member, 99, "the member, another epoch"),
        ("nobody", generation, "an unknown member"),
    ):
        request_group = OffsetFetchRequestGroup(
            group_id=g,
            member_id=member_id,
            member_epoch=epoch,
            topics=[OffsetFetchRequestTopics(name=t, partition_indexes=[0])],
        )
        s.send(OffsetFetchRequest(groups=[request_group]), 9, f"fetch as {label}")
    list_groups(s, 4, "dead", states=["Dead"])
    s.send(LeaveGroupRequest(group_id=g, members=[MemberIdentity(member_id=member)]), 5, "leave")
    describe(s, g, label="empty consumer group")
    delete_offsets(s, g, {t: [0, 1]}, "offsets of an empty consumer group")
    s.send(DeleteGroupsRequest(groups_names=[g]), 3, "delete the empty group")
    describe(s, g, label="gone")


@sequence
def offset_commit_empty_group_id(s: Session) -> None:
    """Kafka takes "" as a group id for commits outside group management (and fetches,
    describes and deletes it like any group). The sequence deletes the group again: it
    is the one group id no namespace covers, and other sequences describe it as Dead."""
    t = s.topic("t")
    create_quiet(s, "t", 1)
    coordinator_ready(s, "")
    commit(s, "", {t: {0: 1}}, label="simple commit to group ''")
    fetch_v7(s, "", {t: [0]}, "fetch")
    describe(s, "", label="describe")
    s.send(DeleteGroupsRequest(groups_names=[""]), 3, "delete")


ALL = sorted(SEQUENCES.items())

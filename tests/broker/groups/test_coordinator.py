"""The classic group protocol, step by step, on a manual clock."""

from __future__ import annotations

from millpond.broker.groups import placement, records
from millpond.broker.groups.classic import GroupState
from millpond.wire.errors import ErrorCode

from .helpers import GROUP, Client, Harness


def _stable_pair(h: Harness) -> tuple[Client, Client]:
    """Two members through the KIP-394 round trip, a join phase and a sync."""
    a, b = Client(h, "a"), Client(h, "b")
    for c in (a, b):
        c.join()
        assert c.last_join.error_code == ErrorCode.MEMBER_ID_REQUIRED and c.member_id
        c.join()  # with the member id it was given
    # The initial rebalance delay, extended once because b joined during it.
    h.tick(200)
    assert a.last_join.error_code == b.last_join.error_code == ErrorCode.NONE
    leader = a if a.last_join.leader == a.member_id else b
    assert sorted(m.member_id for m in leader.last_join.members) == sorted(
        [a.member_id, b.member_id]
    )
    follower = b if leader is a else a
    assert follower.last_join.members == []
    follower.sync()
    assert follower.synced == []  # parked until the leader's assignment arrives
    leader.sync({a.member_id: b"A", b.member_id: b"B"})
    assert [r.assignment for r in a.synced] == [b"A"] and [r.assignment for r in b.synced] == [b"B"]
    assert h.coordinator.groups[GROUP].state is GroupState.STABLE
    return a, b


def test_two_members_join_sync_and_heartbeat() -> None:
    h = Harness()
    a, b = _stable_pair(h)
    assert a.generation == b.generation == 1
    assert a.heartbeat() == b.heartbeat() == ErrorCode.NONE
    group_records = [r for r in h.log.records if r[1] == records.group_key(GROUP)]
    assert group_records, "the assignment is stored in __consumer_offsets"
    decoded = records.decode(group_records[-1][1], group_records[-1][2])
    assert isinstance(decoded, records.GroupRecord) and decoded.value is not None
    assert {m.member_id: m.assignment for m in decoded.value.members} == {
        a.member_id: b"A",
        b.member_id: b"B",
    }
    assert all(p == placement.partition_for(GROUP, 50) for p, _, _ in h.log.records)


def test_a_new_member_triggers_a_rebalance_everyone_rejoins() -> None:
    h = Harness()
    a, b = _stable_pair(h)
    c = Client(h, "c")
    c.join()
    c.join()
    assert h.coordinator.groups[GROUP].state is GroupState.PREPARING_REBALANCE
    assert a.heartbeat() == ErrorCode.REBALANCE_IN_PROGRESS
    a.join()
    assert len(c.joined) == 1  # waits for b
    b.join()
    assert [x.last_join.generation_id for x in (a, b, c)] == [2, 2, 2]
    assert len({x.last_join.leader for x in (a, b, c)}) == 1


def test_a_silent_member_is_removed_after_its_session_timeout() -> None:
    h = Harness()
    a, b = _stable_pair(h)
    h.tick(6_000)
    assert a.heartbeat() == ErrorCode.NONE  # b stays silent
    h.tick(5_000)  # b's 10 s session is over
    group = h.coordinator.groups[GROUP]
    assert group.state is GroupState.PREPARING_REBALANCE and b.member_id not in group.members
    a.join()
    assert a.last_join.error_code == ErrorCode.NONE and a.last_join.generation_id == 2
    assert b.heartbeat() == ErrorCode.UNKNOWN_MEMBER_ID


def test_leave_rebalances_and_the_last_leave_empties_the_group() -> None:
    h = Harness()
    a, b = _stable_pair(h)
    assert b.leave() == ErrorCode.NONE
    a.join()
    a.sync({a.member_id: b"all"})
    assert [r.assignment for r in a.synced][-1] == b"all"
    assert a.leave() == ErrorCode.NONE
    assert h.coordinator.groups[GROUP].state is GroupState.EMPTY


def test_stale_generation_and_unknown_member_are_refused() -> None:
    h = Harness()
    a, _ = _stable_pair(h)
    a.generation = 0
    assert a.heartbeat() == ErrorCode.ILLEGAL_GENERATION
    stranger = Client(h, "x", member_id="x-nobody", generation=1)
    assert stranger.heartbeat() == ErrorCode.UNKNOWN_MEMBER_ID
    stranger.join()
    assert stranger.last_join.error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_restarted_static_member_takes_its_place_without_a_rebalance() -> None:
    h = Harness()
    a, b = Client(h, "a", instance_id="i-a"), Client(h, "b", instance_id="i-b")
    a.join()
    b.join()  # static members get their id at once: no MEMBER_ID_REQUIRED
    h.tick(200)
    leader, follower = (a, b) if a.last_join.leader == a.member_id else (b, a)
    leader.sync({a.member_id: b"A", b.member_id: b"B"})
    follower.sync()
    generation = h.coordinator.groups[GROUP].generation_id
    old_id = follower.member_id
    restarted = Client(h, "b2", instance_id=follower.instance_id)
    restarted.join()
    assert restarted.last_join.error_code == ErrorCode.NONE
    assert restarted.member_id != old_id
    assert h.coordinator.groups[GROUP].state is GroupState.STABLE
    assert h.coordinator.groups[GROUP].generation_id == generation
    restarted.generation = generation
    restarted.sync()
    assert restarted.synced[-1].assignment == follower.synced[-1].assignment
    # The old incarnation is fenced.
    assert follower.heartbeat() == ErrorCode.FENCED_INSTANCE_ID


def test_group_max_size() -> None:
    h = Harness(max_size=1)
    a = Client(h, "a")
    a.join()
    a.join()
    b = Client(h, "b")
    b.join()
    b.join()
    assert b.last_join.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED


def test_invalid_session_timeout() -> None:
    h = Harness()
    a = Client(h, "a", session_ms=1000)
    a.join()
    assert a.last_join.error_code == ErrorCode.INVALID_SESSION_TIMEOUT


def test_offsets_commit_fetch_and_survive_a_replay() -> None:
    from millpond.broker.groups.coordinator import OffsetToCommit

    h = Harness()
    a, b = _stable_pair(h)
    error, codes = h.coordinator.commit_offsets(
        GROUP, a.generation, a.member_id, None, -1,
        [OffsetToCommit("t", 0, 42, 3, "meta"), OffsetToCommit("t", 1, 7, -1, None)],
        9, h.now,
    )  # fmt: skip
    assert (error, codes) == (ErrorCode.NONE, [ErrorCode.NONE, ErrorCode.NONE])
    stale, _ = h.coordinator.commit_offsets(GROUP, 0, a.member_id, None, -1, [], 9, h.now)
    assert stale == ErrorCode.ILLEGAL_GENERATION
    replayed = Harness()
    for _, key, value in h.log.records:
        record = records.decode(key, value)
        assert record is not None
        replayed.coordinator.replay(record)
    committed = replayed.coordinator.committed(GROUP)
    assert {k: (v.offset, v.leader_epoch, v.metadata) for k, v in committed.items()} == {
        ("t", 0): (42, 3, "meta"),
        ("t", 1): (7, -1, ""),
    }
    assert replayed.coordinator.groups[GROUP].state is GroupState.STABLE
    assert sorted(replayed.coordinator.groups[GROUP].members) == sorted([a.member_id, b.member_id])


def test_a_coordinator_that_loaded_a_group_gives_a_new_member_an_id_no_member_holds() -> None:
    """A group outlives its coordinator: the broker that loads it next starts its own id
    sequence, and a client rejoining without its id (as kafkajs does after the move) must
    not be handed the id of a loaded member, which would count that member's protocols
    twice and leave the rebalance no protocol to choose."""
    h = Harness()
    a, b = _stable_pair(h)
    loaded = Harness()
    loaded.coordinator.now_ms = loaded.now  # loaded members' sessions run from now
    for _, key, value in h.log.records:
        record = records.decode(key, value)
        assert record is not None
        loaded.coordinator.replay(record)
    again = Client(loaded, "a")  # the same client id, so the same id prefix as a's
    again.join()
    assert again.last_join.error_code == ErrorCode.MEMBER_ID_REQUIRED
    assert again.member_id not in (a.member_id, b.member_id)
    again.join()
    for old in (a, b):
        old.h = loaded
        old.join()
    # Every member has rejoined: the rebalance completes at once.
    assert [c.last_join.error_code for c in (again, a, b)] == [ErrorCode.NONE] * 3
    members = loaded.coordinator.groups[GROUP].members
    assert sorted(members) == sorted([again.member_id, a.member_id, b.member_id])


def test_simple_commits_make_an_empty_group_that_can_be_deleted() -> None:
    from millpond.broker.groups.coordinator import OffsetToCommit

    h = Harness()
    error, _ = h.coordinator.commit_offsets(
        "simple", -1, "", None, -1, [OffsetToCommit("t", 0, 5, -1, "")], 9, h.now
    )
    assert error == ErrorCode.NONE
    assert h.coordinator.groups["simple"].state is GroupState.EMPTY
    assert h.coordinator.delete_group("simple", h.now) == ErrorCode.NONE
    assert "simple" not in h.coordinator.groups
    assert h.coordinator.delete_group("simple", h.now) == ErrorCode.GROUP_ID_NOT_FOUND
    assert h.log.records[-1][2] is None  # the group's tombstone


def test_offsets_expire_after_the_group_is_empty_for_the_retention_time() -> None:
    from millpond.broker.groups.coordinator import OffsetToCommit

    h = Harness(offsets_retention_ms=60_000)
    a, b = _stable_pair(h)
    error, _ = h.coordinator.commit_offsets(
        GROUP, a.generation, a.member_id, None, -1, [OffsetToCommit("t", 0, 9, -1, "")], 9, h.now
    )
    assert error == ErrorCode.NONE
    for _ in range(24):  # two minutes: while members remain, the offset does not age
        h.tick(5_000)
        assert a.heartbeat() == b.heartbeat() == ErrorCode.NONE
    assert h.coordinator.expire_offsets(h.now) == 0
    assert a.leave() == b.leave() == ErrorCode.NONE  # the group is Empty from now
    assert h.coordinator.expire_offsets(h.now) == 0
    h.tick(59_000)
    assert h.coordinator.expire_offsets(h.now) == 0
    h.tick(1_000)
    assert h.coordinator.expire_offsets(h.now) == 1
    assert GROUP not in h.coordinator.groups  # empty and without offsets: deleted
    tombstones = [(k, v) for _, k, v in h.log.records[-2:]]
    assert tombstones == [
        (records.offset_key(GROUP, "t", 0), None),
        (records.group_key(GROUP), None),
    ]


def test_a_simple_groups_offsets_expire_from_their_commit_or_their_own_expiry() -> None:
    from millpond.broker.groups.coordinator import OffsetToCommit

    h = Harness(offsets_retention_ms=60_000)
    commit = h.coordinator.commit_offsets
    assert commit("s", -1, "", None, -1, [OffsetToCommit("t", 0, 1, -1, "")], 9, h.now)[0] == 0
    assert commit("s", -1, "", None, 5_000, [OffsetToCommit("t", 1, 1, -1, "")], 2, h.now)[0] == 0
    h.tick(5_000)
    assert h.coordinator.expire_offsets(h.now) == 1  # the v2 commit's own retention
    assert set(h.coordinator.committed("s")) == {("t", 0)}
    h.tick(55_000)
    assert h.coordinator.expire_offsets(h.now) == 1
    assert "s" not in h.coordinator.groups

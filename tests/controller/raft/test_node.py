"""The Raft core's rules one by one, on a loss-free network that delivers in order.

The simulation covers the schedules; these pin the rules that must match Kafka's
KRaft: who grants which vote, what is persisted before an answer leaves, how a diverging
follower is cut back, when a leader steps down, how a lagging follower gets a snapshot,
which voter changes the leader refuses, and how voters announce their listeners.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from functools import partial

import pytest

from millpond.controller.raft.config import RaftConfig
from millpond.controller.raft.keys import Endpoint, OffsetAndEpoch, ReplicaKey, Voter, VoterSet
from millpond.controller.raft.log import ElectionState
from millpond.controller.raft.messages import (
    AddVoterRequest,
    AddVoterResponse,
    FetchRequest,
    FetchResponse,
    Message,
    RemoveVoterRequest,
    RemoveVoterResponse,
    UpdateVoterRequest,
    UpdateVoterResponse,
    VoteRequest,
    VoteResponse,
)
from millpond.controller.raft.node import KRaftUpgradeError, NotLeaderError, RaftNode, Role
from millpond.wire.errors import ErrorCode
from tests.controller.raft.simlog import SimLog, SimStore

CONFIG = RaftConfig(
    cluster_id="c",
    election_timeout_ms=100,
    fetch_timeout_ms=200,
    request_timeout_ms=200,
    retry_backoff_ms=5,
    fetch_max_wait_ms=50,
    fetch_snapshot_max_bytes=16,
)


def key(node_id: int) -> ReplicaKey:
    return ReplicaKey(node_id, bytes([node_id + 1]) * 16)


class Cluster:
    """Nodes that hand each other every message at once, in order."""

    def __init__(
        self,
        voters: Iterable[int],
        nodes: Iterable[int] | None = None,
        config: RaftConfig = CONFIG,
        *,
        static: bool = False,
    ) -> None:
        """``static``: voters named by id alone (controller.quorum.voters)."""
        self.config = config
        voter_ids = list(voters)
        self.voters = (
            VoterSet.of_ids(voter_ids) if static else VoterSet(Voter(key(i)) for i in voter_ids)
        )
        self.now = 0
        self.contents: dict[object, int] = {}
        self.logs: dict[int, SimLog] = {}
        self.stores: dict[int, SimStore] = {}
        self.writes: list[tuple[int, ElectionState]] = []
        self.nodes: dict[int, RaftNode] = {}
        self.down: set[int] = set()
        self.replies: list[Message] = []
        for node_id in nodes if nodes is not None else voter_ids:
            self.logs[node_id] = SimLog(self.content_id)
            self.stores[node_id] = SimStore(partial(self.record_write, node_id))
            self.start(node_id)

    def record_write(self, node_id: int, state: ElectionState) -> None:
        self.writes.append((node_id, state))

    def content_id(self, entry: object) -> int:
        return self.contents.setdefault(entry, len(self.contents))

    def start(self, node_id: int) -> None:
        self.down.discard(node_id)
        self.nodes[node_id] = RaftNode(
            key(node_id),
            self.config,
            self.logs[node_id],
            self.stores[node_id],
            random.Random(node_id),
            self.now,
            bootstrap_voters=self.voters,
            bootstrap_servers=sorted(self.nodes.keys() | {0, 1, 2}),
        )

    def pump(self, *, until_ms: int = 0, step_ms: int = 5) -> None:
        """Deliver everything, advancing time in steps until ``until_ms`` has passed."""
        end = self.now + until_ms
        while True:
            self._drain()
            if self.now >= end:
                return
            self.now += step_ms

    def _drain(self) -> None:
        for _ in range(10_000):
            moved = False
            for node_id, node in list(self.nodes.items()):
                if node_id in self.down:
                    continue
                node.poll(self.now)
                for out in node.take_outbox():
                    moved = True
                    if out.destination < 0:
                        self.replies.append(out.message)
                        continue
                    if out.destination in self.down or out.destination not in self.nodes:
                        continue
                    self.nodes[out.destination].handle(
                        self.now, node_id, out.correlation, out.message, is_response=out.is_response
                    )
            if not moved:
                return
        raise AssertionError("the cluster never went quiet")

    def leader(self) -> RaftNode:
        leaders = [n for i, n in self.nodes.items() if i not in self.down and n.role is Role.LEADER]
        assert len(leaders) == 1, [n.role for n in self.nodes.values()]
        return leaders[0]

    def ask(self, node_id: int, message: Message) -> Message:
        self.nodes[node_id].handle(self.now, -1, 99, message, is_response=False)
        self.pump()
        return self.replies.pop()


def test_a_single_voter_leads_at_once_and_commits_on_append() -> None:
    cluster = Cluster([0])
    node = cluster.nodes[0]
    assert node.role is Role.LEADER and node.epoch == 1
    # The epoch's first entries: LeaderChange and the bootstrap voters.
    assert node.high_watermark == 2
    offset = node.append(0, [b"a", b"b"])
    assert offset == 3 and node.high_watermark == 4
    assert cluster.logs[0].flushed == 4
    assert cluster.stores[0].state == ElectionState(1, 0, None)


def test_three_voters_elect_one_leader_and_replicate() -> None:
    cluster = Cluster([0, 1, 2])
    cluster.pump(until_ms=400)
    leader = cluster.leader()
    leader.append(cluster.now, [b"x"])
    cluster.pump(until_ms=50)
    ends = {i: log.end_offset for i, log in cluster.logs.items()}
    assert len(set(ends.values())) == 1, ends
    for node in cluster.nodes.values():
        assert node.high_watermark == leader.log.end_offset
        assert node.epoch == leader.epoch
    chains = {log.chains[-1] for log in cluster.logs.values()}
    assert len(chains) == 1


def vote(
    epoch: int, candidate: int, *, pre_vote: bool = False, last: tuple[int, int] = (0, 0)
) -> VoteRequest:
    return VoteRequest("c", key(0), epoch, key(candidate), last[0], last[1], pre_vote)


def only_node(voters: Iterable[int] = (0, 1, 2)) -> tuple[Cluster, RaftNode]:
    cluster = Cluster(voters, nodes=[0])
    return cluster, cluster.nodes[0]


def test_one_vote_per_epoch_persisted_before_the_answer() -> None:
    cluster, node = only_node()
    response = cluster.ask(0, vote(1, 1))
    assert isinstance(response, VoteResponse) and response.vote_granted
    # The vote was written before the response went out.
    assert cluster.writes[-1] == (0, ElectionState(1, -1, key(1)))
    assert not cluster.ask(0, vote(1, 2)).vote_granted  # type: ignore[union-attr]
    assert cluster.ask(0, vote(1, 1)).vote_granted  # type: ignore[union-attr]
    assert node.epoch == 1


def test_a_pre_vote_persists_nothing_and_does_not_use_up_the_vote() -> None:
    cluster, node = only_node()
    writes = len(cluster.writes)
    assert cluster.ask(0, vote(0, 1, pre_vote=True)).vote_granted  # type: ignore[union-attr]
    assert cluster.ask(0, vote(0, 2, pre_vote=True)).vote_granted  # type: ignore[union-attr]
    assert len(cluster.writes) == writes
    assert node.voted is None


def test_an_out_of_date_candidate_gets_no_vote() -> None:
    cluster, node = only_node()
    node.log.append_as_leader(1, [b"a", b"b"])
    response = cluster.ask(0, vote(2, 1, last=(1, 1)))
    assert isinstance(response, VoteResponse) and not response.vote_granted
    # The higher epoch was still adopted (and persisted) before refusing.
    assert node.epoch == 2 and cluster.writes[-1][1].epoch == 2


def test_a_stale_epoch_is_fenced() -> None:
    cluster, _ = only_node()
    cluster.ask(0, vote(3, 1))
    response = cluster.ask(0, vote(2, 2))
    assert isinstance(response, VoteResponse)
    assert response.error == ErrorCode.FENCED_LEADER_EPOCH and response.leader_epoch == 3


def test_a_vote_for_another_directory_is_refused() -> None:
    cluster, _ = only_node()
    wrong = VoteRequest("c", ReplicaKey(0, b"\x09" * 16), 1, key(1), 0, 0, False)
    response = cluster.ask(0, wrong)
    assert isinstance(response, VoteResponse)
    assert response.error == ErrorCode.INVALID_VOTER_KEY and not response.vote_granted


def test_followers_and_leaders_refuse_votes_in_their_epoch() -> None:
    cluster = Cluster([0, 1, 2])
    cluster.pump(until_ms=400)
    leader = cluster.leader()
    follower_id = next(i for i, n in cluster.nodes.items() if n is not leader)
    follower = cluster.nodes[follower_id]
    last = (follower.log.last_fetched_epoch(), follower.log.end_offset)
    for node_id in (follower_id, leader.key.id):
        request = VoteRequest("c", key(node_id), leader.epoch, key(9), last[0], last[1] + 5, True)
        cluster.nodes[node_id].handle(cluster.now, -1, 1, request, is_response=False)
        (out,) = cluster.nodes[node_id].take_outbox()
        assert isinstance(out.message, VoteResponse) and not out.message.vote_granted


def test_a_restarted_leader_resigns_and_never_votes_in_its_epoch() -> None:
    cluster = Cluster([0, 1, 2])
    cluster.pump(until_ms=400)
    leader = cluster.leader()
    leader_id, epoch = leader.key.id, leader.epoch
    cluster.down.add(leader_id)
    cluster.start(leader_id)
    restarted = cluster.nodes[leader_id]
    assert restarted.role is Role.RESIGNED and restarted.epoch == epoch
    assert not restarted._can_grant(key(1), True, False)


def test_a_diverging_follower_is_truncated_to_the_leader() -> None:
    cluster = Cluster([0, 1, 2])
    cluster.pump(until_ms=400)
    leader = cluster.leader()
    committed = leader.log.end_offset
    # The leader appends while alone, then loses leadership: its tail never commits.
    others = [i for i in cluster.nodes if i != leader.key.id]
    cluster.down.update(others)
    leader.append(cluster.now, [b"lost-1", b"lost-2"])
    old = leader.key.id
    cluster.down = {old}
    for i in others:
        cluster.start(i)
    cluster.pump(until_ms=1000)
    new_leader = cluster.leader()
    assert new_leader.key.id != old
    new_leader.append(cluster.now, [b"kept"])
    cluster.down.clear()
    cluster.start(old)
    cluster.pump(until_ms=1000)
    assert cluster.logs[old].chains[-1] == cluster.logs[new_leader.key.id].chains[-1]
    contents = {cluster.contents[b"lost-1"], cluster.contents[b"lost-2"]}
    assert not contents & {e.content for e in cluster.logs[old].entries}
    assert new_leader.high_watermark > committed


def test_the_leader_resigns_when_a_majority_stops_fetching() -> None:
    cluster = Cluster([0, 1, 2])
    cluster.pump(until_ms=400)
    leader = cluster.leader()
    cluster.down.update(i for i in cluster.nodes if i != leader.key.id)
    cluster.pump(until_ms=CONFIG.check_quorum_timeout_ms + 50)
    assert leader.role is not Role.LEADER


def test_a_lagging_follower_catches_up_from_a_snapshot_in_chunks() -> None:
    cluster = Cluster([0, 1, 2])
    cluster.pump(until_ms=400)
    leader = cluster.leader()
    lagging = next(i for i in cluster.nodes if i != leader.key.id)
    cluster.down.add(lagging)
    for n in range(20):
        leader.append(cluster.now, [b"e%d" % n])
        cluster.pump()
    snapshot = leader.log.take_snapshot(leader.high_watermark, leader.voters)  # type: ignore[attr-defined]
    leader.log.clean()  # type: ignore[attr-defined]
    assert leader.log.start_offset == snapshot.offset
    cluster.down.clear()
    cluster.pump(until_ms=300)
    log = cluster.logs[lagging]
    assert log.latest_snapshot() == snapshot
    assert log.start == snapshot.offset and log.end_offset == leader.log.end_offset
    assert cluster.nodes[lagging].high_watermark == leader.high_watermark


def test_a_fetch_below_the_log_start_is_answered_with_the_snapshot_id() -> None:
    cluster = Cluster([0])
    node = cluster.nodes[0]
    for n in range(5):
        node.append(0, [b"%d" % n])
    snapshot = node.log.take_snapshot(node.high_watermark, node.voters)  # type: ignore[attr-defined]
    node.log.clean()  # type: ignore[attr-defined]
    request = FetchRequest("c", key(5), node.epoch, 1, 1, -1, 0, 1024)
    response = cluster.ask(0, request)
    assert isinstance(response, FetchResponse)
    assert response.snapshot_id == snapshot and response.records is None


def test_a_fetch_after_a_lost_epoch_gets_the_diverging_epoch() -> None:
    cluster = Cluster([0])
    node = cluster.nodes[0]
    node.append(0, [b"a"])
    # A follower claiming entries of epoch 1 past the leader's end of epoch 1 diverges.
    end = node.log.end_offset
    cluster.down.add(0)
    cluster.start(0)  # epoch 2: resigned, then leader again as the only voter
    cluster.pump(until_ms=300)
    node = cluster.leader()
    assert node.epoch >= 2
    request = FetchRequest("c", key(5), node.epoch, end + 3, 1, -1, 0, 1024)
    response = cluster.ask(0, request)
    assert isinstance(response, FetchResponse)
    assert response.diverging_epoch == OffsetAndEpoch(1, end)


def test_voter_changes_are_refused_until_they_can_be_safe() -> None:
    cluster = Cluster([0, 1, 2], nodes=[0, 1, 2, 3])
    cluster.pump(until_ms=400)
    leader = cluster.leader()
    lid = leader.key.id
    add = AddVoterRequest("c", key(3), (), 1000)
    stranger = AddVoterRequest("c", key(7), (), 1000)
    response = cluster.ask(lid, stranger)
    assert response == AddVoterResponse(
        ErrorCode.REQUEST_TIMED_OUT, "replica 7 has not caught up with the leader"
    )
    dup = cluster.ask(lid, AddVoterRequest("c", key((lid + 1) % 3), (), 1000))
    assert isinstance(dup, AddVoterResponse) and dup.error == ErrorCode.DUPLICATE_VOTER
    missing = cluster.ask(lid, RemoveVoterRequest("c", ReplicaKey(1, b"\x07" * 16)))
    assert isinstance(missing, RemoveVoterResponse)
    assert missing.error == ErrorCode.VOTER_NOT_FOUND
    # Node 3 has been fetching as an observer: it can join, and then it votes.
    response = cluster.ask(lid, add)
    assert response == AddVoterResponse(ErrorCode.NONE)
    assert 3 in leader.voters and 3 in cluster.nodes[3].voters
    assert cluster.nodes[3].is_voter
    not_leader = next(i for i in (0, 1, 2) if i != lid)
    refused = cluster.ask(not_leader, RemoveVoterRequest("c", key(3)))
    assert isinstance(refused, RemoveVoterResponse)
    assert refused.error == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_leader_that_removes_itself_steps_down_after_the_commit() -> None:
    cluster = Cluster([0, 1, 2])
    cluster.pump(until_ms=400)
    leader = cluster.leader()
    response = cluster.ask(leader.key.id, RemoveVoterRequest("c", leader.key))
    assert response == RemoveVoterResponse(ErrorCode.NONE)
    cluster.pump(until_ms=600)
    new_leader = cluster.leader()
    assert new_leader is not leader and leader.key.id not in new_leader.voters
    assert not leader.is_voter and leader.role is Role.FOLLOWER


def test_a_request_that_cannot_reach_its_node_is_over_at_once() -> None:
    """An observer whose leader is gone (connection refused) asks another voter for the
    leader at once, rather than at its request timeout."""
    config = CONFIG._replace(fetch_timeout_ms=1000, request_timeout_ms=100)
    cluster = Cluster([0, 1, 2], nodes=[0, 1, 2, 3], config=config)
    cluster.pump(until_ms=400)
    leader = cluster.leader().key.id
    observer = cluster.nodes[3]
    assert observer.leader_id == leader
    cluster.down.add(leader)
    cluster.now += config.request_timeout_ms + 1
    observer.poll(cluster.now)  # the parked fetch timed out: it asks the leader again
    [fetch] = observer.take_outbox()
    assert fetch.destination == leader and isinstance(fetch.message, FetchRequest)
    observer.poll(cluster.now)
    assert observer.take_outbox() == []  # still waiting on the leader
    observer.unreachable(cluster.now, leader, fetch.correlation)
    observer.poll(cluster.now)
    [asked] = observer.take_outbox()
    assert asked.destination not in (leader, 3) and isinstance(asked.message, FetchRequest)
    # A late or unknown failure changes nothing.
    observer.unreachable(cluster.now, leader, fetch.correlation)
    assert observer.take_outbox() == []


def listening(node_id: int, port: int = 9093) -> tuple[Endpoint, ...]:
    return (Endpoint("CONTROLLER", f"host-{node_id}", port),)


def test_voters_announce_their_listeners_and_a_move() -> None:
    cluster = Cluster([0, 1, 2])
    for node_id, node in cluster.nodes.items():
        node.local_endpoints = listening(node_id)
    cluster.pump(until_ms=800)
    leader = cluster.leader()
    assert {v.key.id: v.endpoints for v in leader.voters} == {i: listening(i) for i in (0, 1, 2)}
    follower = next(n for n in cluster.nodes.values() if n is not leader)
    follower.local_endpoints = listening(follower.key.id, 19093)
    cluster.pump(until_ms=400)
    moved = leader.voters.get(follower.key.id)
    assert moved is not None and moved.endpoints == listening(follower.key.id, 19093)
    # Every replica's log holds the change, and nothing is announced again.
    assert all(n.voters == leader.voters for n in cluster.nodes.values())
    end = leader.log.end_offset
    cluster.pump(until_ms=600)
    assert leader.log.end_offset == end


def test_update_voter_refusals_come_in_kafkas_order() -> None:
    cluster = Cluster([0, 1, 2])
    for node_id, node in cluster.nodes.items():
        node.local_endpoints = listening(node_id)
    cluster.pump(until_ms=800)
    leader = cluster.leader()
    lid, epoch = leader.key.id, leader.epoch
    other = next(i for i in (0, 1, 2) if i != lid)

    def ask(request: UpdateVoterRequest) -> ErrorCode:
        response = cluster.ask(lid, request)
        assert isinstance(response, UpdateVoterResponse)
        assert (response.leader_id, response.leader_epoch) == (lid, epoch)
        return response.error

    good = UpdateVoterRequest("c", epoch, key(other), listening(other, 9999), (0, 1))
    assert ask(good._replace(cluster_id="x")) == ErrorCode.INCONSISTENT_CLUSTER_ID
    assert ask(good._replace(current_leader_epoch=epoch - 1)) == ErrorCode.FENCED_LEADER_EPOCH
    assert ask(good._replace(current_leader_epoch=epoch + 1)) == ErrorCode.UNKNOWN_LEADER_EPOCH
    assert ask(good._replace(voter=ReplicaKey(other))) == ErrorCode.INVALID_REQUEST
    elsewhere = (Endpoint("OTHER", "h", 1),)
    assert ask(good._replace(endpoints=elsewhere)) == ErrorCode.INVALID_REQUEST
    assert ask(good._replace(kraft_versions=(1, 0))) == ErrorCode.INVALID_REQUEST
    assert ask(good._replace(kraft_versions=(2, 3))) == ErrorCode.INVALID_REQUEST
    assert ask(good._replace(voter=key(7))) == ErrorCode.VOTER_NOT_FOUND
    wiped = ReplicaKey(other, b"\x07" * 16)
    assert ask(good._replace(voter=wiped)) == ErrorCode.VOTER_NOT_FOUND
    # Answered at once; a second change waits for the first to commit.
    leader.handle(cluster.now, -1, 1, good, is_response=False)
    leader.handle(cluster.now, -1, 2, good, is_response=False)
    answers = [o.message for o in leader.take_outbox() if o.destination == -1]
    assert [a.error for a in answers if isinstance(a, UpdateVoterResponse)] == [
        ErrorCode.NONE,
        ErrorCode.REQUEST_TIMED_OUT,
    ]
    refused = cluster.ask(other, good)
    assert isinstance(refused, UpdateVoterResponse)
    assert refused.error == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_static_voters_announce_once_to_each_leader_who_keeps_it_in_memory() -> None:
    cluster = Cluster([0, 1, 2], config=CONFIG._replace(kraft_version=0), static=True)
    for node_id, node in cluster.nodes.items():
        node.local_endpoints = listening(node_id)
    cluster.pump(until_ms=800)
    leader = cluster.leader()
    volatile = leader.volatile_voters
    assert volatile is not None
    assert {v.key for v in volatile} == {key(0), key(1), key(2)}
    assert all(v.endpoints == listening(v.key.id) for v in volatile)
    # Nothing reached the log: the voter set in force is the static one.
    assert {v.key for v in leader.voters} == {ReplicaKey(0), ReplicaKey(1), ReplicaKey(2)}
    assert all(n.voters == cluster.voters for n in cluster.nodes.values())


def test_static_voters_upgrade_to_kraft_version_1_once_all_have_announced() -> None:
    cluster = Cluster([0, 1, 2], config=CONFIG._replace(kraft_version=0), static=True)
    cluster.pump(until_ms=800)
    leader = cluster.leader()
    # No voter knows its listeners yet, so none told the leader its directory id.
    with pytest.raises(KRaftUpgradeError, match="not all of the voters support it"):
        leader.upgrade_kraft_version(cluster.now, 1, validate_only=True)
    for node_id, node in cluster.nodes.items():
        node.local_endpoints = listening(node_id)
    cluster.pump(until_ms=800)
    end = leader.log.end_offset
    assert not leader.upgrade_kraft_version(cluster.now, 1, validate_only=True)
    assert leader.log.end_offset == end and leader.kraft_version == 0
    follower = next(n for n in cluster.nodes.values() if n is not leader)
    with pytest.raises(NotLeaderError):
        follower.upgrade_kraft_version(cluster.now, 1, validate_only=False)
    assert leader.upgrade_kraft_version(cluster.now, 1, validate_only=False)
    assert leader.kraft_version == 1  # from its append, as Kafka's
    cluster.pump(until_ms=200)
    want = {Voter(key(i), listening(i)) for i in (0, 1, 2)}
    for node in cluster.nodes.values():
        assert node.kraft_version == 1 and set(node.voters) == want
    assert not leader.upgrade_kraft_version(cluster.now, 1, validate_only=False)  # no-op
    with pytest.raises(KRaftUpgradeError, match="downgrade"):
        leader.upgrade_kraft_version(cluster.now, 0, validate_only=False)
    # A restart reads kraft.version 1 and the voters from the log, whatever it is
    # configured with; the quorum goes on electing and committing.
    restarted = follower.key.id
    cluster.down.add(restarted)
    cluster.start(restarted)
    assert cluster.nodes[restarted].kraft_version == 1
    assert set(cluster.nodes[restarted].voters) == want
    offset = cluster.leader().append(cluster.now, [b"after"])
    cluster.pump(until_ms=400)
    assert all(n.high_watermark > offset for n in cluster.nodes.values())

"""The Raft core over Kafka's formats: batches in ``__cluster_metadata-0`` and
``quorum-state``, on the in-memory file system (which can crash)."""

from __future__ import annotations

import json
import random

import pytest

from millpond.controller.metadata_log import open_metadata_log
from millpond.controller.raft.config import RaftConfig
from millpond.controller.raft.kafka_log import KafkaRaftLog, decode_voters, encode_voters
from millpond.controller.raft.keys import Endpoint, OffsetAndEpoch, ReplicaKey, Voter, VoterSet
from millpond.controller.raft.log import ElectionState
from millpond.controller.raft.node import RaftNode, Role
from millpond.controller.raft.quorum_state import FileElectionStore, QuorumStateError
from millpond.storage.clock import ManualClock
from millpond.storage.fs import MemFileSystem, join
from millpond.wire.generated.data.leader_change_message import LeaderChangeMessage
from millpond.wire.records import ControlRecordType, iter_batches, parse_control_key

DIR = "/meta/__cluster_metadata-0"
KEY = ReplicaKey(1, b"\x11" * 16)
VOTERS = VoterSet([Voter(KEY, (Endpoint("CONTROLLER", "localhost", 9093),))])
CONFIG = RaftConfig(cluster_id="c")


def open_log(fs: MemFileSystem, clock: ManualClock, directory: str = DIR) -> KafkaRaftLog:
    return open_metadata_log(fs, directory.rsplit("/", 1)[0], clock)


def raw(log: object, offset: int = 0) -> bytes:
    assert isinstance(log, KafkaRaftLog)
    records = log.read(offset, 1 << 20)
    assert isinstance(records, bytes)
    return records


def single_voter(fs: MemFileSystem, clock: ManualClock) -> RaftNode:
    return RaftNode(
        KEY,
        CONFIG,
        open_log(fs, clock),
        FileElectionStore(fs, DIR),
        random.Random(1),
        clock.now_ms(),
        bootstrap_voters=VOTERS,
    )


def test_a_single_voter_writes_kafkas_batches_and_commits_on_flush() -> None:
    fs, clock = MemFileSystem(), ManualClock()
    node = single_voter(fs, clock)
    assert node.role is Role.LEADER and node.epoch == 1
    last = node.append(clock.now_ms(), [b"record-1", b"record-2"])
    assert node.high_watermark == last + 1 == node.log.end_offset
    batches = list(iter_batches(raw(node.log)))
    # LeaderChangeMessage; KRaftVersionRecord + VotersRecord; the data batch.
    assert [b.is_control for b in batches] == [True, True, False]
    assert {b.partition_leader_epoch for b in batches} == {1}
    (change,) = batches[0].records()
    assert parse_control_key(change.key).type == ControlRecordType.LEADER_CHANGE
    assert change.value is not None
    message = LeaderChangeMessage.decode(change.value, 0)
    assert message.leader_id == 1 and [v.voter_id for v in message.voters] == [1]
    kinds = [parse_control_key(r.key).type for r in batches[1].records()]
    assert kinds == [ControlRecordType.KRAFT_VERSION, ControlRecordType.KRAFT_VOTERS]
    assert [r.value for r in batches[2].records()] == [b"record-1", b"record-2"]
    state = json.loads(fs.open(join(DIR, "quorum-state")).read_at(0, 1 << 10))
    assert state == {
        "leaderId": 1,
        "leaderEpoch": 1,
        "votedId": -1,
        "votedDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA",
        "data_version": 1,
    }


def test_a_restart_starts_a_higher_epoch_and_reads_the_voters_back() -> None:
    fs, clock = MemFileSystem(), ManualClock()
    node = single_voter(fs, clock)
    node.append(clock.now_ms(), [b"a"])
    node.log.flush()
    fs.crash()
    again = single_voter(fs, clock)
    assert again.role is Role.LEADER and again.epoch == 2
    assert again.voters == VOTERS
    assert again.log.end_offset_for_epoch(1) == OffsetAndEpoch(1, 4)
    assert again.log.end_offset_for_epoch(2) == OffsetAndEpoch(2, again.log.end_offset)


def test_voters_records_round_trip_with_endpoints_and_directory_ids() -> None:
    voters = VoterSet(
        [
            Voter(ReplicaKey(1, b"\x01" * 16), (Endpoint("CONTROLLER", "h1", 9093),), (0, 1)),
            Voter(ReplicaKey(2), (), (0, 0)),
        ]
    )
    assert decode_voters(encode_voters(voters)) == voters


def test_three_replicas_replicate_kafka_batches_byte_for_byte() -> None:
    clock = ManualClock()
    fs = MemFileSystem()
    keys = [ReplicaKey(i, bytes([i + 1]) * 16) for i in range(3)]
    voters = VoterSet(Voter(k) for k in keys)
    nodes = {
        k.id: RaftNode(
            k,
            RaftConfig(cluster_id="c", fetch_max_wait_ms=50),
            open_log(fs, clock, f"/n{k.id}/__cluster_metadata-0"),
            FileElectionStore(fs, f"/n{k.id}/__cluster_metadata-0"),
            random.Random(k.id),
            0,
            bootstrap_voters=voters,
        )
        for k in keys
    }
    for _ in range(400):
        clock.advance(5)
        for _ in range(50):
            moved = False
            for node_id, node in nodes.items():
                node.poll(clock.now_ms())
                for out in node.take_outbox():
                    moved = True
                    nodes[out.destination].handle(
                        clock.now_ms(),
                        node_id,
                        out.correlation,
                        out.message,
                        is_response=out.is_response,
                    )
            if not moved:
                break
        leaders = [n for n in nodes.values() if n.role is Role.LEADER]
        if leaders and all(n.high_watermark == leaders[0].log.end_offset for n in nodes.values()):
            if leaders[0].log.end_offset > 3:
                break
            leaders[0].append(clock.now_ms(), [b"x", b"y"])
    (leader,) = [n for n in nodes.values() if n.role is Role.LEADER]
    images = {raw(n.log) for n in nodes.values()}
    assert len(images) == 1
    assert leader.log.end_offset == 5  # LeaderChange, KRaftVersion + Voters, two records
    for node in nodes.values():
        assert node.voters == voters and node.is_voter


def test_quorum_state_reads_kafkas_version_0_and_1_files() -> None:
    fs = MemFileSystem()
    fs.makedirs(DIR)
    store = FileElectionStore(fs, DIR)
    path = join(DIR, "quorum-state")
    v0 = {"clusterId": "", "leaderId": 3, "leaderEpoch": 7, "votedId": -1, "appliedOffset": 0,
          "currentVoters": [{"voterId": 3}], "data_version": 0}  # fmt: skip
    handle = fs.open(path, create=True)
    handle.append(json.dumps(v0).encode())
    handle.close()
    assert store.read() == ElectionState(7, 3, None)
    store.write(ElectionState(8, -1, ReplicaKey(2, b"\x22" * 16)))
    assert store.read() == ElectionState(8, -1, ReplicaKey(2, b"\x22" * 16))
    old = FileElectionStore(fs, DIR, kraft_version=lambda: 0, voter_ids=lambda: [1, 2, 3])
    old.write(ElectionState(9, 2, None))
    body = json.loads(fs.open(path).read_at(0, 1 << 10))
    assert body["data_version"] == 0 and body["currentVoters"] == [
        {"voterId": i} for i in (1, 2, 3)
    ]
    assert old.read() == ElectionState(9, 2, None)


def test_an_unreadable_quorum_state_stops_the_node_with_what_to_do() -> None:
    fs = MemFileSystem()
    fs.makedirs(DIR)
    handle = fs.open(join(DIR, "quorum-state"), create=True)
    handle.append(b'{"leaderEpoch": "three", "data_version": 1}')
    handle.close()
    with pytest.raises(QuorumStateError, match="restore it from a backup"):
        FileElectionStore(fs, DIR).read()

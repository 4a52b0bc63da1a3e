"""Differential sequences for a KRaft controller: sent to the controller listener of an
Apache Kafka 4.4 controller and of a millpond one, each the single voter (node 1, the same
directory id, the same cluster id) of its own quorum (``compat_tests/
test_differential_quorum.py`` starts them). Edge cases only a peer or a broker would
send: wrong clusters, stale and future epochs, unknown partitions and leaders, a
diverging log, a missing snapshot, broker registrations and heartbeats that must be
refused. None of them may move the quorum: no sequence sends an epoch above the
leader's, so every one starts from the same quorum, and none names another leader in the
leader's own epoch (Kafka's controller stops at once on that: a fatal fault).

The requests are built as the Raft core's peers build them (:mod:`millpond.controller.
raft.codec`), so each field is what Kafka's own nodes send; what a peer never sends (a
wrong partition) is edited into the wire message afterwards.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from compat_tests.differential.runner import SequenceFn, Session
from millpond.controller.raft import codec
from millpond.controller.raft import messages as m
from millpond.controller.raft.keys import Endpoint, OffsetAndEpoch, ReplicaKey
from millpond.wire.generated.api import describe_quorum_request as dq
from millpond.wire.generated.api.broker_heartbeat_request import BrokerHeartbeatRequest
from millpond.wire.generated.api.broker_registration_request import (
    BrokerRegistrationRequest,
    Feature,
    Listener,
)

CLUSTER_ID = "UXVvcnVtRGlmZmVyZW50IQ"
#: The one voter's directory id, the same on both controllers.
DIRECTORY_ID = bytes(range(16, 32))
VOTER = ReplicaKey(1, DIRECTORY_ID)
#: A replica that is no voter (an observer, a broker).
STRANGER = ReplicaKey(9, bytes(range(40, 56)))
OTHER_CLUSTER = "T3RoZXItY2x1c3Rlci0xMg"
#: Every field that moves with time or with how many records the leader wrote: the
#: quorum's positions and clocks, and the records themselves.
POSITIONS = (
    "high_watermark", "log_end_offset", "last_fetch_timestamp", "last_caught_up_timestamp",
    "log_start_offset", "records", "end_offset",
)  # fmt: skip

SEQUENCES: dict[str, SequenceFn] = {}


def sequence(fn: SequenceFn) -> SequenceFn:
    SEQUENCES[fn.__name__.replace("_", "-")] = fn
    return fn


def _describe(s: Session, label: str) -> dict[str, Any]:
    request = dq.DescribeQuorumRequest(
        topics=[
            dq.TopicData(
                topic_name="__cluster_metadata", partitions=[dq.PartitionData(partition_index=0)]
            )
        ]
    )
    return s.send(request, 2, label, volatile=POSITIONS)


def _epoch(s: Session) -> int:
    """The leader's epoch, read without recording a step (both sides record it through
    DescribeQuorum's own step)."""
    data = _describe(s, "the quorum")
    epoch: int = data["topics"][0]["partitions"][0]["leader_epoch"]
    return epoch


def _send_core(
    s: Session,
    message: m.Request,
    version: int,
    label: str,
    edit: Callable[[Any], None] | None = None,
) -> None:
    wire = codec.encode_request(message, version)
    if edit is not None:
        edit(wire)
    s.send(wire, version, label, volatile=POSITIONS)


def _partition(index: int, field: str = "partition_index") -> Callable[[Any], None]:
    """An edit naming partition ``index`` of the metadata topic instead of 0."""

    def edit(wire: Any) -> None:
        setattr(wire.topics[0].partitions[0], field, index)

    return edit


@sequence
def quorum_describe(s: Session) -> None:
    _describe(s, "the quorum")
    request = dq.DescribeQuorumRequest(
        topics=[dq.TopicData(topic_name="__cluster_metadata", partitions=[
            dq.PartitionData(partition_index=1)])]
    )  # fmt: skip
    s.send(request, 2, "another partition", volatile=POSITIONS)
    other = dq.DescribeQuorumRequest(
        topics=[dq.TopicData(topic_name="other", partitions=[dq.PartitionData(partition_index=0)])]
    )
    s.send(other, 2, "another topic", volatile=POSITIONS)
    _describe(s, "again")


@sequence
def quorum_vote_edges(s: Session) -> None:
    epoch = _epoch(s)

    def vote(cluster: str, at: int, *, pre_vote: bool, voter: ReplicaKey = VOTER) -> m.VoteRequest:
        return m.VoteRequest(cluster, voter, at, STRANGER, 0, 0, pre_vote)

    _send_core(s, vote(OTHER_CLUSTER, epoch, pre_vote=True), 2, "another cluster")
    _send_core(s, vote(CLUSTER_ID, epoch, pre_vote=True), 2, "partition 1", _partition(1))
    _send_core(s, vote(CLUSTER_ID, epoch - 1, pre_vote=False), 2, "stale epoch")
    _send_core(s, vote(CLUSTER_ID, epoch, pre_vote=False), 2, "current epoch, a leader known")
    _send_core(s, vote(CLUSTER_ID, epoch, pre_vote=True), 2, "pre-vote, a leader known")
    wrong_voter = ReplicaKey(5, DIRECTORY_ID)
    _send_core(s, vote(CLUSTER_ID, epoch, pre_vote=True, voter=wrong_voter), 2, "not its id")
    _send_core(s, vote(CLUSTER_ID, epoch, pre_vote=False), 1, "v1")


@sequence
def quorum_begin_and_end_epoch_edges(s: Session) -> None:
    epoch = _epoch(s)
    stale_begin = m.BeginQuorumEpochRequest(CLUSTER_ID, VOTER, 2, epoch - 1)
    _send_core(s, stale_begin, 1, "begin: stale epoch")
    other_begin = m.BeginQuorumEpochRequest(OTHER_CLUSTER, VOTER, 2, epoch - 1)
    _send_core(s, other_begin, 1, "begin: another cluster")
    _send_core(s, stale_begin, 1, "begin: partition 1", _partition(1))
    stale_end = m.EndQuorumEpochRequest(CLUSTER_ID, 2, epoch - 1, (VOTER,))
    _send_core(s, stale_end, 1, "end: stale epoch")
    _send_core(s, m.EndQuorumEpochRequest(OTHER_CLUSTER, 2, epoch, (VOTER,)), 1, "end: cluster")


@sequence
def quorum_fetch_edges(s: Session) -> None:
    epoch = _epoch(s)

    def fetch(cluster: str, at: int, offset: int = 0, last_epoch: int = 0) -> m.FetchRequest:
        return m.FetchRequest(cluster, STRANGER, at, offset, last_epoch, -1, 0, 1 << 20)

    _send_core(s, fetch(OTHER_CLUSTER, epoch), 17, "another cluster")
    _send_core(s, fetch(CLUSTER_ID, epoch - 1), 17, "stale epoch")
    _send_core(s, fetch(CLUSTER_ID, epoch + 1), 17, "future epoch")
    _send_core(s, fetch(CLUSTER_ID, epoch), 17, "partition 1", _partition(1, "partition"))
    _send_core(s, fetch(CLUSTER_ID, epoch, offset=-1), 17, "negative offset")
    # A log that diverges: an epoch this leader never wrote, past its end.
    _send_core(s, fetch(CLUSTER_ID, epoch, offset=500, last_epoch=epoch - 1), 17, "diverging")
    _send_core(s, fetch(CLUSTER_ID, epoch, offset=500, last_epoch=epoch), 17, "past the end")
    _send_core(s, fetch(CLUSTER_ID, epoch, offset=1, last_epoch=epoch + 5), 17, "future last epoch")
    _send_core(s, fetch(CLUSTER_ID, epoch), 17, "from the start")


@sequence
def quorum_update_voter_edges(s: Session) -> None:
    """UpdateRaftVoter as a voter sends it, refused in each way Kafka checks. (Not an
    accepted one: the only voter is the leader, and Kafka 4.4's controller stops on a
    fatal fault when an UpdateRaftVoter names the leader itself, counting it as a fetch
    from itself.)"""
    epoch = _epoch(s)
    host, port = s.bootstrap.rsplit(":", 1)
    here = (Endpoint("CONTROLLER", host, int(port)),)
    good = m.UpdateVoterRequest(CLUSTER_ID, epoch, VOTER, here, (0, 1))
    cases: list[tuple[str, m.UpdateVoterRequest]] = [
        ("another cluster", good._replace(cluster_id=OTHER_CLUSTER)),
        ("stale epoch", good._replace(current_leader_epoch=epoch - 1)),
        ("future epoch", good._replace(current_leader_epoch=epoch + 1)),
        ("no directory id", good._replace(voter=ReplicaKey(1))),
        ("another listener only", good._replace(endpoints=(Endpoint("OTHER", host, 1),))),
        ("no listener", good._replace(endpoints=())),
        ("versions upside down", good._replace(kraft_versions=(1, 0))),
        ("negative version", good._replace(kraft_versions=(-1, 1))),
        ("not the quorum's version", good._replace(kraft_versions=(2, 3))),
        ("no such voter", good._replace(voter=STRANGER)),
        ("another directory", good._replace(voter=ReplicaKey(1, STRANGER.directory_id))),
    ]
    for label, request in cases:
        _send_core(s, request, 0, label)
    _describe(s, "after")


def _snapshot(cluster: str, at: int, wanted: OffsetAndEpoch) -> m.FetchSnapshotRequest:
    return m.FetchSnapshotRequest(cluster, STRANGER, at, wanted, 0, 1 << 20)


@sequence
def quorum_fetch_snapshot_another_cluster(s: Session) -> None:
    epoch = _epoch(s)
    _send_core(s, _snapshot(OTHER_CLUSTER, epoch, OffsetAndEpoch(epoch, 5)), 1, "refused")


@sequence
def quorum_fetch_snapshot_edges(s: Session) -> None:
    epoch = _epoch(s)
    missing = OffsetAndEpoch(epoch, 5)
    _send_core(s, _snapshot(CLUSTER_ID, epoch, missing), 1, "no such snapshot")
    _send_core(s, _snapshot(CLUSTER_ID, epoch, OffsetAndEpoch(0, 0)), 1, "the bootstrap one")
    _send_core(s, _snapshot(CLUSTER_ID, epoch - 1, missing), 1, "stale epoch")
    _send_core(s, _snapshot(CLUSTER_ID, epoch + 1, missing), 1, "future epoch")
    wrong = _partition(1, "partition")
    _send_core(s, _snapshot(CLUSTER_ID, epoch, missing), 1, "partition 1", wrong)


def _registration(
    broker_id: int, cluster: str, metadata_max: int = 27
) -> BrokerRegistrationRequest:
    return BrokerRegistrationRequest(
        broker_id=broker_id,
        cluster_id=cluster,
        incarnation_id=bytes(range(broker_id, broker_id + 16)),
        listeners=[Listener(name="PLAINTEXT", host="localhost", port=9092, security_protocol=0)],
        features=[
            Feature(name="metadata.version", min_supported_version=7,
                    max_supported_version=metadata_max),
            Feature(name="kraft.version", min_supported_version=0, max_supported_version=1),
        ],
        rack=None,
        log_dirs=[bytes(range(60, 76))],
        previous_broker_epoch=-1,
    )  # fmt: skip


@sequence
def quorum_broker_registration_edges(s: Session) -> None:
    volatile = (*POSITIONS, "broker_epoch")
    s.send(_registration(21, OTHER_CLUSTER), 4, "another cluster", volatile=volatile)
    s.send(_registration(22, CLUSTER_ID, metadata_max=20), 4, "too old", volatile=volatile)
    s.send(BrokerHeartbeatRequest(broker_id=23, broker_epoch=5, current_metadata_offset=0), 1,
           "never registered", volatile=volatile)  # fmt: skip
    registered = s.send(_registration(24, CLUSTER_ID), 4, "registers", volatile=volatile)
    epoch = registered["broker_epoch"]
    s.send(BrokerHeartbeatRequest(broker_id=24, broker_epoch=epoch + 1000,
           current_metadata_offset=0), 1, "another epoch", volatile=volatile)  # fmt: skip
    s.send(BrokerHeartbeatRequest(broker_id=24, broker_epoch=epoch, current_metadata_offset=0,
           want_fence=True), 1, "still fenced, wants to be", volatile=volatile)  # fmt: skip
    again = _registration(24, CLUSTER_ID)
    again.incarnation_id = bytes(range(90, 106))
    s.send(again, 4, "another incarnation while fenced", volatile=volatile)


ALL: list[tuple[str, Callable[[Session], None]]] = sorted(SEQUENCES.items())

"""The KRaft RPCs as the Raft core sees them: one partition, fields under Kafka's names.

Kafka's Vote, BeginQuorumEpoch, EndQuorumEpoch, Fetch, FetchSnapshot, AddRaftVoter and
RemoveRaftVoter requests carry topics and partitions; the metadata quorum has exactly one
(``__cluster_metadata-0``), so the core's messages hold that one partition's fields flat.
The codec at the edge maps them to and from the generated wire classes. ``error`` is the
partition-level error code and ``top_error`` the request-level one, as Kafka has both.

Records are whatever the :class:`~millpond.controller.raft.log.RaftLog` reads and
appends (Kafka batches in the broker, entry lists in simulation): the core passes them
through unopened.
"""

from __future__ import annotations

from typing import NamedTuple, get_args

from millpond.controller.raft.keys import Endpoint, OffsetAndEpoch, ReplicaKey
from millpond.wire.errors import ErrorCode

__all__ = [
    "AddVoterRequest",
    "AddVoterResponse",
    "BeginQuorumEpochRequest",
    "BeginQuorumEpochResponse",
    "DescribeQuorumRequest",
    "DescribeQuorumResponse",
    "EndQuorumEpochRequest",
    "EndQuorumEpochResponse",
    "FetchRequest",
    "FetchResponse",
    "FetchSnapshotRequest",
    "FetchSnapshotResponse",
    "REQUESTS",
    "Message",
    "RemoveVoterRequest",
    "RemoveVoterResponse",
    "UpdateVoterRequest",
    "UpdateVoterResponse",
    "ReplicaDescription",
    "Request",
    "Response",
    "VoteRequest",
    "VoteResponse",
]

NONE = ErrorCode.NONE


class VoteRequest(NamedTuple):
    cluster_id: str | None
    #: The receiver, as the sender knows it (VoterId, VoterDirectoryId).
    voter: ReplicaKey
    #: ReplicaEpoch: the prospective's own epoch for a pre-vote, the candidate's new one.
    epoch: int
    candidate: ReplicaKey
    last_offset_epoch: int
    #: The candidate's log end offset (one past its last entry).
    last_offset: int
    pre_vote: bool


class VoteResponse(NamedTuple):
    error: ErrorCode
    leader_id: int
    leader_epoch: int
    vote_granted: bool
    top_error: ErrorCode = NONE


class BeginQuorumEpochRequest(NamedTuple):
    cluster_id: str | None
    voter: ReplicaKey
    leader_id: int
    leader_epoch: int
    leader_endpoints: tuple[Endpoint, ...] = ()


class BeginQuorumEpochResponse(NamedTuple):
    error: ErrorCode
    leader_id: int
    leader_epoch: int
    top_error: ErrorCode = NONE


class EndQuorumEpochRequest(NamedTuple):
    cluster_id: str | None
    leader_id: int
    leader_epoch: int
    #: Voters in the order the resigning leader prefers them (most caught up first).
    preferred_candidates: tuple[ReplicaKey, ...]
    leader_endpoints: tuple[Endpoint, ...] = ()


class EndQuorumEpochResponse(NamedTuple):
    error: ErrorCode
    leader_id: int
    leader_epoch: int
    top_error: ErrorCode = NONE


class FetchRequest(NamedTuple):
    cluster_id: str | None
    replica: ReplicaKey
    #: CurrentLeaderEpoch: the fetcher's epoch.
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    #: The fetcher's high watermark (KIP-1166), -1 when unknown.
    high_watermark: int
    max_wait_ms: int
    max_bytes: int


class FetchResponse(NamedTuple):
    error: ErrorCode
    leader_id: int
    leader_epoch: int
    high_watermark: int
    log_start_offset: int
    records: object | None = None
    diverging_epoch: OffsetAndEpoch | None = None
    snapshot_id: OffsetAndEpoch | None = None
    top_error: ErrorCode = NONE


class FetchSnapshotRequest(NamedTuple):
    cluster_id: str | None
    replica: ReplicaKey
    current_leader_epoch: int
    snapshot_id: OffsetAndEpoch
    position: int
    max_bytes: int


class FetchSnapshotResponse(NamedTuple):
    error: ErrorCode
    leader_id: int
    leader_epoch: int
    snapshot_id: OffsetAndEpoch
    size: int = -1
    position: int = -1
    data: bytes = b""
    top_error: ErrorCode = NONE


class AddVoterRequest(NamedTuple):
    cluster_id: str | None
    voter: ReplicaKey
    endpoints: tuple[Endpoint, ...]
    timeout_ms: int


class AddVoterResponse(NamedTuple):
    error: ErrorCode
    message: str | None = None


class RemoveVoterRequest(NamedTuple):
    cluster_id: str | None
    voter: ReplicaKey


class RemoveVoterResponse(NamedTuple):
    error: ErrorCode
    message: str | None = None


class UpdateVoterRequest(NamedTuple):
    """A voter announcing its listeners and kraft.version range to the leader."""

    cluster_id: str | None
    current_leader_epoch: int
    voter: ReplicaKey
    endpoints: tuple[Endpoint, ...]
    kraft_versions: tuple[int, int]


class UpdateVoterResponse(NamedTuple):
    error: ErrorCode
    leader_id: int
    leader_epoch: int


class DescribeQuorumRequest(NamedTuple):
    pass


class ReplicaDescription(NamedTuple):
    key: ReplicaKey
    log_end_offset: int
    last_fetch_timestamp: int
    last_caught_up_timestamp: int


class DescribeQuorumResponse(NamedTuple):
    error: ErrorCode
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaDescription, ...] = ()
    observers: tuple[ReplicaDescription, ...] = ()


Request = (
    VoteRequest
    | BeginQuorumEpochRequest
    | EndQuorumEpochRequest
    | FetchRequest
    | FetchSnapshotRequest
    | AddVoterRequest
    | RemoveVoterRequest
    | UpdateVoterRequest
    | DescribeQuorumRequest
)
Response = (
    VoteResponse
    | BeginQuorumEpochResponse
    | EndQuorumEpochResponse
    | FetchResponse
    | FetchSnapshotResponse
    | AddVoterResponse
    | RemoveVoterResponse
    | UpdateVoterResponse
    | DescribeQuorumResponse
)
Message = Request | Response
#: The request types, for isinstance.
REQUESTS: tuple[type, ...] = get_args(Request)

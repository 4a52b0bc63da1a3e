"""The KRaft RPCs between the Raft core's flat tuples and Kafka's generated wire classes.

The core's messages (:mod:`~millpond.controller.raft.messages`) hold the fields of the one
partition the quorum replicates, ``__cluster_metadata-0``; on the wire the same fields sit
inside topic and partition lists, and which of them exist depends on the API version. So
the codec adds and checks the single topic and partition, and encodes at the version the
peer speaks: a field that version lacks is left out when Kafka marks it ignorable (a
directory id before KIP-853, a fetcher's high watermark before KIP-1166) and refused with
UNSUPPORTED_VERSION when losing it would change the meaning (a pre-vote, a fetch's last
epoch), which is what Kafka's serializers do. A request about another partition is refused
with the error Kafka's raft gives, placed where Kafka puts it (:func:`error_response`).
The core's ``None`` for an unknown directory id or an absent position is the all-zero Uuid
or -1/-1 on the wire.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType, ModuleType
from typing import NamedTuple, Protocol, TypeVar

from millpond.controller.raft import messages as m
from millpond.controller.raft.keys import Endpoint, OffsetAndEpoch, ReplicaKey
from millpond.storage.log_dirs import CLUSTER_METADATA_TOPIC
from millpond.wire.api import ApiKey
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api import add_raft_voter_request as add_req
from millpond.wire.generated.api import add_raft_voter_response as add_resp
from millpond.wire.generated.api import begin_quorum_epoch_request as begin_req
from millpond.wire.generated.api import begin_quorum_epoch_response as begin_resp
from millpond.wire.generated.api import describe_quorum_request as describe_req
from millpond.wire.generated.api import describe_quorum_response as describe_resp
from millpond.wire.generated.api import end_quorum_epoch_request as end_req
from millpond.wire.generated.api import end_quorum_epoch_response as end_resp
from millpond.wire.generated.api import fetch_request as fetch_req
from millpond.wire.generated.api import fetch_response as fetch_resp
from millpond.wire.generated.api import fetch_snapshot_request as snap_req
from millpond.wire.generated.api import fetch_snapshot_response as snap_resp
from millpond.wire.generated.api import remove_raft_voter_request as remove_req
from millpond.wire.generated.api import remove_raft_voter_response as remove_resp
from millpond.wire.generated.api import update_raft_voter_request as update_req
from millpond.wire.generated.api import update_raft_voter_response as update_resp
from millpond.wire.generated.api import vote_request as vote_req
from millpond.wire.generated.api import vote_response as vote_resp
from millpond.wire.message import Message
from millpond.wire.primitives import ZERO_UUID

__all__ = [
    "API_KEY_OF",
    "METADATA_PARTITION",
    "METADATA_TOPIC",
    "METADATA_TOPIC_ID",
    "SUPPORTED_VERSIONS",
    "Decoded",
    "RaftCodecError",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "error_response",
]

METADATA_TOPIC = CLUSTER_METADATA_TOPIC
METADATA_PARTITION = 0
#: Kafka's fixed topic id of ``__cluster_metadata`` (``Uuid.METADATA_TOPIC_ID``, 0 then 1).
METADATA_TOPIC_ID = bytes(15) + b"\x01"

#: The request type of the core -> its Kafka API (keyed by ``type[object]`` so that any
#: message's type can be looked up).
API_KEY_OF: Mapping[type[object], ApiKey] = MappingProxyType(
    {
        m.VoteRequest: ApiKey.VOTE,
        m.BeginQuorumEpochRequest: ApiKey.BEGIN_QUORUM_EPOCH,
        m.EndQuorumEpochRequest: ApiKey.END_QUORUM_EPOCH,
        m.FetchRequest: ApiKey.FETCH,
        m.FetchSnapshotRequest: ApiKey.FETCH_SNAPSHOT,
        m.AddVoterRequest: ApiKey.ADD_RAFT_VOTER,
        m.RemoveVoterRequest: ApiKey.REMOVE_RAFT_VOTER,
        m.UpdateVoterRequest: ApiKey.UPDATE_RAFT_VOTER,
        m.DescribeQuorumRequest: ApiKey.DESCRIBE_QUORUM,
    }
)

#: The versions the codec encodes and decodes, per API: the full ranges of Kafka 4.4's
#: specs. Fetch below 12 cannot carry LastFetchedEpoch or the leader, so a raft fetch
#: that has them refuses to encode there (Kafka's raft only accepts a Fetch naming the
#: topic by id, v13 and above; this codec also takes the name before v13).
SUPPORTED_VERSIONS: Mapping[int, tuple[int, int]] = MappingProxyType(
    {
        ApiKey.FETCH: (4, 18),
        ApiKey.VOTE: (0, 2),
        ApiKey.BEGIN_QUORUM_EPOCH: (0, 1),
        ApiKey.END_QUORUM_EPOCH: (0, 1),
        ApiKey.DESCRIBE_QUORUM: (0, 2),
        ApiKey.FETCH_SNAPSHOT: (0, 1),
        ApiKey.ADD_RAFT_VOTER: (0, 1),
        ApiKey.REMOVE_RAFT_VOTER: (0, 0),
        ApiKey.UPDATE_RAFT_VOTER: (0, 0),
    }
)

_NO_NODES: Mapping[int, tuple[Endpoint, ...]] = MappingProxyType({})
_INVALID = ErrorCode.INVALID_REQUEST
_UNKNOWN = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


class RaftCodecError(ValueError):
    """A message the codec cannot map; ``error`` is the Kafka code that says why.

    INVALID_REQUEST or UNKNOWN_TOPIC_OR_PARTITION: the message is not about just the
    metadata partition (answer a request with :func:`error_response`). UNSUPPORTED_VERSION:
    the version cannot carry the message, or the codec has no such version.
    """

    def __init__(self, error: ErrorCode, detail: str) -> None:
        super().__init__(f"{error.name}: {detail}")
        self.error = error


class Decoded(NamedTuple):
    """A response as the core sees it, with the addresses it names."""

    message: m.Response
    #: The leader's endpoints, when the response names the leader's address (on the
    #: listener the request went to; see :func:`decode_response`).
    leader_endpoints: tuple[Endpoint, ...] = ()
    #: DescribeQuorum v2: every voter's listeners, by node id.
    nodes: Mapping[int, tuple[Endpoint, ...]] = _NO_NODES


# -- shared pieces ---------------------------------------------------------------------


def _uuid(directory_id: bytes | None) -> bytes:
    return ZERO_UUID if directory_id is None else directory_id


def _key(replica_id: int, directory_id: bytes) -> ReplicaKey:
    return ReplicaKey(replica_id, None if directory_id == ZERO_UUID else bytes(directory_id))


def _error(code: int) -> ErrorCode:
    """An error code off the wire; one this build does not know reads as Kafka reads it."""
    try:
        return ErrorCode(code)
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR


def _position(epoch: int, offset: int) -> OffsetAndEpoch | None:
    return None if (epoch, offset) == (-1, -1) else OffsetAndEpoch(epoch, offset)


def _check_version(cls: type[Message], version: int) -> None:
    if not cls.supports(version):
        raise RaftCodecError(ErrorCode.UNSUPPORTED_VERSION, f"{cls.NAME} has no version {version}")


def _unsendable(what: str, version: int) -> RaftCodecError:
    return RaftCodecError(ErrorCode.UNSUPPORTED_VERSION, f"{what} cannot be sent at v{version}")


def _leader_address(
    leader_id: int, endpoints: Sequence[Endpoint], listener: str | None
) -> Endpoint | None:
    """The one address a response names for the leader: on ``listener`` if given."""
    if leader_id < 0:
        return None
    for endpoint in endpoints:
        if listener is None or endpoint.listener == listener:
            return endpoint
    return None


class _NodeEndpoint(Protocol):
    @property
    def node_id(self) -> int: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...


def _leader_endpoints(
    entries: Sequence[_NodeEndpoint], leader_id: int, listener: str
) -> tuple[Endpoint, ...]:
    return tuple(
        Endpoint(listener, e.host, e.port)
        for e in entries
        if leader_id >= 0 and e.node_id == leader_id
    )


class _Named(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...


_L = TypeVar("_L")


def _listeners(make: Callable[..., _L], endpoints: Sequence[Endpoint]) -> list[_L]:
    """The wire's listener entries (AddRaftVoter's, UpdateRaftVoter's) for ``endpoints``."""
    return [make(name=e.listener, host=e.host, port=e.port) for e in endpoints]


def _endpoints(entries: Sequence[_Named]) -> tuple[Endpoint, ...]:
    return tuple(Endpoint(e.name, e.host, e.port) for e in entries)


class _Partition(Protocol):
    @property
    def partition_index(self) -> int: ...


_P_co = TypeVar("_P_co", bound=_Partition, covariant=True)
_P = TypeVar("_P", bound=_Partition)


class _Topic(Protocol[_P_co]):
    @property
    def topic_name(self) -> str: ...
    @property
    def partitions(self) -> Sequence[_P_co]: ...


def _metadata_partition(topics: Sequence[_Topic[_P]]) -> _P | None:
    """The metadata partition when it is all a message names (else None, as Kafka's raft
    refuses any other shape)."""
    if len(topics) != 1 or topics[0].topic_name != METADATA_TOPIC:
        return None
    partitions = topics[0].partitions
    if len(partitions) != 1 or partitions[0].partition_index != METADATA_PARTITION:
        return None
    return partitions[0]


def _is_metadata_topic(topic_id: bytes, name: str) -> bool:
    """Fetch names the topic by id from v13 and by name before."""
    return topic_id == METADATA_TOPIC_ID or (topic_id == ZERO_UUID and name == METADATA_TOPIC)


def _invalid(what: str) -> RaftCodecError:
    return RaftCodecError(_INVALID, f"{what} does not name just {METADATA_TOPIC}-0")


# -- requests --------------------------------------------------------------------------


def encode_request(message: m.Request, version: int) -> Message:
    """The wire request for ``message`` at ``version``; raises :class:`RaftCodecError`
    (UNSUPPORTED_VERSION) when the version cannot carry it."""
    match message:
        case m.VoteRequest():
            return _encode_vote_request(message, version)
        case m.BeginQuorumEpochRequest():
            return _encode_begin_request(message, version)
        case m.EndQuorumEpochRequest():
            return _encode_end_request(message, version)
        case m.FetchRequest():
            return _encode_fetch_request(message, version)
        case m.FetchSnapshotRequest():
            return _encode_snapshot_request(message, version)
        case m.AddVoterRequest():
            _check_version(add_req.AddRaftVoterRequest, version)
            return add_req.AddRaftVoterRequest(
                cluster_id=message.cluster_id,
                timeout_ms=message.timeout_ms,
                voter_id=message.voter.id,
                voter_directory_id=_uuid(message.voter.directory_id),
                listeners=_listeners(add_req.Listener, message.endpoints),
            )
        case m.RemoveVoterRequest():
            _check_version(remove_req.RemoveRaftVoterRequest, version)
            return remove_req.RemoveRaftVoterRequest(
                cluster_id=message.cluster_id,
                voter_id=message.voter.id,
                voter_directory_id=_uuid(message.voter.directory_id),
            )
        case m.UpdateVoterRequest():
            _check_version(update_req.UpdateRaftVoterRequest, version)
            return update_req.UpdateRaftVoterRequest(
                cluster_id=message.cluster_id,
                current_leader_epoch=message.current_leader_epoch,
                voter_id=message.voter.id,
                voter_directory_id=_uuid(message.voter.directory_id),
                listeners=_listeners(update_req.Listener, message.endpoints),
                k_raft_version_feature=update_req.KRaftVersionFeature(
                    min_supported_version=message.kraft_versions[0],
                    max_supported_version=message.kraft_versions[1],
                ),
            )
        case m.DescribeQuorumRequest():
            _check_version(describe_req.DescribeQuorumRequest, version)
            return describe_req.DescribeQuorumRequest(
                topics=[
                    describe_req.TopicData(
                        topic_name=METADATA_TOPIC,
                        partitions=[describe_req.PartitionData(partition_index=METADATA_PARTITION)],
                    )
                ]
            )
    raise TypeError(f"not a raft request: {message!r}")


def _encode_vote_request(r: m.VoteRequest, version: int) -> vote_req.VoteRequest:
    _check_version(vote_req.VoteRequest, version)
    if r.pre_vote and version < 2:
        raise _unsendable("VoteRequest.PreVote", version)
    partition = vote_req.PartitionData(
        partition_index=METADATA_PARTITION,
        replica_epoch=r.epoch,
        replica_id=r.candidate.id,
        last_offset_epoch=r.last_offset_epoch,
        last_offset=r.last_offset,
    )
    request = vote_req.VoteRequest(
        cluster_id=r.cluster_id,
        topics=[vote_req.TopicData(topic_name=METADATA_TOPIC, partitions=[partition])],
    )
    if version >= 1:
        request.voter_id = r.voter.id
        partition.replica_directory_id = _uuid(r.candidate.directory_id)
        partition.voter_directory_id = _uuid(r.voter.directory_id)
    if version >= 2:
        partition.pre_vote = r.pre_vote
    return request


def _encode_begin_request(
    r: m.BeginQuorumEpochRequest, version: int
) -> begin_req.BeginQuorumEpochRequest:
    _check_version(begin_req.BeginQuorumEpochRequest, version)
    partition = begin_req.PartitionData(
        partition_index=METADATA_PARTITION, leader_id=r.leader_id, leader_epoch=r.leader_epoch
    )
    request = begin_req.BeginQuorumEpochRequest(
        cluster_id=r.cluster_id,
        topics=[begin_req.TopicData(topic_name=METADATA_TOPIC, partitions=[partition])],
    )
    if version >= 1:
        request.voter_id = r.voter.id
        partition.voter_directory_id = _uuid(r.voter.directory_id)
        request.leader_endpoints = [
            begin_req.LeaderEndpoint(name=e.listener, host=e.host, port=e.port)
            for e in r.leader_endpoints
        ]
    return request


def _encode_end_request(r: m.EndQuorumEpochRequest, version: int) -> end_req.EndQuorumEpochRequest:
    _check_version(end_req.EndQuorumEpochRequest, version)
    partition = end_req.PartitionData(
        partition_index=METADATA_PARTITION, leader_id=r.leader_id, leader_epoch=r.leader_epoch
    )
    request = end_req.EndQuorumEpochRequest(
        cluster_id=r.cluster_id,
        topics=[end_req.TopicData(topic_name=METADATA_TOPIC, partitions=[partition])],
    )
    if version == 0:
        partition.preferred_successors = [k.id for k in r.preferred_candidates]
    else:
        partition.preferred_candidates = [
            end_req.ReplicaInfo(candidate_id=k.id, candidate_directory_id=_uuid(k.directory_id))
            for k in r.preferred_candidates
        ]
        request.leader_endpoints = [
            end_req.LeaderEndpoint(name=e.listener, host=e.host, port=e.port)
            for e in r.leader_endpoints
        ]
    return request


def _encode_fetch_request(r: m.FetchRequest, version: int) -> fetch_req.FetchRequest:
    _check_version(fetch_req.FetchRequest, version)
    if version < 12 and r.last_fetched_epoch != -1:
        raise _unsendable("FetchRequest LastFetchedEpoch", version)
    partition = fetch_req.FetchPartition(partition=METADATA_PARTITION, fetch_offset=r.fetch_offset)
    topic = fetch_req.FetchTopic(partitions=[partition])
    request = fetch_req.FetchRequest(
        max_wait_ms=r.max_wait_ms, max_bytes=r.max_bytes, topics=[topic]
    )
    if version >= 9:
        partition.current_leader_epoch = r.current_leader_epoch
    if version >= 12:
        request.cluster_id = r.cluster_id
        partition.last_fetched_epoch = r.last_fetched_epoch
    if version >= 13:
        topic.topic_id = METADATA_TOPIC_ID
    else:
        topic.topic = METADATA_TOPIC
    if version >= 15:
        request.replica_state = fetch_req.ReplicaState(replica_id=r.replica.id)
    else:
        request.replica_id = r.replica.id
    if version >= 17:
        partition.replica_directory_id = _uuid(r.replica.directory_id)
    if version >= 18:
        partition.high_watermark = r.high_watermark
    return request


def _encode_snapshot_request(
    r: m.FetchSnapshotRequest, version: int
) -> snap_req.FetchSnapshotRequest:
    _check_version(snap_req.FetchSnapshotRequest, version)
    partition = snap_req.PartitionSnapshot(
        partition=METADATA_PARTITION,
        current_leader_epoch=r.current_leader_epoch,
        snapshot_id=snap_req.SnapshotId(end_offset=r.snapshot_id.offset, epoch=r.snapshot_id.epoch),
        position=r.position,
    )
    if version >= 1:
        partition.replica_directory_id = _uuid(r.replica.directory_id)
    return snap_req.FetchSnapshotRequest(
        cluster_id=r.cluster_id,
        replica_id=r.replica.id,
        max_bytes=r.max_bytes,
        topics=[snap_req.TopicSnapshot(name=METADATA_TOPIC, partitions=[partition])],
    )


def decode_request(wire: Message) -> m.Request:
    """The core request a decoded wire request stands for.

    Raises :class:`RaftCodecError` for a request about anything but the metadata
    partition, with the error Kafka's raft refuses it with: INVALID_REQUEST, except
    UNKNOWN_TOPIC_OR_PARTITION for a DescribeQuorum, or a FetchSnapshot of one other
    partition. :func:`error_response` builds the answer.
    """
    match wire:
        case vote_req.VoteRequest():
            v = _metadata_partition(wire.topics)
            if v is None:
                raise _invalid("VoteRequest")
            return m.VoteRequest(
                wire.cluster_id,
                _key(wire.voter_id, v.voter_directory_id),
                v.replica_epoch,
                _key(v.replica_id, v.replica_directory_id),
                v.last_offset_epoch,
                v.last_offset,
                v.pre_vote,
            )
        case begin_req.BeginQuorumEpochRequest():
            b = _metadata_partition(wire.topics)
            if b is None:
                raise _invalid("BeginQuorumEpochRequest")
            return m.BeginQuorumEpochRequest(
                wire.cluster_id,
                _key(wire.voter_id, b.voter_directory_id),
                b.leader_id,
                b.leader_epoch,
                _endpoints(wire.leader_endpoints),
            )
        case end_req.EndQuorumEpochRequest():
            e = _metadata_partition(wire.topics)
            if e is None:
                raise _invalid("EndQuorumEpochRequest")
            candidates = tuple(
                _key(c.candidate_id, c.candidate_directory_id) for c in e.preferred_candidates
            ) or tuple(ReplicaKey(i) for i in e.preferred_successors)
            return m.EndQuorumEpochRequest(
                wire.cluster_id,
                e.leader_id,
                e.leader_epoch,
                candidates,
                _endpoints(wire.leader_endpoints),
            )
        case fetch_req.FetchRequest():
            return _decode_fetch_request(wire)
        case snap_req.FetchSnapshotRequest():
            return _decode_snapshot_request(wire)
        case add_req.AddRaftVoterRequest():
            return m.AddVoterRequest(
                wire.cluster_id,
                _key(wire.voter_id, wire.voter_directory_id),
                _endpoints(wire.listeners),
                wire.timeout_ms,
            )
        case remove_req.RemoveRaftVoterRequest():
            return m.RemoveVoterRequest(
                wire.cluster_id, _key(wire.voter_id, wire.voter_directory_id)
            )
        case update_req.UpdateRaftVoterRequest():
            feature = wire.k_raft_version_feature
            return m.UpdateVoterRequest(
                wire.cluster_id,
                wire.current_leader_epoch,
                _key(wire.voter_id, wire.voter_directory_id),
                _endpoints(wire.listeners),
                (feature.min_supported_version, feature.max_supported_version),
            )
        case describe_req.DescribeQuorumRequest():
            if _metadata_partition(wire.topics) is None:
                raise RaftCodecError(_UNKNOWN, f"DescribeQuorumRequest not of {METADATA_TOPIC}-0")
            return m.DescribeQuorumRequest()
    raise TypeError(f"not a raft request: {type(wire).__name__}")


def _decode_fetch_request(wire: fetch_req.FetchRequest) -> m.FetchRequest:
    topics = wire.topics
    if (
        len(topics) != 1
        or not _is_metadata_topic(topics[0].topic_id, topics[0].topic)
        or len(topics[0].partitions) != 1
        or topics[0].partitions[0].partition != METADATA_PARTITION
    ):
        raise _invalid("FetchRequest")
    p = topics[0].partitions[0]
    # Before v15 the fetcher's id is the top-level ReplicaId; from v15 the ReplicaState.
    replica_id = wire.replica_id if wire.replica_id != -1 else wire.replica_state.replica_id
    return m.FetchRequest(
        wire.cluster_id,
        _key(replica_id, p.replica_directory_id),
        p.current_leader_epoch,
        p.fetch_offset,
        p.last_fetched_epoch,
        p.high_watermark,
        wire.max_wait_ms,
        wire.max_bytes,
    )


def _decode_snapshot_request(wire: snap_req.FetchSnapshotRequest) -> m.FetchSnapshotRequest:
    if len(wire.topics) != 1 or len(wire.topics[0].partitions) != 1:
        raise _invalid("FetchSnapshotRequest")
    topic = wire.topics[0]
    p = topic.partitions[0]
    if topic.name != METADATA_TOPIC or p.partition != METADATA_PARTITION:
        # One partition, but not ours: Kafka refuses that partition, not the request.
        raise RaftCodecError(_UNKNOWN, f"FetchSnapshotRequest for {topic.name}-{p.partition}")
    return m.FetchSnapshotRequest(
        wire.cluster_id,
        _key(wire.replica_id, p.replica_directory_id),
        p.current_leader_epoch,
        OffsetAndEpoch(p.snapshot_id.epoch, p.snapshot_id.end_offset),
        p.position,
        wire.max_bytes,
    )


def error_response(request: Message, version: int, error: ErrorCode) -> Message:
    """The answer refusing ``request`` with ``error`` at ``version``, where Kafka's raft puts
    it: UNKNOWN_TOPIC_OR_PARTITION of a FetchSnapshot or DescribeQuorum on each partition
    asked about, any other error at the top level (which Fetch has from v7 only)."""
    match request:
        case vote_req.VoteRequest():
            _check_version(vote_resp.VoteResponse, version)
            return vote_resp.VoteResponse(error_code=error)
        case begin_req.BeginQuorumEpochRequest():
            _check_version(begin_resp.BeginQuorumEpochResponse, version)
            return begin_resp.BeginQuorumEpochResponse(error_code=error)
        case end_req.EndQuorumEpochRequest():
            _check_version(end_resp.EndQuorumEpochResponse, version)
            return end_resp.EndQuorumEpochResponse(error_code=error)
        case fetch_req.FetchRequest():
            _check_version(fetch_resp.FetchResponse, version)
            fetch = fetch_resp.FetchResponse()
            if version >= 7:
                fetch.error_code = error
            return fetch
        case snap_req.FetchSnapshotRequest():
            _check_version(snap_resp.FetchSnapshotResponse, version)
            if error != _UNKNOWN:
                return snap_resp.FetchSnapshotResponse(error_code=error)
            return snap_resp.FetchSnapshotResponse(
                topics=[
                    snap_resp.TopicSnapshot(
                        name=t.name,
                        partitions=[
                            snap_resp.PartitionSnapshot(index=p.partition, error_code=error)
                            for p in t.partitions
                        ],
                    )
                    for t in request.topics
                ]
            )
        case describe_req.DescribeQuorumRequest():
            _check_version(describe_resp.DescribeQuorumResponse, version)
            message = error.message if version >= 2 else ""
            if error != _UNKNOWN:
                return describe_resp.DescribeQuorumResponse(error_code=error, error_message=message)
            return describe_resp.DescribeQuorumResponse(
                topics=[
                    describe_resp.TopicData(
                        topic_name=t.topic_name,
                        partitions=[
                            describe_resp.PartitionData(
                                partition_index=p.partition_index,
                                error_code=error,
                                error_message=message,
                            )
                            for p in t.partitions
                        ],
                    )
                    for t in request.topics
                ]
            )
        case add_req.AddRaftVoterRequest():
            _check_version(add_resp.AddRaftVoterResponse, version)
            return add_resp.AddRaftVoterResponse(error_code=error, error_message=error.message)
        case remove_req.RemoveRaftVoterRequest():
            _check_version(remove_resp.RemoveRaftVoterResponse, version)
            return remove_resp.RemoveRaftVoterResponse(
                error_code=error, error_message=error.message
            )
        case update_req.UpdateRaftVoterRequest():
            _check_version(update_resp.UpdateRaftVoterResponse, version)
            return update_resp.UpdateRaftVoterResponse(error_code=error)
    raise TypeError(f"not a raft request: {type(request).__name__}")


# -- responses -------------------------------------------------------------------------


def encode_response(
    message: m.Response,
    version: int,
    *,
    leader_endpoints: Sequence[Endpoint] = (),
    listener: str | None = None,
    nodes: Mapping[int, Sequence[Endpoint]] | None = None,
) -> Message:
    """The wire response for ``message`` at ``version``.

    Responses that name a leader carry its address (NodeEndpoints, from Vote v1,
    BeginQuorumEpoch v1, EndQuorumEpoch v1, Fetch v16, FetchSnapshot v1): the one of
    ``leader_endpoints`` on ``listener``, the listener the request came in by (the first
    when None), under the message's ``leader_id``. DescribeQuorum v2 lists ``nodes``, each
    voter's listeners by node id. Raises :class:`RaftCodecError` (UNSUPPORTED_VERSION)
    when the version cannot carry the message.
    """
    bare = _bare_refusal(message, version)
    if bare is not None:
        return bare
    match message:
        case m.VoteResponse():
            _check_version(vote_resp.VoteResponse, version)
            vote = vote_resp.VoteResponse(
                error_code=message.top_error,
                topics=[
                    vote_resp.TopicData(
                        topic_name=METADATA_TOPIC,
                        partitions=[
                            vote_resp.PartitionData(
                                partition_index=METADATA_PARTITION,
                                error_code=message.error,
                                leader_id=message.leader_id,
                                leader_epoch=message.leader_epoch,
                                vote_granted=message.vote_granted,
                            )
                        ],
                    )
                ],
            )
            address = _leader_address(message.leader_id, leader_endpoints, listener)
            if version >= 1 and address is not None:
                vote.node_endpoints = [
                    vote_resp.NodeEndpoint(
                        node_id=message.leader_id, host=address.host, port=address.port
                    )
                ]
            return vote
        case m.BeginQuorumEpochResponse():
            _check_version(begin_resp.BeginQuorumEpochResponse, version)
            return _epoch_response(begin_resp, message, version, leader_endpoints, listener)
        case m.EndQuorumEpochResponse():
            _check_version(end_resp.EndQuorumEpochResponse, version)
            return _epoch_response(end_resp, message, version, leader_endpoints, listener)
        case m.FetchResponse():
            return _encode_fetch_response(
                message, version, _leader_address(message.leader_id, leader_endpoints, listener)
            )
        case m.FetchSnapshotResponse():
            return _encode_snapshot_response(
                message, version, _leader_address(message.leader_id, leader_endpoints, listener)
            )
        case m.AddVoterResponse():
            _check_version(add_resp.AddRaftVoterResponse, version)
            return add_resp.AddRaftVoterResponse(
                error_code=message.error, error_message=message.message
            )
        case m.RemoveVoterResponse():
            _check_version(remove_resp.RemoveRaftVoterResponse, version)
            return remove_resp.RemoveRaftVoterResponse(
                error_code=message.error, error_message=message.message
            )
        case m.UpdateVoterResponse():
            _check_version(update_resp.UpdateRaftVoterResponse, version)
            address = _leader_address(message.leader_id, leader_endpoints, listener)
            return update_resp.UpdateRaftVoterResponse(
                error_code=message.error,
                current_leader=update_resp.CurrentLeader(
                    leader_id=message.leader_id,
                    leader_epoch=message.leader_epoch,
                    host=address.host if address else "",
                    port=address.port if address else 0,
                ),
            )
        case m.DescribeQuorumResponse():
            return _encode_describe_response(message, version, nodes or {})
    raise TypeError(f"not a raft response: {message!r}")


#: The answers Kafka gives a request refused as a whole (another cluster's) as the error
#: alone: no partition, no leader's address (Fetch from v12, which names the cluster).
_BARE_REFUSALS: Mapping[type, type[Message]] = MappingProxyType(
    {
        m.FetchResponse: fetch_resp.FetchResponse,
        m.VoteResponse: vote_resp.VoteResponse,
        m.BeginQuorumEpochResponse: begin_resp.BeginQuorumEpochResponse,
        m.EndQuorumEpochResponse: end_resp.EndQuorumEpochResponse,
        m.FetchSnapshotResponse: snap_resp.FetchSnapshotResponse,
    }
)


def _bare_refusal(message: m.Response, version: int) -> Message | None:
    wire = _BARE_REFUSALS.get(type(message))
    top = getattr(message, "top_error", ErrorCode.NONE)
    if wire is None or top == ErrorCode.NONE:
        return None
    if isinstance(message, m.FetchResponse) and version < 12:
        return None
    _check_version(wire, version)
    refusal = wire()
    refusal.error_code = top  # type: ignore[attr-defined]
    return refusal


def _epoch_response(
    module: ModuleType,
    message: m.BeginQuorumEpochResponse | m.EndQuorumEpochResponse,
    version: int,
    leader_endpoints: Sequence[Endpoint],
    listener: str | None,
) -> Message:
    """BeginQuorumEpoch's and EndQuorumEpoch's answers: the same fields in two modules."""
    name = type(message).__name__
    response: Message = getattr(module, name)(
        error_code=message.top_error,
        topics=[
            module.TopicData(
                topic_name=METADATA_TOPIC,
                partitions=[
                    module.PartitionData(
                        partition_index=METADATA_PARTITION,
                        error_code=message.error,
                        leader_id=message.leader_id,
                        leader_epoch=message.leader_epoch,
                    )
                ],
            )
        ],
    )
    address = _leader_address(message.leader_id, leader_endpoints, listener)
    if version >= 1 and address is not None:
        response.node_endpoints = [  # type: ignore[attr-defined]
            module.NodeEndpoint(node_id=message.leader_id, host=address.host, port=address.port)
        ]
    return response


def _records(records: object | None) -> bytes | bytearray | memoryview:
    if records is None:
        return b""  # Kafka's leader sends empty records, never null ones
    if not isinstance(records, bytes | bytearray | memoryview):
        raise TypeError(f"fetch records must be bytes, not {type(records).__name__}")
    return records


def _encode_fetch_response(
    r: m.FetchResponse, version: int, address: Endpoint | None
) -> fetch_resp.FetchResponse:
    _check_version(fetch_resp.FetchResponse, version)
    if version < 12:
        if r.diverging_epoch is not None or r.snapshot_id is not None:
            raise _unsendable("FetchResponse DivergingEpoch/SnapshotId", version)
        if (r.leader_id, r.leader_epoch) != (-1, -1):
            raise _unsendable("FetchResponse CurrentLeader", version)
    partition = fetch_resp.PartitionData(
        partition_index=METADATA_PARTITION,
        error_code=r.error,
        high_watermark=r.high_watermark,
        records=_records(r.records),
    )
    topic = fetch_resp.FetchableTopicResponse(partitions=[partition])
    response = fetch_resp.FetchResponse(responses=[topic])
    if version >= 5:
        partition.log_start_offset = r.log_start_offset
    if version >= 7:
        response.error_code = r.top_error
    if version >= 12:
        partition.current_leader = fetch_resp.LeaderIdAndEpoch(
            leader_id=r.leader_id, leader_epoch=r.leader_epoch
        )
        if r.diverging_epoch is not None:
            partition.diverging_epoch = fetch_resp.EpochEndOffset(
                epoch=r.diverging_epoch.epoch, end_offset=r.diverging_epoch.offset
            )
        if r.snapshot_id is not None:
            partition.snapshot_id = fetch_resp.SnapshotId(
                end_offset=r.snapshot_id.offset, epoch=r.snapshot_id.epoch
            )
    if version >= 13:
        topic.topic_id = METADATA_TOPIC_ID
    else:
        topic.topic = METADATA_TOPIC
    if version >= 16 and address is not None:
        response.node_endpoints = [
            fetch_resp.NodeEndpoint(node_id=r.leader_id, host=address.host, port=address.port)
        ]
    return response


def _encode_snapshot_response(
    r: m.FetchSnapshotResponse, version: int, address: Endpoint | None
) -> snap_resp.FetchSnapshotResponse:
    _check_version(snap_resp.FetchSnapshotResponse, version)
    partition = snap_resp.PartitionSnapshot(
        index=METADATA_PARTITION,
        error_code=r.error,
        snapshot_id=snap_resp.SnapshotId(
            end_offset=r.snapshot_id.offset, epoch=r.snapshot_id.epoch
        ),
        current_leader=snap_resp.LeaderIdAndEpoch(
            leader_id=r.leader_id, leader_epoch=r.leader_epoch
        ),
        size=r.size,
        position=r.position,
        unaligned_records=r.data,
    )
    response = snap_resp.FetchSnapshotResponse(
        error_code=r.top_error,
        topics=[snap_resp.TopicSnapshot(name=METADATA_TOPIC, partitions=[partition])],
    )
    if version >= 1 and address is not None:
        response.node_endpoints = [
            snap_resp.NodeEndpoint(node_id=r.leader_id, host=address.host, port=address.port)
        ]
    return response


def _encode_describe_response(
    r: m.DescribeQuorumResponse, version: int, nodes: Mapping[int, Sequence[Endpoint]]
) -> describe_resp.DescribeQuorumResponse:
    _check_version(describe_resp.DescribeQuorumResponse, version)

    def state(d: m.ReplicaDescription) -> describe_resp.ReplicaState:
        s = describe_resp.ReplicaState(replica_id=d.key.id, log_end_offset=d.log_end_offset)
        if version >= 1:
            s.last_fetch_timestamp = d.last_fetch_timestamp
            s.last_caught_up_timestamp = d.last_caught_up_timestamp
        if version >= 2:  # not ignorable: Kafka leaves it out before v2 rather than fail
            s.replica_directory_id = _uuid(d.key.directory_id)
        return s

    partition = describe_resp.PartitionData(
        partition_index=METADATA_PARTITION,
        error_code=r.error,
        leader_id=r.leader_id,
        leader_epoch=r.leader_epoch,
        high_watermark=r.high_watermark,
        current_voters=[state(d) for d in r.voters],
        observers=[state(d) for d in r.observers],
    )
    response = describe_resp.DescribeQuorumResponse(
        topics=[describe_resp.TopicData(topic_name=METADATA_TOPIC, partitions=[partition])]
    )
    if version >= 2:
        if r.error != ErrorCode.NONE:
            partition.error_message = r.error.message
        response.nodes = [
            describe_resp.Node(
                node_id=node_id,
                listeners=[
                    describe_resp.Listener(name=e.listener, host=e.host, port=e.port)
                    for e in endpoints
                ],
            )
            for node_id, endpoints in nodes.items()
        ]
    return response


def decode_response(wire: Message, *, listener: str = "") -> Decoded:
    """The core response a decoded wire response stands for, and the addresses it names.

    NodeEndpoints give only host and port, on the listener the request was sent to:
    ``listener`` names it in the :class:`Endpoint` values returned. A response with a
    top-level error and no partition (Kafka's short error answer) decodes with the
    partition's fields unknown. Raises :class:`RaftCodecError` (INVALID_REQUEST) for a
    response about any other partition.
    """
    match wire:
        case vote_resp.VoteResponse():
            top = _error(wire.error_code)
            v = _response_partition("VoteResponse", top, wire.topics)
            if v is None:
                return Decoded(m.VoteResponse(ErrorCode.NONE, -1, -1, False, top))
            return Decoded(
                m.VoteResponse(
                    _error(v.error_code), v.leader_id, v.leader_epoch, v.vote_granted, top
                ),
                _leader_endpoints(wire.node_endpoints, v.leader_id, listener),
            )
        case begin_resp.BeginQuorumEpochResponse():
            top = _error(wire.error_code)
            b = _response_partition("BeginQuorumEpochResponse", top, wire.topics)
            if b is None:
                return Decoded(m.BeginQuorumEpochResponse(ErrorCode.NONE, -1, -1, top))
            return Decoded(
                m.BeginQuorumEpochResponse(_error(b.error_code), b.leader_id, b.leader_epoch, top),
                _leader_endpoints(wire.node_endpoints, b.leader_id, listener),
            )
        case end_resp.EndQuorumEpochResponse():
            top = _error(wire.error_code)
            e = _response_partition("EndQuorumEpochResponse", top, wire.topics)
            if e is None:
                return Decoded(m.EndQuorumEpochResponse(ErrorCode.NONE, -1, -1, top))
            return Decoded(
                m.EndQuorumEpochResponse(_error(e.error_code), e.leader_id, e.leader_epoch, top),
                _leader_endpoints(wire.node_endpoints, e.leader_id, listener),
            )
        case fetch_resp.FetchResponse():
            return _decode_fetch_response(wire, listener)
        case snap_resp.FetchSnapshotResponse():
            return _decode_snapshot_response(wire, listener)
        case add_resp.AddRaftVoterResponse():
            return Decoded(m.AddVoterResponse(_error(wire.error_code), wire.error_message))
        case remove_resp.RemoveRaftVoterResponse():
            return Decoded(m.RemoveVoterResponse(_error(wire.error_code), wire.error_message))
        case update_resp.UpdateRaftVoterResponse():
            leader = wire.current_leader
            named = leader.leader_id >= 0 and leader.host
            return Decoded(
                m.UpdateVoterResponse(
                    _error(wire.error_code), leader.leader_id, leader.leader_epoch
                ),
                (Endpoint(listener, leader.host, leader.port),) if named else (),
            )
        case describe_resp.DescribeQuorumResponse():
            return _decode_describe_response(wire)
    raise TypeError(f"not a raft response: {type(wire).__name__}")


def _response_partition(name: str, top: ErrorCode, topics: Sequence[_Topic[_P]]) -> _P | None:
    """The metadata partition of a response; None for a bare top-level error."""
    if not topics and top != ErrorCode.NONE:
        return None
    partition = _metadata_partition(topics)
    if partition is None:
        raise _invalid(name)
    return partition


def _decode_fetch_response(wire: fetch_resp.FetchResponse, listener: str) -> Decoded:
    top = _error(wire.error_code)
    responses = wire.responses
    if not responses and top != ErrorCode.NONE:
        return Decoded(m.FetchResponse(ErrorCode.NONE, -1, -1, -1, -1, top_error=top))
    if (
        len(responses) != 1
        or not _is_metadata_topic(responses[0].topic_id, responses[0].topic)
        or len(responses[0].partitions) != 1
        or responses[0].partitions[0].partition_index != METADATA_PARTITION
    ):
        raise _invalid("FetchResponse")
    p = responses[0].partitions[0]
    leader = p.current_leader
    records = p.records
    return Decoded(
        m.FetchResponse(
            _error(p.error_code),
            leader.leader_id,
            leader.leader_epoch,
            p.high_watermark,
            p.log_start_offset,
            bytes(records) if records else None,
            _position(p.diverging_epoch.epoch, p.diverging_epoch.end_offset),
            _position(p.snapshot_id.epoch, p.snapshot_id.end_offset),
            top,
        ),
        _leader_endpoints(wire.node_endpoints, leader.leader_id, listener),
    )


def _decode_snapshot_response(wire: snap_resp.FetchSnapshotResponse, listener: str) -> Decoded:
    top = _error(wire.error_code)
    if not wire.topics and top != ErrorCode.NONE:
        return Decoded(
            m.FetchSnapshotResponse(ErrorCode.NONE, -1, -1, OffsetAndEpoch(-1, -1), top_error=top)
        )
    if (
        len(wire.topics) != 1
        or wire.topics[0].name != METADATA_TOPIC
        or len(wire.topics[0].partitions) != 1
        or wire.topics[0].partitions[0].index != METADATA_PARTITION
    ):
        raise _invalid("FetchSnapshotResponse")
    p = wire.topics[0].partitions[0]
    leader = p.current_leader
    return Decoded(
        m.FetchSnapshotResponse(
            _error(p.error_code),
            leader.leader_id,
            leader.leader_epoch,
            OffsetAndEpoch(p.snapshot_id.epoch, p.snapshot_id.end_offset),
            p.size,
            p.position,
            bytes(p.unaligned_records) if p.unaligned_records is not None else b"",
            top,
        ),
        _leader_endpoints(wire.node_endpoints, leader.leader_id, listener),
    )


def _decode_describe_response(wire: describe_resp.DescribeQuorumResponse) -> Decoded:
    top = _error(wire.error_code)
    p = _response_partition("DescribeQuorumResponse", top, wire.topics)
    if p is None:  # the core keeps one error: a bare top-level one goes there
        return Decoded(m.DescribeQuorumResponse(top, -1, -1, -1))

    def description(s: describe_resp.ReplicaState) -> m.ReplicaDescription:
        return m.ReplicaDescription(
            _key(s.replica_id, s.replica_directory_id),
            s.log_end_offset,
            s.last_fetch_timestamp,
            s.last_caught_up_timestamp,
        )

    nodes = {n.node_id: _endpoints(n.listeners) for n in wire.nodes}
    return Decoded(
        m.DescribeQuorumResponse(
            top if top != ErrorCode.NONE else _error(p.error_code),
            p.leader_id,
            p.leader_epoch,
            p.high_watermark,
            tuple(description(s) for s in p.current_voters),
            tuple(description(s) for s in p.observers),
        ),
        nodes.get(p.leader_id, ()),
        MappingProxyType(nodes),
    )

"""The raft codec: core tuples to Kafka's wire classes and back, through real bytes.

Round trips run at every version of every message, asserting what each version keeps;
golden frames, written out by hand from the 4.4 specs, catch a field put in the wrong
slot (which a round trip through the same mapping both ways could not).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import TypeVar, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from millpond.controller.raft import messages as m
from millpond.controller.raft.codec import (
    API_KEY_OF,
    METADATA_TOPIC_ID,
    SUPPORTED_VERSIONS,
    Decoded,
    RaftCodecError,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    error_response,
)
from millpond.controller.raft.keys import Endpoint, OffsetAndEpoch, ReplicaKey
from millpond.wire.api import APIS, ApiKey
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api import begin_quorum_epoch_response as begin_resp
from millpond.wire.generated.api import describe_quorum_request as describe_req
from millpond.wire.generated.api import describe_quorum_response as describe_resp
from millpond.wire.generated.api import fetch_request as fetch_req
from millpond.wire.generated.api import fetch_response as fetch_resp
from millpond.wire.generated.api import fetch_snapshot_request as snap_req
from millpond.wire.generated.api import fetch_snapshot_response as snap_resp
from millpond.wire.generated.api import vote_request as vote_req
from millpond.wire.generated.api import vote_response as vote_resp
from millpond.wire.message import Message
from millpond.wire.primitives import ZERO_UUID

E = ErrorCode
TOPIC = "__cluster_metadata"
NOT_SUPPORTED_HW = 2**63 - 1  # Fetch's HighWatermark when the fetcher is older than v18
EXAMPLES = settings(max_examples=20, deadline=None)


def versions(api: ApiKey) -> range:
    low, high = SUPPORTED_VERSIONS[api]
    return range(low, high + 1)


# -- strategies --------------------------------------------------------------------------

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
ERRORS = st.sampled_from(list(ErrorCode))
TEXT = st.text(max_size=6)
CLUSTER = st.none() | TEXT
DIRECTORY = st.sampled_from([None, ZERO_UUID]) | st.binary(min_size=16, max_size=16)
KEYS = st.builds(ReplicaKey, INT32, DIRECTORY)
ENDPOINTS = st.lists(st.builds(Endpoint, TEXT, TEXT, st.integers(0, 65535)), max_size=3).map(tuple)
POSITIONS = st.builds(OffsetAndEpoch, INT32, INT64)
EPOCHS = st.integers(-1, 2**31 - 1)  # -1 is "unknown" on the wire, so an epoch is never less

VOTE_REQUESTS = st.builds(m.VoteRequest, CLUSTER, KEYS, INT32, KEYS, INT32, INT64, st.booleans())
VOTE_RESPONSES = st.builds(m.VoteResponse, ERRORS, INT32, INT32, st.booleans(), ERRORS)
BEGIN_REQUESTS = st.builds(m.BeginQuorumEpochRequest, CLUSTER, KEYS, INT32, INT32, ENDPOINTS)
BEGIN_RESPONSES = st.builds(m.BeginQuorumEpochResponse, ERRORS, INT32, INT32, ERRORS)
END_REQUESTS = st.builds(
    m.EndQuorumEpochRequest,
    CLUSTER,
    INT32,
    INT32,
    st.lists(KEYS, max_size=3).map(tuple),
    ENDPOINTS,
)
END_RESPONSES = st.builds(m.EndQuorumEpochResponse, ERRORS, INT32, INT32, ERRORS)
FETCH_REQUESTS = st.builds(m.FetchRequest, CLUSTER, KEYS, INT32, INT64, INT32, INT64, INT32, INT32)
FETCH_RESPONSES = st.builds(
    m.FetchResponse,
    ERRORS,
    INT32,
    EPOCHS,
    INT64,
    INT64,
    st.none() | st.binary(min_size=1, max_size=20),
    st.none() | POSITIONS,
    st.none() | POSITIONS,
    ERRORS,
)
SNAPSHOT_REQUESTS = st.builds(m.FetchSnapshotRequest, CLUSTER, KEYS, INT32, POSITIONS, INT64, INT32)
SNAPSHOT_RESPONSES = st.builds(
    m.FetchSnapshotResponse,
    ERRORS,
    INT32,
    INT32,
    POSITIONS,
    INT64,
    INT64,
    st.binary(max_size=20),
    ERRORS,
)
ADD_REQUESTS = st.builds(m.AddVoterRequest, CLUSTER, KEYS, ENDPOINTS, INT32)
ADD_RESPONSES = st.builds(m.AddVoterResponse, ERRORS, st.none() | TEXT)
REMOVE_REQUESTS = st.builds(m.RemoveVoterRequest, CLUSTER, KEYS)
REMOVE_RESPONSES = st.builds(m.RemoveVoterResponse, ERRORS, st.none() | TEXT)
INT16 = st.integers(-(2**15), 2**15 - 1)
UPDATE_REQUESTS = st.builds(
    m.UpdateVoterRequest, CLUSTER, INT32, KEYS, ENDPOINTS, st.tuples(INT16, INT16)
)
UPDATE_RESPONSES = st.builds(m.UpdateVoterResponse, ERRORS, INT32, INT32)
DESCRIPTIONS = st.lists(st.builds(m.ReplicaDescription, KEYS, INT64, INT64, INT64), max_size=3).map(
    tuple
)
DESCRIBE_RESPONSES = st.builds(
    m.DescribeQuorumResponse, ERRORS, INT32, INT32, INT64, DESCRIPTIONS, DESCRIPTIONS
)


# -- helpers ---------------------------------------------------------------------------


def through_bytes(wire: Message, version: int) -> Message:
    return type(wire).decode(wire.encode(version), version)


def request_trip(message: m.Request, version: int) -> m.Request:
    return decode_request(through_bytes(encode_request(message, version), version))


def response_trip(
    message: m.Response,
    version: int,
    *,
    leader_endpoints: tuple[Endpoint, ...] = (),
    listener: str | None = None,
    nodes: dict[int, tuple[Endpoint, ...]] | None = None,
) -> Decoded:
    wire = encode_response(
        message, version, leader_endpoints=leader_endpoints, listener=listener, nodes=nodes
    )
    return decode_response(through_bytes(wire, version), listener="CONTROLLER")


def known(key: ReplicaKey) -> ReplicaKey:
    """The key as it comes back: the all-zero directory id is the wire's "unknown"."""
    return key._replace(directory_id=None) if key.directory_id == ZERO_UUID else key


def unsupported(excinfo: pytest.ExceptionInfo[RaftCodecError]) -> bool:
    return excinfo.value.error == E.UNSUPPORTED_VERSION


# -- the tables ------------------------------------------------------------------------


def test_supported_versions_are_the_specs_ranges() -> None:
    assert set(SUPPORTED_VERSIONS) == set(API_KEY_OF.values())
    for api, (low, high) in SUPPORTED_VERSIONS.items():
        info = APIS[api]
        assert (info.min_version, info.max_version) == (low, high)
        assert (low, high) == info.request_class.VALID_VERSIONS
        assert (low, high) == info.response_class.VALID_VERSIONS


def test_every_request_type_has_its_api_key() -> None:
    assert set(API_KEY_OF) == set(m.REQUESTS)
    numbers = {t.__name__: int(k) for t, k in API_KEY_OF.items()}
    assert numbers == {
        "VoteRequest": 52,
        "BeginQuorumEpochRequest": 53,
        "EndQuorumEpochRequest": 54,
        "FetchRequest": 1,
        "FetchSnapshotRequest": 59,
        "AddVoterRequest": 80,
        "UpdateVoterRequest": 82,
        "RemoveVoterRequest": 81,
        "DescribeQuorumRequest": 55,
    }


def test_metadata_topic_id_is_kafkas() -> None:
    assert METADATA_TOPIC_ID == b"\x00" * 15 + b"\x01"


# -- round trips, per message and version ---------------------------------------------


R = TypeVar("R", bound=m.Response)


def bare(response: R) -> R:
    """What a response refusing the whole request (a top-level error) comes back as:
    the error alone, the partition's fields unknown, as Kafka sends it."""
    top = getattr(response, "top_error", E.NONE)
    if top == E.NONE:
        return response
    found: m.Response = response
    match response:
        case m.VoteResponse():
            found = m.VoteResponse(E.NONE, -1, -1, False, top)
        case m.BeginQuorumEpochResponse() | m.EndQuorumEpochResponse():
            found = type(response)(E.NONE, -1, -1, top)
        case m.FetchResponse():
            found = m.FetchResponse(E.NONE, -1, -1, -1, -1, top_error=top)
        case m.FetchSnapshotResponse():
            found = m.FetchSnapshotResponse(E.NONE, -1, -1, OffsetAndEpoch(-1, -1), top_error=top)
    return cast(R, found)


@pytest.mark.parametrize("version", versions(ApiKey.VOTE))
@EXAMPLES
@given(request=VOTE_REQUESTS)
def test_vote_request(version: int, request: m.VoteRequest) -> None:
    if request.pre_vote and version < 2:
        # Turning a pre-vote into a vote would change what it asks: refused, as Kafka does.
        with pytest.raises(RaftCodecError) as excinfo:
            encode_request(request, version)
        assert unsupported(excinfo)
        return
    expected = request._replace(voter=known(request.voter), candidate=known(request.candidate))
    if version == 0:  # no VoterId nor directory ids before KIP-853
        expected = expected._replace(
            voter=ReplicaKey(-1), candidate=ReplicaKey(request.candidate.id)
        )
    assert request_trip(request, version) == expected


@pytest.mark.parametrize("version", versions(ApiKey.VOTE))
@EXAMPLES
@given(response=VOTE_RESPONSES)
def test_vote_response(version: int, response: m.VoteResponse) -> None:
    assert response_trip(response, version) == Decoded(bare(response))


@pytest.mark.parametrize("version", versions(ApiKey.BEGIN_QUORUM_EPOCH))
@EXAMPLES
@given(request=BEGIN_REQUESTS)
def test_begin_quorum_epoch_request(version: int, request: m.BeginQuorumEpochRequest) -> None:
    expected = request._replace(voter=known(request.voter))
    if version == 0:
        expected = expected._replace(voter=ReplicaKey(-1), leader_endpoints=())
    assert request_trip(request, version) == expected


@pytest.mark.parametrize("version", versions(ApiKey.BEGIN_QUORUM_EPOCH))
@EXAMPLES
@given(response=BEGIN_RESPONSES)
def test_begin_quorum_epoch_response(version: int, response: m.BeginQuorumEpochResponse) -> None:
    assert response_trip(response, version) == Decoded(bare(response))


@pytest.mark.parametrize("version", versions(ApiKey.END_QUORUM_EPOCH))
@EXAMPLES
@given(request=END_REQUESTS)
def test_end_quorum_epoch_request(version: int, request: m.EndQuorumEpochRequest) -> None:
    if version == 0:  # PreferredSuccessors: ids only; no leader endpoints
        expected = request._replace(
            preferred_candidates=tuple(ReplicaKey(k.id) for k in request.preferred_candidates),
            leader_endpoints=(),
        )
    else:
        expected = request._replace(
            preferred_candidates=tuple(known(k) for k in request.preferred_candidates)
        )
    assert request_trip(request, version) == expected


@pytest.mark.parametrize("version", versions(ApiKey.END_QUORUM_EPOCH))
@EXAMPLES
@given(response=END_RESPONSES)
def test_end_quorum_epoch_response(version: int, response: m.EndQuorumEpochResponse) -> None:
    assert response_trip(response, version) == Decoded(bare(response))


@pytest.mark.parametrize("version", versions(ApiKey.FETCH))
@EXAMPLES
@given(request=FETCH_REQUESTS)
def test_fetch_request(version: int, request: m.FetchRequest) -> None:
    if version < 12:
        if request.last_fetched_epoch != -1:
            with pytest.raises(RaftCodecError) as excinfo:
                encode_request(request, version)
            assert unsupported(excinfo)
        request = request._replace(last_fetched_epoch=-1)
    expected = request._replace(replica=known(request.replica))
    if version < 9:
        expected = expected._replace(current_leader_epoch=-1)
    if version < 12:
        expected = expected._replace(cluster_id=None)
    if version < 17:
        expected = expected._replace(replica=ReplicaKey(request.replica.id))
    if version < 18:  # the fetcher's high watermark: "not supported" before KIP-1166
        expected = expected._replace(high_watermark=NOT_SUPPORTED_HW)
    assert request_trip(request, version) == expected


@pytest.mark.parametrize("version", versions(ApiKey.FETCH))
@EXAMPLES
@given(response=FETCH_RESPONSES)
def test_fetch_response(version: int, response: m.FetchResponse) -> None:
    if version < 12:
        if (
            response.diverging_epoch is not None
            or response.snapshot_id is not None
            or (response.leader_id, response.leader_epoch) != (-1, -1)
        ):
            with pytest.raises(RaftCodecError) as excinfo:
                encode_response(response, version)
            assert unsupported(excinfo)
        response = response._replace(
            leader_id=-1, leader_epoch=-1, diverging_epoch=None, snapshot_id=None
        )
    expected = response
    if version < 5:
        expected = expected._replace(log_start_offset=-1)
    if version < 7:  # no top-level error code yet (ignorable, so left out)
        expected = expected._replace(top_error=E.NONE)
    if version >= 12:  # a refusal of the whole request names the cluster from v12
        expected = bare(expected)
    decoded = response_trip(response, version)
    assert decoded == Decoded(expected)
    assert isinstance(decoded.message, m.FetchResponse)
    assert decoded.message.records is None or type(decoded.message.records) is bytes


@pytest.mark.parametrize("version", versions(ApiKey.FETCH_SNAPSHOT))
@EXAMPLES
@given(request=SNAPSHOT_REQUESTS)
def test_fetch_snapshot_request(version: int, request: m.FetchSnapshotRequest) -> None:
    replica = known(request.replica) if version >= 1 else ReplicaKey(request.replica.id)
    assert request_trip(request, version) == request._replace(replica=replica)


@pytest.mark.parametrize("version", versions(ApiKey.FETCH_SNAPSHOT))
@EXAMPLES
@given(response=SNAPSHOT_RESPONSES)
def test_fetch_snapshot_response(version: int, response: m.FetchSnapshotResponse) -> None:
    decoded = response_trip(response, version)
    assert decoded == Decoded(bare(response))
    assert isinstance(decoded.message, m.FetchSnapshotResponse)
    assert type(decoded.message.data) is bytes


@pytest.mark.parametrize("version", versions(ApiKey.ADD_RAFT_VOTER))
@EXAMPLES
@given(request=ADD_REQUESTS, response=ADD_RESPONSES)
def test_add_voter(version: int, request: m.AddVoterRequest, response: m.AddVoterResponse) -> None:
    assert request_trip(request, version) == request._replace(voter=known(request.voter))
    assert response_trip(response, version) == Decoded(response)


@EXAMPLES
@given(request=REMOVE_REQUESTS, response=REMOVE_RESPONSES)
def test_remove_voter(request: m.RemoveVoterRequest, response: m.RemoveVoterResponse) -> None:
    assert request_trip(request, 0) == request._replace(voter=known(request.voter))
    assert response_trip(response, 0) == Decoded(response)


@EXAMPLES
@given(request=UPDATE_REQUESTS, response=UPDATE_RESPONSES)
def test_update_voter(request: m.UpdateVoterRequest, response: m.UpdateVoterResponse) -> None:
    assert request_trip(request, 0) == request._replace(voter=known(request.voter))
    endpoint = (Endpoint("CONTROLLER", "h1", 9093),)
    named = response_trip(response, 0, leader_endpoints=endpoint, listener="CONTROLLER")
    assert named == Decoded(response, endpoint if response.leader_id >= 0 else ())


@pytest.mark.parametrize("version", versions(ApiKey.DESCRIBE_QUORUM))
def test_describe_quorum_request(version: int) -> None:
    assert request_trip(m.DescribeQuorumRequest(), version) == m.DescribeQuorumRequest()


@pytest.mark.parametrize("version", versions(ApiKey.DESCRIBE_QUORUM))
@EXAMPLES
@given(response=DESCRIBE_RESPONSES)
def test_describe_quorum_response(version: int, response: m.DescribeQuorumResponse) -> None:
    def survives(d: m.ReplicaDescription) -> m.ReplicaDescription:
        if version == 0:  # no timestamps (KIP-836) nor directory ids (KIP-853)
            return d._replace(
                key=ReplicaKey(d.key.id), last_fetch_timestamp=-1, last_caught_up_timestamp=-1
            )
        if version == 1:
            return d._replace(key=ReplicaKey(d.key.id))
        return d._replace(key=known(d.key))

    expected = response._replace(
        voters=tuple(survives(d) for d in response.voters),
        observers=tuple(survives(d) for d in response.observers),
    )
    assert response_trip(response, version) == Decoded(expected)


# -- what cannot be sent -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("message", "version"),
    [
        (m.VoteRequest(None, ReplicaKey(1), 1, ReplicaKey(2), 0, 0, False), 3),
        (m.FetchRequest(None, ReplicaKey(1), 1, 0, -1, -1, 0, 0), 3),
        (m.FetchRequest(None, ReplicaKey(1), 1, 0, -1, -1, 0, 0), 19),
        (m.RemoveVoterRequest(None, ReplicaKey(1)), 1),
    ],
)
def test_a_version_the_api_lacks_is_refused(message: m.Request, version: int) -> None:
    with pytest.raises(RaftCodecError) as excinfo:
        encode_request(message, version)
    assert unsupported(excinfo)


def test_fetch_records_must_be_bytes() -> None:
    with pytest.raises(TypeError):
        encode_response(m.FetchResponse(E.NONE, 1, 1, 0, 0, records=[1, 2]), 17)


# -- requests about other partitions -----------------------------------------------------


def vote_wire() -> vote_req.VoteRequest:
    wire = encode_request(m.VoteRequest("c", ReplicaKey(1), 2, ReplicaKey(2), 1, 5, False), 2)
    assert isinstance(wire, vote_req.VoteRequest)
    return wire


def fetch_wire(version: int = 17) -> fetch_req.FetchRequest:
    request = m.FetchRequest("c", ReplicaKey(2), 3, 10, 2, 5, 500, 1024)
    wire = encode_request(request, version)
    assert isinstance(wire, fetch_req.FetchRequest)
    return wire


def snapshot_wire() -> snap_req.FetchSnapshotRequest:
    request = m.FetchSnapshotRequest("c", ReplicaKey(2), 3, OffsetAndEpoch(1, 10), 0, 1024)
    wire = encode_request(request, 1)
    assert isinstance(wire, snap_req.FetchSnapshotRequest)
    return wire


def _renamed_vote() -> Message:
    wire = vote_wire()
    wire.topics[0].topic_name = "orders"
    return wire


def _vote_partition_1() -> Message:
    wire = vote_wire()
    wire.topics[0].partitions[0].partition_index = 1
    return wire


def _vote_two_partitions() -> Message:
    wire = vote_wire()
    wire.topics[0].partitions.append(vote_req.PartitionData(partition_index=1))
    return wire


def _vote_no_topics() -> Message:
    wire = vote_wire()
    wire.topics = []
    return wire


def _fetch_other_topic_id() -> Message:
    wire = fetch_wire()
    wire.topics[0].topic_id = b"\x07" * 16
    return wire


def _fetch_by_name_at_v13() -> Message:
    wire = fetch_wire()
    wire.topics[0].topic_id = ZERO_UUID
    wire.topics[0].topic = "orders"
    return wire


def _fetch_partition_1() -> Message:
    wire = fetch_wire()
    wire.topics[0].partitions[0].partition = 1
    return wire


def _snapshot_two_topics() -> Message:
    wire = snapshot_wire()
    wire.topics.append(snap_req.TopicSnapshot(name="orders"))
    return wire


def _snapshot_other_topic() -> Message:
    wire = snapshot_wire()
    wire.topics[0].name = "orders"
    return wire


def _describe_other() -> Message:
    return describe_req.DescribeQuorumRequest(
        topics=[
            describe_req.TopicData(
                topic_name="orders",
                partitions=[describe_req.PartitionData(partition_index=i) for i in (0, 4)],
            )
        ]
    )


@pytest.mark.parametrize(
    ("build", "error"),
    [
        (_renamed_vote, E.INVALID_REQUEST),
        (_vote_partition_1, E.INVALID_REQUEST),
        (_vote_two_partitions, E.INVALID_REQUEST),
        (_vote_no_topics, E.INVALID_REQUEST),
        (_fetch_other_topic_id, E.INVALID_REQUEST),
        (_fetch_by_name_at_v13, E.INVALID_REQUEST),
        (_fetch_partition_1, E.INVALID_REQUEST),
        (_snapshot_two_topics, E.INVALID_REQUEST),
        (_snapshot_other_topic, E.UNKNOWN_TOPIC_OR_PARTITION),
        (_describe_other, E.UNKNOWN_TOPIC_OR_PARTITION),
    ],
)
def test_a_request_about_another_partition_is_refused(
    build: Callable[[], Message], error: ErrorCode
) -> None:
    with pytest.raises(RaftCodecError) as excinfo:
        decode_request(build())
    assert excinfo.value.error == error


def test_fetch_before_v13_names_the_topic() -> None:
    wire = fetch_wire(12)
    assert wire.topics[0].topic == TOPIC and wire.topics[0].topic_id == ZERO_UUID
    assert isinstance(decode_request(through_bytes(wire, 12)), m.FetchRequest)
    wire13 = fetch_wire(13)
    assert wire13.topics[0].topic == "" and wire13.topics[0].topic_id == METADATA_TOPIC_ID


@pytest.mark.parametrize(
    "request_message",
    [
        m.VoteRequest("c", ReplicaKey(1), 2, ReplicaKey(2), 1, 5, False),
        m.BeginQuorumEpochRequest("c", ReplicaKey(1), 2, 3),
        m.EndQuorumEpochRequest("c", 2, 3, ()),
        m.FetchRequest("c", ReplicaKey(2), 3, 10, 2, 5, 500, 1024),
        m.FetchSnapshotRequest("c", ReplicaKey(2), 3, OffsetAndEpoch(1, 10), 0, 1024),
    ],
)
def test_invalid_request_is_answered_at_the_top_level(request_message: m.Request) -> None:
    """Kafka's raft answers just the top-level error; the requester reads it before any
    partition, so the bare answer decodes with the partition's fields unknown."""
    api = API_KEY_OF[type(request_message)]
    for version in versions(api):
        if isinstance(request_message, m.FetchRequest) and version < 12:
            continue  # the request itself (with LastFetchedEpoch) needs v12
        wire = encode_request(request_message, version)
        answer = through_bytes(error_response(wire, version, E.INVALID_REQUEST), version)
        message = decode_response(answer).message
        assert isinstance(
            message,
            m.VoteResponse
            | m.BeginQuorumEpochResponse
            | m.EndQuorumEpochResponse
            | m.FetchResponse
            | m.FetchSnapshotResponse,
        )
        assert (message.error, message.top_error) == (E.NONE, E.INVALID_REQUEST)
        assert (message.leader_id, message.leader_epoch) == (-1, -1)


def test_fetch_before_v7_has_no_place_for_a_top_level_error() -> None:
    answer = error_response(fetch_wire(), 6, E.INVALID_REQUEST)
    assert isinstance(answer, fetch_resp.FetchResponse)
    assert answer.error_code == 0 and answer.responses == []
    through_bytes(answer, 6)


def test_fetch_snapshot_of_another_partition_is_answered_for_that_partition() -> None:
    wire = _snapshot_other_topic()
    answer = error_response(wire, 1, E.UNKNOWN_TOPIC_OR_PARTITION)
    back = through_bytes(answer, 1)
    assert isinstance(back, snap_resp.FetchSnapshotResponse)
    assert back.error_code == E.NONE
    assert [(t.name, [(p.index, p.error_code) for p in t.partitions]) for t in back.topics] == [
        ("orders", [(0, E.UNKNOWN_TOPIC_OR_PARTITION)])
    ]
    with pytest.raises(RaftCodecError):  # and a requester would not take it for its own
        decode_response(back)


@pytest.mark.parametrize("version", versions(ApiKey.DESCRIBE_QUORUM))
def test_describe_quorum_of_other_partitions_is_answered_per_partition(version: int) -> None:
    answer = error_response(_describe_other(), version, E.UNKNOWN_TOPIC_OR_PARTITION)
    back = through_bytes(answer, version)
    assert isinstance(back, describe_resp.DescribeQuorumResponse)
    assert back.error_code == E.NONE
    partitions = back.topics[0].partitions
    assert back.topics[0].topic_name == "orders"
    assert [(p.partition_index, p.error_code) for p in partitions] == [
        (0, E.UNKNOWN_TOPIC_OR_PARTITION),
        (4, E.UNKNOWN_TOPIC_OR_PARTITION),
    ]
    if version >= 2:
        assert partitions[0].error_message == E.UNKNOWN_TOPIC_OR_PARTITION.message


def test_voter_changes_are_refused_with_code_and_message() -> None:
    add = encode_request(m.AddVoterRequest("c", ReplicaKey(4), (), 1000), 1)
    remove = encode_request(m.RemoveVoterRequest("c", ReplicaKey(4)), 0)
    for wire, version, kind in ((add, 1, m.AddVoterResponse), (remove, 0, m.RemoveVoterResponse)):
        answer = through_bytes(error_response(wire, version, E.NOT_LEADER_OR_FOLLOWER), version)
        decoded = decode_response(answer).message
        assert decoded == kind(E.NOT_LEADER_OR_FOLLOWER, E.NOT_LEADER_OR_FOLLOWER.message)


def test_a_response_about_another_partition_is_refused() -> None:
    wire = encode_response(m.VoteResponse(E.NONE, 1, 2, True), 2)
    assert isinstance(wire, vote_resp.VoteResponse)
    wire.topics[0].topic_name = "orders"
    with pytest.raises(RaftCodecError) as excinfo:
        decode_response(wire)
    assert excinfo.value.error == E.INVALID_REQUEST
    with pytest.raises(RaftCodecError):  # no partition and no error either
        decode_response(vote_resp.VoteResponse())


def test_describe_quorum_top_level_error_is_the_cores_error() -> None:
    answer = describe_resp.DescribeQuorumResponse(error_code=E.CLUSTER_AUTHORIZATION_FAILED)
    decoded = decode_response(through_bytes(answer, 2))
    assert decoded.message == m.DescribeQuorumResponse(E.CLUSTER_AUTHORIZATION_FAILED, -1, -1, -1)


def test_an_error_code_this_build_does_not_know_reads_as_unknown_server_error() -> None:
    wire = encode_response(m.BeginQuorumEpochResponse(E.NONE, 1, 2), 1)
    assert isinstance(wire, begin_resp.BeginQuorumEpochResponse)
    wire.topics[0].partitions[0].error_code = 32000
    message = decode_response(through_bytes(wire, 1)).message
    assert isinstance(message, m.BeginQuorumEpochResponse)
    assert message.error == E.UNKNOWN_SERVER_ERROR


def test_no_diverging_epoch_nor_snapshot_is_none() -> None:
    wire = encode_response(m.FetchResponse(E.NONE, 1, 2, 3, 0), 17)
    assert isinstance(wire, fetch_resp.FetchResponse)
    partition = wire.responses[0].partitions[0]
    assert (partition.diverging_epoch.epoch, partition.diverging_epoch.end_offset) == (-1, -1)
    assert (partition.snapshot_id.epoch, partition.snapshot_id.end_offset) == (-1, -1)
    assert partition.records == b""  # Kafka's leader sends empty records, not null
    message = decode_response(through_bytes(wire, 17)).message
    assert message == m.FetchResponse(E.NONE, 1, 2, 3, 0)


# -- the addresses responses carry -------------------------------------------------------

LEADER = 3
LEADER_ENDPOINTS = (
    Endpoint("PLAINTEXT", "a.example", 9092),
    Endpoint("CONTROLLER", "c.example", 9093),
)
#: The responses that name the leader's address (from its id), their API, and the version
#: the address came in.
ADDRESSED: list[tuple[Callable[[int], m.Response], ApiKey, int]] = [
    (lambda leader: m.VoteResponse(E.NONE, leader, 5, False), ApiKey.VOTE, 1),
    (lambda leader: m.BeginQuorumEpochResponse(E.NONE, leader, 5), ApiKey.BEGIN_QUORUM_EPOCH, 1),
    (lambda leader: m.EndQuorumEpochResponse(E.NONE, leader, 5), ApiKey.END_QUORUM_EPOCH, 1),
    (lambda leader: m.FetchResponse(E.NONE, leader, 5, 10, 0), ApiKey.FETCH, 16),
    (
        lambda leader: m.FetchSnapshotResponse(E.NONE, leader, 5, OffsetAndEpoch(4, 100)),
        ApiKey.FETCH_SNAPSHOT,
        1,
    ),
]


@pytest.mark.parametrize(("build", "api", "since"), ADDRESSED)
def test_a_response_names_the_leaders_address_on_the_requests_listener(
    build: Callable[[int], m.Response], api: ApiKey, since: int
) -> None:
    response = build(LEADER)
    for version in versions(api):
        if isinstance(response, m.FetchResponse) and version < 12:
            continue  # no CurrentLeader to name the leader with
        decoded = response_trip(
            response, version, leader_endpoints=LEADER_ENDPOINTS, listener="CONTROLLER"
        )
        assert decoded.message == response
        expected = (Endpoint("CONTROLLER", "c.example", 9093),) if version >= since else ()
        assert decoded.leader_endpoints == expected, version
        first = response_trip(response, version, leader_endpoints=LEADER_ENDPOINTS)
        assert first.leader_endpoints == (
            (Endpoint("CONTROLLER", "a.example", 9092),) if version >= since else ()
        )
        none = response_trip(response, version, leader_endpoints=LEADER_ENDPOINTS, listener="SSL")
        assert none.leader_endpoints == ()


@pytest.mark.parametrize(("build", "api", "since"), ADDRESSED)
def test_no_address_without_a_leader(
    build: Callable[[int], m.Response], api: ApiKey, since: int
) -> None:
    version = SUPPORTED_VERSIONS[api][1]
    wire = encode_response(build(-1), version, leader_endpoints=LEADER_ENDPOINTS)
    assert wire.to_data()["node_endpoints"] == []


def test_node_endpoints_for_another_node_are_not_the_leaders() -> None:
    wire = encode_response(
        m.VoteResponse(E.NONE, LEADER, 5, False), 2, leader_endpoints=LEADER_ENDPOINTS
    )
    assert isinstance(wire, vote_resp.VoteResponse)
    wire.node_endpoints[0].node_id = LEADER + 1
    assert decode_response(through_bytes(wire, 2)).leader_endpoints == ()


@pytest.mark.parametrize("version", versions(ApiKey.DESCRIBE_QUORUM))
def test_describe_quorum_lists_the_voters_listeners_from_v2(version: int) -> None:
    nodes = {
        LEADER: LEADER_ENDPOINTS,
        4: (Endpoint("CONTROLLER", "d.example", 9093),),
    }
    response = m.DescribeQuorumResponse(E.NONE, LEADER, 5, 100)
    decoded = response_trip(response, version, nodes=nodes)
    assert decoded.message == response
    if version >= 2:
        assert decoded.nodes == nodes
        assert decoded.leader_endpoints == LEADER_ENDPOINTS
    else:
        assert decoded.nodes == {} and decoded.leader_endpoints == ()


# -- golden frames, written out from the specs -----------------------------------------

D1 = bytes(range(1, 17))
D2 = bytes(range(101, 117))
NO_TAGS = b"\x00"


def i8(v: int) -> bytes:
    return struct.pack(">b", v)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def i64(v: int) -> bytes:
    return struct.pack(">q", v)


def u16(v: int) -> bytes:
    return struct.pack(">H", v)


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def cstr(s: str | None) -> bytes:
    """A compact (nullable) string: length + 1 as an unsigned varint, 0 for null."""
    if s is None:
        return b"\x00"
    data = s.encode()
    return uvarint(len(data) + 1) + data


def cbytes(data: bytes) -> bytes:
    return uvarint(len(data) + 1) + data


def carr(*items: bytes) -> bytes:
    return uvarint(len(items) + 1) + b"".join(items)


def tags(*fields: tuple[int, bytes]) -> bytes:
    return uvarint(len(fields)) + b"".join(uvarint(t) + uvarint(len(d)) + d for t, d in fields)


CONTROLLER_ENDPOINT = cstr("CONTROLLER") + cstr("h1") + u16(9093) + NO_TAGS

GOLDEN_REQUESTS: list[tuple[m.Request, int, bytes]] = [
    (
        m.VoteRequest("cl", ReplicaKey(7, D1), 11, ReplicaKey(3, D2), 9, 123456789012, True),
        2,
        cstr("cl")
        + i32(7)  # VoterId
        + carr(
            cstr(TOPIC)
            + carr(
                i32(0)  # PartitionIndex
                + i32(11)  # ReplicaEpoch
                + i32(3)  # ReplicaId
                + D2  # ReplicaDirectoryId
                + D1  # VoterDirectoryId
                + i32(9)  # LastOffsetEpoch
                + i64(123456789012)  # LastOffset
                + b"\x01"  # PreVote
                + NO_TAGS
            )
            + NO_TAGS
        )
        + NO_TAGS,
    ),
    (
        m.BeginQuorumEpochRequest(
            "cl", ReplicaKey(7, D1), 3, 11, (Endpoint("CONTROLLER", "h1", 9093),)
        ),
        1,
        cstr("cl")
        + i32(7)  # VoterId
        + carr(cstr(TOPIC) + carr(i32(0) + D1 + i32(3) + i32(11) + NO_TAGS) + NO_TAGS)
        + carr(CONTROLLER_ENDPOINT)  # LeaderEndpoints
        + NO_TAGS,
    ),
    (
        m.EndQuorumEpochRequest(
            "cl",
            3,
            11,
            (ReplicaKey(5, D1), ReplicaKey(6)),
            (Endpoint("CONTROLLER", "h1", 9093),),
        ),
        1,
        cstr("cl")
        + carr(
            cstr(TOPIC)
            + carr(
                i32(0)
                + i32(3)  # LeaderId
                + i32(11)  # LeaderEpoch
                + carr(i32(5) + D1 + NO_TAGS, i32(6) + ZERO_UUID + NO_TAGS)  # PreferredCandidates
                + NO_TAGS
            )
            + NO_TAGS
        )
        + carr(CONTROLLER_ENDPOINT)
        + NO_TAGS,
    ),
    (
        m.FetchRequest("cl", ReplicaKey(3, D2), 11, 1000, 10, 990, 500, 8_388_608),
        18,
        i32(500)  # MaxWaitMs
        + i32(0)  # MinBytes
        + i32(8_388_608)  # MaxBytes
        + i8(0)  # IsolationLevel
        + i32(0)  # SessionId
        + i32(-1)  # SessionEpoch
        + carr(
            b"\x00" * 15
            + b"\x01"  # TopicId
            + carr(
                i32(0)  # Partition
                + i32(11)  # CurrentLeaderEpoch
                + i64(1000)  # FetchOffset
                + i32(10)  # LastFetchedEpoch
                + i64(-1)  # LogStartOffset
                + i32(0)  # PartitionMaxBytes (Kafka's raft uses the request's MaxBytes)
                + tags((0, D2), (1, i64(990)))  # ReplicaDirectoryId, HighWatermark
            )
            + NO_TAGS
        )
        + carr()  # ForgottenTopicsData
        + cstr("")  # RackId
        + tags((0, cstr("cl")), (1, i32(3) + i64(-1) + NO_TAGS)),  # ClusterId, ReplicaState
    ),
    (
        m.FetchSnapshotRequest("cl", ReplicaKey(3, D2), 11, OffsetAndEpoch(9, 5000), 4096, 1 << 20),
        1,
        i32(3)  # ReplicaId
        + i32(1 << 20)  # MaxBytes
        + carr(
            cstr(TOPIC)
            + carr(
                i32(0)  # Partition
                + i32(11)  # CurrentLeaderEpoch
                + i64(5000)  # SnapshotId.EndOffset
                + i32(9)  # SnapshotId.Epoch
                + NO_TAGS
                + i64(4096)  # Position
                + tags((0, D2))  # ReplicaDirectoryId
            )
            + NO_TAGS
        )
        + tags((0, cstr("cl"))),  # ClusterId
    ),
    (
        m.AddVoterRequest("cl", ReplicaKey(4, D1), (Endpoint("CONTROLLER", "h1", 9093),), 30000),
        1,
        cstr("cl")
        + i32(30000)  # TimeoutMs
        + i32(4)  # VoterId
        + D1  # VoterDirectoryId
        + carr(CONTROLLER_ENDPOINT)  # Listeners
        + b"\x01"  # AckWhenCommitted
        + NO_TAGS,
    ),
    (
        m.RemoveVoterRequest("cl", ReplicaKey(4, D1)),
        0,
        cstr("cl") + i32(4) + D1 + NO_TAGS,
    ),
    (
        m.UpdateVoterRequest(
            "cl", 11, ReplicaKey(4, D1), (Endpoint("CONTROLLER", "h1", 9093),), (0, 1)
        ),
        0,
        cstr("cl")
        + i32(11)  # CurrentLeaderEpoch
        + i32(4)  # VoterId
        + D1  # VoterDirectoryId
        + carr(CONTROLLER_ENDPOINT)  # Listeners
        + i16(0)  # KRaftVersionFeature.MinSupportedVersion
        + i16(1)  # KRaftVersionFeature.MaxSupportedVersion
        + NO_TAGS
        + NO_TAGS,
    ),
    (
        m.DescribeQuorumRequest(),
        2,
        carr(cstr(TOPIC) + carr(i32(0) + NO_TAGS) + NO_TAGS) + NO_TAGS,
    ),
]


@pytest.mark.parametrize(
    ("message", "version", "frame"),
    GOLDEN_REQUESTS,
    ids=[type(g[0]).__name__ for g in GOLDEN_REQUESTS],
)
def test_golden_request(message: m.Request, version: int, frame: bytes) -> None:
    wire = encode_request(message, version)
    assert wire.encode(version) == frame
    assert decode_request(type(wire).decode(frame, version)) == message


GOLDEN_RESPONSES: list[tuple[m.Response, int, bytes]] = [
    (
        m.UpdateVoterResponse(E.NONE, 3, 11),
        0,
        i32(0)  # ThrottleTimeMs
        + i16(0)  # ErrorCode
        + tags((0, i32(3) + i32(11) + cstr("h1") + i32(9093) + NO_TAGS)),  # CurrentLeader
    ),
    (
        m.FetchResponse(
            E.NONE,
            3,
            11,
            990,
            7,
            b"RECORDS",
            OffsetAndEpoch(9, 800),
            OffsetAndEpoch(8, 700),
            E.NONE,
        ),
        17,
        i32(0)  # ThrottleTimeMs
        + i16(0)  # ErrorCode
        + i32(0)  # SessionId
        + carr(
            b"\x00" * 15
            + b"\x01"
            + carr(
                i32(0)  # PartitionIndex
                + i16(0)  # ErrorCode
                + i64(990)  # HighWatermark
                + i64(-1)  # LastStableOffset
                + i64(7)  # LogStartOffset
                + carr()  # AbortedTransactions
                + i32(-1)  # PreferredReadReplica
                + cbytes(b"RECORDS")
                + tags(
                    (0, i32(9) + i64(800) + NO_TAGS),  # DivergingEpoch: Epoch, EndOffset
                    (1, i32(3) + i32(11) + NO_TAGS),  # CurrentLeader
                    (2, i64(700) + i32(8) + NO_TAGS),  # SnapshotId: EndOffset, Epoch
                )
            )
            + NO_TAGS
        )
        + tags((0, carr(i32(3) + cstr("h1") + i32(9093) + cstr(None) + NO_TAGS))),
    ),
    (
        m.FetchSnapshotResponse(
            E.NONE, 3, 11, OffsetAndEpoch(9, 5000), 65536, 4096, b"DATA", E.NONE
        ),
        1,
        i32(0)  # ThrottleTimeMs
        + i16(0)  # ErrorCode
        + carr(
            cstr(TOPIC)
            + carr(
                i32(0)  # Index
                + i16(0)  # ErrorCode
                + i64(5000)  # SnapshotId.EndOffset
                + i32(9)  # SnapshotId.Epoch
                + NO_TAGS
                + i64(65536)  # Size
                + i64(4096)  # Position
                + cbytes(b"DATA")  # UnalignedRecords
                + tags((0, i32(3) + i32(11) + NO_TAGS))  # CurrentLeader
            )
            + NO_TAGS
        )
        + tags((0, carr(i32(3) + cstr("h1") + u16(9093) + NO_TAGS))),
    ),
    (
        m.DescribeQuorumResponse(
            E.NONE,
            3,
            11,
            990,
            (m.ReplicaDescription(ReplicaKey(3, D1), 1000, 1234, 5678),),
            (m.ReplicaDescription(ReplicaKey(9), 800, -1, -1),),
        ),
        2,
        i16(0)  # ErrorCode
        + cstr("")  # ErrorMessage
        + carr(
            cstr(TOPIC)
            + carr(
                i32(0)  # PartitionIndex
                + i16(0)  # ErrorCode
                + cstr("")  # ErrorMessage
                + i32(3)  # LeaderId
                + i32(11)  # LeaderEpoch
                + i64(990)  # HighWatermark
                + carr(i32(3) + D1 + i64(1000) + i64(1234) + i64(5678) + NO_TAGS)  # CurrentVoters
                + carr(i32(9) + ZERO_UUID + i64(800) + i64(-1) + i64(-1) + NO_TAGS)  # Observers
                + NO_TAGS
            )
            + NO_TAGS
        )
        + carr(i32(3) + carr(CONTROLLER_ENDPOINT) + NO_TAGS)  # Nodes
        + NO_TAGS,
    ),
]


@pytest.mark.parametrize(
    ("message", "version", "frame"),
    GOLDEN_RESPONSES,
    ids=[type(g[0]).__name__ for g in GOLDEN_RESPONSES],
)
def test_golden_response(message: m.Response, version: int, frame: bytes) -> None:
    endpoint = (Endpoint("CONTROLLER", "h1", 9093),)
    wire = encode_response(message, version, leader_endpoints=endpoint, nodes={3: endpoint})
    assert wire.encode(version) == frame
    decoded = decode_response(type(wire).decode(frame, version), listener="CONTROLLER")
    assert decoded.message == message
    assert decoded.leader_endpoints == endpoint

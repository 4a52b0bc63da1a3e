"""The controller listener speaks KRaft: DescribeQuorum names this node as the leader of
its one-voter quorum, a broker following the log fetches ``__cluster_metadata`` from it,
and a request about any other partition is refused as Kafka refuses it."""

from __future__ import annotations

import time
from typing import Any

from millpond.broker.handlers import CONTROLLER_ROUTES
from millpond.controller.controller_apis import CONTROLLER_API_VERSIONS
from millpond.controller.raft import codec
from millpond.controller.raft.keys import ReplicaKey
from millpond.controller.raft.messages import FetchRequest
from millpond.testing.embedded import broker as embedded_broker
from millpond.wire import Message, RequestHeader, decode_response, encode_request
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api import create_topics_request as ct
from millpond.wire.generated.api import describe_quorum_request as dq
from millpond.wire.generated.api import envelope_request as er
from millpond.wire.generated.api import vote_request as vote
from millpond.wire.generated.api.create_topics_response import CreateTopicsResponse
from millpond.wire.generated.api.describe_cluster_request import DescribeClusterRequest
from millpond.wire.generated.data.default_principal_data import DefaultPrincipalData
from millpond.wire.records import iter_batches

from .harness import Client
from .test_listeners import THREE_LISTENERS


def controller_port(handle: Any) -> int:
    port: int = handle.call(
        lambda b: next(s.port for s in b.listeners.servers if s.listener.controller)
    )
    return port


def test_the_controller_listener_serves_the_versions_the_codec_speaks() -> None:
    served = {r.api_key: (r.min_version, r.max_version) for r in CONTROLLER_ROUTES}
    assert served == {**codec.SUPPORTED_VERSIONS, **CONTROLLER_API_VERSIONS, 58: (0, 0)}


def test_describe_quorum_fetch_and_a_refused_vote() -> None:
    with embedded_broker(configs=THREE_LISTENERS) as handle:
        port = controller_port(handle)
        client = Client(port)
        request = dq.DescribeQuorumRequest(
            topics=[
                dq.TopicData(
                    topic_name="__cluster_metadata",
                    partitions=[dq.PartitionData(partition_index=0)],
                )
            ]
        )
        _, described = client.request(request, 2)
        [topic] = described.topics
        [partition] = topic.partitions
        assert (described.error_code, partition.error_code) == (ErrorCode.NONE, ErrorCode.NONE)
        assert partition.leader_id == 1 and partition.leader_epoch >= 1
        assert partition.high_watermark > 0
        [voter] = partition.current_voters
        assert voter.replica_id == 1 and voter.log_end_offset == partition.high_watermark
        assert abs(voter.last_fetch_timestamp - time.time() * 1000) < 60_000  # wall clock
        # A broker following the log (an observer) fetches it from the start.
        fetch = codec.encode_request(
            FetchRequest(None, ReplicaKey(7), partition.leader_epoch, 0, 0, -1, 0, 1 << 20), 17
        )
        _, fetched = client.request(fetch, 17)
        [fetched_partition] = fetched.responses[0].partitions
        assert fetched_partition.error_code == ErrorCode.NONE
        assert fetched_partition.high_watermark == partition.high_watermark
        batches = list(iter_batches(fetched_partition.records))
        assert batches[0].is_control and batches[0].base_offset == 0
        # A Vote about another partition is refused without touching the election.
        bad = vote.VoteRequest(
            voter_id=1,
            topics=[vote.TopicData(topic_name="t", partitions=[vote.PartitionData()])],
        )
        _, refused = client.request(bad, 1)
        assert refused.error_code == ErrorCode.INVALID_REQUEST
        _, again = client.request(request, 2)
        assert again.topics[0].partitions[0].leader_epoch == partition.leader_epoch
        client.close()


def test_describe_cluster_on_the_controller_listener_lists_the_controllers() -> None:
    with embedded_broker(configs=THREE_LISTENERS) as handle:
        port = controller_port(handle)
        client = Client(port)
        _, controllers = client.request(DescribeClusterRequest(endpoint_type=2), 1)
        assert controllers.error_code == ErrorCode.NONE and controllers.endpoint_type == 2
        assert controllers.controller_id == 1
        assert [(c.broker_id, c.host, c.port) for c in controllers.brokers] == [
            (1, "127.0.0.1", port)
        ]
        _, mismatched = client.request(DescribeClusterRequest(endpoint_type=1), 1)
        assert mismatched.error_code == ErrorCode.MISMATCHED_ENDPOINT_TYPE
        client.close()


def _envelope(inner: Message, version: int, principal: bytes) -> er.EnvelopeRequest:
    assert inner.API_KEY is not None
    header = RequestHeader(
        request_api_key=inner.API_KEY,
        request_api_version=version,
        correlation_id=77,
        client_id="forwarded",
    )
    return er.EnvelopeRequest(
        request_data=encode_request(header, inner),
        request_principal=principal,
        client_host_address=bytes([127, 0, 0, 9]),
    )


ANONYMOUS = b"\x00\x00" + DefaultPrincipalData(type="User", name="ANONYMOUS").encode(0)


def test_an_envelope_is_served_as_the_request_inside_it() -> None:
    with embedded_broker(configs=THREE_LISTENERS) as handle:
        port = controller_port(handle)
        client = Client(port)
        create = ct.CreateTopicsRequest(
            topics=[ct.CreatableTopic(name="forwarded", num_partitions=2, replication_factor=1)]
        )
        _, wrapped = client.request(_envelope(create, 7, ANONYMOUS), 0)
        assert wrapped.error_code == ErrorCode.NONE
        header, answer = decode_response(wrapped.response_data, 19, 7)
        assert header.correlation_id == 77 and isinstance(answer, CreateTopicsResponse)
        [topic] = answer.topics
        assert (topic.name, topic.error_code, topic.num_partitions) == ("forwarded", 0, 2)
        assert handle.call(lambda b: b.image.topic("forwarded")) is not None

        _, bad = client.request(_envelope(create, 7, b"\x00"), 0)
        assert bad.error_code == ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE
        _, nested = client.request(_envelope(_envelope(create, 7, ANONYMOUS), 0, ANONYMOUS), 0)
        assert nested.error_code == ErrorCode.INVALID_REQUEST and nested.response_data is None
        client.close()

"""The controller listener speaks KRaft: DescribeQuorum names this node as the leader of
its one-voter quorum, a broker following the log fetches ``__cluster_metadata`` from it,
and a request about any other partition is refused as Kafka refuses it."""

from __future__ import annotations

import time

from millpond.broker.handlers import CONTROLLER_ROUTES
from millpond.controller.raft import codec
from millpond.controller.raft.keys import ReplicaKey
from millpond.controller.raft.messages import FetchRequest
from millpond.testing.embedded import broker as embedded_broker
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api import describe_quorum_request as dq
from millpond.wire.generated.api import vote_request as vote
from millpond.wire.generated.api.describe_cluster_request import DescribeClusterRequest
from millpond.wire.records import iter_batches

from .harness import Client
from .test_listeners import THREE_LISTENERS


def test_the_controller_listener_serves_the_versions_the_codec_speaks() -> None:
    served = {r.api_key: (r.min_version, r.max_version) for r in CONTROLLER_ROUTES}
    assert served == dict(codec.SUPPORTED_VERSIONS)


def test_describe_quorum_fetch_and_a_refused_vote() -> None:
    with embedded_broker(configs=THREE_LISTENERS) as handle:
        port = handle.call(
            lambda b: next(s.port for s in b.listeners.servers if s.listener.controller)
        )
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
        port = handle.call(
            lambda b: next(s.port for s in b.listeners.servers if s.listener.controller)
        )
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

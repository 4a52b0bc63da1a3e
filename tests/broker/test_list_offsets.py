"""ListOffsets at every version through the real server."""

from __future__ import annotations

import pytest

from millpond.broker.node import Broker
from millpond.controller.replication_control import CreatableTopic
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.list_offsets_request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from millpond.wire.generated.api.list_offsets_response import (
    ListOffsetsPartitionResponse,
    ListOffsetsResponse,
)
from millpond.wire.records import NewRecord, build_batch

from .harness import Client, running_broker

T0 = 1_700_000_000_000


def _setup(broker: Broker) -> None:
    broker.controller.create_topics([CreatableTopic("t", num_partitions=1)])
    topic = broker.image.topic("t")
    assert topic is not None
    for i in range(3):  # offsets 0-1 at T0, 2-3 at T0+10, 4-5 at T0+20
        batch = build_batch([NewRecord(value=b"v", timestamp=T0 + 10 * i)] * 2)
        assert broker.replicas.append(topic, 0, memoryview(batch)).error == ErrorCode.NONE


def _ask(
    client: Client, version: int, timestamp: int, partition: int = 0
) -> ListOffsetsPartitionResponse:
    request = ListOffsetsRequest(
        replica_id=-1,
        topics=[
            ListOffsetsTopic(
                name="t",
                partitions=[ListOffsetsPartition(partition_index=partition, timestamp=timestamp)],
            )
        ],
    )
    _, response = client.request(request, version)
    assert isinstance(response, ListOffsetsResponse)
    [topic] = response.topics
    [answer] = topic.partitions
    return answer


@pytest.mark.parametrize("version", range(1, 12))
def test_special_and_real_timestamps(version: int) -> None:
    with running_broker() as broker:
        _setup(broker)
        client = Client(broker.port)
        latest = _ask(client, version, -1)
        assert (latest.error_code, latest.offset) == (0, 6)
        assert latest.leader_epoch == (0 if version >= 4 else -1)
        assert _ask(client, version, -2).offset == 0
        found = _ask(client, version, T0 + 5)
        assert (found.offset, found.timestamp) == (2, T0 + 10)
        none = _ask(client, version, T0 + 1000)
        assert (none.error_code, none.offset, none.timestamp) == (0, -1, -1)
        newest = _ask(client, version, -3)
        if version >= 7:
            assert (newest.offset, newest.timestamp) == (4, T0 + 20)
        else:
            assert newest.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert (
            _ask(client, version, -1, partition=9).error_code
            == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        )

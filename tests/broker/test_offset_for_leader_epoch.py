"""OffsetForLeaderEpoch end to end, answered from the leader epoch cache."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from millpond.broker.node import Broker
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.offset_for_leader_epoch_request import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from millpond.wire.generated.api.offset_for_leader_epoch_response import (
    OffsetForLeaderEpochResponse,
)

from .harness import Client, running_broker
from .test_fetch import append, bump_leader_epoch, create_topic


@pytest.fixture
def broker() -> Iterator[Broker]:
    with running_broker() as running:
        yield running


def ask(
    client: Client,
    version: int,
    wanted: list[tuple[str, int, int, int]],
) -> list[tuple[str, int, int, int, int]]:
    """(topic, partition, leader epoch, current leader epoch) -> (topic, partition, error,
    epoch, end offset)."""
    topics: list[OffsetForLeaderTopic] = []
    for name, partition, epoch, current in wanted:
        if not topics or topics[-1].topic != name:
            topics.append(OffsetForLeaderTopic(topic=name))
        topics[-1].partitions.append(
            OffsetForLeaderPartition(
                partition=partition, leader_epoch=epoch, current_leader_epoch=current
            )
        )
    _, response = client.request(OffsetForLeaderEpochRequest(topics=topics), version)
    assert isinstance(response, OffsetForLeaderEpochResponse)
    assert response.throttle_time_ms == 0
    return [
        (t.topic, p.partition, p.error_code, p.leader_epoch, p.end_offset)
        for t in response.topics
        for p in t.partitions
    ]


@pytest.mark.parametrize("version", [2, 3, 4])
def test_end_offsets_of_each_epoch(broker: Broker, version: int) -> None:
    create_topic(broker, "t")
    append(broker, "t", 0, [b"a", b"b", b"c"])  # 0-2 in epoch 0
    bump_leader_epoch(broker, "t", 0)
    bump_leader_epoch(broker, "t", 0)
    append(broker, "t", 0, [b"d", b"e"])  # 3-4 in epoch 2
    client = Client(broker.port)
    assert ask(client, version, [("t", 0, e, -1) for e in (0, 1, 2, 3, -1)]) == [
        ("t", 0, 0, 0, 3),  # epoch 0 ended where epoch 2 began
        ("t", 0, 0, 0, 3),  # epoch 1 wrote nothing: the greatest epoch below it
        ("t", 0, 0, 2, 5),  # the latest epoch ends at the log end
        ("t", 0, 0, -1, -1),  # an epoch from the future
        ("t", 0, 0, -1, -1),
    ]


def test_errors(broker: Broker) -> None:
    create_topic(broker, "t")
    client = Client(broker.port)
    # An empty log: its leader noted its epoch at offset 0 when it began to lead.
    assert ask(client, 4, [("t", 0, 0, -1)]) == [("t", 0, 0, 0, 0)]
    bump_leader_epoch(broker, "t", 0)
    assert ask(
        client,
        4,
        [("t", 0, 0, 0), ("t", 0, 0, 2), ("t", 0, 1, 1), ("t", 3, 0, -1), ("x", 0, 0, -1)],
    ) == [
        ("t", 0, ErrorCode.FENCED_LEADER_EPOCH, -1, -1),
        ("t", 0, ErrorCode.UNKNOWN_LEADER_EPOCH, -1, -1),
        ("t", 0, 0, 1, 0),  # the current epoch, begun at offset 0, ends at the log end
        ("t", 3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
        ("x", 0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
    ]

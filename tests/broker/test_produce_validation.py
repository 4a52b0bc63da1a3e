"""Produce checks that need the topic's config: timestamps and keys on compacted topics."""

from __future__ import annotations

import time

from millpond.controller.replication_control import CreatableTopic
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.produce_request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from millpond.wire.generated.api.produce_response import ProduceResponse
from millpond.wire.records import NewRecord, build_batch

from .harness import Client, running_broker


def _produce(client: Client, topic: str, records: list[NewRecord]) -> tuple[int, str | None]:
    request = ProduceRequest(
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            TopicProduceData(
                name=topic,
                partition_data=[PartitionProduceData(index=0, records=build_batch(records))],
            )
        ],
    )
    _, response = client.request(request, 9)
    assert isinstance(response, ProduceResponse)
    [part] = response.responses[0].partition_responses
    return part.error_code, part.error_message


def test_timestamps_outside_the_allowed_window_are_invalid() -> None:
    with running_broker() as broker:
        broker.controller.create_topics(
            [CreatableTopic("t", 1, configs={"message.timestamp.before.max.ms": "60000"})]
        )
        client = Client(broker.port)
        now = int(time.time() * 1000)
        assert _produce(client, "t", [NewRecord(b"k", b"v", timestamp=now)])[0] == ErrorCode.NONE
        old, message = _produce(client, "t", [NewRecord(b"k", b"v", timestamp=now - 3_600_000)])
        assert old == ErrorCode.INVALID_TIMESTAMP and message and "before.max.ms" in message
        future = now + 2 * 3_600_000  # after.max.ms defaults to one hour
        assert _produce(client, "t", [NewRecord(b"k", b"v", timestamp=future)])[0] == (
            ErrorCode.INVALID_TIMESTAMP
        )


def test_keyless_records_are_refused_on_compacted_topics() -> None:
    with running_broker() as broker:
        broker.controller.create_topics(
            [CreatableTopic("c", 1, configs={"cleanup.policy": "compact"})]
        )
        client = Client(broker.port)
        now = int(time.time() * 1000)
        keyed = [NewRecord(b"k", b"v", timestamp=now)]
        assert _produce(client, "c", keyed)[0] == ErrorCode.NONE
        code, _ = _produce(client, "c", [*keyed, NewRecord(None, b"v", timestamp=now)])
        assert code == ErrorCode.INVALID_RECORD

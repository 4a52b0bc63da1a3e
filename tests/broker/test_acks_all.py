"""acks=all end to end: min.insync.replicas through the partition's effective minimum,
the purgatory holding a produce until the high watermark covers it, and deleted topics
leaving the replica manager."""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from millpond.broker.config import build_config
from millpond.broker.node import Broker
from millpond.controller.record_serde import ApiMessageAndVersion
from millpond.controller.replication_control import CreatableTopic
from millpond.controller.results import ControllerResult
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api import delete_topics_request as dt
from millpond.wire.generated.api.produce_request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from millpond.wire.generated.api.produce_response import PartitionProduceResponse, ProduceResponse
from millpond.wire.generated.metadata.partition_change_record import PartitionChangeRecord
from millpond.wire.records import NewRecord, build_batch

from .harness import Client, running_broker
from .test_fetch import on_loop

PRODUCE_V = 9


def _produce(
    client: Client, topic: str, *, acks: int = -1, timeout_ms: int = 5000
) -> PartitionProduceResponse:
    request = ProduceRequest(
        acks=acks,
        timeout_ms=timeout_ms,
        topic_data=[
            TopicProduceData(
                name=topic,
                partition_data=[
                    PartitionProduceData(index=0, records=build_batch([NewRecord(b"k", b"v")]))
                ],
            )
        ],
    )
    _, response = client.request(request, PRODUCE_V)
    assert isinstance(response, ProduceResponse)
    [part] = response.responses[0].partition_responses
    return part


def _create(broker: Broker, name: str, **configs: str) -> None:
    def run() -> None:
        topic = CreatableTopic(name, 1, 1, configs=configs)
        [result] = broker.controller.create_topics([topic]).response
        assert result.error.code == ErrorCode.NONE

    on_loop(broker, run)


def _set_replicas(broker: Broker, name: str, replicas: list[int], isr: list[int]) -> None:
    """What a controller with a second broker would commit: this broker stays leader."""

    def run() -> None:
        topic = broker.image.topic(name)
        assert topic is not None
        change = PartitionChangeRecord(
            topic_id=topic.topic_id, partition_id=0, replicas=replicas, isr=isr
        )
        broker.controller._commit(ControllerResult((ApiMessageAndVersion(change, 0),), None))
        broker.replicas.apply_image(broker.image)

    on_loop(broker, run)


def _ends(broker: Broker, name: str) -> tuple[int, int]:
    """(log end offset, high watermark) of partition 0."""

    def run() -> tuple[int, int]:
        topic = broker.image.topic(name)
        assert topic is not None
        partition = broker.replicas.partition(topic, 0)
        assert partition is not None
        return partition.log_end_offset, partition.high_watermark

    return on_loop(broker, run)


def test_a_single_replica_partition_accepts_acks_all_whatever_its_min_isr() -> None:
    with running_broker() as broker:
        _create(broker, "t", **{"min.insync.replicas": "2"})
        client = Client(broker.port)
        first = _produce(client, "t")
        assert (first.error_code, first.base_offset) == (ErrorCode.NONE, 0)
        assert _produce(client, "t").base_offset == 1
        assert _ends(broker, "t") == (2, 2)


def test_acks_all_below_the_min_isr_is_refused_and_writes_nothing() -> None:
    with running_broker() as broker:
        _create(broker, "t", **{"min.insync.replicas": "2"})
        _set_replicas(broker, "t", [broker.node_id, 2], [broker.node_id])
        client = Client(broker.port)
        refused = _produce(client, "t")
        assert refused.error_code == ErrorCode.NOT_ENOUGH_REPLICAS
        assert (refused.base_offset, refused.log_start_offset) == (-1, -1)
        assert refused.error_message is None
        assert _ends(broker, "t") == (0, 0)
        # acks=1 does not ask for the ISR and is written, but an ISR under
        # min.insync.replicas commits nothing (Kafka 4's leader freezes the high watermark).
        assert _produce(client, "t", acks=1).error_code == ErrorCode.NONE
        assert _ends(broker, "t") == (1, 0)


def test_acks_all_waits_for_the_isr_then_times_out() -> None:
    with running_broker() as broker:
        _create(broker, "t")
        _set_replicas(broker, "t", [broker.node_id, 2], [broker.node_id, 2])
        client = Client(broker.port)
        started = time.monotonic()
        answer = _produce(client, "t", timeout_ms=300)
        waited = time.monotonic() - started
        assert answer.error_code == ErrorCode.REQUEST_TIMED_OUT
        assert answer.base_offset == 0  # written, as Kafka answers it
        assert waited >= 0.3
        assert _ends(broker, "t") == (1, 0)  # replica 2 never fetched it
        assert on_loop(broker, lambda: len(broker.replicas.delayed_produces)) == 0


@pytest.mark.parametrize(
    ("min_isr", "expected", "committed"),
    [("1", ErrorCode.NONE, 1), ("2", ErrorCode.REQUEST_TIMED_OUT, 0)],
)
def test_a_waiting_produce_completes_when_the_isr_shrinks(
    min_isr: str, expected: int, committed: int
) -> None:
    """An ISR that shrinks to the leader commits the append when one replica is enough;
    under min.insync.replicas the high watermark stays (Kafka 4's leader freezes it), so
    the produce times out, written but not committed."""
    with running_broker() as broker:
        _create(broker, "t", **{"min.insync.replicas": min_isr})
        _set_replicas(broker, "t", [broker.node_id, 2], [broker.node_id, 2])
        client = Client(broker.port)
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(_produce, client, "t", timeout_ms=1000)
            deadline = time.monotonic() + 10
            while on_loop(broker, lambda: len(broker.replicas.delayed_produces)) == 0:
                assert time.monotonic() < deadline, "the produce never reached the purgatory"
                time.sleep(0.01)  # polls a real condition, bounded
            _set_replicas(broker, "t", [broker.node_id, 2], [broker.node_id])
            answer = pending.result(10)
        assert (answer.error_code, answer.base_offset) == (expected, 0)
        assert _ends(broker, "t") == (1, committed)


def test_deleted_topics_leave_the_partition_table(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="millpond")
    with running_broker() as broker:
        client = Client(broker.port)
        _create(broker, "gone")
        _create(broker, "kept")
        assert _produce(client, "gone").error_code == ErrorCode.NONE
        assert _produce(client, "kept").error_code == ErrorCode.NONE
        _, answer = client.request(dt.DeleteTopicsRequest(topic_names=["gone"]), 5)
        assert answer.responses[0].error_code == ErrorCode.NONE
        assert on_loop(broker, broker.replicas.open_partitions) == [("kept", 0)]
    # The stop snapshots the open partitions only: nothing fails on a deleted one.
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_the_brokers_min_isr_applies_to_topics_that_set_none() -> None:
    config, _ = build_config({"min.insync.replicas": "2"})
    with running_broker(config=config) as broker:
        _create(broker, "single")
        _create(broker, "pair")
        _set_replicas(broker, "pair", [broker.node_id, 2], [broker.node_id])
        client = Client(broker.port)
        assert _produce(client, "single").error_code == ErrorCode.NONE  # capped at 1
        assert _produce(client, "pair").error_code == ErrorCode.NOT_ENOUGH_REPLICAS

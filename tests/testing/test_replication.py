"""Replication across the embedded cluster's brokers, with a real client: acks=all
produces at replication factor 3 are committed by the followers' fetches; the leader is
killed (-9) and a follower from the ISR takes over with every acknowledged record; the
killed broker restarts, catches up and rejoins the ISR; an idempotent producer's retry
to the new leader is deduplicated."""

from __future__ import annotations

import time
from collections.abc import Callable

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from millpond.broker.node import Broker
from millpond.controller.image import PartitionRegistration
from millpond.testing.cluster import EmbeddedCluster, cluster
from millpond.wire.generated.api.produce_request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from millpond.wire.records import NewRecord, build_batch
from tests.broker.harness import Client


def _until(condition: Callable[[], bool], what: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _registration(running: EmbeddedCluster, via: int) -> PartitionRegistration:
    """Partition t-0 as broker ``via`` has it (once its metadata holds the topic)."""
    registration = _seen(running, via)
    assert registration is not None, f"broker {via} has no topic t"
    return registration


def _seen(running: EmbeddedCluster, via: int) -> PartitionRegistration | None:
    def read(broker: Broker) -> PartitionRegistration | None:
        topic = broker.image.topic("t")
        return None if topic is None else topic.partitions[0]

    return running.node(via).handle.call(read)


def _led_by(running: EmbeddedCluster, via: int, leaders: tuple[int, ...]) -> bool:
    seen = _seen(running, via)
    return seen is not None and seen.leader in leaders


def _bootstrap(running: EmbeddedCluster, *brokers: int) -> str:
    return ",".join(f"127.0.0.1:{running.node(b).port}" for b in brokers)


def _create_t(running: EmbeddedCluster, configs: dict[str, str] | None = None) -> None:
    """Topic t: one partition on brokers 2, 3 and 4, led by 2."""
    admin = KafkaAdminClient(bootstrap_servers=running.bootstrap_servers)
    try:
        admin.create_topics(
            [NewTopic("t", replica_assignments={0: [2, 3, 4]}, topic_configs=configs or {})]
        )
    finally:
        admin.close()
    _until(lambda: _led_by(running, 4, (2,)), "the topic created")


def test_acknowledged_records_survive_the_leaders_kill() -> None:
    with cluster(controllers=1, brokers=3) as running:
        _create_t(running, {"min.insync.replicas": "2"})
        producer = KafkaProducer(bootstrap_servers=running.bootstrap_servers, acks="all", retries=5)
        try:
            acked = [producer.send("t", f"v{i}".encode(), partition=0) for i in range(200)]
            offsets = [f.get(timeout=30).offset for f in acked]
        finally:
            producer.close()
        assert offsets == list(range(200))
        assert _registration(running, 4).isr == (2, 3, 4)

        running.kill(2)
        _until(lambda: _registration(running, 4).leader in (3, 4), "a follower took over")
        new = _registration(running, 4)
        assert 2 not in new.isr and new.leader_epoch >= 1
        consumer = KafkaConsumer(
            bootstrap_servers=_bootstrap(running, 3, 4),
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            consumer_timeout_ms=10_000,
        )
        try:
            consumer.assign([TopicPartition("t", 0)])
            values = [m.value for _, m in zip(range(200), consumer, strict=False)]
        finally:
            consumer.close()
        assert values == [f"v{i}".encode() for i in range(200)]

        running.restart(2)
        _until(lambda: 2 in _registration(running, 4).isr, "the restarted broker rejoined")


def _produce_batch(
    running: EmbeddedCluster, broker: int, sequence: int, values: list[bytes]
) -> tuple[int, int]:
    """An idempotent producer's batch (producer 4000, epoch 0), acks=all, to ``broker``:
    (error code, base offset)."""
    batch = build_batch(
        [NewRecord(value=v) for v in values],
        producer_id=4000,
        producer_epoch=0,
        base_sequence=sequence,
    )
    request = ProduceRequest(
        acks=-1,
        timeout_ms=10_000,
        topic_data=[
            TopicProduceData(
                name="t", partition_data=[PartitionProduceData(index=0, records=batch)]
            )
        ],
    )
    client = Client(running.node(broker).port)
    try:
        _, response = client.request(request, 9)
    finally:
        client.close()
    [part] = response.responses[0].partition_responses
    return part.error_code, part.base_offset


def test_a_retry_to_the_new_leader_is_deduplicated() -> None:
    """The idempotent producer state travels with the log: the new leader knows the
    batch the old one acknowledged, and a retry of it appends nothing."""
    with cluster(controllers=1, brokers=3) as running:
        _create_t(running)
        assert _produce_batch(running, 2, 0, [b"a", b"b"]) == (0, 0)
        assert _produce_batch(running, 2, 2, [b"c", b"d"]) == (0, 2)
        running.kill(2)
        _until(lambda: _registration(running, 4).leader in (3, 4), "a follower took over")
        leader = _registration(running, 4).leader
        # The retry of the last batch: answered with its original offset, not appended.
        assert _produce_batch(running, leader, 2, [b"c", b"d"]) == (0, 2)
        assert _produce_batch(running, leader, 4, [b"e"]) == (0, 4)


def test_leadership_goes_back_to_the_preferred_replica_once_it_is_in_sync() -> None:
    """``auto.leader.rebalance.enable``: after its broker restarts and catches up, the
    first replica leads again without an operator's election."""
    with cluster(controllers=1, brokers=3, leader_imbalance_check_interval_seconds=1) as running:
        _create_t(running)
        running.kill(2)
        _until(lambda: _led_by(running, 4, (3, 4)), "a follower took over")
        running.restart(2)
        _until(lambda: 2 in _registration(running, 4).isr, "the restarted broker rejoined")
        _until(lambda: _led_by(running, 4, (2,)), "the preferred replica leading again")

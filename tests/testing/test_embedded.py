"""The embedded broker (millpond.testing) with real clients: starts, configs, helpers,
its asyncio twin, and that a hundred starts and stops leave nothing behind."""

from __future__ import annotations

import asyncio
import os
import tempfile
import threading
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource

from bench.embedded import one_round
from millpond.broker.config import ConfigError
from millpond.testing import TopicError, async_broker, broker
from millpond.testing.embedded import MEMORY_DATA_DIR


def _embedded_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "millpond-embedded"]


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_a_hundred_starts_each_serving_a_confluent_round_trip() -> None:
    one_round(-1)  # librdkafka's own first-use allocations before the baseline
    fds = _open_fds()
    ready = []
    for i in range(100):
        result = one_round(i)
        assert result.consumed == (b"round", str(i).encode())
        ready.append(result.ready_ms)
    assert not _embedded_threads()
    # Every broker closed its files and sockets (librdkafka may hold a few of its own).
    assert _open_fds() <= fds + 4
    print(f"start-to-ready over 100 starts: median {sorted(ready)[50]:.1f} ms")


def _produce(bootstrap: str, topic: str, records: list[tuple[bytes, bytes]], **kw: object) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for key, value in records:
        producer.produce(topic, key=key, value=value, **kw)
    assert producer.flush(10) == 0


def test_configs_by_keyword_and_by_name_reach_the_broker() -> None:
    with broker(num_partitions=3, configs={"log.retention.ms": "60000"}) as running:
        _produce(running.bootstrap_servers, "auto", [(b"k", b"v")])
        admin = AdminClient({"bootstrap.servers": running.bootstrap_servers})
        metadata = admin.list_topics("auto", timeout=10)
        assert len(metadata.topics["auto"].partitions) == 3
        resource = ConfigResource(ConfigResource.Type.BROKER, "1")
        configs = admin.describe_configs([resource])[resource].result(10)
        assert configs["log.retention.ms"].value == "60000"
        assert configs["num.partitions"].value == "3"


def test_a_config_not_kafkas_is_refused_with_its_name() -> None:
    with (
        pytest.raises(TypeError, match=r"unknown broker config\(s\) num\.partitionz"),
        broker(num_partitionz=3),
    ):
        pass


def test_a_bad_config_value_is_refused_with_the_key() -> None:
    with pytest.raises(ConfigError, match="num.partitions"), broker(num_partitions="many"):
        pass


def test_create_topic_and_read_what_it_holds() -> None:
    with broker() as running:
        running.create_topic("orders", partitions=2, configs={"cleanup.policy": "compact"})
        with pytest.raises(TopicError, match="already exists"):
            running.create_topic("orders")
        _produce(running.bootstrap_servers, "orders", [(b"a", b"1"), (b"b", b"2")], partition=1)
        _produce(
            running.bootstrap_servers, "orders", [(b"c", b"3")], partition=0, headers=[("h", b"x")]
        )
        held = running.records("orders")
        assert [(r.partition, r.offset, r.key, r.value) for r in held] == [
            (0, 0, b"c", b"3"),
            (1, 0, b"a", b"1"),
            (1, 1, b"b", b"2"),
        ]
        assert held[0].headers == [("h", b"x")]
        assert [r.key for r in running.records("orders", partition=1)] == [b"a", b"b"]
        with pytest.raises(TopicError, match="no partition 5"):
            running.records("orders", partition=5)
        with pytest.raises(TopicError, match="does not exist"):
            running.records("nothing")


def test_data_outlives_the_broker_in_a_directory_of_yours(tmp_path: Path) -> None:
    with broker(data_dir=str(tmp_path)) as first:
        _produce(first.bootstrap_servers, "kept", [(b"k", b"v")])
    with broker(data_dir=str(tmp_path)) as second:
        assert [r.value for r in second.records("kept")] == [b"v"]
        assert second.port != 0


def test_an_in_memory_broker_writes_no_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Temporary files of this process go to a directory of the test's own, so another
    # process writing to /tmp meanwhile cannot be mistaken for the broker.
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    monkeypatch.chdir(tmp_path)
    with broker(in_memory=True) as running:
        _produce(running.bootstrap_servers, "mem", [(b"k", b"v")])
        assert [r.value for r in running.records("mem")] == [b"v"]
        assert not Path(MEMORY_DATA_DIR).exists()
    assert list(private.iterdir()) == []
    assert [p.name for p in tmp_path.iterdir()] == ["tmp"]


def test_the_async_broker_serves_aiokafka_on_the_callers_loop() -> None:
    async def scenario() -> list[bytes | None]:
        async with async_broker(num_partitions=1) as running:
            running.create_topic("events")
            producer = AIOKafkaProducer(bootstrap_servers=running.bootstrap_servers)
            await producer.start()
            try:
                for value in (b"one", b"two"):
                    await producer.send_and_wait("events", value)
            finally:
                await producer.stop()
            consumer = AIOKafkaConsumer(
                "events", bootstrap_servers=running.bootstrap_servers, auto_offset_reset="earliest"
            )
            await consumer.start()
            try:
                batch = await consumer.getmany(timeout_ms=5000, max_records=2)
                values = [m.value for messages in batch.values() for m in messages]
            finally:
                await consumer.stop()
            assert [r.value for r in running.records("events")] == [b"one", b"two"]
            return values

    assert asyncio.run(scenario()) == [b"one", b"two"]

"""The broker role and the controller role run apart: each on its own directory, meeting only
at the controller channel and the committed-metadata feed. Real clients create a topic,
produce and consume through the broker role; the metadata stays with the controller and
the partitions with the broker, and both come back after a restart."""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from millpond.broker.broker_server import BrokerServer
from millpond.broker.config import build_config
from millpond.broker.handlers import ROUTES
from millpond.controller.controller import ControllerConfig
from millpond.controller.controller_server import ControllerServer
from millpond.storage.clock import SystemClock
from millpond.storage.fs import OsFileSystem

from .harness import served_on_thread

CLUSTER_ID = "cG9uZC1yb2xlcy1hcGFydA"


@contextmanager
def roles_apart(controller_dir: Path, broker_dir: Path) -> Iterator[BrokerServer]:
    """A controller role on ``controller_dir`` and a broker role on ``broker_dir``, on one
    event loop in a thread; stopped (broker, then controller) on the way out."""
    loop = asyncio.new_event_loop()
    fs, clock, rng = OsFileSystem(), SystemClock(), random.Random(7)
    controller = ControllerServer(
        fs, str(controller_dir), clock, rng, ControllerConfig(node_id=1, cluster_id=CLUSTER_ID)
    )
    config = build_config(
        {"node.id": "1", "log.dirs": str(broker_dir), "listeners": "PLAINTEXT://127.0.0.1:0"},
        env={},
    )[0]
    asyncio.set_event_loop(loop)
    broker = BrokerServer(
        config=config, data_dir=str(broker_dir), node_id=1, cluster_id=CLUSTER_ID,
        host="127.0.0.1", port=0, advertised=("127.0.0.1", None),
        max_request_bytes=config.socket_request_max_bytes,
        idle_ms=config.connections_max_idle_ms, auto_create_topics=True, routes=ROUTES,
        fs=fs, clock=clock, rng=rng, channel=controller.channel, metadata=controller,
        quorum=controller,
        trace=None,
    )  # fmt: skip
    asyncio.set_event_loop(None)
    try:
        with served_on_thread(loop, broker.start, broker.stop):
            yield broker
    finally:
        controller.close()


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_a_broker_role_serves_clients_with_its_controller_on_another_directory(
    tmp_path: Path,
) -> None:
    controller_dir, broker_dir = tmp_path / "controller", tmp_path / "broker"
    for d in (controller_dir, broker_dir):
        os.makedirs(d)
    values = [b"v%d" % i for i in range(50)]
    with roles_apart(controller_dir, broker_dir) as broker:
        bootstrap = f"127.0.0.1:{broker.port}"
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.create_topics([NewTopic("apart", 2, 1)])
        finally:
            admin.close()
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        try:
            for v in values:
                producer.send("apart", v, partition=1).get(timeout=30)
        finally:
            producer.close(timeout=10)

    # Topics live in the metadata log, on the controller's directory only; partitions on
    # the broker's only.
    controller_files, broker_files = _files(controller_dir), _files(broker_dir)
    assert any(f.startswith("__cluster_metadata-0/") for f in controller_files)
    assert not any(f.startswith("apart-") for f in controller_files)
    assert {"apart-0", "apart-1"} <= broker_files
    assert not any(f.startswith("__cluster_metadata") for f in broker_files)

    with roles_apart(controller_dir, broker_dir) as broker:
        consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{broker.port}")
        got: list[bytes] = []
        try:
            part = TopicPartition("apart", 1)
            consumer.assign([part])
            consumer.seek_to_beginning(part)
            deadline = time.monotonic() + 30
            while len(got) < len(values) and time.monotonic() < deadline:
                for records in consumer.poll(timeout_ms=500).values():
                    got.extend(r.value for r in records)
        finally:
            consumer.close()
        assert got == values
        topic = broker.image.topic("apart")
        assert topic is not None
        assert len(topic.partitions) == 2

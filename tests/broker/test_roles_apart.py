"""The broker role and the controller role run apart: each on its own directory, meeting only
at the controller channel and the committed-metadata feed. Real clients create a topic,
produce and consume through the broker role; the metadata stays with the controller and
the partitions with the broker, and both come back after a restart."""

from __future__ import annotations

import asyncio
import os
import random
import time
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

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


class _HeldUnfencing:
    """The controller channel, but the broker's unfencing waits for ``gate``."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.gate = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def unfence_broker(self, broker_id: int, broker_epoch: int) -> Any:
        await self.gate.wait()
        return await self._inner.unfence_broker(broker_id, broker_epoch)


@contextmanager
def roles_apart(
    controller_dir: Path,
    broker_dir: Path,
    start: Callable[[BrokerServer, Any], Coroutine[Any, Any, None]] | None = None,
) -> Iterator[BrokerServer]:
    """A controller role on ``controller_dir`` and a broker role on ``broker_dir``, on one
    event loop in a thread; stopped (broker, then controller) on the way out. ``start``
    (given the broker and its channel, whose unfencing it releases) starts the broker
    instead of ``BrokerServer.start``."""
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
    channel = controller.channel if start is None else _HeldUnfencing(controller.channel)
    broker = BrokerServer(
        config=config, data_dir=str(broker_dir), node_id=1, cluster_id=CLUSTER_ID,
        host="127.0.0.1", port=0, advertised=("127.0.0.1", None),
        max_request_bytes=config.socket_request_max_bytes,
        idle_ms=config.connections_max_idle_ms, auto_create_topics=True, routes=ROUTES,
        fs=fs, clock=clock, rng=rng, channel=channel, metadata=controller,
        quorum=controller,
        trace=None,
    )  # fmt: skip
    asyncio.set_event_loop(None)
    try:
        starting = broker.start if start is None else lambda: start(broker, channel)
        with served_on_thread(loop, starting, broker.stop):
            yield broker
    finally:
        controller.close()


def _dirs(root: Path) -> tuple[Path, Path]:
    """The controller's directory and the broker's, made."""
    controller_dir, broker_dir = root / "controller", root / "broker"
    for d in (controller_dir, broker_dir):
        os.makedirs(d)
    return controller_dir, broker_dir


def test_a_broker_serves_no_client_until_it_has_caught_up_and_is_unfenced(
    tmp_path: Path,
) -> None:
    controller_dir, broker_dir = _dirs(tmp_path)
    probes: list[str] = []

    async def start(broker: BrokerServer, channel: _HeldUnfencing) -> None:
        starting = asyncio.get_running_loop().create_task(broker.start())
        while broker.listeners.primary._server is None:  # bound, not yet unfenced
            await asyncio.sleep(0.01)
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", broker.port)
            writer.close()
            probes.append("accepted while fenced")
        except ConnectionRefusedError:
            probes.append("refused while fenced")
        channel.gate.set()
        await starting

    with roles_apart(controller_dir, broker_dir, start) as broker:
        assert probes == ["refused while fenced"]
        admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{broker.port}")
        try:
            assert "__consumer_offsets" not in admin.list_topics()
        finally:
            admin.close()


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_a_broker_role_serves_clients_with_its_controller_on_another_directory(
    tmp_path: Path,
) -> None:
    controller_dir, broker_dir = _dirs(tmp_path)
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

"""Three combined-mode nodes (broker and controller each), one static quorum of three
voters on 127.0.0.1-3, and a broker-only node on 127.0.0.4 following it: every broker
registers with the active controller over the network and is unfenced by its
heartbeats, an admin request sent to any broker is forwarded in an Envelope to the
active controller, every node follows the same committed metadata, and when the active
controller stops another takes over."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from kafka.admin import KafkaAdminClient, NewTopic

from millpond.broker.config import ConfigError, build_config
from millpond.broker.node import Broker
from millpond.storage.clock import SystemClock
from millpond.storage.fs import OsFileSystem
from millpond.storage.log_dirs import ensure_meta_properties

CLUSTER_ID = "cXVvcnVtLWNsdXN0ZXItdA"
HOSTS = ("127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4")
#: Nodes 1-3 are voters; node 4 is a broker only.
VOTERS = (1, 2, 3)


def free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


class Cluster:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.ports = [(free_port(h), free_port(h)) for h in HOSTS]
        self.nodes: dict[int, Broker] = {}

    def props(self, node_id: int) -> dict[str, str]:
        host = HOSTS[node_id - 1]
        port, controller = self.ports[node_id - 1]
        voters = ",".join(f"{i}@{HOSTS[i - 1]}:{self.ports[i - 1][1]}" for i in VOTERS)
        voter = node_id in VOTERS
        listeners = f"PLAINTEXT://{host}:{port}"
        return {
            "node.id": str(node_id),
            "process.roles": "broker,controller" if voter else "broker",
            "listeners": listeners + (f",CONTROLLER://{host}:{controller}" if voter else ""),
            "advertised.listeners": f"PLAINTEXT://{host}:{port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "controller.quorum.voters": voters,
            "controller.quorum.election.timeout.ms": "150",
            "controller.quorum.fetch.timeout.ms": "300",
            "controller.quorum.election.backoff.max.ms": "150",
            "controller.quorum.request.timeout.ms": "300",
            "broker.heartbeat.interval.ms": "100",
            "request.timeout.ms": "5000",
            "log.dirs": str(self.root / str(node_id)),
        }

    async def start(self, node_id: int) -> Broker:
        config = build_config(self.props(node_id), env={})[0]
        directory = config.log_dirs[0]
        OsFileSystem().makedirs(directory)
        ensure_meta_properties(OsFileSystem(), directory, CLUSTER_ID, node_id, SystemClock())
        node = Broker.from_config(config)
        await node.start()
        self.nodes[node_id] = node
        return node

    async def stop(self, node_id: int) -> None:
        await self.nodes.pop(node_id).stop()

    def active(self) -> list[int]:
        return [i for i, n in self.nodes.items() if n.controller.is_active]

    def broker_only(self) -> Broker:
        return self.nodes[4]

    def bootstrap(self, node_id: int) -> str:
        return f"{HOSTS[node_id - 1]}:{self.ports[node_id - 1][0]}"


@asynccontextmanager
async def cluster(root: Path) -> AsyncIterator[Cluster]:
    nodes = Cluster(root)
    try:
        # A broker's start returns once it is unfenced, which takes a majority: start
        # them together.
        await asyncio.gather(*(nodes.start(i) for i in (1, 2, 3, 4)))
        yield nodes
    finally:
        for node_id in list(nodes.nodes):
            await nodes.stop(node_id)


async def until(condition: Callable[[], object], what: str, seconds: float = 15) -> None:
    """Wait for a real condition, bounded."""
    async with asyncio.timeout(seconds):
        while not condition():
            await asyncio.sleep(0.01)
    assert condition(), what


def create_topic(bootstrap: str, name: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
    try:
        admin.create_topics([NewTopic(name, 3, 1)])  # raises on an error code
    finally:
        admin.close()


def test_three_nodes_share_one_quorum_and_fail_over(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with cluster(tmp_path) as nodes:
            assert len(nodes.active()) == 1
            for node in nodes.nodes.values():
                brokers = node.image.brokers
                assert sorted(brokers) == [1, 2, 3, 4]
                assert not any(b.fenced for b in brokers.values())
            [active] = nodes.active()
            follower = next(i for i in VOTERS if i != active)
            # CreateTopics through a broker that is not the active controller: forwarded.
            await asyncio.to_thread(create_topic, nodes.bootstrap(follower), "first")
            await until(
                lambda: all(n.image.topic("first") for n in nodes.nodes.values()),
                "every node has the topic",
            )
            topic = nodes.nodes[active].image.topic("first")
            assert topic is not None
            placed = {r for p in topic.partitions.values() for r in p.replicas}
            assert len(placed) > 1, "replicas are spread over the brokers"

            await nodes.stop(active)
            await until(lambda: len(nodes.active()) == 1, "a new active controller")
            # The broker-only node forwards to whichever controller is active now.
            await asyncio.to_thread(create_topic, nodes.bootstrap(4), "second")
            await until(
                lambda: all(n.image.topic("second") for n in nodes.nodes.values()),
                "both remaining nodes have the new topic",
            )
            # The stopped node comes back, registers again and catches up.
            restarted = await nodes.start(active)
            assert restarted.image.topic("second") is not None

    asyncio.run(scenario())


def test_a_node_of_several_refuses_a_directory_without_the_cluster_id(tmp_path: Path) -> None:
    config = build_config(Cluster(tmp_path).props(1), env={})[0]
    with pytest.raises(ConfigError, match="millpond storage format --cluster-id"):
        Broker.from_config(config)
    assert not (tmp_path / "1" / "meta.properties").exists()

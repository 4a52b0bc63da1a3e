"""Nodes of one cluster around a static quorum of three voters, on 127.0.0.x: three
combined nodes with a broker-only node following them, and three controller-only nodes
with two broker-only nodes. Every broker registers with the active controller over the
network and is unfenced by its heartbeats, an admin request sent to any broker is
forwarded in an Envelope to the active controller, every node follows the same
committed metadata, and when the active controller stops another takes over."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from millpond.broker.config import ConfigError, build_config
from millpond.broker.node import Broker
from millpond.broker.quorum_config import node_properties
from millpond.storage.clock import SystemClock
from millpond.storage.fs import OsFileSystem
from millpond.storage.log_dirs import ensure_meta_properties
from tests.cluster import rig
from tests.cluster.rig import describe_quorum

CLUSTER_ID = "cXVvcnVtLWNsdXN0ZXItdA"
#: node id -> process.roles: voters 1-3 with the broker role, and node 4 a broker only.
COMBINED = {1: "broker,controller", 2: "broker,controller", 3: "broker,controller", 4: "broker"}
#: Voters 1-3 controllers only, nodes 4 and 5 brokers only.
APART = {1: "controller", 2: "controller", 3: "controller", 4: "broker", 5: "broker"}


TIMERS = {
    "controller.quorum.election.timeout.ms": 150,
    "controller.quorum.fetch.timeout.ms": 300,
    "controller.quorum.election.backoff.max.ms": 150,
    "controller.quorum.request.timeout.ms": 300,
    "broker.heartbeat.interval.ms": 100,
    "request.timeout.ms": 5000,
}


def free_port(host: str) -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def host_of(node_id: int) -> str:
    return f"127.0.0.{node_id}"


class Cluster:
    def __init__(self, root: Path, roles: Mapping[int, str]) -> None:
        self.root = root
        self.roles = roles
        self.ports = {i: (free_port(host_of(i)), free_port(host_of(i))) for i in roles}
        self.nodes: dict[int, Broker] = {}

    @property
    def voters(self) -> list[int]:
        return [i for i, roles in self.roles.items() if "controller" in roles]

    @property
    def brokers(self) -> list[int]:
        return [i for i, roles in self.roles.items() if "broker" in roles]

    def props(self, node_id: int) -> dict[str, str]:
        voters = ",".join(f"{i}@{host_of(i)}:{self.ports[i][1]}" for i in self.voters)
        data_dir = self.root / str(node_id)
        return node_properties(
            node_id, self.roles[node_id], host_of(node_id), self.ports[node_id], voters,
            data_dir, TIMERS,
        )  # fmt: skip

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

    def bootstrap(self, node_id: int) -> str:
        return f"{host_of(node_id)}:{self.ports[node_id][0]}"


@asynccontextmanager
async def cluster(root: Path, roles: Mapping[int, str]) -> AsyncIterator[Cluster]:
    nodes = Cluster(root, roles)
    try:
        # A broker's start returns once it is unfenced, which takes a majority of the
        # voters: start them together.
        await asyncio.gather(*(nodes.start(i) for i in roles))
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
    rig.create_topic(bootstrap, name, 3)


@pytest.mark.parametrize("roles", [COMBINED, APART], ids=["combined", "apart"])
def test_nodes_share_one_quorum_and_fail_over(tmp_path: Path, roles: Mapping[int, str]) -> None:
    async def scenario() -> None:
        async with cluster(tmp_path, roles) as nodes:
            assert len(nodes.active()) == 1

            def registered(node: Broker) -> bool:
                brokers = node.image.brokers
                return sorted(brokers) == nodes.brokers and not any(
                    b.fenced for b in brokers.values()
                )

            # Each start returned once its own broker was unfenced; the last unfencing
            # reaches the other nodes' images as they replay the log.
            await until(
                lambda: all(registered(n) for n in nodes.nodes.values()),
                "every node sees every broker registered and unfenced",
            )
            [active] = nodes.active()
            # CreateTopics through a broker that is not the active controller: forwarded.
            first = next(i for i in nodes.brokers if i != active)
            await asyncio.to_thread(create_topic, nodes.bootstrap(first), "first")
            await until(
                lambda: all(n.image.topic("first") for n in nodes.nodes.values()),
                "every node has the topic",
            )
            topic = nodes.nodes[active].image.topic("first")
            assert topic is not None
            placed = {r for p in topic.partitions.values() for r in p.replicas}
            assert placed <= set(nodes.brokers) and len(placed) > 1, "spread over the brokers"

            await nodes.stop(active)
            await until(lambda: len(nodes.active()) == 1, "a new active controller")
            # A broker-only node forwards to whichever controller is active now.
            last = nodes.brokers[-1]
            await asyncio.to_thread(create_topic, nodes.bootstrap(last), "second")
            await until(
                lambda: all(n.image.topic("second") for n in nodes.nodes.values()),
                "the remaining nodes have the new topic",
            )
            # DescribeQuorum on a broker-only node goes on to the leader, which answers it.
            host, port = nodes.bootstrap(last).split(":")
            described = await asyncio.to_thread(describe_quorum, host, int(port), 10)
            assert described is not None
            [partition] = described.topics[0].partitions
            assert (partition.error_code, partition.leader_id) == (0, nodes.active()[0])
            assert sorted(v.replica_id for v in partition.current_voters) == nodes.voters
            # The stopped node comes back and catches up.
            restarted = await nodes.start(active)
            await until(lambda: restarted.image.topic("second") is not None, "caught up")

    asyncio.run(scenario())


def test_a_node_of_several_refuses_a_directory_without_the_cluster_id(tmp_path: Path) -> None:
    config = build_config(Cluster(tmp_path, COMBINED).props(1), env={})[0]
    with pytest.raises(ConfigError, match="millpond storage format --cluster-id"):
        Broker.from_config(config)
    assert not (tmp_path / "1" / "meta.properties").exists()

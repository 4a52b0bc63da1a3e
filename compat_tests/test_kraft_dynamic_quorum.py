"""A dynamic KRaft quorum (KIP-853) of millpond and Apache Kafka 4.4 controllers, grown
and shrunk with Kafka's own ``kafka-metadata-quorum add-controller`` and
``remove-controller``, with a millpond broker that finds the quorum through
``controller.quorum.bootstrap.servers`` creating topics throughout.

Each way round: the first controller (formatted ``--standalone``) is millpond's or
Kafka's; the other two join formatted ``--no-initial-controllers``, as observers, until
they are added. Then the first controller, the leader, is killed (-9), and the two left
elect a leader and remove it. At the end the two voters' metadata logs are one log, byte
for byte, and hold every topic."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from compat_tests.kafka.controller import KafkaController
from compat_tests.kafka.reference import free_port, run_tool
from millpond.broker.quorum_config import node_properties
from millpond.storage.checkpoints import read_meta_properties
from millpond.storage.fs import OsFileSystem
from tests.cluster import rig
from tests.cluster.rig import Node, quorum_leader

pytestmark = pytest.mark.compat

CLUSTER_ID = "RHluYW1pYy1xdW9ydW0hIQ"
SESSION_MS = 3000
BROKER_ID = 9
KAFKA_ID = 3
MILLPOND_IDS = (1, 2)


class DynamicQuorum:
    """Controllers 1 and 2 (millpond) and 3 (Kafka), broker 9 (millpond)."""

    def __init__(self, root: Path, first: int) -> None:
        self.root = root
        self.first = first
        self.ports = {i: free_port() for i in (*MILLPOND_IDS, KAFKA_ID)}
        broker_port = free_port()
        self.broker_port = broker_port
        servers = f"127.0.0.1:{self.ports[first]}"
        quorum = {"controller.quorum.bootstrap.servers": servers}
        timers = {"broker.session.timeout.ms": SESSION_MS, "broker.heartbeat.interval.ms": 500}
        self.kafka = KafkaController(
            root / "kafka", KAFKA_ID, self.ports[KAFKA_ID], quorum, session_ms=SESSION_MS
        )
        self.properties: dict[int, Path] = {KAFKA_ID: self.kafka.properties}
        self.nodes: dict[int, Node] = {}
        for i in (*MILLPOND_IDS, BROKER_ID):
            roles = "broker" if i == BROKER_ID else "controller"
            props = node_properties(
                i, roles, "127.0.0.1", (broker_port, self.ports.get(i, 0)), "",
                root / f"m{i}", {**quorum, **timers},
            )  # fmt: skip
            del props["controller.quorum.voters"]
            self.properties[i] = root / f"m{i}.properties"
            self.properties[i].write_text("".join(f"{k}={v}\n" for k, v in props.items()))
            overrides = [f"{k}={v}" for k, v in props.items()]
            self.nodes[i] = Node(
                i, roles, None, "127.0.0.1", root / f"m{i}", root / f"m{i}.log", overrides
            )

    def data_dir(self, node_id: int) -> Path:
        return self.kafka.data_dir if node_id == KAFKA_ID else self.root / f"m{node_id}"

    def directory_id(self, node_id: int) -> str:
        path = self.data_dir(node_id) / "meta.properties"
        meta = read_meta_properties(OsFileSystem(), str(path))
        assert meta.directory_id is not None
        return base64.urlsafe_b64encode(meta.directory_id).decode().rstrip("=")

    def running(self) -> list[int]:
        up = [i for i in MILLPOND_IDS if self.nodes[i].process is not None]
        return up + ([KAFKA_ID] if self.kafka.process is not None else [])

    def view(self) -> rig.QuorumView | None:
        addresses = {i: ("127.0.0.1", port) for i, port in self.ports.items()}
        running = self.running()
        return quorum_leader(addresses, running, running)

    def voters_caught_up(self, voters: set[int]) -> bool:
        view = self.view()
        return view is not None and set(view.voters) == voters and not view.behind

    def quorum_tool(self, at: int, *args: str) -> str:
        """Kafka's MetadataQuorumCommand against controller ``at``."""
        done = run_tool(
            "org.apache.kafka.tools.MetadataQuorumCommand",
            ["--bootstrap-controller", f"127.0.0.1:{self.ports[at]}", *args],
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    def add(self, node_id: int) -> None:
        out = self.quorum_tool(
            self.first, "--command-config", str(self.properties[node_id]), "add-controller"
        )
        assert f"Added controller {node_id}" in out, out

    def remove(self, at: int, node_id: int) -> None:
        out = self.quorum_tool(
            at, "remove-controller", "--controller-id", str(node_id),
            "--controller-directory-id", self.directory_id(node_id),
        )  # fmt: skip
        assert f"Removed KRaft controller {node_id}" in out, out

    def kill(self, node_id: int) -> None:
        if node_id == KAFKA_ID:
            self.kafka.kill()
        else:
            self.nodes[node_id].kill()

    def create_topic(self, name: str) -> None:
        rig.create_topic(f"127.0.0.1:{self.broker_port}", name, 2)


@contextmanager
def dynamic_quorum(root: Path, first: int) -> Iterator[DynamicQuorum]:
    quorum = DynamicQuorum(root, first)
    for i in (*MILLPOND_IDS, KAFKA_ID):
        flag = "--standalone" if i == first else "--no-initial-controllers"
        if i == KAFKA_ID:
            quorum.kafka.format(CLUSTER_ID, flag)
        else:
            quorum.nodes[i].format(CLUSTER_ID, flag)
    quorum.nodes[BROKER_ID].format(CLUSTER_ID)
    order = [first, *(i for i in (*MILLPOND_IDS, KAFKA_ID) if i != first)]
    try:
        for i in order:
            if i == KAFKA_ID:
                quorum.kafka.launch()
            else:
                quorum.nodes[i].start()
                quorum.nodes[i].wait_listening(0)
        broker = quorum.nodes[BROKER_ID]
        broker.start()
        broker.wait_listening(0)  # registered and unfenced
        yield quorum
    finally:
        for node in quorum.nodes.values():
            node.stop()
        quorum.kafka.stop()


@pytest.mark.parametrize("first", [1, KAFKA_ID], ids=["millpond-first", "kafka-first"])
def test_controllers_join_and_leave_a_dynamic_quorum(tmp_path: Path, first: int) -> None:
    with dynamic_quorum(tmp_path, first) as quorum:
        rig.until(lambda: quorum.voters_caught_up({first}), "the first controller leads alone")
        quorum.create_topic("with-one-voter")
        joiners = [i for i in (*MILLPOND_IDS, KAFKA_ID) if i != first]
        for i in joiners:
            quorum.add(i)
        rig.until(lambda: quorum.voters_caught_up({first, *joiners}), "three caught-up voters")
        quorum.create_topic("with-three-voters")
        view = quorum.view()
        assert view is not None and view.leader == first
        quorum.kill(first)
        rig.until(lambda: (v := quorum.view()) is not None and v.leader in joiners, "a new leader")
        view = quorum.view()
        assert view is not None
        quorum.remove(view.leader, first)
        rig.until(lambda: quorum.voters_caught_up(set(joiners)), "the two voters left")
        quorum.create_topic("with-two-voters")
    logs = [rig.metadata_batches(quorum.data_dir(i)) for i in joiners]
    shortest = min(len(log) for log in logs)
    assert shortest > 0
    assert logs[0][:shortest] == logs[1][:shortest]
    for i in joiners:
        assert {"with-one-voter", "with-three-voters", "with-two-voters"} <= rig.metadata_topics(
            quorum.data_dir(i), CLUSTER_ID
        )

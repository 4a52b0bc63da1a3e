"""One KRaft quorum of two millpond nodes and one Apache Kafka 4.4 controller, formed
with static voters (kraft.version 0). Kafka's controller leads first (it writes the
bootstrap records, the millpond brokers register with it, and their admin requests reach
it in Envelopes); Kafka's ``kafka-features upgrade --feature kraft.version=1`` moves the
quorum to dynamic voters once every voter has announced itself; and the quorum survives
killing (-9) each of the three in turn, the active controller first, with topics created
through the millpond brokers after every kill. At the end the three metadata logs are
one log, byte for byte, and every topic is in it. The other way round, a millpond leader
runs the upgrade for a quorum whose Kafka voter announced itself to it."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from compat_tests.kafka.controller import KafkaController
from compat_tests.kafka.reference import free_port, run_tool
from millpond.broker.quorum_config import node_properties
from tests.cluster import rig
from tests.cluster.rig import Node, live_brokers, quorum_leader

pytestmark = pytest.mark.compat

CLUSTER_ID = "TWl4ZWQtcXVvcnVtLWMhIQ"
KAFKA_ID = 3
#: broker.session.timeout.ms of every controller: a killed broker is fenced this soon.
SESSION_MS = 3000
MILLPOND_IDS = (1, 2)


class Quorum:
    def __init__(self, root: Path) -> None:
        self.ports = {i: (free_port(), free_port()) for i in (*MILLPOND_IDS, KAFKA_ID)}
        voters = ",".join(f"{i}@127.0.0.1:{self.ports[i][1]}" for i in sorted(self.ports))
        self.kafka = KafkaController(
            root / "kafka",
            KAFKA_ID,
            self.ports[KAFKA_ID][1],
            {"controller.quorum.voters": voters},
            session_ms=SESSION_MS,
        )
        self.nodes = {
            i: Node(
                i, "broker,controller", None, "127.0.0.1", root / f"m{i}", root / f"m{i}.log",
                [f"{k}={v}" for k, v in node_properties(
                    i, "broker,controller", "127.0.0.1", self.ports[i], voters, root / f"m{i}",
                    {"broker.session.timeout.ms": SESSION_MS, "broker.heartbeat.interval.ms": 500},
                ).items()],
            )
            for i in MILLPOND_IDS
        }  # fmt: skip

    def running(self) -> list[int]:
        up = [i for i, n in self.nodes.items() if n.process is not None]
        return up + ([KAFKA_ID] if self.kafka.process is not None else [])

    def leader(self) -> int | None:
        """The node that answers DescribeQuorum as the leader, if its running voters are
        caught up with it (each within the last two seconds)."""
        addresses = {i: ("127.0.0.1", ports[1]) for i, ports in self.ports.items()}
        running = self.running()
        view = quorum_leader(addresses, running, running)
        return None if view is None or view.behind else view.leader

    def bootstrap(self, node_id: int) -> str:
        return f"127.0.0.1:{self.ports[node_id][0]}"


def only_broker(quorum: Quorum, broker: int) -> bool:
    """Whether ``broker`` lists itself as the only live broker."""
    return live_brokers("127.0.0.1", quorum.ports[broker][0]) == {broker}


def create_topic(bootstrap: str, name: str) -> None:
    rig.create_topic(bootstrap, name, 2)


def upgraded(quorum: Quorum, controller: int) -> bool:
    """Run Kafka's ``kafka-features upgrade --feature kraft.version=1`` through
    ``controller``'s listener: True once it succeeds (the leader refuses until every
    voter has told it its directory id)."""
    done = run_tool(
        "org.apache.kafka.tools.FeatureCommand",
        ["--bootstrap-controller", f"127.0.0.1:{quorum.ports[controller][1]}", "upgrade",
         "--feature", "kraft.version=1"],
        timeout=60,
    )  # fmt: skip
    return done.returncode == 0


def voter_directories(quorum: Quorum, leader: int) -> dict[int, bytes]:
    """The voters' directory ids as the leader describes them (none before kraft.version 1)."""
    described = rig.describe_quorum("127.0.0.1", quorum.ports[leader][1])
    assert described is not None
    partition = described.topics[0].partitions[0]
    return {v.replica_id: bytes(v.replica_directory_id) for v in partition.current_voters}


def upgrade_to_dynamic_voters(quorum: Quorum, leader: int) -> None:
    assert set(voter_directories(quorum, leader).values()) == {bytes(16)}  # static
    rig.until(lambda: upgraded(quorum, leader), "kraft.version 1", seconds=90)
    directories = voter_directories(quorum, leader)
    assert sorted(directories) == sorted(quorum.ports)
    assert bytes(16) not in directories.values(), directories


@contextmanager
def mixed_quorum(root: Path, *, millpond_first: bool = False) -> Iterator[Quorum]:
    quorum = Quorum(root)
    quorum.kafka.format(CLUSTER_ID)
    for node in quorum.nodes.values():
        node.format(CLUSTER_ID)
    try:
        if not millpond_first:
            quorum.kafka.launch()
        for node in quorum.nodes.values():
            node.start()
        if millpond_first:
            rig.until(lambda: quorum.leader() in MILLPOND_IDS, "a millpond leader")
            quorum.kafka.launch()
        for node in quorum.nodes.values():
            node.wait_listening(0)  # registered and unfenced
        yield quorum
    finally:
        for node in quorum.nodes.values():
            node.stop()
        quorum.kafka.stop()


def test_two_millpond_controllers_and_a_kafka_controller_keep_one_log(tmp_path: Path) -> None:
    with mixed_quorum(tmp_path) as quorum:
        rig.until(lambda: quorum.leader() is not None, "a caught-up quorum")
        assert quorum.leader() == KAFKA_ID  # Kafka's controller leads first
        create_topic(quorum.bootstrap(1), "while-kafka-leads")
        upgrade_to_dynamic_voters(quorum, KAFKA_ID)
        killed: list[int] = []
        for n in range(3):
            # The active controller first, then each node not killed yet.
            leader = quorum.leader()
            assert leader is not None
            victim = leader if n == 0 else next(i for i in quorum.ports if i not in killed)
            killed.append(victim)
            if victim == KAFKA_ID:
                quorum.kafka.kill()
            else:
                quorum.nodes[victim].kill()
            rig.until(lambda: quorum.leader() is not None, f"a leader after killing {victim}")
            broker = next(i for i in MILLPOND_IDS if i != victim)
            if victim != KAFKA_ID:
                # Until its session lapses, the killed broker is listed, and a client may
                # pick it; the active controller fences it within broker.session.timeout.ms.
                rig.until(functools.partial(only_broker, quorum, broker), f"{victim} fenced")
            create_topic(quorum.bootstrap(broker), f"after-killing-{victim}")
            if victim == KAFKA_ID:
                quorum.kafka.launch()
            else:
                node = quorum.nodes[victim]
                size = node.log_path.stat().st_size
                node.start()
                node.wait_listening(size)
            rig.until(lambda: quorum.leader() is not None, f"{victim} back and caught up")
        assert sorted(killed) == [1, 2, KAFKA_ID]
    # Stopped cleanly: one log, the same bytes on all three.
    logs = {i: rig.metadata_batches(tmp_path / f"m{i}") for i in MILLPOND_IDS}
    logs[KAFKA_ID] = rig.metadata_batches(quorum.kafka.data_dir)
    shortest = min(len(log) for log in logs.values())
    assert shortest > 0
    assert logs[1][:shortest] == logs[2][:shortest] == logs[KAFKA_ID][:shortest]
    expected = {"while-kafka-leads", *(f"after-killing-{i}" for i in killed)}
    for data_dir in (tmp_path / "m1", tmp_path / "m2", quorum.kafka.data_dir):
        assert expected <= rig.metadata_topics(data_dir, CLUSTER_ID)


def test_a_millpond_leader_upgrades_a_mixed_quorum_to_dynamic_voters(tmp_path: Path) -> None:
    with mixed_quorum(tmp_path, millpond_first=True) as quorum:
        rig.until(lambda: quorum.leader() is not None, "a caught-up quorum")
        leader = quorum.leader()
        assert leader in MILLPOND_IDS
        upgrade_to_dynamic_voters(quorum, leader)
        assert quorum.leader() == leader
        create_topic(quorum.bootstrap(1), "after-the-upgrade")
        rig.until(lambda: quorum.leader() is not None, "all caught up")
    logs = {i: rig.metadata_batches(tmp_path / f"m{i}") for i in MILLPOND_IDS}
    logs[KAFKA_ID] = rig.metadata_batches(quorum.kafka.data_dir)
    shortest = min(len(log) for log in logs.values())
    assert logs[1][:shortest] == logs[2][:shortest] == logs[KAFKA_ID][:shortest]
    for data_dir in (tmp_path / "m1", tmp_path / "m2", quorum.kafka.data_dir):
        assert "after-the-upgrade" in rig.metadata_topics(data_dir, CLUSTER_ID)

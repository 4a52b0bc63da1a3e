"""``millpond local-cluster``: one command starts controllers and brokers on loopback that
clients use as a cluster, and stops them all cleanly."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from millpond.local_cluster import plan


def test_the_plan_gives_controllers_then_brokers_their_own_ports(tmp_path: Path) -> None:
    nodes = plan(tmp_path, 2, 3, 9092, 9192, {"num.partitions": "4"})
    assert [(n.node_id, n.roles, n.port) for n in nodes] == [
        (1, "controller", 9192),
        (2, "controller", 9193),
        (3, "broker", 9092),
        (4, "broker", 9093),
        (5, "broker", 9094),
    ]
    assert {n.props["controller.quorum.voters"] for n in nodes} == {
        "1@127.0.0.1:9192,2@127.0.0.1:9193"
    }
    assert nodes[2].props["log.dirs"] == str(tmp_path / "node3")
    assert all(n.props["num.partitions"] == "4" for n in nodes)


def _free_ports(count: int) -> int:
    """The first of ``count`` consecutive loopback ports free to listen on."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            base = int(probe.getsockname()[1])
        with contextlib.ExitStack() as held:
            try:
                for port in range(base, base + count):
                    sock = held.enter_context(socket.socket())
                    sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        return base
    raise AssertionError(f"no {count} consecutive free ports")


def _lines_until(proc: subprocess.Popen[str], marker: str, timeout: float) -> list[str]:
    assert proc.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line.rstrip("\n"))
        if marker in line:
            return seen
    raise AssertionError(f"no {marker!r} within {timeout} s: {seen}")


def test_a_local_cluster_serves_clients_and_stops_cleanly(tmp_path: Path) -> None:
    broker_port, controller_port = _free_ports(2), _free_ports(3)
    command = [
        sys.executable, "-m", "millpond", "local-cluster", "--dir", str(tmp_path / "cluster"),
        "--controllers", "3", "--brokers", "2",
        "--broker-port", str(broker_port), "--controller-port", str(controller_port),
        "--override", "broker.session.timeout.ms=3000",
    ]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        lines = _lines_until(proc, "bootstrap.servers=", 120)
        bootstrap = lines[-1].split("bootstrap.servers=")[1]
        assert any("registered and unfenced" in line for line in lines), lines
        assert sum("listening on" in line for line in lines) == 5, lines
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            admin.create_topics([NewTopic("local", 2, 1)])  # one partition on each broker
        finally:
            admin.close()
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        try:
            for i in range(5):
                producer.send("local", b"v%d" % i, partition=0).get(timeout=30)
        finally:
            producer.close()
        consumer = KafkaConsumer(
            bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=10_000
        )
        try:
            consumer.assign([TopicPartition("local", 0)])
            assert [m.value for m in consumer] == [b"v%d" % i for i in range(5)]
        finally:
            consumer.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, rest
    assert "stopped cleanly" in rest
    for node in range(1, 6):
        assert "millpond stopped cleanly" in (tmp_path / "cluster" / f"node{node}.log").read_text()

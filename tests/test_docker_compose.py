"""docker/compose.yaml and docker/compose.single.yaml, run without Docker (no engine runs
here): each service becomes what its container would run, the image's entrypoint with the
Dockerfile's ENV and the service's environment, as a process on a loopback address of its
own, its named volume a directory of its own.

The compose network is modelled by rewriting the HOST:PORT endpoints of the environment
and the healthchecks: a service's name is that service's address, 0.0.0.0 and 127.0.0.1
are the container's own address, and localhost:P (what a client on the host dials) is the
address and container port of the service that publishes P. Nothing else of the files is
reinterpreted: every config comes from the entrypoint turning the environment into
`millpond serve` (and `millpond storage format`) arguments, so a wrong voter, listener,
advertised port or replication setting in the files fails here as it would in Docker.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError, NotEnoughReplicasError

from millpond.broker.quorum_config import parse_voters
from millpond.wire.generated.api.describe_configs_request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from millpond.wire.generated.api.describe_configs_response import DescribeConfigsResponse
from tests.cluster import rig

REPO = Path(__file__).resolve().parents[1]
DOCKER = REPO / "docker"
ENTRYPOINT = DOCKER / "entrypoint.sh"
BIN = Path(sys.executable).parent
#: What the compose file's header and README.md tell clients on the host to use.
HOST_BOOTSTRAP = "localhost:9092,localhost:9093,localhost:9094"
#: A HOST:PORT endpoint inside a config value (after ``//``, ``@``, ``,`` or a space).
_ENDPOINT = re.compile(r"(?<![\w.-])([A-Za-z0-9][\w.-]*):([0-9]+)(?![\w.])")
_LISTENING = re.compile(rb" listening on \S+ \(cluster (\S+), node (\d+)\)")
READY_S = 60.0


def _instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """The Dockerfile's instructions, continuation lines joined, comments dropped."""
    text = "\n".join(
        line for line in dockerfile.read_text().splitlines() if not line.lstrip().startswith("#")
    )
    joined = re.sub(r"\\\n", " ", text)
    found = []
    for line in joined.splitlines():
        word, _, rest = line.strip().partition(" ")
        if word:
            found.append((word.upper(), rest.strip()))
    return found


def _image() -> tuple[dict[str, str], list[str]]:
    """The ENV every container starts with, and the image's healthcheck command."""
    env: dict[str, str] = {}
    health: list[str] = []
    for word, rest in _instructions(DOCKER / "Dockerfile"):
        if word == "ENV":
            for item in shlex.split(rest):
                key, _, value = item.partition("=")
                env[key] = value
        elif word == "HEALTHCHECK":
            health = ["CMD", *json.loads(rest.split(" CMD ", 1)[1])]
    assert health, "the Dockerfile has no HEALTHCHECK"
    return env, health


@dataclass
class ServiceNode(rig.Node):
    """A compose service as its container runs it: rig.Node starts, logs and stops the
    process; the command is the image's entrypoint with the service's ``command``."""

    service: str = ""
    args: list[str] = field(default_factory=list)
    healthcheck: list[str] = field(default_factory=list)

    def command(self, *args: str) -> list[str]:
        assert args == ("serve",), args  # rig.Node.start, with no overrides of its own
        return [str(ENTRYPOINT), *self.args]

    def listening(self) -> tuple[str, int]:
        """The cluster id and node id the node's log says it serves."""
        match = _LISTENING.search(self.log_path.read_bytes())
        assert match is not None, f"{self.service} logged no start"
        return match.group(1).decode(), int(match.group(2))

    def tail(self, lines: int = 25) -> str:
        text = self.log_path.read_text(errors="replace") if self.log_path.exists() else ""
        return f"--- {self.service} ({self.log_path}):\n" + "\n".join(text.splitlines()[-lines:])


def _free(address: str, port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((address, port))
        except OSError:
            return False
    return True


class Network:
    """The compose network on loopback: one 127.0.0.x per service."""

    def __init__(self, services: Mapping[str, Any], ports: set[int]) -> None:
        free = (
            a for a in (f"127.0.0.{x}" for x in range(40, 255)) if all(_free(a, p) for p in ports)
        )
        self.addresses: dict[str, str] = {}
        for name in services:
            address = next(free, None)
            assert address is not None, f"no loopback address has ports {sorted(ports)} free"
            self.addresses[name] = address
        #: host port -> (service, container port), from each service's ``ports``.
        self.published: dict[int, tuple[str, int]] = {}
        for name, service in services.items():
            for mapping in service.get("ports", []):
                host, container = (int(p) for p in str(mapping).split(":"))
                assert host not in self.published, f"host port {host} published twice"
                self.published[host] = (name, container)

    def rewrite(self, text: str, own: str) -> str:
        """``text`` with its endpoints as seen from the container of service ``own``."""

        def one(match: re.Match[str]) -> str:
            host, port = match.group(1), int(match.group(2))
            if host in self.addresses:
                return f"{self.addresses[host]}:{port}"
            if host in ("0.0.0.0", "127.0.0.1"):
                return f"{self.addresses[own]}:{port}"
            if host == "localhost":
                assert port in self.published, f"{own}: localhost:{port} is published by no service"
                service, container_port = self.published[port]
                return f"{self.addresses[service]}:{container_port}"
            raise AssertionError(f"{own}: {host}:{port} names no service of the compose file")

        return _ENDPOINT.sub(one, text)


def _load(compose: Path) -> dict[str, Any]:
    loaded = yaml.safe_load(compose.read_text())
    assert isinstance(loaded, dict) and isinstance(loaded.get("services"), dict)
    return loaded


def _nodes(compose: Path, root: Path) -> tuple[list[ServiceNode], Network]:
    """The services of ``compose`` as nodes, each with its own data directory."""
    spec = _load(compose)
    services: dict[str, Any] = spec["services"]
    image_env, image_health = _image()
    mentioned = {int(port) for _, port in _ENDPOINT.findall(compose.read_text())}
    network = Network(services, mentioned)
    declared = set(spec.get("volumes") or {})
    used: set[str] = set()
    nodes: list[ServiceNode] = []
    for name, service in services.items():
        assert service["build"] == {"context": "..", "dockerfile": "docker/Dockerfile"}, name
        environment = service.get("environment") or {}
        assert isinstance(environment, dict), f"{name}: environment as a mapping"
        env = {**image_env, **{k: str(v) for k, v in environment.items()}}
        env = {k: network.rewrite(v, name) for k, v in env.items()}
        [volume] = service["volumes"]
        source, target = volume.split(":")
        assert source in declared and source not in used, f"{name}: volume {source}"
        assert target == env["MILLPOND_DATA_DIR"], f"{name}: {target} is not the data dir"
        used.add(source)
        env["MILLPOND_DATA_DIR"] = str(root / source)
        env["PATH"] = f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"
        health = (service.get("healthcheck") or {}).get("test") or image_health
        nodes.append(
            ServiceNode(
                node_id=len(nodes) + 1,  # the rig's own numbering; the node's is node.id
                roles="",
                namespace=None,
                address=network.addresses[name],
                data_dir=root / source,
                log_path=root / f"{name}.log",
                overrides=[],
                env=env,
                service=name,
                args=[network.rewrite(str(a), name) for a in service.get("command") or []],
                healthcheck=[network.rewrite(str(a), name) for a in health],
            )
        )
    return nodes, network


@contextmanager
def _running(nodes: list[ServiceNode]) -> Iterator[None]:
    """Every node started, and stopped afterwards (brokers, listed last, first); the
    nodes' last log lines are printed when the body fails."""
    try:
        for node in nodes:
            node.start()
        for node in nodes:
            node.wait_listening(0, READY_S)
        yield
    except BaseException:
        print("\n".join(node.tail() for node in nodes))
        raise
    finally:
        for node in reversed(nodes):
            node.stop()


def _voters(address: str, port: int, node_id: int) -> dict[int, tuple[str, int]]:
    """The ``controller.quorum.voters`` the node at ``address:port`` runs with, as its
    DescribeConfigs of itself tells."""
    request = DescribeConfigsRequest(
        resources=[
            DescribeConfigsResource(
                resource_type=4,  # BROKER
                resource_name=str(node_id),
                configuration_keys=["controller.quorum.voters"],
            )
        ]
    )
    response = rig.request(address, port, request, 4)
    assert isinstance(response, DescribeConfigsResponse), response
    [result] = response.results
    assert result.error_code == 0, result
    [config] = result.configs
    return parse_voters((config.value or "").split(","))


def _healthy(node: ServiceNode) -> None:
    kind, *command = node.healthcheck
    assert kind in ("CMD", "CMD-SHELL"), node.healthcheck
    argv = command if kind == "CMD" else ["sh", "-c", command[0]]
    done = subprocess.run(
        argv, env=node.env, capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, f"{node.service} unhealthy: {done.stdout}{done.stderr}"


def _partitions(admin: KafkaAdminClient, topic: str) -> list[dict[str, Any]]:
    [described] = admin.describe_topics([topic])
    assert described["error_code"] == 0, described
    partitions: list[dict[str, Any]] = described["partitions"]
    return partitions


def _isr_sizes(admin: KafkaAdminClient, topic: str) -> set[int]:
    """The sizes of the topic's ISRs; none while the client cannot ask (it may pick a
    broker that has just stopped)."""
    try:
        return {len(p["isr_nodes"]) for p in _partitions(admin, topic)}
    except KafkaError:
        return set()


def _fully_replicated(admin: KafkaAdminClient, topic: str) -> bool:
    """Every partition has 3 replicas, all of them in sync (a topic not there yet is not)."""
    try:
        partitions = _partitions(admin, topic)
    except (AssertionError, KafkaError):
        return False
    return bool(partitions) and all(
        len(p["replica_nodes"]) == 3 and sorted(p["isr_nodes"]) == sorted(p["replica_nodes"])
        for p in partitions
    )


def _produce(bootstrap: str, topic: str, values: list[bytes], acks: int | str) -> None:
    """Each value acknowledged, in turn; no retries, so a refusal is raised as it came."""
    producer = KafkaProducer(
        bootstrap_servers=bootstrap, acks=acks, retries=0, enable_idempotence=False
    )
    try:
        for value in values:
            producer.send(topic, value).get(timeout=30)
    finally:
        producer.close()


def _consume_as_group(bootstrap: str, topic: str, group: str, count: int) -> list[bytes]:
    """``count`` records read as a member of ``group``, which commits them."""
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=20_000,
    )
    try:
        got: list[bytes] = []
        for message in consumer:
            got.append(message.value)
            if len(got) == count:
                break
        consumer.commit()
    finally:
        consumer.close()
    return got


def test_the_compose_cluster_replicates_three_ways(tmp_path: Path) -> None:
    nodes, network = _nodes(DOCKER / "compose.yaml", tmp_path)
    by_service = {n.service: n for n in nodes}
    controllers = [f"controller-{i}" for i in (1, 2, 3)]
    brokers = [f"broker-{i}" for i in (4, 5, 6)]
    assert list(by_service) == controllers + brokers
    assert sorted(network.published) == [9092, 9093, 9094]
    bootstrap = network.rewrite(HOST_BOOTSTRAP, "broker-4")
    with _running(nodes):
        started = {n.service: n.listening() for n in nodes}
        assert {service: node_id for service, (_, node_id) in started.items()} == {
            s: int(s.rsplit("-", 1)[1]) for s in by_service
        }
        assert len({cluster for cluster, _ in started.values()}) == 1, started
        voters = {int(s[-1]): (by_service[s].address, 9093) for s in controllers}

        def ready() -> bool:
            view = rig.quorum_leader(voters, voters, voters)
            return (
                view is not None
                and sorted(view.voters) == [1, 2, 3]
                and not view.behind
                and all(rig.live_brokers(by_service[b].address, 9092) == {4, 5, 6} for b in brokers)
            )

        rig.until(ready, "a quorum of controllers 1-3, and brokers 4-6 unfenced", READY_S)
        # Every node names every voter where that controller listens (a broker that
        # cannot reach one would fail only once that one leads the quorum).
        for node in nodes:
            _, node_id = started[node.service]
            port = 9093 if node.service in controllers else 9092
            assert _voters(node.address, port, node_id) == voters, node.service
        for node in nodes:
            _healthy(node)

        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
        try:
            # No replication factor given: default.replication.factor places it.
            admin.create_topics({"compose": {"num_partitions": 3}}, wait_for_metadata=True)
            placed = _partitions(admin, "compose")
            assert [len(p["replica_nodes"]) for p in placed] == [3, 3, 3], placed
            rig.until(lambda: _fully_replicated(admin, "compose"), "an ISR of 3", READY_S)
            sent = [b"r%d" % i for i in range(30)]
            _produce(bootstrap, "compose", sent, "all")
            assert sorted(_consume_as_group(bootstrap, "compose", "g", len(sent))) == sorted(sent)
            # The group's coordinator made __consumer_offsets, at
            # offsets.topic.replication.factor.
            rig.until(
                lambda: _fully_replicated(admin, "__consumer_offsets"),
                "__consumer_offsets with an ISR of 3",
                READY_S,
            )

            # min.insync.replicas=2: acks=all holds with a broker down, not with two.
            by_service["broker-6"].stop()
            rig.until(lambda: _isr_sizes(admin, "compose") == {2}, "ISRs of 2", READY_S)
            _produce(bootstrap, "compose", [b"two in sync"], "all")
            by_service["broker-5"].stop()
            rig.until(lambda: _isr_sizes(admin, "compose") == {1}, "ISRs of [4]", READY_S)
            with pytest.raises(NotEnoughReplicasError):
                _produce(bootstrap, "compose", [b"one in sync"], "all")
            _produce(bootstrap, "compose", [b"acks=1"], 1)

            # A restart finds the node's volume formatted and serves from it.
            restarted = by_service["broker-6"]
            before = restarted.log_path.stat().st_size
            restarted.start()
            restarted.wait_listening(before, READY_S)
            assert restarted.log_path.read_text().count("Formatted") == 1
            rig.until(
                lambda: rig.live_brokers(by_service["broker-4"].address, 9092) == {4, 6},
                "broker 6 back",
                READY_S,
            )
        finally:
            admin.close()


def test_the_single_node_compose_file_serves_clients(tmp_path: Path) -> None:
    nodes, network = _nodes(DOCKER / "compose.single.yaml", tmp_path)
    assert sorted(network.published) == [9092]
    bootstrap = network.rewrite("localhost:9092", nodes[0].service)
    with _running(nodes):
        _healthy(nodes[0])
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        try:
            producer.send("single", b"one").get(timeout=30)
        finally:
            producer.close()
        consumer = KafkaConsumer(
            "single",
            bootstrap_servers=bootstrap,
            auto_offset_reset="earliest",
            consumer_timeout_ms=10_000,
        )
        try:
            assert next(iter(consumer)).value == b"one"
        finally:
            consumer.close()

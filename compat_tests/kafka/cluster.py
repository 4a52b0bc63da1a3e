"""Apache Kafka 4.4 as a small cluster on loopback: controller 1 and brokers 2..N+1, the
layout of :func:`millpond.testing.cluster.cluster` with one controller, so that a test
can send the same requests, naming the same broker ids, to both.

The controller runs at millpond's feature levels (``KAFKA_FEATURES``), as a static quorum
of one; the brokers are Kafka's own broker-only nodes, their internal topics replicated
as a real cluster's are (factor 3 where there are 3 brokers).
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from compat_tests.kafka.controller import KafkaController
from compat_tests.kafka.reference import (
    Ports,
    RunningBroker,
    ToolError,
    free_port,
    kafka_classpath,
    run_tool,
)

__all__ = ["KafkaCluster", "formatted_broker", "kafka_cluster"]


def _broker_properties(
    node_id: int, port: int, controller_port: int, log_dir: Path, replication: int,
    extra: Mapping[str, object],
) -> str:  # fmt: skip
    lines = {
        "process.roles": "broker",
        "node.id": node_id,
        "listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
        "log.dirs": log_dir,
        "offsets.topic.replication.factor": replication,
        "offsets.topic.num.partitions": 1,
        "transaction.state.log.replication.factor": replication,
        "transaction.state.log.min.isr": 1,
        "group.initial.rebalance.delay.ms": 0,
        **extra,
    }
    return "".join(f"{k}={v}\n" for k, v in lines.items())


def formatted_broker(
    home: Path,
    node_id: int,
    controller_port: int,
    cluster_id: str,
    *,
    replication: int = 1,
    config: Mapping[str, object] | None = None,
) -> RunningBroker:
    """A Kafka broker-only node in ``home`` (which must not exist yet) of the cluster whose
    single controller listens on ``controller_port`` (Kafka's or millpond's), its data
    directory formatted with ``cluster_id``; not started (``launch`` it)."""
    home.mkdir(parents=True)
    ports = Ports.loopback()
    broker = RunningBroker(home, ports, kafka_classpath(), 120.0, 1)
    broker.properties.write_text(
        _broker_properties(
            node_id, ports.plaintext, controller_port, broker.log_dir, replication, config or {}
        )
    )
    formatted = run_tool(
        "kafka.tools.StorageTool",
        ["format", f"--cluster-id={cluster_id}", "-c", str(broker.properties)],
    )
    if formatted.returncode != 0:
        raise ToolError(f"formatting broker {node_id} failed", formatted)
    return broker


class KafkaCluster:
    """A running Kafka cluster (see the module docstring); brokers by node id."""

    def __init__(self, controller: KafkaController, brokers: dict[int, RunningBroker]) -> None:
        self.controller = controller
        self.brokers = brokers

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values())

    def address(self, node_id: int) -> str:
        return self.brokers[node_id].bootstrap

    def stop(self) -> None:
        for broker in self.brokers.values():
            broker.stop()
        self.controller.stop()


@contextmanager
def kafka_cluster(
    work: Path,
    *,
    brokers: int = 3,
    config: Mapping[str, object] | None = None,
    session_ms: int = 9000,
) -> Iterator[KafkaCluster]:
    """Format and start the cluster in ``work`` for the ``with`` block, launched from the
    calling thread (its JVMs end with it); ``config`` adds broker properties."""
    cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
    controller_port = free_port()
    controller = KafkaController(
        work / "controller", 1, controller_port,
        {"controller.quorum.voters": f"1@127.0.0.1:{controller_port}"}, session_ms=session_ms,
    )  # fmt: skip
    controller.format(cluster_id)
    running: dict[int, RunningBroker] = {}
    cluster = KafkaCluster(controller, running)
    try:
        controller.launch()
        for node_id in range(2, brokers + 2):
            broker = formatted_broker(
                work / f"broker-{node_id}",
                node_id,
                controller_port,
                cluster_id,
                replication=min(3, brokers),
                config=config,
            )
            broker.launch()
            running[node_id] = broker
        yield cluster
    finally:
        cluster.stop()

"""One KRaft node process, millpond's or Apache Kafka 4.4's, from the same properties:
formatted by its own storage tool, started, killed. The quorum benchmarks build their
clusters of these, so both systems get the same layout and the same settings."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from compat_tests.kafka.reference import (
    BROKER_JVM,
    BROKER_LOG4J,
    _java,
    free_port,
    kafka_classpath,
    run_tool,
)

__all__ = ["KRaftCluster", "NodeProcess", "process_cpu_s"]


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds process ``pid`` has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class NodeProcess:
    """A node of ``kind`` (``millpond`` or ``kafka``) whose files are ``root/<name>.*``."""

    def __init__(self, kind: str, root: Path, name: str, props: Mapping[str, object]) -> None:
        self.kind = kind
        self.props = dict(props)
        self._properties = root / f"{name}.properties"
        self.log = root / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def _overrides(self) -> list[str]:
        return [a for k, v in self.props.items() for a in ("--override", f"{k}={v}")]

    def _properties_file(self) -> Path:
        self._properties.write_text("".join(f"{k}={v}\n" for k, v in self.props.items()))
        return self._properties

    def format(self, cluster_id: str) -> None:
        if self.kind == "millpond":
            command = [sys.executable, "-m", "millpond", "storage", "format", "-t", cluster_id]
            subprocess.run([*command, *self._overrides()], check=True, capture_output=True)
            return
        done = run_tool(
            "kafka.tools.StorageTool",
            ["format", f"--cluster-id={cluster_id}", "-c", str(self._properties_file())],
        )
        assert done.returncode == 0, done.stdout + done.stderr

    def start(self) -> subprocess.Popen[bytes]:
        if self.kind == "millpond":
            command = [sys.executable, "-m", "millpond", "serve", *self._overrides()]
        else:
            command = _java(
                kafka_classpath(), BROKER_JVM, BROKER_LOG4J, "kafka.Kafka",
                str(self._properties_file()),
            )  # fmt: skip
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        return self.proc

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait(timeout=60)
            self.proc = None


class KRaftCluster:
    """Controller-only and broker-only nodes of one system (``kind`` is ``millpond`` or
    ``kafka``) on 127.0.0.1, a static voter set, ``extra`` properties on every broker."""

    def __init__(
        self,
        kind: str,
        root: Path,
        controllers: Sequence[int],
        brokers: Sequence[int],
        extra: Mapping[str, object] | None = None,
    ) -> None:
        self.kind = kind
        self.root = root
        self.ports = {i: free_port() for i in (*controllers, *brokers)}
        voters = ",".join(f"{i}@127.0.0.1:{self.ports[i]}" for i in controllers)
        self.nodes: dict[int, NodeProcess] = {}
        for i in (*controllers, *brokers):
            controller = i in controllers
            listener = "CONTROLLER" if controller else "PLAINTEXT"
            props: dict[str, object] = {
                "node.id": i,
                "process.roles": "controller" if controller else "broker",
                "listeners": f"{listener}://127.0.0.1:{self.ports[i]}",
                "controller.listener.names": "CONTROLLER",
                "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
                "controller.quorum.voters": voters,
                "log.dirs": root / f"node{i}",
            }
            if not controller:
                props["advertised.listeners"] = f"PLAINTEXT://127.0.0.1:{self.ports[i]}"
                props["inter.broker.listener.name"] = "PLAINTEXT"
                props.update(extra or {})
            self.nodes[i] = NodeProcess(kind, root, f"node{i}", props)

    @property
    def procs(self) -> dict[int, subprocess.Popen[bytes]]:
        """The running nodes' processes."""
        return {i: n.proc for i, n in self.nodes.items() if n.proc is not None}

    def format(self, cluster_id: str) -> None:
        for node in self.nodes.values():
            node.format(cluster_id)

    def start(self, i: int) -> None:
        self.nodes[i].start()

    def kill(self, i: int) -> None:
        self.nodes[i].kill()

    def stop(self) -> None:
        procs = self.procs
        for proc in procs.values():
            proc.send_signal(signal.SIGTERM)
        for proc in procs.values():
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
        for node in self.nodes.values():
            node.proc = None

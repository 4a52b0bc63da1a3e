"""Apache Kafka 4.4 as a controller only (``process.roles=controller``), as a process the
mixed-quorum tests format, start, kill and restart beside millpond's nodes."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from compat_tests.kafka.reference import BROKER_JVM, BROKER_LOG4J, _java, kafka_classpath, run_tool

__all__ = ["KAFKA_FEATURES", "KafkaController"]

#: What a millpond controller runs: metadata.version 4.1-IV1 and no newer feature.
KAFKA_FEATURES = (
    "metadata.version=27", "group.version=0", "transaction.version=0", "share.version=0",
    "streams.version=0", "eligible.leader.replicas.version=0",
)  # fmt: skip


class KafkaController:
    def __init__(
        self,
        work: Path,
        node_id: int,
        port: int,
        quorum: Mapping[str, object],
        *,
        session_ms: int,
    ) -> None:
        """``quorum``: ``controller.quorum.voters`` or ``controller.quorum.bootstrap.servers``."""
        self.work = work
        self.node_id = node_id
        self.port = port
        self.data_dir = work / "data"
        self.properties = work / "controller.properties"
        self.log_path = work / "kafka.log"
        self.process: subprocess.Popen[bytes] | None = None
        work.mkdir(parents=True, exist_ok=True)
        props = {
            "node.id": node_id,
            "process.roles": "controller",
            "listeners": f"CONTROLLER://127.0.0.1:{port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
            **quorum,
            "log.dirs": self.data_dir,
            # Elections sooner than millpond's, so that Kafka's controller leads first.
            "controller.quorum.election.timeout.ms": 100,
            "controller.quorum.election.backoff.max.ms": 100,
            "broker.session.timeout.ms": session_ms,
        }
        self.properties.write_text("".join(f"{k}={v}\n" for k, v in props.items()))

    def format(self, cluster_id: str, *flags: str) -> None:
        """``kafka-storage format`` at millpond's feature levels, plus ``flags``."""
        features = [arg for f in KAFKA_FEATURES for arg in ("--feature", f)]
        done = run_tool(
            "kafka.tools.StorageTool",
            ["format", f"--cluster-id={cluster_id}", "-c", str(self.properties), *features,
             *flags],
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr

    def launch(self, timeout_s: float = 120) -> None:
        after = self.log_path.stat().st_size if self.log_path.exists() else 0
        command = _java(
            kafka_classpath(), BROKER_JVM, BROKER_LOG4J, "kafka.Kafka", str(self.properties)
        )
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout_s
        while b"Kafka Server started" not in self.log_path.read_bytes()[after:]:
            assert self.process.poll() is None, f"Kafka exited: see {self.log_path}"
            assert time.monotonic() < deadline, f"Kafka did not start: see {self.log_path}"
            time.sleep(0.1)

    def kill(self) -> None:
        assert self.process is not None
        self.process.kill()
        self.process.wait(timeout=30)
        self.process = None

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=60)
            self.process = None

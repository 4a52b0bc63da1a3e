"""One KRaft node process, millpond's or Apache Kafka 4.4's, from the same properties:
formatted by its own storage tool, started, killed. The quorum benchmarks build their
clusters of these, so both systems get the same layout and the same settings."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from compat_tests.kafka.reference import BROKER_JVM, BROKER_LOG4J, _java, kafka_classpath, run_tool

__all__ = ["NodeProcess"]


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

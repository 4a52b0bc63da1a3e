"""Start and stop a real Apache Kafka 4.4 broker (KRaft, combined mode) on loopback.

The broker binds its listeners on ports of its own but advertises the recording proxy's ports,
so every connection a client makes after bootstrap (Metadata tells it where to go) also passes
through the proxy. The broker's inter-broker and controller channels are proxied the same way,
which records what Kafka itself sends as a client (WriteTxnMarkers, BrokerHeartbeat, ...).
"""

from __future__ import annotations

import base64
import socket
import struct
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

HEAP = "-Xmx512m"

LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = info
rootLogger.appenderRef.out.ref = out
logger.noisy.name = org.apache.kafka.common.config
logger.noisy.level = warn
"""


@dataclass(frozen=True)
class Ports:
    """Where the broker listens (bind) and what it tells clients (advertise)."""

    plaintext: int
    internal: int
    controller: int
    adv_plaintext: int
    adv_internal: int
    adv_controller: int


def free_port() -> int:
    """A currently free loopback port (the broker binds it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def server_properties(ports: Ports, log_dir: Path, extra: dict[str, str]) -> str:
    """server.properties for a one-node cluster that auto-creates topics and has every
    internal topic at replication factor 1 (a single broker could not satisfy 3)."""
    return "\n".join(
        [
            "process.roles=broker,controller",
            "node.id=1",
            f"listeners=PLAINTEXT://127.0.0.1:{ports.plaintext},"
            f"INTERNAL://127.0.0.1:{ports.internal},CONTROLLER://127.0.0.1:{ports.controller}",
            f"advertised.listeners=PLAINTEXT://127.0.0.1:{ports.adv_plaintext},"
            f"INTERNAL://127.0.0.1:{ports.adv_internal},"
            f"CONTROLLER://127.0.0.1:{ports.adv_controller}",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,"
            "CONTROLLER:PLAINTEXT",
            "inter.broker.listener.name=INTERNAL",
            "controller.listener.names=CONTROLLER",
            f"controller.quorum.bootstrap.servers=127.0.0.1:{ports.adv_controller}",
            f"log.dirs={log_dir}",
            "num.partitions=1",
            "auto.create.topics.enable=true",
            "offsets.topic.replication.factor=1",
            "offsets.topic.num.partitions=1",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.num.partitions=1",
            "transaction.state.log.min.isr=1",
            "share.coordinator.state.topic.replication.factor=1",
            "share.coordinator.state.topic.num.partitions=1",
            "share.coordinator.state.topic.min.isr=1",
            "group.initial.rebalance.delay.ms=0",
            # An authorizer makes the ACL APIs answer for real; ANONYMOUS (every PLAINTEXT
            # client) is a super user, so nothing else changes.
            "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users=User:ANONYMOUS",
            *(f"{k}={v}" for k, v in extra.items()),
            "",
        ]
    )


def api_versions_ok(port: int, timeout: float = 2.0) -> bool:
    """True if an ApiVersions v0 round trip on port answers with error code 0."""
    request = struct.pack(">hhih", 18, 0, 1, -1)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(struct.pack(">i", len(request)) + request)
            head = _recv_exact(s, 4)
            (size,) = struct.unpack(">i", head)
            body = _recv_exact(s, size)
    except OSError:
        return False
    corr, error = struct.unpack_from(">ih", body, 0)
    return bool(corr == 1 and error == 0)


def _recv_exact(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            raise OSError("connection closed")
        data += chunk
    return data


class KafkaBroker:
    """A Kafka 4.4 process formatted and started in work_dir; use as a context manager."""

    def __init__(
        self, classpath: str, work_dir: Path, ports: Ports, extra: dict[str, str] | None = None
    ) -> None:
        self.classpath = classpath
        self.extra = extra or {}
        self.work_dir = work_dir
        self.ports = ports
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = work_dir / "kafka.log"

    def _java(self, *args: str) -> list[str]:
        return [
            "java",
            HEAP,
            "-Xms256m",
            "-XX:+UseG1GC",
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={self.work_dir / 'log4j2.properties'}",
            "-cp",
            self.classpath,
            *args,
        ]

    def start(self, ready_timeout: float = 120.0) -> None:
        """Format storage, launch the broker, and wait until it answers ApiVersions and has
        logged that it started."""
        self.work_dir.mkdir(parents=True, exist_ok=True)
        (self.work_dir / "log4j2.properties").write_text(LOG4J2)
        props = self.work_dir / "server.properties"
        props.write_text(server_properties(self.ports, self.work_dir / "data", self.extra))
        cluster_id = _cluster_id()
        subprocess.run(
            self._java(
                "kafka.tools.StorageTool",
                "format",
                "-t",
                cluster_id,
                "-c",
                str(props),
                "--standalone",
            ),
            check=True,
            timeout=120,
            stdout=subprocess.DEVNULL,
        )
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                self._java("kafka.Kafka", str(props)), stdout=log, stderr=subprocess.STDOUT
            )
        deadline = time.monotonic() + ready_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"Kafka exited early; see {self.log_path}")
            started = b"Kafka Server started" in self.log_path.read_bytes()
            if started and api_versions_ok(self.ports.plaintext):
                return
            time.sleep(0.5)
        raise TimeoutError(f"Kafka not ready after {ready_timeout}s; see {self.log_path}")

    def stop(self) -> None:
        """SIGTERM (Kafka shuts down cleanly), then SIGKILL if it takes too long."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def __enter__(self) -> KafkaBroker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _cluster_id() -> str:
    """A cluster id as `kafka-storage random-uuid` makes one: 16 random bytes, base64url."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")

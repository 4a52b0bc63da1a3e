"""The reference Apache Kafka 4.4: its jars, a one-node KRaft broker on loopback, and its tools.

Shared by the compat tests (the session fixture in compat_tests/conftest.py) and tools/capture.
Nothing here downloads anything: `bash compat_tests/kafka/install.sh` (which .ci/run runs)
resolves the jars from Maven Central into :func:`cache_dir`, and :func:`kafka_classpath` raises
:class:`KafkaNotInstalledError`, saying so, when they are missing or stale.

    broker = start_broker(tmp / "kafka")        # format + start, ready when it returns
    try:
        ...  # clients connect to broker.bootstrap; data lands under broker.log_dir
        print(dump_log_segments([broker.partition_dir("t", 0) / LOG_0], "--deep-iteration"))
    finally:
        broker.stop()

Every wait is bounded and waits on a real condition (the broker's log saying it started and an
ApiVersions round trip, a process exiting), never on a fixed sleep.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import socket
import struct
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

KAFKA_VERSION = "4.4.0"
HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"
INSTALL_SCRIPT = HERE / "install.sh"
BROKER_LOG4J = HERE / "broker-log4j2.properties"
TOOLS_LOG4J = HERE / "tools-log4j2.properties"
INSTALL_HINT = (
    "run `bash compat_tests/kafka/install.sh` from the repository root "
    "(needs Java 17 and Maven; .ci/run does this)"
)
# A small heap on a 2-core machine, as Kafka's own scripts give the broker (1g) and tools (256m).
BROKER_JVM = ["-Xmx512m", "-Xms256m", "-XX:+UseG1GC"]
# Tools live for a second or two: a small heap and no C2 compiler start them fastest.
TOOL_JVM = ["-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
# The name of the first segment's files in a partition directory: offset 0, 20 digits.
SEGMENT_0 = "00000000000000000000"
LOG_0 = f"{SEGMENT_0}.log"
STARTED_MARKER = b"Kafka Server started"


class KafkaNotInstalledError(RuntimeError):
    """Kafka's jars or java are missing; the message says how to install them."""


class ToolError(RuntimeError):
    """A Kafka tool failed or reported errors; ``result`` holds its exit code and output."""

    def __init__(self, message: str, result: subprocess.CompletedProcess[str]) -> None:
        super().__init__(message)
        self.result = result


# --- installation --------------------------------------------------------------------------


def cache_dir() -> Path:
    """Where install.sh puts the jars (lib/) and the sha256 of the pom they came from."""
    default = Path.home() / ".cache" / "millpond" / "kafka-4.4"
    return Path(os.environ.get("MILLPOND_KAFKA_CACHE", default))


def shell_cache_dir() -> Path:
    """Where install.sh puts Kafka's metadata shell and its release's jars."""
    default = Path.home() / ".cache" / "millpond" / "kafka-shell"
    return Path(os.environ.get("MILLPOND_KAFKA_SHELL_CACHE", default))


def mirror_cache_dir() -> Path:
    """Where install.sh puts MirrorMaker 2 (connect-mirror) and its release's jars."""
    default = Path.home() / ".cache" / "millpond" / "kafka-mirror"
    return Path(os.environ.get("MILLPOND_KAFKA_MIRROR_CACHE", default))


def _release_classpath(cache: Path, what: str) -> str:
    """The jars of a tool that install.sh resolves at a release of its own, as a classpath."""
    lib = cache / "lib"
    jars = sorted(lib.glob("*.jar")) if lib.is_dir() else []
    if not jars:
        raise KafkaNotInstalledError(f"{what} not found in {lib}: {INSTALL_HINT}")
    return os.pathsep.join(str(j) for j in jars)


SHELL_LAUNCHER = HERE / "shell" / "LoadedShell.java"
_SHELL_END = "--- end of command ---"


def metadata_shell(
    source: str | os.PathLike[str], *commands: Sequence[str], timeout: float = 120.0
) -> list[str]:
    """Run Kafka's metadata shell commands (``["ls", "/image/topics"]``, ...) on a metadata
    log segment or a ``.checkpoint`` and return each command's output.

    The shell's loader, image and commands run through shell/LoadedShell.java, which waits
    until the shell holds the whole file: Kafka's own command line can run its command on an
    empty or partial tree (LoadedShell.java says why). :class:`ToolError` if it fails.
    """
    classpath = _release_classpath(shell_cache_dir(), "Kafka's metadata shell")
    java = _java(classpath, TOOL_JVM, TOOLS_LOG4J, str(SHELL_LAUNCHER), str(source))
    script = "".join(" ".join(command) + "\n" for command in commands)
    result = subprocess.run(
        java, input=script, capture_output=True, text=True, timeout=timeout, check=False
    )
    outputs = result.stdout.split(_SHELL_END + "\n")
    if result.returncode != 0 or len(outputs) != len(commands) + 1:
        raise ToolError(f"kafka-metadata-shell on {source} failed", result)
    return outputs[:-1]


def start_mirror_maker(properties: Path, log: Path) -> subprocess.Popen[bytes]:
    """Start MirrorMaker 2 in its dedicated mode (what Kafka's connect-mirror-maker.sh runs) on
    an mm2.properties file; its log (slf4j-simple, INFO and up) goes to ``log``. The caller
    stops it (terminate, then kill after a bounded wait)."""
    classpath = _release_classpath(mirror_cache_dir(), "MirrorMaker 2 (connect-mirror)")
    command = [
        "java",
        *BROKER_JVM,
        "-Djava.awt.headless=true",
        "-Dorg.slf4j.simpleLogger.showDateTime=true",
        "-cp",
        classpath,
        "org.apache.kafka.connect.mirror.MirrorMaker",
        str(properties),
    ]
    with log.open("ab") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)


def install(timeout: float = 900.0) -> None:
    """Run install.sh: resolves the jars from Maven Central unless they are already current."""
    subprocess.run(["bash", str(INSTALL_SCRIPT)], check=True, timeout=timeout)


def kafka_classpath(*extra: str | Path) -> str:
    """Kafka 4.4's jars (then ``extra`` entries) as a java classpath.

    Raises KafkaNotInstalledError when the jars are missing, were resolved from another
    version of pom.xml, or java is not on PATH.
    """
    lib = cache_dir() / "lib"
    jars = sorted(lib.glob("*.jar")) if lib.is_dir() else []
    if not jars:
        raise KafkaNotInstalledError(
            f"Apache Kafka {KAFKA_VERSION} jars not found in {lib}: {INSTALL_HINT}"
        )
    stamp = cache_dir() / "pom.sha256"
    digest = hashlib.sha256(POM.read_bytes()).hexdigest()
    if not stamp.is_file() or stamp.read_text().strip() != digest:
        raise KafkaNotInstalledError(
            f"the jars in {lib} were not resolved from the current {POM}: {INSTALL_HINT}"
        )
    if shutil.which("java") is None:
        raise KafkaNotInstalledError("java not found on PATH: install Java 17")
    return os.pathsep.join([*(str(j) for j in jars), *(str(e) for e in extra)])


def _java(
    classpath: str, jvm: Sequence[str], log4j: Path, main_class: str, *args: str
) -> list[str]:
    return [
        "java",
        *jvm,
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={log4j}",
        "-cp",
        classpath,
        main_class,
        *args,
    ]


# --- tools ---------------------------------------------------------------------------------


def run_tool(
    main_class: str,
    args: Sequence[str],
    *,
    timeout: float = 120.0,
    classpath: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run one of Kafka's command-line tools by its main class (what Kafka's bin/ scripts
    call, e.g. ``kafka.tools.StorageTool``, ``org.apache.kafka.tools.TopicCommand``).

    Returns the finished process with its text stdout and stderr (tools log errors only, to
    stderr); a tool still running after ``timeout`` seconds is killed (TimeoutExpired).
    """
    command = _java(
        classpath or kafka_classpath(), TOOL_JVM, TOOLS_LOG4J, main_class, *map(str, args)
    )
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)


_TRAILING_BYTES = re.compile(r"^Found \d+ invalid bytes at the end of ", re.MULTILINE)


def dump_log_segments(
    files: Sequence[str | os.PathLike[str]], *options: str, timeout: float = 120.0
) -> str:
    """Run ``org.apache.kafka.tools.DumpLogSegments --files FILES OPTIONS`` and return its stdout.

    Raises ToolError (its message holds the whole output) when the tool fails or reports a
    problem: it exits non-zero when an index fails ``--index-sanity-check``; it prints index
    mismatches, non-consecutive offsets (``--deep-iteration``), unreadable files and corrupt
    producer snapshots to stderr; and "Found N invalid bytes at the end of" a log to stdout.
    """
    names = [os.fspath(f) for f in files]
    if not names or any("," in n for n in names):
        raise ValueError(f"DumpLogSegments takes a non-empty comma-separated list: {names}")
    result = run_tool(
        "org.apache.kafka.tools.DumpLogSegments",
        ["--files", ",".join(names), *options],
        timeout=timeout,
    )
    if result.returncode != 0 or result.stderr.strip() or _TRAILING_BYTES.search(result.stdout):
        raise ToolError(
            f"DumpLogSegments {' '.join(options)} on {names} reported errors "
            f"(exit {result.returncode}):\n--- stderr\n{result.stderr}--- stdout\n{result.stdout}",
            result,
        )
    return result.stdout


def copy_when_still(segment: Path, to: Path) -> None:
    """Copy a segment the broker may be appending to (Kafka adds a NoOpRecord to its
    metadata log every half second) at a moment its size held still, so the copy never
    ends in half a batch."""
    for _ in range(50):
        size = segment.stat().st_size
        shutil.copy(segment, to)
        if (to / segment.name).stat().st_size == size == segment.stat().st_size:
            return
        time.sleep(0.02)
    raise AssertionError(f"{segment} kept growing while it was copied")


# --- the broker ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Ports:
    """Where the broker listens (bind) and what it tells clients (advertise).

    They differ only when something sits in between: tools/capture advertises its recording
    proxy's ports, so every connection a client makes after bootstrap also passes through it.
    """

    plaintext: int
    internal: int
    controller: int
    adv_plaintext: int
    adv_internal: int
    adv_controller: int

    @classmethod
    def loopback(cls) -> Ports:
        """Three free loopback ports, advertised as they are."""
        plaintext, internal, controller = free_port(), free_port(), free_port()
        return cls(plaintext, internal, controller, plaintext, internal, controller)


def free_port() -> int:
    """A currently free loopback port (the broker binds it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def server_properties(
    ports: Ports, log_dir: Path, extra: Mapping[str, str], more_log_dirs: Sequence[Path] = ()
) -> str:
    """server.properties for a one-node cluster that auto-creates topics and has every
    internal topic at replication factor 1 (a single broker could not satisfy 3);
    ``more_log_dirs`` follow ``log_dir`` in log.dirs (the metadata log stays in the first)."""
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
            f"log.dirs={','.join(str(d) for d in (log_dir, *more_log_dirs))}",
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
    """True if an ApiVersions v0 round trip on port answers with error code 0.

    Hand-built on purpose: the readiness check must not depend on millpond's own codecs.
    """
    request = struct.pack(">hhih", 18, 0, 1, -1)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(struct.pack(">i", len(request)) + request)
            (size,) = struct.unpack(">i", _recv_exact(s, 4))
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


def _cluster_id() -> str:
    """A cluster id as `kafka-storage random-uuid` makes one: 16 random bytes, base64url."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


class RunningBroker:
    """A one-node Kafka 4.4 (KRaft, combined broker and controller) in ``work_dir``, started
    by :func:`start_broker`. Stop it with :meth:`stop` or by using it as a context manager.

    ``work_dir`` holds server.properties, kafka.log (the broker's own log, appended to across
    restarts) and data/ (``log_dir``: one directory per partition, plus the KRaft metadata log).

    Where util-linux's setpriv exists, the JVM gets SIGTERM when the thread that launched it
    ends, so even a killed test run leaves no Kafka behind: launch it from a long-lived thread.
    """

    def __init__(
        self,
        work_dir: Path,
        ports: Ports,
        classpath: str,
        ready_timeout: float,
        log_dir_count: int = 1,
    ) -> None:
        self.work_dir = work_dir
        self.log_dir_count = log_dir_count
        self.ports = ports
        self.classpath = classpath
        self.ready_timeout = ready_timeout
        self.properties = work_dir / "server.properties"
        self.log_path = work_dir / "kafka.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        """host:port for clients' bootstrap.servers."""
        return f"127.0.0.1:{self.ports.adv_plaintext}"

    @property
    def log_dir(self) -> Path:
        """The broker's log.dirs: where partition directories live."""
        return self.work_dir / "data"

    @property
    def log_dirs(self) -> list[Path]:
        """Every directory of log.dirs: ``log_dir``, then ``data-2``, ``data-3``, ..."""
        more = [self.work_dir / f"data-{i}" for i in range(2, self.log_dir_count + 1)]
        return [self.log_dir, *more]

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def partition_dir(self, topic: str, partition: int) -> Path:
        return self.log_dir / f"{topic}-{partition}"

    def launch(self) -> None:
        """Start the JVM on the (already formatted) work dir and wait until it serves: its log
        says it started and it answers ApiVersions. Stops it again if that fails."""
        if self.running:
            raise RuntimeError("the broker is already running")
        log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        command = _java(
            self.classpath, BROKER_JVM, BROKER_LOG4J, "kafka.Kafka", str(self.properties)
        )
        if shutil.which("setpriv"):  # util-linux: SIGTERM the JVM if this thread dies first
            command = ["setpriv", "--pdeathsig", "TERM", *command]
        with self.log_path.open("ab") as log:
            self._proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            self._wait_ready(self._proc, log_offset)
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, proc: subprocess.Popen[bytes], log_offset: int) -> None:
        deadline = time.monotonic() + self.ready_timeout
        started = False
        tail = b""
        with self.log_path.open("rb") as log:
            log.seek(log_offset)
            while True:
                tail = tail[-len(STARTED_MARKER) :] + log.read()
                started = started or STARTED_MARKER in tail
                if started and api_versions_ok(self.ports.plaintext):
                    return
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(
                        f"Kafka not ready after {self.ready_timeout}s:\n{self.log_tail()}"
                    )
                try:  # the pause between checks, cut short if the JVM exits
                    code = proc.wait(timeout=min(0.2, remaining))
                except subprocess.TimeoutExpired:
                    continue
                raise RuntimeError(f"Kafka exited ({code}) before it was ready:\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        """The end of the broker's log, for error messages."""
        if not self.log_path.exists():
            return f"(no log at {self.log_path})"
        text = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        return "\n".join([f"--- last lines of {self.log_path}", *text])

    def stop(self, timeout: float = 60.0) -> bool:
        """SIGTERM (Kafka shuts down cleanly: it flushes every segment, trims its indexes and
        writes producer snapshots), then SIGKILL if that takes longer than ``timeout``.
        False: it had to be killed."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return True
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
            return False
        return True

    def kill(self) -> None:
        """SIGKILL, as ``kill -9``: nothing flushed, no controlled shutdown."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)

    @contextmanager
    def stopped(self) -> Iterator[None]:
        """Stop the broker cleanly for the block, then start it again on the same ports and
        data (clients reconnect to the same bootstrap)."""
        self.stop()
        try:
            yield
        finally:
            self.launch()

    def copy_partition_dir(self, topic: str, partition: int, dest: Path) -> Path:
        """Copy ``<log_dir>/<topic>-<partition>`` into ``dest`` (created if missing) and return
        the copy, ``dest/<topic>-<partition>``.

        The broker is stopped cleanly around the copy, so the copy is what Kafka leaves on disk
        at rest: every segment complete, indexes trimmed to their entries, producer-state
        snapshot written. This restarts the broker (a few seconds): copy what you need at once
        with :meth:`stopped` when you need several partitions.
        """
        source = self.partition_dir(topic, partition)
        if not source.is_dir():
            raise FileNotFoundError(f"no partition directory {source}")
        dest.mkdir(parents=True, exist_ok=True)
        with self.stopped():
            return Path(shutil.copytree(source, dest / source.name))

    def __enter__(self) -> RunningBroker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_broker(
    work_dir: Path,
    *,
    ports: Ports | None = None,
    config: Mapping[str, str] | None = None,
    extra_classpath: Sequence[str | Path] = (),
    ready_timeout: float = 120.0,
    log_dirs: int = 1,
) -> RunningBroker:
    """Format a KRaft data directory in ``work_dir`` (which must not hold one yet) and start a
    one-node Kafka 4.4 on loopback; returns once it serves requests.

    ``ports`` defaults to free loopback ports; ``config`` adds or overrides server.properties
    lines; ``extra_classpath`` adds classes (e.g. a metrics reporter); ``log_dirs`` is how
    many directories log.dirs names (JBOD: partitions spread over them). Raises
    KafkaNotInstalledError when the jars are missing, and stops the JVM on any failure.
    """
    classpath = kafka_classpath(*extra_classpath)
    work_dir.mkdir(parents=True, exist_ok=True)
    ports = ports or Ports.loopback()
    broker = RunningBroker(work_dir, ports, classpath, ready_timeout, log_dirs)
    broker.properties.write_text(
        server_properties(ports, broker.log_dir, config or {}, broker.log_dirs[1:])
    )
    # "--cluster-id=ID", not "-t ID": an id may start with "-" (base64url), which the
    # tool's argument parser would take for an option.
    args = [
        "format", f"--cluster-id={_cluster_id()}", "-c", str(broker.properties), "--standalone",
    ]  # fmt: skip
    formatted = run_tool("kafka.tools.StorageTool", args, classpath=classpath)
    if formatted.returncode != 0:
        raise ToolError(
            f"formatting {broker.log_dir} failed (exit {formatted.returncode}):\n"
            f"{formatted.stdout}{formatted.stderr}",
            formatted,
        )
    broker.launch()
    return broker

"""franz-go (kgo, kadm) and sarama (SyncProducer, partition consumers, ClusterAdmin) against
millpond and Apache Kafka 4.4: every scenario of SCENARIOS.md through the Go drivers of
``compat_tests/go``.

Each driver runs all its scenarios against a broker in one process (the runs separated by
``--`` on its command line, every event tagged with its scenario and topic), so a session starts
each driver twice per broker: once for ``produce-consume`` (every codec), ``acks``, ``large``
and ``admin``, once for ``errors`` against the broker that never auto-creates topics.

The drivers are built with ``go build`` into ``~/.cache/millpond/go-bin/<hash>`` (never into the
repository), keyed by a hash of the Go toolchain version and every source of
``compat_tests/go``, so a rerun with unchanged sources builds nothing. The modules come from
the Go module proxy (``.ci/run`` runs ``go mod download`` first); a missing Go toolchain fails
the tests, it never skips them."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from compat_tests.harness import (
    check_acks,
    check_admin,
    check_errors,
    check_idempotent_batches,
    check_large,
    check_produce_consume,
    create_topic,
    stored_batches,
)
from compat_tests.matrix import CODECS

pytestmark = pytest.mark.compat

GO_DIR = Path(__file__).parent / "go"
# Driver -> the client's name in compat_tests/matrix.py.
CLIENTS = {"driver_franz": "franz-go", "driver_sarama": "sarama"}
BUILD_TIMEOUT = 600.0
# Every run of a driver is bounded by 60 s (SCENARIOS.md); a process runs up to eight.
DRIVER_TIMEOUT = 300.0
PARTITIONS = 3
ACKS_PARTITIONS = 4
LARGE_TOPIC_CONFIGS = {"max.message.bytes": "1048588"}

# What each client reports for the `errors` steps against Apache Kafka 4.4 (seen with these
# drivers): franz-go fails the record with UNKNOWN_TOPIC_OR_PARTITION (3) once its unknown-topic
# retries are spent, before the 5 s delivery timeout; sarama's producer gives up after its
# metadata retries with the same error; both return CreateTopics' INVALID_CONFIG (40).
EXPECTED_ERRORS: dict[str, dict[str, int | None]] = {
    "driver_franz": {"unknown-topic": 3, "invalid-config": 40},
    "driver_sarama": {"unknown-topic": 3, "invalid-config": 40},
}


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "millpond" / "go-bin"


def _sources_hash(go: str) -> str:
    """The Go toolchain's version and every file go build reads from compat_tests/go."""
    digest = hashlib.sha256()
    version = subprocess.run(
        [go, "version"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    digest.update(version.encode())
    files = sorted(
        p
        for p in GO_DIR.rglob("*")
        if p.is_file() and (p.suffix == ".go" or p.name in ("go.mod", "go.sum"))
    )
    for path in files:
        digest.update(str(path.relative_to(GO_DIR)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def build_go_programs(packages: Sequence[str], suffix: str = "") -> dict[str, Path]:
    """The binaries of ``packages`` (directories of compat_tests/go) by package name,
    built once per toolchain-and-sources hash into ``<cache>/<hash><suffix>`` (atomically:
    the directory is renamed into place only when every binary in it was built)."""
    go = shutil.which("go")
    if go is None:
        pytest.fail(
            "the Go toolchain (`go`) is not on PATH: the franz-go and sarama compat tests "
            "need Go 1.26+ (and the Go module proxy, or a warm module cache)",
            pytrace=False,
        )
    out_dir = _cache_root() / f"{_sources_hash(go)}{suffix}"
    binaries = {name: out_dir / name for name in packages}
    if all(b.is_file() for b in binaries.values()):
        return binaries
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".build-", dir=out_dir.parent))
    try:
        env = {**os.environ, "GOFLAGS": "-mod=readonly"}
        build = subprocess.run(
            [go, "build", "-o", str(staging), *(f"./{name}" for name in packages)],
            cwd=GO_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT,
            check=False,
        )
        if build.returncode != 0:
            pytest.fail(
                f"go build of {', '.join(packages)} failed ({build.returncode}):\n"
                f"{build.stdout}{build.stderr}",
                pytrace=False,
            )
        try:
            staging.rename(out_dir)
        except OSError:  # built meanwhile by another run: keep that one
            if not all(b.is_file() for b in binaries.values()):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return binaries


@pytest.fixture(scope="module")
def go_drivers() -> dict[str, Path]:
    """The built scenario drivers by name."""
    return build_go_programs(list(CLIENTS))


def _topic(driver: str, what: str) -> str:
    return f"go-{driver.removeprefix('driver_')}-{what}"


def _run(name: str, bootstrap: str, topic: str, *extra: str) -> list[str]:
    return ["--", name, "--bootstrap", bootstrap, "--topic", topic, *extra]


@dataclass
class DriverRun:
    """What one driver process printed, and why it failed ("" when it exited 0)."""

    command: list[str]
    events: list[dict[str, Any]] = field(default_factory=list)
    failure: str = ""

    def of(self, topic: str) -> list[dict[str, Any]]:
        """The events of the run on ``topic``; fails the test when that run (or the whole
        process) failed, with the driver's own message."""
        events = [e for e in self.events if e.get("topic") == topic]
        failed = [str(e.get("message")) for e in events if e.get("event") == "failed"]
        crashed = self.failure and not any(e.get("event") == "failed" for e in self.events)
        if failed or crashed:
            pytest.fail(
                f"{' '.join(self.command)}\nthe run on {topic} failed: {failed}\n{self.failure}",
                pytrace=False,
            )
        return events


def _run_driver(command: list[str]) -> DriverRun:
    """Run a driver to its end; unlike harness.run_driver, a failed run leaves the other
    runs' events usable (each test fails only for its own run)."""
    run = DriverRun(command)
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=DRIVER_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired as exc:
        stderr = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else ""
        run.failure = f"still running after {DRIVER_TIMEOUT}s (killed)\n{stderr[-4000:]}"
        return run
    for line in result.stdout.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            event = None
        if not isinstance(event, dict):
            run.failure = f"a stdout line that is no JSON object: {line!r}"
            run.events = []  # reported for every run: no output can be trusted
            return run
        run.events.append(event)
    if result.returncode != 0:
        stderr = "\n".join(result.stderr.splitlines()[-60:])
        run.failure = f"exit {result.returncode}; stderr (last 60 lines):\n{stderr}"
    return run


def _run_all(commands: dict[str, list[str]]) -> dict[str, DriverRun]:
    """Both drivers at once (each a client of its own), by driver."""
    with ThreadPoolExecutor(len(commands)) as pool:
        futures = {d: pool.submit(_run_driver, c) for d, c in commands.items()}
        return {d: f.result() for d, f in futures.items()}


@pytest.fixture(scope="module")
def go_events(go_drivers: dict[str, Path], broker_bootstrap: str) -> dict[str, DriverRun]:
    """Every driver's events of produce-consume (each codec), acks, large and admin against
    the broker, by driver; the harness creates the topics first (admin creates its own)."""
    commands: dict[str, list[str]] = {}
    for driver in CLIENTS:
        command = [str(go_drivers[driver])]
        for codec in CODECS:
            topic = _topic(driver, codec)
            create_topic(broker_bootstrap, topic, PARTITIONS)
            command += _run(
                "produce-consume",
                broker_bootstrap,
                topic,
                "--partitions",
                str(PARTITIONS),
                "--compression",
                codec,
            )
        create_topic(broker_bootstrap, _topic(driver, "acks"), ACKS_PARTITIONS)
        create_topic(broker_bootstrap, _topic(driver, "large"), 1, LARGE_TOPIC_CONFIGS)
        command += _run("acks", broker_bootstrap, _topic(driver, "acks"))
        command += _run("large", broker_bootstrap, _topic(driver, "large"))
        command += _run("admin", broker_bootstrap, _topic(driver, "admin"))
        commands[driver] = command
    return _run_all(commands)


@pytest.fixture(scope="module")
def go_error_events(
    go_drivers: dict[str, Path], strict_broker_bootstrap: str
) -> dict[str, DriverRun]:
    """Every driver's events of ``errors`` against the broker that never auto-creates
    topics, by driver."""
    return _run_all(
        {
            driver: [
                str(go_drivers[driver]),
                *_run("errors", strict_broker_bootstrap, _topic(driver, "errors")),
            ]
            for driver in CLIENTS
        }
    )


def _cases(scenario: str) -> list[Any]:
    return [
        pytest.param(
            driver,
            id=f"{client}-{scenario}",
            marks=pytest.mark.compat_matrix(client, scenario),
        )
        for driver, client in CLIENTS.items()
    ]


@pytest.mark.parametrize(
    ("driver", "codec"),
    [
        pytest.param(
            driver,
            codec,
            id=f"{client}-{codec}",
            marks=pytest.mark.compat_matrix(client, f"produce-consume/{codec}"),
        )
        for driver, client in CLIENTS.items()
        for codec in CODECS
    ],
)
def test_produce_consume(
    go_events: dict[str, DriverRun], broker_bootstrap: str, driver: str, codec: str
) -> None:
    topic = _topic(driver, codec)
    check_produce_consume(go_events[driver].of(topic))
    codecs = sorted({b["codec"] for b in stored_batches(broker_bootstrap, topic, PARTITIONS)})
    assert codecs == [codec], f"{topic}: stored batches use {codecs}, want {codec}"


@pytest.mark.parametrize("driver", _cases("acks"))
def test_acks(go_events: dict[str, DriverRun], driver: str) -> None:
    check_acks(go_events[driver].of(_topic(driver, "acks")))


@pytest.mark.parametrize("driver", _cases("idempotent"))
def test_idempotent(go_events: dict[str, DriverRun], broker_bootstrap: str, driver: str) -> None:
    topic = _topic(driver, "acks")
    assert go_events[driver].of(topic), f"{driver} printed nothing for {topic}"
    check_idempotent_batches(stored_batches(broker_bootstrap, topic, ACKS_PARTITIONS))


@pytest.mark.parametrize("driver", _cases("large"))
def test_large(go_events: dict[str, DriverRun], driver: str) -> None:
    check_large(go_events[driver].of(_topic(driver, "large")))


@pytest.mark.parametrize("driver", _cases("admin"))
def test_admin(go_events: dict[str, DriverRun], broker_bootstrap: str, driver: str) -> None:
    check_admin(go_events[driver].of(_topic(driver, "admin")), broker_bootstrap)


@pytest.mark.parametrize("driver", _cases("error/unknown-topic"))
def test_error_unknown_topic(go_error_events: dict[str, DriverRun], driver: str) -> None:
    step = "unknown-topic"
    check_errors(
        go_error_events[driver].of(_topic(driver, "errors")), {step: EXPECTED_ERRORS[driver][step]}
    )


@pytest.mark.parametrize("driver", _cases("error/invalid-config"))
def test_error_invalid_config(go_error_events: dict[str, DriverRun], driver: str) -> None:
    step = "invalid-config"
    check_errors(
        go_error_events[driver].of(_topic(driver, "errors")), {step: EXPECTED_ERRORS[driver][step]}
    )

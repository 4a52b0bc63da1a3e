"""The driver contract of ../SCENARIOS.md for drivers written in Python: the command line, the
records and constants of every scenario and the JSON lines a driver prints. No client imported
here.

One driver process may run several scenarios (``run_all``): their command lines are joined with
``--``, each printed line carries ``"run"`` (:attr:`Args.label`) so the test module can tell them
apart, and one scenario failing unexpectedly does not keep the next from running."""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Every waiting loop of a driver ends after this many seconds.
MAX_WAIT = 60.0
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
SCENARIOS = ("produce-consume", "acks", "large", "admin", "errors")


@dataclass(frozen=True)
class Args:
    scenario: str
    bootstrap: str
    topic: str
    partitions: int
    count: int
    start_ts: int
    compression: str

    @property
    def threshold(self) -> int:
        """The timestamp the ``from_timestamp`` phase replays from."""
        return self.start_ts + (self.count // 2) * 1000

    @property
    def label(self) -> str:
        """The run's name in the ``"run"`` field: the scenario, and for ``produce-consume``
        its codec (every codec is a run of its own)."""
        if self.scenario == "produce-consume":
            return f"{self.scenario}/{self.compression}"
        return self.scenario


def parse_args(argv: Sequence[str] | None = None, scenarios: Sequence[str] = SCENARIOS) -> Args:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=list(scenarios))
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--count", type=int, default=60)
    parser.add_argument("--start-ts", type=int, default=1700000000000)
    parser.add_argument("--compression", choices=CODECS, default="none")
    ns = parser.parse_args(argv)
    return Args(
        ns.scenario, ns.bootstrap, ns.topic, ns.partitions, ns.count, ns.start_ts, ns.compression
    )


def parse_runs(
    argv: Sequence[str] | None = None, scenarios: Sequence[str] = SCENARIOS
) -> list[Args]:
    """Several scenario command lines joined with ``--``, in order."""
    words = list(sys.argv[1:] if argv is None else argv)
    groups: list[list[str]] = [[]]
    for word in words:
        if word == "--":
            groups.append([])
        else:
            groups[-1].append(word)
    return [parse_args(group, scenarios) for group in groups if group]


_RUN: list[str] = []  # the label of the run under way (empty: none)


def run_all(runs: Sequence[Args], scenarios: Mapping[str, Callable[[Args], None]]) -> int:
    """Run every scenario in turn, each line it prints tagged with its label. An unexpected
    error ends that run only (its traceback on stderr); the exit status says whether any did."""
    failed = []
    for args in runs:
        _RUN[:] = [args.label]
        try:
            scenarios[args.scenario](args)
        except Exception:  # noqa: BLE001 - reported, and the exit status says so
            failed.append(args.label)
            sys.stderr.write(f"run {args.label} failed:\n{traceback.format_exc()}\n")
        finally:
            _RUN.clear()
    if failed:
        sys.stderr.write(f"failed runs: {', '.join(failed)}\n")
    return 1 if failed else 0


# --- produce-consume ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Record:
    """Record ``i`` of ``produce-consume``."""

    i: int
    key: bytes
    value: bytes
    headers: list[tuple[str, bytes]]
    timestamp: int


def record(i: int, start_ts: int) -> Record:
    return Record(
        i,
        f"key-{i % 7}".encode(),
        f"value-{i}".encode(),
        [("h1", f"v{i}".encode()), ("h2", b"")],
        start_ts + i * 1000,
    )


# --- acks, large, admin, errors ----------------------------------------------------------------


@dataclass(frozen=True)
class AcksProducer:
    """One producer of the ``acks`` scenario; ``acks`` is -1 for all."""

    name: str
    partition: int
    acks: int
    idempotent: bool

    def key(self, i: int) -> bytes:
        return f"k{i}".encode()

    def value(self, i: int) -> bytes:
        return f"{self.name}-{i}".encode()


ACKS_PRODUCERS = (
    AcksProducer("acks0", 0, 0, False),
    AcksProducer("acks1", 1, 1, False),
    AcksProducer("acksall", 2, -1, False),
    AcksProducer("idempotent", 3, -1, True),
)
ACKS_COUNT = 10

LARGE_NEAR = 1_000_000
LARGE_OVER = 1_100_000
#: Client-side size limits (request, message, fetch) are raised to this, so the broker decides.
LARGE_LIMIT = 4 << 20
LARGE_KEY = b"big"

ADMIN_CONFIGS = {"retention.ms": "86400000", "max.message.bytes": "500000"}
ADMIN_RETENTION = "3600000"
ADMIN_SHOWN = ("retention.ms", "max.message.bytes", "cleanup.policy")
ADMIN_START_TS = 1700000000000
ADMIN_DELETE_BEFORE = 5
ADMIN_LOOKUP_TS = ADMIN_START_TS + 7000
ADMIN_RECORDS = 10

#: Kafka's config sources by their DescribeConfigs number, for clients that give the number.
CONFIG_SOURCES = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "CLIENT_METRICS_CONFIG",
    8: "GROUP_CONFIG",
}


def large_value(size: int) -> bytes:
    """Byte j is ``'a' + j % 26``."""
    alphabet = bytes(range(ord("a"), ord("a") + 26))
    return (alphabet * (size // 26 + 1))[:size]


def shown_configs(configs: dict[str, tuple[str | None, str]]) -> dict[str, Any]:
    """The ``"configs"`` of an admin line from ``{name: (value, source name)}``."""
    shown: dict[str, Any] = {
        name: {"value": configs[name][0], "source": configs[name][1]}
        for name in ADMIN_SHOWN
        if name in configs
    }
    shown["_entries"] = len(configs)
    return shown


# --- output ------------------------------------------------------------------------------------


def emit(event: dict[str, Any]) -> None:
    if _RUN:
        event = {**event, "run": _RUN[0]}
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def emit_produced(i: int, partition: int, offset: int) -> None:
    emit({"event": "produced", "i": i, "partition": partition, "offset": offset})


def emit_error(step: str, code: int | None, message: str) -> None:
    """An expected failure: ``code`` is Kafka's error number, None when the client's failure
    carries none (a local timeout)."""
    emit({"event": "error", "step": step, "code": code, "message": message})


def emit_admin(step: str, **fields: Any) -> None:
    emit({"event": "admin", "step": step, **fields})


def emit_large_record(offset: int, value: bytes | None) -> None:
    data = value or b""
    emit(
        {
            "event": "record",
            "offset": offset,
            "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
    )


def _text(data: bytes | str | None) -> str | None:
    if data is None:
        return None
    return data if isinstance(data, str) else data.decode()


def emit_record(
    phase: str,
    partition: int,
    offset: int,
    key: bytes | None,
    value: bytes | None,
    headers: Sequence[tuple[str, bytes | None]] | None,
    timestamp: int,
) -> None:
    emit(
        {
            "event": "record",
            "phase": phase,
            "partition": partition,
            "offset": offset,
            "key": _text(key),
            "value": _text(value),
            "headers": [[k, _text(v)] for k, v in headers or []],
            "timestamp": timestamp,
        }
    )


def emit_acks_record(partition: int, offset: int, value: bytes | None) -> None:
    emit({"event": "record", "partition": partition, "offset": offset, "value": _text(value)})


class Deadline:
    """A bounded wait: ``check(what)`` raises TimeoutError once its time has passed;
    ``passed`` says whether it has, for loops that end quietly."""

    def __init__(self, seconds: float = MAX_WAIT) -> None:
        self.end = time.monotonic() + seconds
        self.seconds = seconds

    @property
    def passed(self) -> bool:
        return time.monotonic() > self.end

    def check(self, what: str) -> None:
        if self.passed:
            raise TimeoutError(f"{what}: not done after {self.seconds}s")


def wait_for(condition: Callable[[], bool], seconds: float = 15.0) -> bool:
    """Poll ``condition`` until it holds or ``seconds`` passed (a topic just created or deleted
    shows in metadata a little later); returns its last answer."""
    deadline = Deadline(seconds)
    while not condition():
        if deadline.passed:
            return False
        time.sleep(0.1)
    return True


def altered(configs: dict[str, Any]) -> bool:
    """Whether described ``configs`` show the ``alterConfigs`` step's change (a broker applies
    a config change a little after it answered the request)."""
    retention = configs.get("retention.ms")
    return isinstance(retention, dict) and retention.get("value") == ADMIN_RETENTION


def admin_step(step: str, action: Callable[[], dict[str, Any]]) -> None:
    """Run one step of ``admin`` and print its line: the fields ``action`` returns, or the
    error it raised (the scenario goes on with the next step)."""
    try:
        fields = action()
    except Exception as exc:  # noqa: BLE001 - a failed step is reported, not fatal
        emit_admin(step, error=f"{type(exc).__name__}: {exc}")
        return
    emit_admin(step, **fields)

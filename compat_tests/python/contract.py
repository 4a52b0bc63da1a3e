"""The driver contract of ../SCENARIOS.md for drivers written in Python: the command line, the
records of ``produce-consume`` and the JSON lines a driver prints. No client imported here."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

#: Every waiting loop of a driver ends after this many seconds.
MAX_WAIT = 60.0
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


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


def parse_args(
    argv: Sequence[str] | None = None, scenarios: Sequence[str] = ("produce-consume",)
) -> Args:
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


def emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def emit_produced(i: int, partition: int, offset: int) -> None:
    emit({"event": "produced", "i": i, "partition": partition, "offset": offset})


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


class Deadline:
    """A bounded wait: ``check(what)`` raises TimeoutError once MAX_WAIT has passed."""

    def __init__(self, seconds: float = MAX_WAIT) -> None:
        self.end = time.monotonic() + seconds
        self.seconds = seconds

    def check(self, what: str) -> None:
        if time.monotonic() > self.end:
            raise TimeoutError(f"{what}: not done after {self.seconds}s")


def fail(message: str) -> int:
    sys.stderr.write(message + "\n")
    return 1

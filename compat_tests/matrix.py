"""The compatibility matrix (compat_tests/MATRIX.md): client (with its version) x scenario x
broker -> pass / fail / not run / n/a, written by the pytest hooks of compat_tests/conftest.py
at the end of every session that ran a client test.

A client test says which cell it fills with the ``compat_matrix(client, scenario)`` marker
(``scenario`` may name the test's parameters, ``"produce-consume/{codec}"``); the broker is the
``broker_bootstrap`` parameter. Rows, columns and their order are fixed here (:data:`CLIENTS`,
:data:`SCENARIOS`, :data:`CELLS`), so the file only changes when a result or a version does:
no timestamps, no durations. A declared cell no test of the session ran reads "not run"; a
client x scenario not declared reads "n/a".
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from compat_tests.kafka.reference import KAFKA_VERSION

MARKER = "compat_matrix"
HERE = Path(__file__).resolve().parent
MATRIX_PATH = HERE / "MATRIX.md"

BROKERS = {"millpond": "millpond", "kafka": f"Kafka {KAFKA_VERSION}"}
SCENARIOS = [
    "produce-consume/none",
    "produce-consume/gzip",
    "produce-consume/snappy",
    "produce-consume/lz4",
    "produce-consume/zstd",
    "admin",
]


def _dist(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _librdkafka() -> str:
    try:
        import confluent_kafka
    except ImportError:
        return "not installed"
    version: str = confluent_kafka.libversion()[0]
    return version


def _confluent() -> str:
    return f"{_dist('confluent-kafka')} (librdkafka {_librdkafka()})"


def _kcat() -> str:
    kcat = shutil.which("kcat")
    if kcat is None:
        return "not installed"
    out = subprocess.run(
        [kcat, "-V"], capture_output=True, text=True, timeout=30, check=False
    ).stdout
    match = re.search(r"^Version (\S+) .*?librdkafka (\S+)", out, re.MULTILINE)
    return f"{match[1]} (librdkafka {match[2]})" if match else "unknown"


def _kafkajs() -> str:
    lock = json.loads((HERE / "node" / "package-lock.json").read_text())
    version: str = lock["packages"]["node_modules/kafkajs"]["version"]
    return version


def _go_module(module: str) -> Callable[[], str]:
    def version() -> str:
        go_mod = (HERE / "go" / "go.mod").read_text()
        match = re.search(rf"^\s*{re.escape(module)} (v\S+)", go_mod, re.MULTILINE)
        return match[1] if match else "unknown"

    return version


# Client name (as the markers spell it) -> how to tell its version, in the matrix's row order.
CLIENTS: dict[str, Callable[[], str]] = {
    "kafka-python": lambda: _dist("kafka-python"),
    "confluent-kafka": _confluent,
    "aiokafka": lambda: _dist("aiokafka"),
    "kcat": _kcat,
    "Java kafka-clients": lambda: KAFKA_VERSION,
    "kafkajs": _kafkajs,
    "franz-go": _go_module("github.com/twmb/franz-go"),
    "sarama": _go_module("github.com/IBM/sarama"),
    # Kafka's own command-line tools (compat_tests/test_kafka_tools.py), by their main classes.
    "Kafka CLI tools": lambda: KAFKA_VERSION,
}

# Every client x scenario a test covers (on every broker); the others are "n/a".
CELLS: frozenset[tuple[str, str]] = frozenset(
    {
        ("kafka-python", "produce-consume/none"),
        *(
            ("confluent-kafka", f"produce-consume/{codec}")
            for codec in ("none", "gzip", "snappy", "lz4", "zstd")
        ),
        ("aiokafka", "produce-consume/none"),
        ("kcat", "produce-consume/none"),
        ("Java kafka-clients", "produce-consume/none"),
        ("Java kafka-clients", "admin"),
        ("kafkajs", "produce-consume/none"),
        ("kafkajs", "produce-consume/gzip"),
        ("franz-go", "produce-consume/snappy"),
        ("franz-go", "produce-consume/zstd"),
        ("sarama", "produce-consume/none"),
        ("sarama", "produce-consume/lz4"),
        ("Kafka CLI tools", "produce-consume/none"),
        ("Kafka CLI tools", "admin"),
    }
)


@dataclass(frozen=True, order=True)
class Cell:
    client: str
    scenario: str
    broker: str


def cell_of(item: pytest.Item) -> Cell | None:
    """The cell a collected test fills, or None for a test outside the matrix. A marker naming
    an undeclared client, scenario or cell is an error: declare it in this module first."""
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return None
    client, scenario = marker.args
    callspec = getattr(item, "callspec", None)
    params: dict[str, object] = dict(callspec.params) if callspec is not None else {}
    scenario = str(scenario).format(**params)
    broker = params.get("broker_bootstrap")
    if (client, scenario) not in CELLS or broker not in BROKERS:
        raise pytest.UsageError(
            f"{item.nodeid}: {MARKER}({client!r}, {scenario!r}) on broker {broker!r} is no "
            "cell of compat_tests/matrix.py (CELLS, BROKERS)"
        )
    return Cell(str(client), scenario, str(broker))


@dataclass
class Recorder:
    """Outcomes of the session's client tests, by cell; written by :meth:`write`."""

    cells: dict[str, Cell] = field(default_factory=dict)  # by node id, as collected
    failed: set[Cell] = field(default_factory=set)
    passed: set[Cell] = field(default_factory=set)
    skipped: set[Cell] = field(default_factory=set)

    def collected(self, item: pytest.Item) -> None:
        cell = cell_of(item)
        if cell is not None:
            self.cells[item.nodeid] = cell

    def report(self, report: pytest.TestReport) -> None:
        cell = self.cells.get(report.nodeid)
        if cell is None:
            return
        if report.failed:
            self.failed.add(cell)
        elif report.skipped:
            self.skipped.add(cell)
        elif report.when == "call" and report.passed:
            self.passed.add(cell)

    @property
    def ran(self) -> bool:
        return bool(self.failed or self.passed or self.skipped)

    @property
    def complete(self) -> bool:
        """Whether the session collected every declared cell: only such a session
        rewrites MATRIX.md, so running one client's tests leaves the table alone."""
        collected = set(self.cells.values())
        return all(
            Cell(client, scenario, broker) in collected
            for client, scenario in CELLS
            for broker in BROKERS
        )

    def outcome(self, cell: Cell) -> str:
        if (cell.client, cell.scenario) not in CELLS:
            return "n/a"
        if cell in self.failed:
            return "**fail**"
        if cell in self.skipped:
            return "skipped"
        if cell in self.passed:
            return "pass"
        return "not run"

    def render(self) -> str:
        header = ["client"] + [f"{s} · {b}" for s in SCENARIOS for b in BROKERS.values()]
        lines = [
            "# Compatibility matrix",
            "",
            "Generated by the client tests of `compat_tests/` (`compat_tests/matrix.py`) at the",
            "end of every pytest session that ran all of them: each client's scenarios",
            "(SCENARIOS.md; `produce-consume/<codec>` is produce-consume with that compression)",
            f"against millpond and against the reference Apache Kafka {KAFKA_VERSION}.",
            "Regenerate with",
            "`.venv/bin/python -m pytest compat_tests/test_clients_*.py "
            "compat_tests/test_kafka_tools.py`.",
            "",
            "pass / **fail** / not run (deselected in the session that wrote this file) /",
            "n/a (the client has no test of that scenario).",
            "",
            "| " + " | ".join(header) + " |",
            "|" + "---|" * len(header),
        ]
        for client, version in CLIENTS.items():
            row = [f"{client} {version()}"]
            row += [self.outcome(Cell(client, s, b)) for s in SCENARIOS for b in BROKERS]
            lines.append("| " + " | ".join(row) + " |")
        return "\n".join(lines) + "\n"

    def write(self, path: Path = MATRIX_PATH) -> None:
        text = self.render()
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)

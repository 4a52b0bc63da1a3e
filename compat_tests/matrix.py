"""The compatibility matrix (compat_tests/MATRIX.md): client (with its version) x scenario x
broker -> pass / fail / not run / n/a, written by the pytest hooks of compat_tests/conftest.py
at the end of every session that ran a client test.

A client test says which cell it fills with the ``compat_matrix(client, scenario)`` marker
(``scenario`` may name the test's parameters, ``"produce-consume/{codec}"``); the broker is the
``broker_bootstrap`` (or ``strict_broker_bootstrap``) parameter. Rows, columns and their order
are fixed here (:data:`CLIENTS`, :data:`SCENARIOS`, :data:`CELLS`), so the file only changes
when a result or a version does: no timestamps, no durations. A declared cell no test of the
session ran reads "not run"; a cell of :data:`ALLOWLIST` reads "n/a" with its reason.
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
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
# SCENARIOS.md's scenarios: every client runs each of them, or ALLOWLIST says why it cannot.
SCENARIOS = [
    *(f"produce-consume/{codec}" for codec in CODECS),
    "acks",
    "idempotent",
    "large",
    "admin",
    "error/unknown-topic",
    "error/invalid-config",
]
# The consumer-group scenario (SCENARIOS.md ``group``), client by client as their
# group-member drivers arrive: a client without one yet reads "no test yet".
GROUP_SCENARIOS = ["group", "group/static"]
GROUP_CLIENTS = [
    "kafka-python",
    "confluent-kafka",
    "aiokafka",
    "Java kafka-clients",
    "kafkajs",
    "franz-go",
    "sarama",
]
# A partition leader's kill -9 on replicated clusters (3 brokers, millpond's and Kafka's):
# producers and consumers ride through it.
FAILOVER_SCENARIOS = ["leader-failover"]
FAILOVER_CLIENTS = ["kafka-python", "confluent-kafka", "Java kafka-clients", "franz-go", "kafkajs"]
# Columns for Kafka's own tools only (not client scenarios): the performance tools.
TOOL_SCENARIOS = ["producer-perf", "consumer-perf", "consumer-groups"]


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


def _node_package(name: str) -> Callable[[], str]:
    def version() -> str:
        lock = json.loads((HERE / "node" / "package-lock.json").read_text())
        package = lock["packages"].get(f"node_modules/{name}")
        return str(package["version"]) if package else "not installed"

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
    "kafkajs": _node_package("kafkajs"),
    "confluent-kafka-javascript": _node_package("@confluentinc/kafka-javascript"),
    "franz-go": _go_module("github.com/twmb/franz-go"),
    "sarama": _go_module("github.com/IBM/sarama"),
    # Kafka's own command-line tools (compat_tests/test_kafka_tools.py), by their main classes.
    "Kafka CLI tools": lambda: KAFKA_VERSION,
}

_TOOLS_USE_JAVA_CLIENT = (
    "the tools produce and consume through the Java kafka-clients 4.4 producer and "
    "consumer, whose row runs this scenario"
)
_NO_ADMIN = "kcat has no admin API: it produces, consumes and lists metadata only"

# Client x scenario cells no test covers, each with the reason the client cannot express it.
ALLOWLIST: dict[tuple[str, str], str] = {
    **{
        ("Kafka CLI tools", scenario): _TOOLS_USE_JAVA_CLIENT
        for scenario in SCENARIOS
        if scenario not in ("produce-consume/none", "admin")
    },
    **{
        ("kcat", f"produce-consume/{codec}"): (
            "kcat sets headers per run, so every record of the scenario is a batch of its "
            "own, which librdkafka sends uncompressed because compressing one small record "
            "does not make it smaller (confluent-kafka covers librdkafka's codecs)"
        )
        for codec in CODECS[1:]
    },
    ("confluent-kafka-javascript", "admin"): (
        "confluent-kafka-javascript 1.10.1 exposes no DescribeConfigs or AlterConfigs in "
        "either of its admin APIs, so the scenario's config steps cannot run (every other "
        "admin step is checked by test_admin_without_configs)"
    ),
    ("kafkajs", "group/static"): (
        "kafkajs 2.2.4 has no static membership: its consumer cannot send a group instance id"
    ),
    ("kcat", "admin"): _NO_ADMIN,
    ("kcat", "error/invalid-config"): _NO_ADMIN,
}

# Every client x scenario a test covers (on every broker).
CELLS: frozenset[tuple[str, str]] = frozenset(
    {
        *(
            (client, scenario)
            for client in CLIENTS
            for scenario in SCENARIOS
            if (client, scenario) not in ALLOWLIST
        ),
        *(("Kafka CLI tools", scenario) for scenario in TOOL_SCENARIOS),
        *(
            (client, scenario)
            for client in GROUP_CLIENTS
            for scenario in GROUP_SCENARIOS
            if (client, scenario) not in ALLOWLIST
        ),
        *((client, scenario) for client in FAILOVER_CLIENTS for scenario in FAILOVER_SCENARIOS),
    }
)


DIFFERENTIAL_TESTS = "compat_tests/test_differential.py::test_differential["
# Client ids of requests that no client library sent: the harness's own, the differential
# runner's (counted apart).
HARNESS_CLIENT = "millpond-compat-harness"
DIFFERENTIAL_CLIENT = "millpond-differential"


def _ranges(versions: set[int]) -> str:
    """``{0, 1, 2, 5}`` -> ``"0-2, 5"``; ``"-"`` for none."""
    spans: list[list[int]] = []
    for v in sorted(versions):
        if spans and v == spans[-1][1] + 1:
            spans[-1][1] = v
        else:
            spans.append([v, v])
    return ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in spans) or "-"


def api_coverage(traces: list[Path]) -> list[str]:
    """The API key x version section: what millpond advertises, which versions the client
    tests' libraries sent it, which the differential sequences sent (from the traces)."""
    from millpond.broker.handlers import ROUTES

    by_clients: dict[int, set[int]] = {}
    differential: dict[int, set[int]] = {}
    for path in traces:
        for line in path.read_text().splitlines() if path.is_file() else []:
            entry = json.loads(line)
            client = entry.get("client")
            if client == HARNESS_CLIENT:
                continue
            seen = differential if client == DIFFERENTIAL_CLIENT else by_clients
            seen.setdefault(entry["key"], set()).add(entry["version"])
    lines = [
        "## API coverage",
        "",
        "Per API millpond serves: the versions it advertises in ApiVersions, those the client",
        "libraries above sent it during the session that wrote this file (from the brokers'",
        "request traces, `millpond serve --trace`), and those the differential sequences sent",
        f"to it and to Apache Kafka {KAFKA_VERSION} (each answer compared with Kafka's).",
        "",
        "| API | key | advertised | sent by clients | checked differentially |",
        "|---|---:|---|---|---|",
    ]
    for route in sorted(ROUTES, key=lambda r: r.api_key):
        advertised = _ranges(set(range(route.min_version, route.max_version + 1)))
        lines.append(
            f"| {route.name} | {route.api_key} | {advertised} "
            f"| {_ranges(by_clients.get(route.api_key, set()))} "
            f"| {_ranges(differential.get(route.api_key, set()))} |"
        )
    return lines


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
    broker = params.get(
        "broker_bootstrap", params.get("strict_broker_bootstrap", params.get("nodes"))
    )
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
    #: The request traces of the session's ``millpond serve`` processes.
    traces: list[Path] = field(default_factory=list)
    differential_collected: int = 0

    def collected(self, item: pytest.Item) -> None:
        cell = cell_of(item)
        if cell is not None:
            self.cells[item.nodeid] = cell
        if item.nodeid.startswith(DIFFERENTIAL_TESTS):
            self.differential_collected += 1

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
        return self.differential_collected > 0 and all(
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

    def _row(self, client: str, scenarios: list[str]) -> list[str]:
        row = [f"{client} {CLIENTS[client]()}"]
        for scenario in scenarios:
            if (client, scenario) in ALLOWLIST:
                row.append("n/a¹")
            elif (client, scenario) not in CELLS:
                waiting = scenario in GROUP_SCENARIOS or scenario in FAILOVER_SCENARIOS
                row.append("no test yet" if waiting else "n/a")
            else:
                row.append(" · ".join(self.outcome(Cell(client, scenario, b)) for b in BROKERS))
        return row

    def render(self) -> str:
        brokers = " · ".join(BROKERS.values())
        lines = [
            "# Compatibility matrix",
            "",
            "Generated by the client tests of `compat_tests/` (`compat_tests/matrix.py`) at the",
            "end of every pytest session that ran all of them: each client's scenarios",
            "(SCENARIOS.md; `produce-consume/<codec>` is produce-consume with that compression)",
            f"against millpond and against the reference Apache Kafka {KAFKA_VERSION}.",
            "Regenerate with",
            "`.venv/bin/python -m pytest compat_tests/`.",
            "",
            f"Each cell: the outcome against {brokers}: pass / **fail** / not run (deselected",
            "in the session that wrote this file). n/a¹: the client cannot express the",
            "scenario; the reasons are listed below the table.",
            "",
        ]
        for title, scenarios in (
            ("Client scenarios", SCENARIOS),
            ("Consumer groups", GROUP_SCENARIOS),
            ("Replicated clusters (3 brokers, a leader killed)", FAILOVER_SCENARIOS),
            ("Kafka's tools", TOOL_SCENARIOS),
        ):
            clients = [c for c in CLIENTS if any((c, s) in CELLS for s in scenarios)]
            if scenarios is GROUP_SCENARIOS or scenarios is FAILOVER_SCENARIOS:
                clients = [c for c in CLIENTS if c != "Kafka CLI tools"]
            header = ["client", *scenarios]
            lines += [
                f"## {title}",
                "",
                "| " + " | ".join(header) + " |",
                "|" + "---|" * len(header),
            ]
            lines += ["| " + " | ".join(self._row(c, scenarios)) + " |" for c in clients]
            lines.append("")
        lines += ["## Not applicable", ""]
        lines += [
            f"- {client}, {scenario}: {why}." for (client, scenario), why in ALLOWLIST.items()
        ]
        lines += ["", *api_coverage(self.traces)]
        return "\n".join(lines) + "\n"

    def write(self, path: Path = MATRIX_PATH) -> None:
        text = self.render()
        if not path.is_file() or path.read_text() != text:
            path.write_text(text)

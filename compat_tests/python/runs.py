"""The test side of drivers that run several scenarios in one process (contract.run_all), for
the Python and kcat test modules: create each scenario's topics, run the driver once, hand each
test the events of its scenario.

When the joint process fails (an unexpected error in one scenario makes the driver exit
non-zero), its output is not trusted for any scenario: each test then runs its own scenario
alone, on fresh topics, so a failure shows in the test of the scenario that failed only."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from compat_tests.harness import create_topic, run_driver

HERE = Path(__file__).resolve().parent

#: The ``large`` topic's max.message.bytes: Kafka's default, set explicitly (SCENARIOS.md).
LARGE_TOPIC_CONFIG = {"max.message.bytes": "1048588"}
PRODUCE_CONSUME_PARTITIONS = 3
ACKS_PARTITIONS = 4


@dataclass(frozen=True)
class Run:
    """One scenario of a driver process: its arguments after ``--bootstrap``/``--topic`` and
    the topic the harness creates for it (partitions, configs; none for ``admin``/``errors``)."""

    scenario: str
    topic: str
    partitions: int = 0
    configs: dict[str, str] = field(default_factory=dict)
    extra: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """contract.Args.label of this run."""
        if self.scenario == "produce-consume":
            codec = self.extra[self.extra.index("--compression") + 1]
            return f"{self.scenario}/{codec}"
        return self.scenario

    def argv(self, bootstrap: str, suffix: str = "") -> list[str]:
        topic = self.topic + suffix
        if self.partitions:
            create_topic(bootstrap, topic, self.partitions, self.configs)
        return [self.scenario, "--bootstrap", bootstrap, "--topic", topic, *self.extra]


def produce_consume(prefix: str, codec: str) -> Run:
    return Run(
        "produce-consume",
        f"{prefix}-pc-{codec}",
        PRODUCE_CONSUME_PARTITIONS,
        extra=("--partitions", str(PRODUCE_CONSUME_PARTITIONS), "--compression", codec),
    )


def acks(prefix: str) -> Run:
    return Run("acks", f"{prefix}-acks", ACKS_PARTITIONS)


def large(prefix: str) -> Run:
    return Run("large", f"{prefix}-large", 1, LARGE_TOPIC_CONFIG)


def admin(prefix: str) -> Run:
    return Run("admin", f"{prefix}-admin")


def errors(prefix: str) -> Run:
    return Run("errors", f"{prefix}-errors")


def python_driver(name: str) -> list[str]:
    return [sys.executable, str(HERE / name)]


@dataclass
class Runs:
    """The events of every run of one driver process against one broker, by run label."""

    driver: list[str]
    bootstrap: str
    runs: dict[str, Run]
    events: dict[str, list[dict[str, Any]]] | None = None
    # after a failed joint run: each run's own events, or its failure
    alone: dict[str, list[dict[str, Any]] | str] = field(default_factory=dict)

    @classmethod
    def start(cls, driver: Sequence[str], bootstrap: str, runs: Sequence[Run]) -> Runs:
        self = cls(list(driver), bootstrap, {run.label: run for run in runs})
        command = list(self.driver)
        for run in runs:
            command += [*run.argv(bootstrap), "--"]
        try:
            events = run_driver(command[:-1], timeout=300)
        except pytest.fail.Exception:  # reported by the tests, each running its scenario alone
            return self
        self.events = {label: [] for label in self.runs}
        for event in events:
            self.events.setdefault(str(event.get("run")), []).append(event)
        return self

    def topic(self, label: str) -> str:
        """The topic run ``label`` used (tests read its stored batches)."""
        return self.runs[label].topic + ("" if self.events is not None else "-alone")

    def of(self, label: str) -> list[dict[str, Any]]:
        """Run ``label``'s events; runs it alone when the joint process failed (a failure
        there fails the calling test, with the driver's stderr, and every later one asking)."""
        if self.events is not None:
            return self.events[label]
        if label not in self.alone:
            run = self.runs[label]
            try:
                self.alone[label] = run_driver(
                    [*self.driver, *run.argv(self.bootstrap, "-alone")], timeout=180
                )
            except pytest.fail.Exception as exc:
                self.alone[label] = str(exc)
        found = self.alone[label]
        if isinstance(found, str):
            pytest.fail(found, pytrace=False)
        return found

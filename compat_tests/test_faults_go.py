"""franz-go through millpond's fault injection, driven over HTTP from Go: kgo's idempotent
producer (its default, acks=all) delivers every record exactly once, in order, through an
error, a delay past its request timeout, a closed and a dropped connection on Produce; a
kgo consumer reads everything through NOT_LEADER_OR_FOLLOWER and UNKNOWN_LEADER_EPOCH
answers to its Fetch requests.

compat_tests/go/faults_franz installs the rules itself (POST /v1/faults); the tests check
they fired (used up, and logged once per request they acted on) and read the topic back."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compat_tests.faults import (
    ControlledBroker,
    check_exactly_once,
    check_producer_state,
    check_rules_fired,
    clear_faults,
    controlled_broker,
    installed_rules,
    value,
)
from compat_tests.harness import create_topic, produce_values, run_driver
from compat_tests.test_clients_go import build_go_programs

pytestmark = pytest.mark.compat

PARTITIONS = 2
COUNT = 2000
#: faults_franz's Produce deadline: its 1 s produce timeout and 2 s request overhead.
PRODUCE_DEADLINE_MS = 3000
PRODUCE_RULES: dict[str, dict[str, Any]] = {
    "not-leader": {"action": "error", "error": "NOT_LEADER_OR_FOLLOWER", "count": 3},
    "delay": {"action": "delay", "delay_ms": PRODUCE_DEADLINE_MS + 1500, "count": 1},
    "close": {"action": "close", "count": 1},
    "drop": {"action": "drop", "count": 1},
}
FETCH_ERRORS = ["NOT_LEADER_OR_FOLLOWER", "UNKNOWN_LEADER_EPOCH"]


@pytest.fixture(scope="module")
def driver() -> Path:
    return build_go_programs(["faults_franz"], suffix="-faults")["faults_franz"]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlledBroker]:
    with controlled_broker(tmp_path_factory.mktemp("faults-go")) as running:
        yield running


@pytest.fixture(autouse=True)
def _no_faults_left(broker: ControlledBroker) -> Iterator[None]:
    yield
    clear_faults(broker)


def _run(
    driver: Path, command: str, broker: ControlledBroker, topic: str, rule: dict[str, Any]
) -> list[dict[str, Any]]:
    return run_driver(
        [
            str(driver),
            command,
            "--bootstrap",
            broker.bootstrap,
            "--control",
            broker.control_url,
            "--topic",
            topic,
            "--partitions",
            str(PARTITIONS),
            "--count",
            str(COUNT),
            "--rule",
            json.dumps({"topic": topic, **rule}),
        ],  # fmt: skip
        timeout=90,
    )


def _check_used_up(broker: ControlledBroker, events: list[dict[str, Any]], topic: str) -> None:
    rules = installed_rules(events)
    assert len(rules) == 1 and rules[0]["topic"] == topic, rules
    (after,) = [e for e in events if e["event"] == "faults-after"]
    assert rules[0]["id"] not in [r["id"] for r in after["rules"]], after
    check_rules_fired(broker, rules)


@pytest.mark.parametrize("fault", list(PRODUCE_RULES))
def test_franz_idempotent_producer_through_fault(
    driver: Path, broker: ControlledBroker, fault: str
) -> None:
    topic = f"faults-go-{fault}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    events = _run(driver, "produce", broker, topic, {"api": "Produce", **PRODUCE_RULES[fault]})
    _check_used_up(broker, events, topic)
    check_exactly_once(broker.bootstrap, topic, PARTITIONS, COUNT)
    check_producer_state(broker, topic, PARTITIONS, COUNT)


@pytest.mark.parametrize("error", FETCH_ERRORS)
def test_franz_consumer_through_fetch_errors(
    driver: Path, broker: ControlledBroker, error: str
) -> None:
    topic = f"faults-go-fetch-{error.lower().replace('_', '-')}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    produce_values(broker.bootstrap, topic, PARTITIONS, [value(i) for i in range(COUNT)])
    rule = {"api": "Fetch", "action": "error", "error": error, "count": 2}
    events = _run(driver, "consume", broker, topic, rule)
    _check_used_up(broker, events, topic)
    (consumed,) = [e for e in events if e["event"] == "consumed"]
    for partition in range(PARTITIONS):
        want = [value(i) for i in range(partition, COUNT, PARTITIONS)]
        assert consumed["values"][str(partition)] == want, f"partition {partition}"


def test_franz_clock_over_http(driver: Path, broker: ControlledBroker) -> None:
    events = run_driver([str(driver), "clock", "--control", broker.control_url])
    answers = {k: v for e in events for k, v in e.items() if k != "event"}
    assert answers["freeze"]["frozen"] is True, answers
    assert answers["advance"]["now_ms"] == answers["freeze"]["now_ms"] + 3_600_000, answers
    assert answers["resume"]["frozen"] is False, answers

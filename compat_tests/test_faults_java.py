"""Java kafka-clients 4.4 through millpond's fault injection, driven over HTTP from Java: an
idempotent producer (acks=all) delivers every record exactly once, in order, through each
kind of rule on Produce: an error (NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT), a delay past
the client's request timeout (the request was written: the retry must be deduplicated), a
closed connection and a dropped one (silent until the client times out and reconnects).

compat_tests/java/FaultDriver.java installs the rules itself (POST /v1/faults); the tests
check they fired (used up, and logged once per request they acted on), read the topic back
and compare the idempotent producer's state (GET /v1/state). A delay without idempotence
shows the delay rule really makes the client write twice."""

from __future__ import annotations

import json
import os
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
    stored_values,
)
from compat_tests.harness import create_topic, run_driver
from compat_tests.kafka.reference import (
    TOOL_JVM,
    TOOLS_LOG4J,
    KafkaNotInstalledError,
    kafka_classpath,
)
from compat_tests.test_clients_java import compiled_driver

pytestmark = pytest.mark.compat

SOURCE = Path(__file__).resolve().parent / "java" / "FaultDriver.java"
PARTITIONS = 2
COUNT = 2000
REQUEST_TIMEOUT_MS = 2000
#: A rule per test, on Produce for the test's topic.
RULES: dict[str, dict[str, Any]] = {
    "not-leader": {"action": "error", "error": "NOT_LEADER_OR_FOLLOWER", "count": 3},
    "request-timed-out": {"action": "error", "error": "REQUEST_TIMED_OUT", "count": 3},
    "delay": {"action": "delay", "delay_ms": REQUEST_TIMEOUT_MS + 1500, "count": 1},
    "close": {"action": "close", "count": 1},
    "drop": {"action": "drop", "count": 1},
}


@pytest.fixture(scope="module")
def java_faults() -> list[str]:
    """The java command line of FaultDriver, up to its arguments."""
    missing = ""
    try:
        classpath = kafka_classpath()
    except KafkaNotInstalledError as exc:
        missing = str(exc)
    if missing:
        pytest.fail(missing, pytrace=False)
    classes = compiled_driver(classpath, SOURCE)
    return [
        "java", *TOOL_JVM, f"-Dlog4j2.configurationFile={TOOLS_LOG4J}",
        "-cp", f"{classes}{os.pathsep}{classpath}", "FaultDriver",
    ]  # fmt: skip


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlledBroker]:
    with controlled_broker(tmp_path_factory.mktemp("faults-java")) as running:
        yield running


@pytest.fixture(autouse=True)
def _no_faults_left(broker: ControlledBroker) -> Iterator[None]:
    yield
    clear_faults(broker)


def _produce(
    java: list[str], broker: ControlledBroker, topic: str, rule: dict[str, Any], *extra: str
) -> list[dict[str, Any]]:
    create_topic(broker.bootstrap, topic, PARTITIONS)
    rule_json = json.dumps({"api": "Produce", "topic": topic, **rule})
    return run_driver(
        [
            *java,
            "produce",
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
            "--request-timeout-ms",
            str(REQUEST_TIMEOUT_MS),
            "--rule",
            rule_json,
            *extra,
        ],  # fmt: skip
        timeout=90,
    )


@pytest.mark.parametrize("fault", list(RULES))
def test_java_idempotent_producer_through_fault(
    java_faults: list[str], broker: ControlledBroker, fault: str
) -> None:
    topic = f"faults-java-{fault}"
    events = _produce(java_faults, broker, topic, RULES[fault])
    rules = installed_rules(events)
    assert len(rules) == 1 and rules[0]["topic"] == topic, rules
    (produced,) = [e for e in events if e["event"] == "produced"]
    assert produced["errors"] == 0, produced
    (after,) = [e for e in events if e["event"] == "faults-after"]
    assert rules[0]["id"] not in [r["id"] for r in after["rules"]], after
    check_rules_fired(broker, rules)
    check_exactly_once(broker.bootstrap, topic, PARTITIONS, COUNT)
    check_producer_state(broker, topic, PARTITIONS, COUNT)
    print(f"{fault}: {COUNT} records in {produced['elapsed_ms']} ms")


def test_java_delay_without_idempotence_writes_twice(
    java_faults: list[str], broker: ControlledBroker
) -> None:
    """The delay rule's request is written before its answer is held: a producer without
    idempotence that times out and retries stores that batch twice."""
    topic = "faults-java-delay-plain"
    events = _produce(java_faults, broker, topic, RULES["delay"], "--idempotence", "false")
    check_rules_fired(broker, installed_rules(events))
    stored = stored_values(broker.bootstrap, topic, PARTITIONS)
    values = [v for partition in stored.values() for v in partition]
    assert len(values) > COUNT and set(values) == {f"record-{i}" for i in range(COUNT)}, (
        f"{len(values)} records stored for {COUNT} sent: the retry wrote no duplicate"
    )


def test_java_clock_over_http(java_faults: list[str], broker: ControlledBroker) -> None:
    events = run_driver([*java_faults, "clock", "--control", broker.control_url])
    answers = {k: v for e in events for k, v in e.items() if k != "event"}
    assert answers["freeze"]["frozen"] is True, answers
    assert answers["advance"]["now_ms"] == answers["freeze"]["now_ms"] + 3_600_000, answers
    assert answers["advance"]["offset_ms"] >= 3_600_000, answers
    assert answers["resume"]["frozen"] is False, answers

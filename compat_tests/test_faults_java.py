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

from pathlib import Path
from typing import Any

import pytest

from compat_tests.faults import (
    ERROR_RULES,
    ControlledBroker,
    check_clock,
    check_produced_once,
    check_rules_fired,
    delay_past,
    driver_options,
    installed_rules,
    stored_values,
)
from compat_tests.harness import create_topic, run_driver
from compat_tests.test_clients_java import java_program

pytestmark = pytest.mark.compat

SOURCE = Path(__file__).resolve().parent / "java" / "FaultDriver.java"
PARTITIONS = 2
COUNT = 2000
REQUEST_TIMEOUT_MS = 2000
#: A rule per test, on Produce for the test's topic.
RULES: dict[str, dict[str, Any]] = {
    **ERROR_RULES,
    "delay": delay_past(REQUEST_TIMEOUT_MS),
    "close": {"action": "close", "count": 1},
    "drop": {"action": "drop", "count": 1},
}


@pytest.fixture(scope="module")
def java_faults() -> list[str]:
    """The java command line of FaultDriver, up to its arguments."""
    return java_program(SOURCE)


def _produce(
    java: list[str], broker: ControlledBroker, topic: str, rule: dict[str, Any], *extra: str
) -> list[dict[str, Any]]:
    create_topic(broker.bootstrap, topic, PARTITIONS)
    options = driver_options(broker, topic, PARTITIONS, COUNT, {"api": "Produce", **rule})
    command = [*java, "produce", *options, "--request-timeout-ms", str(REQUEST_TIMEOUT_MS)]
    return run_driver([*command, *extra], timeout=90)


@pytest.mark.parametrize("fault", list(RULES))
def test_java_idempotent_producer_through_fault(
    java_faults: list[str], controlled_millpond: ControlledBroker, fault: str
) -> None:
    topic = f"faults-java-{fault}"
    events = _produce(java_faults, controlled_millpond, topic, RULES[fault])
    (produced,) = [e for e in events if e["event"] == "produced"]
    assert produced["errors"] == 0, produced
    # What the client saw: it retried, and lost a connection to all but an error answer.
    assert produced["record_retries"] >= 1, produced
    if RULES[fault]["action"] != "error":
        assert produced["connection_closes"] >= 1, produced
    check_produced_once(controlled_millpond, events, topic, PARTITIONS, COUNT)
    print(f"{fault}: {COUNT} records in {produced['elapsed_ms']} ms")


def test_java_delay_without_idempotence_writes_twice(
    java_faults: list[str], controlled_millpond: ControlledBroker
) -> None:
    """The delay rule's request is written before its answer is held: a producer without
    idempotence that times out and retries stores that batch twice."""
    topic = "faults-java-delay-plain"
    broker = controlled_millpond
    events = _produce(java_faults, broker, topic, RULES["delay"], "--idempotence", "false")
    check_rules_fired(broker, installed_rules(events))
    stored = stored_values(broker.bootstrap, topic, PARTITIONS)
    values = [v for partition in stored.values() for v in partition]
    assert len(values) > COUNT and set(values) == {f"record-{i}" for i in range(COUNT)}, (
        f"{len(values)} records stored for {COUNT} sent: the retry wrote no duplicate"
    )


def test_java_clock_over_http(
    java_faults: list[str], controlled_millpond: ControlledBroker
) -> None:
    check_clock(run_driver([*java_faults, "clock", "--control", controlled_millpond.control_url]))

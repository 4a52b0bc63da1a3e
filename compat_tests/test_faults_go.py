"""franz-go through millpond's fault injection, driven over HTTP from Go: kgo's idempotent
producer (its default, acks=all) delivers every record exactly once, in order, through
errors (NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT), a delay past its request timeout, a closed
and a dropped connection on Produce; a kgo consumer reads everything through
NOT_LEADER_OR_FOLLOWER and UNKNOWN_LEADER_EPOCH answers to its Fetch requests.

compat_tests/go/faults_franz installs the rules itself (POST /v1/faults); the tests check
they fired (used up, and logged once per request they acted on) and read the topic back."""

from __future__ import annotations

from typing import Any

import pytest

from compat_tests.faults import (
    ERROR_RULES,
    ControlledBroker,
    check_clock,
    check_produced_once,
    check_used_up,
    delay_past,
    driver_options,
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
    **ERROR_RULES,
    "delay": delay_past(PRODUCE_DEADLINE_MS),
    "close": {"action": "close", "count": 1},
    "drop": {"action": "drop", "count": 1},
}
FETCH_ERRORS = ["NOT_LEADER_OR_FOLLOWER", "UNKNOWN_LEADER_EPOCH"]


@pytest.fixture(scope="module")
def driver() -> str:
    return str(build_go_programs(["faults_franz"], suffix="-faults")["faults_franz"])


@pytest.mark.parametrize("fault", list(PRODUCE_RULES))
def test_franz_idempotent_producer_through_fault(
    driver: str, controlled_millpond: ControlledBroker, fault: str
) -> None:
    topic, broker = f"faults-go-{fault}", controlled_millpond
    create_topic(broker.bootstrap, topic, PARTITIONS)
    rule = {"api": "Produce", **PRODUCE_RULES[fault]}
    events = run_driver(
        [driver, "produce", *driver_options(broker, topic, PARTITIONS, COUNT, rule)], timeout=90
    )
    check_produced_once(broker, events, topic, PARTITIONS, COUNT)
    if rule["action"] != "error":  # the client saw its request fail with the connection
        (produced,) = [e for e in events if e["event"] == "produced"]
        assert produced["failed_requests"] >= 1, produced


@pytest.mark.parametrize("error", FETCH_ERRORS)
def test_franz_consumer_through_fetch_errors(
    driver: str, controlled_millpond: ControlledBroker, error: str
) -> None:
    topic, broker = f"faults-go-fetch-{error.lower().replace('_', '-')}", controlled_millpond
    create_topic(broker.bootstrap, topic, PARTITIONS)
    produce_values(broker.bootstrap, topic, PARTITIONS, [value(i) for i in range(COUNT)])
    rule = {"api": "Fetch", "action": "error", "error": error, "count": 2}
    events = run_driver(
        [driver, "consume", *driver_options(broker, topic, PARTITIONS, COUNT, rule)], timeout=90
    )
    check_used_up(broker, events, topic)
    (consumed,) = [e for e in events if e["event"] == "consumed"]
    for partition in range(PARTITIONS):
        want = [value(i) for i in range(partition, COUNT, PARTITIONS)]
        assert consumed["values"][str(partition)] == want, f"partition {partition}"


def test_franz_clock_over_http(driver: str, controlled_millpond: ControlledBroker) -> None:
    check_clock(run_driver([driver, "clock", "--control", controlled_millpond.control_url]))

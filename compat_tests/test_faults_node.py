"""kafkajs through millpond's fault injection, driven over HTTP from JavaScript: an
idempotent kafkajs producer (acks=-1) delivers every record exactly once, in order, through
an error (NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT) and a delay past its request timeout on
Produce; a consumer-group member rejoins, in a later generation, when the group is forced to
rebalance (POST /v1/groups/{group}/rebalance).

compat_tests/node/faults_kafkajs.js calls the endpoint itself (Node's fetch); the tests
check the rules fired (used up, and logged once per request they acted on) and read the
topic back."""

from __future__ import annotations

from typing import Any

import pytest

from compat_tests.faults import (
    ERROR_RULES,
    ControlledBroker,
    check_clock,
    check_produced_once,
    delay_past,
    driver_options,
)
from compat_tests.harness import create_topic, run_driver
from compat_tests.test_clients_node import NODE_DIR, installed_node

pytestmark = pytest.mark.compat

DRIVER = NODE_DIR / "faults_kafkajs.js"
PARTITIONS = 2
COUNT = 2000
#: faults_kafkajs.js's request timeout.
REQUEST_TIMEOUT_MS = 3000
RULES: dict[str, dict[str, Any]] = {**ERROR_RULES, "delay": delay_past(REQUEST_TIMEOUT_MS)}


@pytest.fixture(scope="module")
def node() -> list[str]:
    return [installed_node(), str(DRIVER)]


@pytest.mark.parametrize("fault", list(RULES))
def test_kafkajs_idempotent_producer_through_fault(
    node: list[str], controlled_millpond: ControlledBroker, fault: str
) -> None:
    topic, broker = f"faults-node-{fault}", controlled_millpond
    create_topic(broker.bootstrap, topic, PARTITIONS)
    rule = {"api": "Produce", **RULES[fault]}
    events = run_driver(
        [*node, "produce", *driver_options(broker, topic, PARTITIONS, COUNT, rule)], timeout=90
    )
    check_produced_once(broker, events, topic, PARTITIONS, COUNT)
    (produced,) = [e for e in events if e["event"] == "produced"]
    assert produced["requests"] > produced["sends"], f"kafkajs never retried: {produced}"


def test_kafkajs_member_rejoins_a_forced_rebalance(
    node: list[str], controlled_millpond: ControlledBroker
) -> None:
    topic, group, broker = "faults-node-rebalance", "faults-node-group", controlled_millpond
    create_topic(broker.bootstrap, topic, PARTITIONS)
    events = run_driver(
        [
            *node,
            "rebalance",
            "--bootstrap",
            broker.bootstrap,
            "--control",
            broker.control_url,
            "--topic",
            topic,
            "--group",
            group,
        ],  # fmt: skip
        timeout=90,
    )
    joins = [e for e in events if e["event"] == "joined"]
    (forced,) = [e["group"] for e in events if e["event"] == "forced"]
    assert len(joins) == 2, events
    assert joins[1]["generation"] > joins[0]["generation"], joins
    assert joins[1]["member_id"] == joins[0]["member_id"], joins
    assert [j["state"] for j in joins] == ["Stable", "Stable"], joins
    assert forced["group_id"] == group and forced["state"] == "PreparingRebalance", forced
    assert forced["generation"] == joins[0]["generation"], forced


def test_kafkajs_clock_over_http(node: list[str], controlled_millpond: ControlledBroker) -> None:
    check_clock(run_driver([*node, "clock", "--control", controlled_millpond.control_url]))

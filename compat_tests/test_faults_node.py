"""kafkajs through millpond's fault injection, driven over HTTP from JavaScript: an
idempotent kafkajs producer (acks=-1) delivers every record exactly once, in order, through
an error (NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT) and a delay past its request timeout on
Produce; a consumer-group member rejoins, in a later generation, when the group is forced to
rebalance (POST /v1/groups/{group}/rebalance).

compat_tests/node/faults_kafkajs.js calls the endpoint itself (Node's fetch); the tests
check the rules fired (used up, and logged once per request they acted on) and read the
topic back."""

from __future__ import annotations

import json
from collections.abc import Iterator
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
)
from compat_tests.groups import BROKER_CONFIGS as GROUP_BROKER_CONFIGS
from compat_tests.harness import create_topic, run_driver
from compat_tests.test_clients_node import NODE_DIR, installed_node

pytestmark = pytest.mark.compat

DRIVER = NODE_DIR / "faults_kafkajs.js"
PARTITIONS = 2
COUNT = 2000
#: faults_kafkajs.js's request timeout.
REQUEST_TIMEOUT_MS = 3000
RULES: dict[str, dict[str, Any]] = {
    "not-leader": {"action": "error", "error": "NOT_LEADER_OR_FOLLOWER", "count": 3},
    "request-timed-out": {"action": "error", "error": "REQUEST_TIMED_OUT", "count": 3},
    "delay": {"action": "delay", "delay_ms": REQUEST_TIMEOUT_MS + 1500, "count": 1},
}


@pytest.fixture(scope="module")
def node() -> list[str]:
    return [installed_node(), str(DRIVER)]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlledBroker]:
    overrides = [f"{k}={v}" for k, v in GROUP_BROKER_CONFIGS.items()]
    with controlled_broker(tmp_path_factory.mktemp("faults-node"), *overrides) as running:
        yield running


@pytest.fixture(autouse=True)
def _no_faults_left(broker: ControlledBroker) -> Iterator[None]:
    yield
    clear_faults(broker)


@pytest.mark.parametrize("fault", list(RULES))
def test_kafkajs_idempotent_producer_through_fault(
    node: list[str], broker: ControlledBroker, fault: str
) -> None:
    topic = f"faults-node-{fault}"
    create_topic(broker.bootstrap, topic, PARTITIONS)
    rule = json.dumps({"api": "Produce", "topic": topic, **RULES[fault]})
    events = run_driver(
        [
            *node,
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
            "--rule",
            rule,
        ],  # fmt: skip
        timeout=90,
    )
    rules = installed_rules(events)
    assert len(rules) == 1 and rules[0]["topic"] == topic, rules
    (after,) = [e for e in events if e["event"] == "faults-after"]
    assert rules[0]["id"] not in [r["id"] for r in after["rules"]], after
    check_rules_fired(broker, rules)
    check_exactly_once(broker.bootstrap, topic, PARTITIONS, COUNT)
    check_producer_state(broker, topic, PARTITIONS, COUNT)


def test_kafkajs_member_rejoins_a_forced_rebalance(
    node: list[str], broker: ControlledBroker
) -> None:
    topic, group = "faults-node-rebalance", "faults-node-group"
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


def test_kafkajs_clock_over_http(node: list[str], broker: ControlledBroker) -> None:
    events = run_driver([*node, "clock", "--control", broker.control_url])
    answers = {k: v for e in events for k, v in e.items() if k != "event"}
    assert answers["freeze"]["frozen"] is True, answers
    assert answers["advance"]["now_ms"] == answers["freeze"]["now_ms"] + 3_600_000, answers
    assert answers["resume"]["frozen"] is False, answers

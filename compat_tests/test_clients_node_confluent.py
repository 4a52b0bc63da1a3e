"""confluent-kafka-javascript (librdkafka underneath) against millpond and Apache Kafka 4.4:
every scenario of SCENARIOS.md through ``compat_tests/node/driver_confluent.js``, its
node-rdkafka-style API (Producer with delivery reports, KafkaConsumer by assignment,
AdminClient), produce-consume once per codec (all five built into librdkafka).

The package is a native addon compiled by ``compat_tests/node/install.sh`` (see there why and
how); one driver process per broker runs every scenario but ``errors``."""

from __future__ import annotations

from typing import Any

import pytest

from compat_tests.harness import (
    admin_problems,
    check_acks,
    check_errors,
    check_idempotent_batches,
    check_large,
    check_produce_consume,
    stored_batches,
)
from compat_tests.matrix import CODECS
from compat_tests.test_clients_node import (
    NODE_DIR,
    Events,
    check_codec,
    installed_node,
    run_scenarios,
    scenario_runs,
)

pytestmark = pytest.mark.compat

CLIENT = "confluent-kafka-javascript"
DRIVER = NODE_DIR / "driver_confluent.js"
PREFIX = "node-confluent"
# What confluent-kafka-javascript 1.10.1 (librdkafka 2.15.1) reports against Apache Kafka 4.4
# (auto.create.topics.enable=false):
# - unknown-topic: librdkafka waits for the topic to appear in the metadata, and the delivery
#   report fails with its local _MSG_TIMED_OUT (-192) after message.timeout.ms (5 s): no Kafka
#   error code.
# - invalid-config: CreateTopics answers INVALID_CONFIG (40).
EXPECTED_ERRORS: dict[str, int | None] = {"unknown-topic": None, "invalid-config": 40}
# Neither admin API of the client (KafkaJS-style nor node-rdkafka-style AdminClient) has
# DescribeConfigs or AlterConfigs: the driver reports those steps as unsupported.
CONFIG_STEPS = ("describeConfigs", "alterConfigs")


@pytest.fixture(scope="module")
def node() -> str:
    node = installed_node()
    # The addon is compiled at install: a failed or partial build shows here, not as a driver
    # crash in every test.
    assert (NODE_DIR / "node_modules/@confluentinc/kafka-javascript/build/Release").is_dir(), (
        "confluent-kafka-javascript's native addon was not built: run compat_tests/node/install.sh"
    )
    return node


@pytest.fixture(scope="module")
def confluent_events(node: str, broker_bootstrap: str) -> Events:
    """Every scenario but ``errors``, from one driver process per broker."""
    return run_scenarios(node, DRIVER, scenario_runs(broker_bootstrap, PREFIX))


@pytest.mark.compat_matrix(CLIENT, "produce-consume/{compression}")
@pytest.mark.parametrize("compression", CODECS)
def test_produce_consume(confluent_events: Events, broker_bootstrap: str, compression: str) -> None:
    check_produce_consume(confluent_events[f"produce-consume/{compression}"])
    check_codec(broker_bootstrap, f"{PREFIX}-{compression}", compression)


@pytest.mark.compat_matrix(CLIENT, "acks")
def test_acks(confluent_events: Events) -> None:
    check_acks(confluent_events["acks"])


@pytest.mark.compat_matrix(CLIENT, "idempotent")
def test_idempotent(confluent_events: Events, broker_bootstrap: str) -> None:
    check_idempotent_batches(stored_batches(broker_bootstrap, f"{PREFIX}-acks", 4))


@pytest.mark.compat_matrix(CLIENT, "large")
def test_large(confluent_events: Events) -> None:
    check_large(confluent_events["large"])


def test_admin_without_configs(confluent_events: Events, broker_bootstrap: str) -> None:
    """Every admin step the client can express (all but DescribeConfigs/AlterConfigs; the
    matrix cell is allowlisted in matrix.ALLOWLIST)."""
    events = confluent_events["admin"]
    steps = {e.get("step"): e for e in events if e.get("event") == "admin"}
    for step in CONFIG_STEPS:
        assert str(steps.get(step, {}).get("error", "")).startswith("unsupported"), steps.get(step)
    problems = [p for p in admin_problems(events) if not p.startswith(CONFIG_STEPS)]
    assert not problems, f"the admin scenario against {broker_bootstrap}:\n" + "\n".join(problems)


@pytest.fixture(scope="module")
def confluent_errors(node: str, strict_broker_bootstrap: str) -> list[dict[str, Any]]:
    topic = f"{PREFIX}-errors"
    runs = [["errors", "--bootstrap", strict_broker_bootstrap, "--topic", topic]]
    return run_scenarios(node, DRIVER, runs)["errors"]


@pytest.mark.compat_matrix(CLIENT, "error/{step}")
@pytest.mark.parametrize("step", EXPECTED_ERRORS)
def test_errors(confluent_errors: list[dict[str, Any]], step: str) -> None:
    check_errors(confluent_errors, {step: EXPECTED_ERRORS[step]})

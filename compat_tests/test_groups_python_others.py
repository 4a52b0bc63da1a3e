"""SCENARIOS.md's ``group`` scenario with kafka-python (range, roundrobin, its eager sticky
and its cooperative-sticky assignor, KIP-429) and aiokafka (range, roundrobin), both with
static membership (KIP-345), against millpond and Apache Kafka 4.4."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from compat_tests.groups import (
    MemberCommand,
    member_command,
    run_group_scenario,
    run_static_scenario,
)

pytestmark = pytest.mark.compat

DRIVERS = Path(__file__).resolve().parent / "python"


def _member(driver: str, bootstrap: str, topic: str, assignor: str | None) -> MemberCommand:
    return member_command([sys.executable, str(DRIVERS / driver)], bootstrap, topic, assignor)


@pytest.mark.compat_matrix("kafka-python", "group")
@pytest.mark.parametrize("assignor", ["range", "roundrobin", "sticky", "cooperative-sticky"])
def test_kafka_python_group(broker_bootstrap: str, assignor: str) -> None:
    topic = f"grp-kafka-python-{assignor}"
    command = _member("member_kafka_python.py", broker_bootstrap, topic, assignor)
    run_group_scenario(command, broker_bootstrap, topic)


@pytest.mark.compat_matrix("kafka-python", "group/static")
def test_kafka_python_static_group(broker_bootstrap: str) -> None:
    topic = "grp-kafka-python-static"
    command = _member("member_kafka_python.py", broker_bootstrap, topic, None)
    run_static_scenario(command, broker_bootstrap, topic)


@pytest.mark.compat_matrix("aiokafka", "group")
@pytest.mark.parametrize("assignor", ["range", "roundrobin"])
def test_aiokafka_group(broker_bootstrap: str, assignor: str) -> None:
    topic = f"grp-aiokafka-{assignor}"
    command = _member("member_aiokafka.py", broker_bootstrap, topic, assignor)
    run_group_scenario(command, broker_bootstrap, topic)


@pytest.mark.compat_matrix("aiokafka", "group/static")
def test_aiokafka_static_group(broker_bootstrap: str) -> None:
    topic = "grp-aiokafka-static"
    command = _member("member_aiokafka.py", broker_bootstrap, topic, None)
    run_static_scenario(command, broker_bootstrap, topic)

"""SCENARIOS.md's ``group`` scenario with the Python clients: confluent-kafka (librdkafka)
with an eager and the cooperative assignor, against millpond and Apache Kafka 4.4."""

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


def _confluent(bootstrap: str, topic: str, assignor: str | None) -> MemberCommand:
    driver = [sys.executable, str(DRIVERS / "member_confluent.py")]
    return member_command(driver, bootstrap, topic, assignor)


@pytest.mark.compat_matrix("confluent-kafka", "group")
@pytest.mark.parametrize("assignor", ["range", "cooperative-sticky"])
def test_confluent_group(broker_bootstrap: str, assignor: str) -> None:
    topic = f"grp-confluent-{assignor}"
    run_group_scenario(_confluent(broker_bootstrap, topic, assignor), broker_bootstrap, topic)


@pytest.mark.compat_matrix("confluent-kafka", "group/static")
def test_confluent_static_group(broker_bootstrap: str) -> None:
    topic = "grp-confluent-static"
    run_static_scenario(_confluent(broker_bootstrap, topic, None), broker_bootstrap, topic)

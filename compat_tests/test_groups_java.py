"""SCENARIOS.md's ``group`` scenario with Java kafka-clients 4.4 (the classic protocol), with
the range, round-robin and cooperative-sticky assignors, against millpond and Apache Kafka 4.4.

compat_tests/java/GroupMember.java is compiled and cached like ClientDriver.java; every member
is a JVM of its own (the harness kills and restarts members), started with the tools' small,
fast-starting JVM options."""

from __future__ import annotations

from pathlib import Path

import pytest

from compat_tests.groups import member_command, run_group_scenario, run_static_scenario
from compat_tests.test_clients_java import java_program

pytestmark = pytest.mark.compat

SOURCE = Path(__file__).resolve().parent / "java" / "GroupMember.java"

#: The harness's assignor names -> the Java client's (GroupMember.java maps them to classes).
ASSIGNORS = {
    "range": "range",  # RangeAssignor
    "round-robin": "roundrobin",  # RoundRobinAssignor
    "cooperative-sticky": "cooperative-sticky",  # CooperativeStickyAssignor
}


@pytest.fixture(scope="module")
def java_member() -> list[str]:
    """The java command line of GroupMember, up to its arguments."""
    return java_program(SOURCE)


@pytest.mark.compat_matrix("Java kafka-clients", "group")
@pytest.mark.parametrize("assignor", list(ASSIGNORS))
def test_java_group(java_member: list[str], broker_bootstrap: str, assignor: str) -> None:
    topic = f"grp-java-{assignor}"
    command = member_command(java_member, broker_bootstrap, topic, ASSIGNORS[assignor])
    run = run_group_scenario(command, broker_bootstrap, topic)
    print(f"settle times (s): { {k: round(v, 2) for k, v in run.settle_times.items()} }")


@pytest.mark.compat_matrix("Java kafka-clients", "group/static")
def test_java_static_group(java_member: list[str], broker_bootstrap: str) -> None:
    topic = "grp-java-static"
    command = member_command(java_member, broker_bootstrap, topic, None)
    took = run_static_scenario(command, broker_bootstrap, topic)
    print(f"the restarted static member got its partitions after {took:.2f}s")

"""SCENARIOS.md's ``group`` scenario with the Go clients, against millpond and Apache
Kafka 4.4: franz-go with its default (cooperative-sticky) and an eager balancer, sarama
with its eager strategies, each member a ``compat_tests/go/member_*`` process.

The member binaries are built like the scenario drivers of ``test_clients_go`` (same
toolchain-and-sources hash, same cache), into a directory of their own next to theirs:
that module renames its build directory into place whole, so the two must not share one."""

from __future__ import annotations

from pathlib import Path

import pytest

from compat_tests.groups import member_command, run_group_scenario, run_static_scenario
from compat_tests.test_clients_go import build_go_programs

pytestmark = pytest.mark.compat

#: Member binary -> the client's name in compat_tests/matrix.py.
MEMBERS = {"member_franz": "franz-go", "member_sarama": "sarama"}


@pytest.fixture(scope="module")
def go_members() -> dict[str, Path]:
    """The member binaries by client name (in a build directory of their own: the
    drivers' is renamed into place whole, so the two must not share one)."""
    built = build_go_programs(list(MEMBERS), suffix="-groups")
    return {client: built[name] for name, client in MEMBERS.items()}


@pytest.mark.parametrize(
    ("client", "assignor"),
    [
        # None: franz-go's default, cooperative-sticky (incremental callbacks).
        pytest.param("franz-go", None, marks=pytest.mark.compat_matrix("franz-go", "group")),
        pytest.param("franz-go", "range", marks=pytest.mark.compat_matrix("franz-go", "group")),
        pytest.param("sarama", "range", marks=pytest.mark.compat_matrix("sarama", "group")),
        pytest.param("sarama", "roundrobin", marks=pytest.mark.compat_matrix("sarama", "group")),
        pytest.param("sarama", "sticky", marks=pytest.mark.compat_matrix("sarama", "group")),
    ],
)
def test_go_group(
    go_members: dict[str, Path], broker_bootstrap: str, client: str, assignor: str | None
) -> None:
    topic = f"grp-{client}-{assignor or 'default'}"
    command = member_command([str(go_members[client])], broker_bootstrap, topic, assignor)
    run_group_scenario(command, broker_bootstrap, topic)


@pytest.mark.parametrize(
    "client",
    [pytest.param(c, marks=pytest.mark.compat_matrix(c, "group/static")) for c in MEMBERS.values()],
)
def test_go_static_group(go_members: dict[str, Path], broker_bootstrap: str, client: str) -> None:
    topic = f"grp-{client}-static"
    command = member_command([str(go_members[client])], broker_bootstrap, topic, None)
    run_static_scenario(command, broker_bootstrap, topic)

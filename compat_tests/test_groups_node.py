"""SCENARIOS.md's ``group`` scenario with kafkajs (its only assigner, round-robin) against
millpond and Apache Kafka 4.4. kafkajs 2.2.4 has no static membership, so ``group/static``
has no test here."""

from __future__ import annotations

import pytest

from compat_tests.groups import MemberCommand, run_group_scenario
from compat_tests.test_clients_node import NODE_DIR, installed_node

pytestmark = pytest.mark.compat


def _kafkajs(node: str, bootstrap: str, topic: str) -> MemberCommand:
    def command(group: str, instance_id: str | None, session_ms: int) -> list[str]:
        assert instance_id is None, "kafkajs has no static membership"
        return [
            node, str(NODE_DIR / "member_kafkajs.js"), "group-member",
            "--bootstrap", bootstrap, "--topic", topic, "--group", group,
            "--session-timeout-ms", str(session_ms),
        ]  # fmt: skip

    return command


@pytest.mark.compat_matrix("kafkajs", "group")
def test_kafkajs_group(broker_bootstrap: str) -> None:
    topic = "grp-kafkajs"
    command = _kafkajs(installed_node(), broker_bootstrap, topic)
    run_group_scenario(command, broker_bootstrap, topic)

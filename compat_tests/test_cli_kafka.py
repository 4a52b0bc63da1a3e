"""Every ``millpond`` command, run as the real executable against both session brokers: the
reference Apache Kafka 4.4 and ``millpond serve`` (tests/cli/scenarios.py has the checks).
The CLI speaks only the Kafka protocol, so it must serve Kafka's own broker as well."""

from __future__ import annotations

from pathlib import Path

from compat_tests.kafka.reference import free_port
from tests.cli import scenarios


def test_topic_commands(broker_bootstrap: str) -> None:
    scenarios.check_topic_commands(broker_bootstrap)


def test_produce(broker_bootstrap: str, tmp_path: Path) -> None:
    scenarios.check_produce(broker_bootstrap, tmp_path)


def test_consume(broker_bootstrap: str) -> None:
    scenarios.check_consume(broker_bootstrap)


def test_group_commands(broker_bootstrap: str) -> None:
    scenarios.check_group_commands(broker_bootstrap)


def test_cluster_info_and_configs(broker_bootstrap: str) -> None:
    scenarios.check_cluster_and_configs(broker_bootstrap)


def test_errors_are_messages_with_hints(broker_bootstrap: str) -> None:
    scenarios.check_errors(broker_bootstrap, f"127.0.0.1:{free_port()}")

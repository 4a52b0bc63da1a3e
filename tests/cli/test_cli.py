"""Every ``millpond`` command, run as the real executable against a millpond broker (the
same scenarios run against Apache Kafka 4.4 in compat_tests/test_cli_kafka.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from millpond.broker.node import Broker
from tests.broker.harness import running_broker
from tests.broker.test_serve import _free_port

from . import scenarios


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    with running_broker() as broker:
        yield broker


@pytest.fixture(scope="module")
def bootstrap(broker: Broker) -> str:
    host, port = broker.advertised
    return f"{host}:{port}"


def test_help_everywhere() -> None:
    scenarios.check_help()


def test_topic_commands(bootstrap: str) -> None:
    scenarios.check_topic_commands(bootstrap)


def test_produce(bootstrap: str, tmp_path: Path) -> None:
    scenarios.check_produce(bootstrap, tmp_path)


def test_consume(bootstrap: str) -> None:
    scenarios.check_consume(bootstrap)


def test_group_commands(bootstrap: str) -> None:
    scenarios.check_group_commands(bootstrap)


def test_cluster_info_and_configs(bootstrap: str) -> None:
    scenarios.check_cluster_and_configs(bootstrap)


def test_errors_are_messages_with_hints(bootstrap: str) -> None:
    scenarios.check_errors(bootstrap, f"127.0.0.1:{_free_port()}")


def test_dump_log(broker: Broker, bootstrap: str) -> None:
    topic = scenarios.produce_for_dump(bootstrap)
    scenarios.check_dump_log(Path(broker.data_dir) / f"{topic}-0")

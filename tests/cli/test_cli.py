"""Every ``millpond`` command, run as the real executable against a millpond broker (the
same scenarios run against Apache Kafka 4.4 in compat_tests/test_cli_kafka.py)."""

from __future__ import annotations

import os
import pty
import subprocess
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


def test_bench(bootstrap: str) -> None:
    scenarios.check_bench(bootstrap)


def test_progress_bar_when_stderr_is_a_terminal(bootstrap: str) -> None:
    topic = scenarios.name("tty")
    scenarios.run("topic", "create", topic, bootstrap=bootstrap)
    main, terminal = pty.openpty()
    try:
        proc = subprocess.run(
            [scenarios.MILLPOND, "bench", "produce", topic, "-n", "20000", "-b", "100",
             "--bootstrap-server", bootstrap],
            stdout=subprocess.PIPE, stderr=terminal, timeout=60, check=True,
        )  # fmt: skip
        os.close(terminal)
        drawn = b""
        while chunk := _read_available(main):
            drawn += chunk
    finally:
        os.close(main)
    assert b"\rbench produce " + topic.encode() in drawn and b"100%" in drawn
    assert proc.stdout.startswith(b"20,000 records")


def _read_available(fd: int) -> bytes:
    try:
        return os.read(fd, 1 << 16)
    except OSError:  # EIO: the terminal's other side is closed and drained
        return b""

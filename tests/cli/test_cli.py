"""Every ``millpond`` command, run as the real executable against ``millpond serve`` (the
same scenarios run against Apache Kafka 4.4 in compat_tests/test_cli_kafka.py)."""

from __future__ import annotations

import os
import pty
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from compat_tests.harness import millpond_server
from compat_tests.kafka.reference import free_port
from millpond import testing

from . import scenarios


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """A ``millpond serve`` process: its bootstrap and data directory. Groups form at
    once (no initial rebalance delay), as on the compat tests' brokers."""
    work = tmp_path_factory.mktemp("cli")
    with millpond_server(work, "group.initial.rebalance.delay.ms=0") as bootstrap:
        yield bootstrap, work / "data"


@pytest.fixture(scope="module")
def bootstrap(served: tuple[str, Path]) -> str:
    return served[0]


def test_help_everywhere() -> None:
    scenarios.check_help()


def test_topic_commands(bootstrap: str) -> None:
    scenarios.check_topic_commands(bootstrap)


def test_produce(bootstrap: str, tmp_path: Path) -> None:
    scenarios.check_produce(bootstrap, tmp_path)


def test_produce_creates_a_missing_topic(bootstrap: str) -> None:
    scenarios.check_produce_creates_a_missing_topic(bootstrap)


def test_produce_to_a_missing_topic_without_auto_create(tmp_path: Path) -> None:
    with millpond_server(tmp_path, "auto.create.topics.enable=false") as strict:
        scenarios.check_produce_to_a_missing_topic_without_auto_create(strict)


def test_consume(bootstrap: str) -> None:
    scenarios.check_consume(bootstrap)


def test_group_commands(bootstrap: str) -> None:
    scenarios.check_group_commands(bootstrap)


def test_cluster_info_and_configs(bootstrap: str) -> None:
    scenarios.check_cluster_and_configs(bootstrap)


def test_errors_are_messages_with_hints(bootstrap: str) -> None:
    scenarios.check_errors(bootstrap, f"127.0.0.1:{free_port()}")


def test_dump_log(served: tuple[str, Path]) -> None:
    bootstrap, data = served
    topic = scenarios.produce_for_dump(bootstrap)
    scenarios.check_dump_log(data / f"{topic}-0")


def test_bench(bootstrap: str) -> None:
    scenarios.check_bench(bootstrap)


def test_progress_bars_when_stderr_is_a_terminal(bootstrap: str) -> None:
    topic = scenarios.name("tty")
    scenarios.run("topic", "create", topic, bootstrap=bootstrap)
    out, drawn = _stderr_on_a_terminal("bench", "produce", topic, "-n", "20000", "-b", "100",
                                       "--bootstrap-server", bootstrap)  # fmt: skip
    assert b"\rbench produce " + topic.encode() in drawn and b"100%" in drawn
    assert out.startswith(b"20,000 records")
    out, drawn = _stderr_on_a_terminal(
        "consume", topic, "-t", "{offset}", "--bootstrap-server", bootstrap
    )
    assert b"\rconsuming " + topic.encode() in drawn and b"100%" in drawn
    assert out.split() == [str(i).encode() for i in range(20000)]


def _stderr_on_a_terminal(*args: str) -> tuple[bytes, bytes]:
    """Run ``millpond ARGS`` with stdout to a pipe and stderr to a pseudo-terminal:
    (stdout, what it drew on the terminal)."""
    main, terminal = pty.openpty()
    try:
        proc = subprocess.run(
            [scenarios.MILLPOND, *args],
            stdout=subprocess.PIPE,
            stderr=terminal,
            timeout=60,
            check=True,
        )
        os.close(terminal)
        drawn = b""
        while chunk := _read_available(main):
            drawn += chunk
    finally:
        os.close(main)
    return proc.stdout, drawn


def _read_available(fd: int) -> bytes:
    try:
        return os.read(fd, 1 << 16)
    except OSError:  # EIO: the terminal's other side is closed and drained
        return b""


def test_produce_sends_again_where_nothing_was_written() -> None:
    """A partition answered NOT_LEADER_OR_FOLLOWER (injected twice) gets its batch again,
    stored once; an error that may follow a write (REQUEST_TIMED_OUT) is reported instead."""
    with testing.broker() as broker:
        bootstrap = broker.bootstrap_servers
        topic = scenarios.name("retry")
        scenarios.run("topic", "create", topic, bootstrap=bootstrap)
        broker.fail("Produce", "NOT_LEADER_OR_FOLLOWER", count=2)
        scenarios.run("produce", topic, bootstrap=bootstrap, stdin="a\nb\n")
        assert scenarios.end_offsets_sum(bootstrap, topic, 1) == 2
        broker.fail("Produce", "REQUEST_TIMED_OUT", count=1)
        failed = scenarios.run("produce", topic, bootstrap=bootstrap, stdin="c\n", code=1)
        assert "REQUEST_TIMED_OUT" in failed.stderr and "hint:" in failed.stderr
        assert scenarios.run("consume", topic, bootstrap=bootstrap).stdout == "a\nb\n"


def test_consume_fetches_again_after_a_retriable_error() -> None:
    """NOT_LEADER_OR_FOLLOWER on Fetch (injected twice) is retried after a metadata
    refresh; a non-retriable error (TOPIC_AUTHORIZATION_FAILED) is reported."""
    with testing.broker() as broker:
        bootstrap = broker.bootstrap_servers
        topic = scenarios.name("refetch")
        scenarios.run("topic", "create", topic, bootstrap=bootstrap)
        scenarios.run("produce", topic, bootstrap=bootstrap, stdin="a\nb\n")
        broker.fail("Fetch", "NOT_LEADER_OR_FOLLOWER", count=2)
        assert scenarios.run("consume", topic, bootstrap=bootstrap).stdout == "a\nb\n"
        broker.fail("Fetch", "TOPIC_AUTHORIZATION_FAILED", count=1)
        failed = scenarios.run("consume", topic, bootstrap=bootstrap, code=1)
        assert "TOPIC_AUTHORIZATION_FAILED" in failed.stderr


def test_consume_as_a_group_member_and_dump_the_internal_topics(
    served: tuple[str, Path],
) -> None:
    bootstrap, data = served
    topic, group, partition = scenarios.check_consume_as_a_group_member(bootstrap)
    scenarios.check_offsets_decoder(data, topic, group, partition)
    scenarios.check_cluster_metadata_decoder(data, topic)


def test_produce_sends_each_line_typed_at_a_terminal(bootstrap: str) -> None:
    """From a terminal, a line is produced as soon as it is typed (not at end of input)."""
    topic = scenarios.name("typed")
    scenarios.run("topic", "create", topic, bootstrap=bootstrap)
    main, terminal = pty.openpty()
    command = [scenarios.MILLPOND, "produce", topic, "--bootstrap-server", bootstrap]
    try:
        with subprocess.Popen(command, stdin=terminal, stdout=subprocess.DEVNULL) as proc:
            try:
                os.write(main, b"first line\n")
                deadline = time.monotonic() + 20
                while (
                    scenarios.end_offsets_sum(bootstrap, topic, 1) < 1
                    and time.monotonic() < deadline
                ):
                    time.sleep(0.05)
                consumed = scenarios.run("consume", topic, bootstrap=bootstrap).stdout
                assert consumed == "first line\n"
                assert proc.poll() is None  # still reading the terminal
                os.write(main, b"\x04")  # Ctrl-D: end of input
                assert proc.wait(timeout=20) == 0
            finally:
                if proc.poll() is None:
                    proc.kill()
    finally:
        os.close(main)
        os.close(terminal)


def test_follow_in_a_group_until_interrupted(bootstrap: str) -> None:
    scenarios.check_follow_in_a_group_until_interrupted(bootstrap)

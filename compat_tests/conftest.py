"""Fixtures of the compat tests: the reference Apache Kafka 4.4 broker, one per test session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from compat_tests.kafka.reference import KafkaNotInstalledError, RunningBroker, start_broker


@pytest.fixture(scope="session")
def reference_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningBroker]:
    """One Kafka 4.4 broker (KRaft, combined mode) on free loopback ports for the whole session,
    started by the first test that asks for it and stopped at the end of the session, also when
    tests fail. Missing jars fail the tests (never skip them) with the command to run."""
    missing = ""
    try:
        broker = start_broker(tmp_path_factory.mktemp("reference-kafka"))
    except KafkaNotInstalledError as exc:
        missing = str(exc)
    if missing:
        pytest.fail(missing, pytrace=False)
    try:
        yield broker
    finally:
        broker.stop()

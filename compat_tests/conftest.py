"""Fixtures of the compat tests: the reference Apache Kafka 4.4 broker and a ``millpond serve``,
one of each per test session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from compat_tests.harness import millpond_server
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


@pytest.fixture(scope="session")
def millpond_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One ``millpond serve`` on a free loopback port for the whole session (its data and log
    in a session tmp dir), started by the first test that asks for it; yields its bootstrap
    ``127.0.0.1:PORT``. Tests share it, so each names its own topics."""
    with millpond_server(tmp_path_factory.mktemp("millpond")) as bootstrap:
        yield bootstrap

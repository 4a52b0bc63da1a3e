"""Fixtures of the compat tests: the reference Apache Kafka 4.4 broker and a ``millpond serve``,
one of each per test session, and ``broker_bootstrap`` (each of them in turn) for the client
tests; and the hooks recording the client tests' outcomes into compat_tests/MATRIX.md."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from compat_tests.harness import millpond_server
from compat_tests.kafka.reference import KafkaNotInstalledError, RunningBroker, start_broker
from compat_tests.matrix import MARKER, Recorder

# The client tests' outcomes of this pytest process (pytest_runtest_logreport gets no config).
_MATRIX = Recorder()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(client, scenario): the compat_tests/MATRIX.md cell a test fills"
    )


def pytest_itemcollected(item: pytest.Item) -> None:
    _MATRIX.collected(item)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _MATRIX.report(report)


def pytest_sessionfinish(session: pytest.Session) -> None:
    if _MATRIX.ran and _MATRIX.complete:  # only a full client run rewrites MATRIX.md
        _MATRIX.write()


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


@pytest.fixture(scope="session", params=["millpond", "kafka"])
def broker_bootstrap(request: pytest.FixtureRequest) -> str:
    """The bootstrap of the broker a client test runs against, once per broker: the session's
    ``millpond serve`` and the reference Apache Kafka 4.4 (a scenario that fails on the
    reference is a harness bug). Session-scoped, so pytest runs every client test against one
    broker before starting on the other."""
    if request.param == "millpond":
        bootstrap: str = request.getfixturevalue("millpond_bootstrap")
        return bootstrap
    broker: RunningBroker = request.getfixturevalue("reference_kafka")
    return broker.bootstrap

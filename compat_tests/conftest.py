"""Fixtures of the compat tests: the reference Apache Kafka 4.4 broker and a ``millpond serve``,
one of each per test session, and ``broker_bootstrap`` (each of them in turn) for the client
tests; and the hooks recording the client tests' outcomes into compat_tests/MATRIX.md."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from compat_tests.faults import ControlledBroker, clear_faults, controlled_broker
from compat_tests.groups import BROKER_CONFIGS as GROUP_BROKER_CONFIGS
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


def _reference(
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    config: dict[str, str] | None = None,
    log_dirs: int = 1,
) -> Iterator[RunningBroker]:
    missing = ""
    try:
        broker = start_broker(tmp_path_factory.mktemp(name), config=config, log_dirs=log_dirs)
    except KafkaNotInstalledError as exc:
        missing = str(exc)
    if missing:
        pytest.fail(missing, pytrace=False)
    try:
        yield broker
    finally:
        broker.stop()


@pytest.fixture(scope="session")
def reference_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningBroker]:
    """One Kafka 4.4 broker (KRaft, combined mode) on free loopback ports for the whole session,
    started by the first test that asks for it and stopped at the end of the session, also when
    tests fail. Missing jars fail the tests (never skip them) with the command to run."""
    yield from _reference(tmp_path_factory, "reference-kafka", REFERENCE_CONFIGS)


# The brokers of SCENARIOS.md's ``errors``: topics are never created on demand.
NO_AUTO_CREATE = {"auto.create.topics.enable": "false"}

#: What every session broker runs with, Kafka and millpond alike. The scenarios' records
#: carry timestamps of November 2023 (SCENARIOS.md), past the default 7-day retention: a
#: retention check would delete them in the middle of a session, so none runs during one.
#: Both run only the classic group protocol, the one millpond implements so far (Kafka's
#: default adds consumer and streams): what a client asking for another sees is compared.
SESSION_BROKER_CONFIGS = {
    "log.retention.check.interval.ms": "86400000",
    "group.coordinator.rebalance.protocols": "classic",
    **GROUP_BROKER_CONFIGS,
}
#: Kafka also checks retention once 30 s after every start, whatever the interval
#: (test_reference_kafka restarts the session's broker): an internal config of Kafka's
#: (millpond, whose first check waits a whole interval, has no such setting).
REFERENCE_CONFIGS = {**SESSION_BROKER_CONFIGS, "log.initial.task.delay.ms": "86400000"}


@pytest.fixture(scope="session")
def strict_reference_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningBroker]:
    """Like ``reference_kafka``, with ``auto.create.topics.enable=false``."""
    yield from _reference(
        tmp_path_factory, "strict-reference-kafka", {**REFERENCE_CONFIGS, **NO_AUTO_CREATE}
    )


@pytest.fixture(scope="session")
def millpond_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One ``millpond serve`` on a free loopback port for the whole session (its data and log
    in a session tmp dir), started by the first test that asks for it; yields its bootstrap
    ``127.0.0.1:PORT``. Tests share it, so each names its own topics."""
    work = tmp_path_factory.mktemp("millpond")
    _MATRIX.traces.append(work / "trace.jsonl")
    overrides = [f"{k}={v}" for k, v in SESSION_BROKER_CONFIGS.items()]
    with millpond_server(work, *overrides, trace=work / "trace.jsonl") as bootstrap:
        yield bootstrap


@pytest.fixture(scope="session")
def strict_millpond_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Like ``millpond_bootstrap``, with ``auto.create.topics.enable=false``."""
    configs = {**SESSION_BROKER_CONFIGS, **NO_AUTO_CREATE}
    overrides = [f"{k}={v}" for k, v in configs.items()]
    work = tmp_path_factory.mktemp("strict-millpond")
    _MATRIX.traces.append(work / "trace.jsonl")
    with millpond_server(work, *overrides, trace=work / "trace.jsonl") as bootstrap:
        yield bootstrap


@pytest.fixture(scope="module")
def jbod_reference_kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningBroker]:
    """Like ``reference_kafka``, with two log directories (for moves between them)."""
    yield from _reference(tmp_path_factory, "jbod-reference-kafka", REFERENCE_CONFIGS, 2)


@pytest.fixture(scope="module")
def jbod_millpond_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Like ``millpond_bootstrap``, with two log directories."""
    work = tmp_path_factory.mktemp("jbod-millpond")
    dirs = f"log.dirs={work / 'data'},{work / 'data-2'}"
    overrides = [f"{k}={v}" for k, v in SESSION_BROKER_CONFIGS.items()]
    with millpond_server(work, dirs, *overrides) as bootstrap:
        yield bootstrap


@pytest.fixture(scope="session", params=["millpond", "kafka"])
def strict_broker_bootstrap(request: pytest.FixtureRequest) -> str:
    """``broker_bootstrap`` for brokers that never auto-create topics (SCENARIOS.md
    ``errors``)."""
    if request.param == "millpond":
        bootstrap: str = request.getfixturevalue("strict_millpond_bootstrap")
        return bootstrap
    broker: RunningBroker = request.getfixturevalue("strict_reference_kafka")
    return broker.bootstrap


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


@pytest.fixture(scope="module")
def _module_controlled_millpond(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ControlledBroker]:
    overrides = [f"{k}={v}" for k, v in GROUP_BROKER_CONFIGS.items()]
    with controlled_broker(tmp_path_factory.mktemp("controlled-millpond"), *overrides) as broker:
        yield broker


@pytest.fixture
def controlled_millpond(
    _module_controlled_millpond: ControlledBroker,
) -> Iterator[ControlledBroker]:
    """A ``millpond serve`` with its control endpoint on (the fault tests), one per test
    module; the fault rules a test leaves are cleared after it."""
    yield _module_controlled_millpond
    clear_faults(_module_controlled_millpond)

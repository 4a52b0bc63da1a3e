"""Java kafka-clients 4.4 against millpond and Apache Kafka 4.4: every scenario of SCENARIOS.md,
the producer in its default (idempotent) configuration unless a scenario says otherwise, the
consumer by assign + seek, AdminClient step by step.

compat_tests/java/ClientDriver.java is compiled with javac against Kafka 4.4's jars once per
source (cached under ~/.cache/millpond/java-driver/<hash>). A JVM takes seconds to start, so one
JVM per broker runs every scenario but ``errors``, which needs the brokers that never create
topics on demand and so runs in a second JVM."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compat_tests.harness import (
    AdminSteps,
    check_acks,
    check_admin,
    check_errors,
    check_idempotent_batches,
    check_large,
    check_produce_consume,
    create_topic,
    run_driver,
    stored_batches,
)
from compat_tests.kafka.reference import (
    TOOL_JVM,
    TOOLS_LOG4J,
    KafkaNotInstalledError,
    kafka_classpath,
)
from compat_tests.matrix import CODECS

pytestmark = pytest.mark.compat

SOURCE = Path(__file__).resolve().parent / "java" / "ClientDriver.java"
PARTITIONS = 3
ACKS_TOPIC = "java-acks"
LARGE_TOPIC = "java-large"
ADMIN_TOPIC = "java-admin"
ERRORS_TOPIC = "java-errors"


def _cache_root() -> Path:
    return Path(
        os.environ.get("MILLPOND_JAVA_DRIVER_CACHE", Path.home() / ".cache/millpond/java-driver")
    )


def compiled_driver(classpath: str, source: Path = SOURCE) -> Path:
    """The directory holding the classes of ``source`` (ClientDriver.java unless another
    driver's), compiled from its current text against ``classpath`` (both hashed into its
    name), compiling it first when it is not cached."""
    digest = hashlib.sha256(source.read_bytes() + classpath.encode()).hexdigest()[:16]
    target = _cache_root() / digest
    main_class = target / f"{source.stem}.class"
    if main_class.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{digest}.", dir=target.parent))
    try:
        result = subprocess.run(
            ["javac", "-proc:none", "-d", str(work), "-cp", classpath, str(source)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if result.returncode != 0:
            pytest.fail(f"javac {source} failed:\n{result.stdout}{result.stderr}", pytrace=False)
        try:
            work.rename(target)  # atomic: another session may have compiled it meanwhile
        except OSError:
            if not main_class.is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def java_program(source: Path = SOURCE) -> list[str]:
    """The java command line running the main class of ``source`` (compiled and cached by
    :func:`compiled_driver`) with Kafka 4.4's jars and the tools' JVM options, up to its
    arguments. Missing jars fail the test with the command that fetches them."""
    missing = ""
    try:
        classpath = kafka_classpath()
    except KafkaNotInstalledError as exc:
        missing = str(exc)
    if missing:
        pytest.fail(missing, pytrace=False)
    classes = compiled_driver(classpath, source)
    return [
        "java",
        *TOOL_JVM,
        f"-Dlog4j2.configurationFile={TOOLS_LOG4J}",
        "-cp",
        f"{classes}{os.pathsep}{classpath}",
        source.stem,
    ]


def _driver_command(bootstrap: str, runs: list[list[str]]) -> list[str]:
    """The java command running ClientDriver with ``runs`` (each a scenario and its options,
    without ``--bootstrap``) chained by ``--`` in one JVM."""
    chained: list[str] = []
    for run in runs:
        chained += [*(["--"] if chained else []), *run, "--bootstrap", bootstrap]
    return [*java_program(), *chained]


def _by_scenario(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    by_scenario: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        by_scenario.setdefault(str(event.get("scenario")), []).append(event)
    return by_scenario


def _codec_topic(codec: str) -> str:
    return f"java-produce-consume-{codec}"


@pytest.fixture(scope="module")
def java_events(broker_bootstrap: str) -> Iterator[dict[str, list[dict[str, Any]]]]:
    """Every scenario but ``errors`` from one JVM, by scenario (``produce-consume/<codec>``)."""
    runs: list[list[str]] = []
    for codec in CODECS:
        create_topic(broker_bootstrap, _codec_topic(codec), PARTITIONS)
        runs.append(
            [
                "produce-consume",
                "--topic",
                _codec_topic(codec),
                "--partitions",
                str(PARTITIONS),
                "--compression",
                codec,
            ]
        )
    create_topic(broker_bootstrap, ACKS_TOPIC, 4)
    create_topic(broker_bootstrap, LARGE_TOPIC, 1, {"max.message.bytes": "1048588"})
    runs += [
        ["acks", "--topic", ACKS_TOPIC],
        ["large", "--topic", LARGE_TOPIC],
        ["admin", "--topic", ADMIN_TOPIC],
    ]
    yield _by_scenario(run_driver(_driver_command(broker_bootstrap, runs), timeout=300))


@pytest.fixture(scope="module")
def java_error_events(strict_broker_bootstrap: str) -> Iterator[list[dict[str, Any]]]:
    """The ``errors`` scenario's events, from a JVM of its own (another broker)."""
    command = _driver_command(strict_broker_bootstrap, [["errors", "--topic", ERRORS_TOPIC]])
    yield run_driver(command, timeout=120)


@pytest.mark.compat_matrix("Java kafka-clients", "produce-consume/{codec}")
@pytest.mark.parametrize("codec", CODECS)
def test_java_produce_consume(
    java_events: dict[str, list[dict[str, Any]]], broker_bootstrap: str, codec: str
) -> None:
    check_produce_consume(java_events[f"produce-consume/{codec}"])
    batches = stored_batches(broker_bootstrap, _codec_topic(codec), PARTITIONS)
    codecs = sorted({b["codec"] for b in batches})
    assert codecs == [codec], f"the producer asked for {codec}, the batches use {codecs}: {batches}"
    producers = sorted({(b["producer_id"], b["producer_epoch"]) for b in batches})
    assert len(producers) == 1 and producers[0][0] >= 0, (
        f"the default (idempotent) producer wrote batches with producer ids/epochs {producers}"
    )


@pytest.mark.compat_matrix("Java kafka-clients", "acks")
def test_java_acks(java_events: dict[str, list[dict[str, Any]]]) -> None:
    check_acks(java_events["acks"])


@pytest.mark.compat_matrix("Java kafka-clients", "idempotent")
def test_java_idempotent(
    java_events: dict[str, list[dict[str, Any]]], broker_bootstrap: str
) -> None:
    check_idempotent_batches(stored_batches(broker_bootstrap, ACKS_TOPIC, 4))


@pytest.mark.compat_matrix("Java kafka-clients", "large")
def test_java_large(java_events: dict[str, list[dict[str, Any]]]) -> None:
    check_large(java_events["large"])


START_TS = 1700000000000


def _java_admin_problems(events: list[dict[str, Any]], bootstrap: str) -> list[str]:
    """The Java-only steps and fields of the admin scenario (beyond SCENARIOS.md) that differ
    from what Apache Kafka 4.4 answers (checked against it with this very driver)."""
    checked = AdminSteps(events)
    steps, problems, want = checked.steps, checked.problems, checked.want

    host, _, port = bootstrap.rpartition(":")
    want("createPartitions", "leaders", [1, 1, 1, 1])
    want(
        "listOffsets",
        "partition0",
        {
            "for_timestamp": {"offset": 7, "timestamp": START_TS + 7000},
            "earliest": {"offset": 5, "timestamp": -1},
            "latest": {"offset": 10, "timestamp": -1},
            "max_timestamp": {"offset": 9, "timestamp": START_TS + 9000},
        },
    )
    # APPEND to a key the topic does not set appends to its default (Kafka: "delete,compact").
    appended = {"value": "delete,compact", "source": "DYNAMIC_TOPIC_CONFIG"}
    entries = steps.get("alterConfigs", {}).get("configs", {}).get("_entries")
    want("appendConfig", "configs", {"_entries": entries, "cleanup.policy": appended})
    want("describeCluster", "nodes", [{"id": 1, "host": host, "port": int(port)}])
    want("describeCluster", "controller", 1)
    if not steps.get("describeCluster", {}).get("cluster_id"):
        problems.append("describeCluster: no cluster id")
    want("describeLogDirs", "brokers", [1])
    want("describeLogDirs", "log_dirs", 1)
    want("describeLogDirs", "sizes", {"0": 750, "1": 0, "2": 0, "3": 0})
    return problems


@pytest.mark.compat_matrix("Java kafka-clients", "admin")
def test_java_admin(java_events: dict[str, list[dict[str, Any]]], broker_bootstrap: str) -> None:
    events = java_events["admin"]
    check_admin(events, broker_bootstrap)
    problems = _java_admin_problems(events, broker_bootstrap)
    assert not problems, f"AdminClient against {broker_bootstrap}:\n" + "\n".join(problems)


# What the Java client reports against Apache Kafka 4.4 (SCENARIOS.md ``errors``).
EXPECTED_ERRORS: dict[str, int | None] = {
    # The producer waits max.block.ms (5 s) for metadata naming the topic, then fails with its
    # own TimeoutException: a local timeout, no Kafka error code.
    "unknown-topic": None,
    # CreateTopics answers INVALID_CONFIG (InvalidConfigurationException).
    "invalid-config": 40,
}


@pytest.mark.compat_matrix("Java kafka-clients", "error/{step}")
@pytest.mark.parametrize("step", list(EXPECTED_ERRORS))
def test_java_errors(java_error_events: list[dict[str, Any]], step: str) -> None:
    check_errors(java_error_events, {step: EXPECTED_ERRORS[step]})

"""Java kafka-clients 4.4 against millpond and Apache Kafka 4.4 (SCENARIOS.md): the producer in
its default idempotent configuration, the consumer by assign + seek, and AdminClient step by step.

compat_tests/java/ClientDriver.java is compiled with javac against Kafka 4.4's jars once per
source (cached under ~/.cache/millpond/java-driver/<hash>); both scenarios run in one JVM."""

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

from compat_tests.harness import check_produce_consume, create_topic, run_driver, stored_batches
from compat_tests.kafka.reference import (
    TOOL_JVM,
    TOOLS_LOG4J,
    KafkaNotInstalledError,
    kafka_classpath,
)

pytestmark = pytest.mark.compat

SOURCE = Path(__file__).resolve().parent / "java" / "ClientDriver.java"
PRODUCE_TOPIC = "java-produce-consume"
ADMIN_TOPIC = "java-admin"


def _cache_root() -> Path:
    return Path(
        os.environ.get("MILLPOND_JAVA_DRIVER_CACHE", Path.home() / ".cache/millpond/java-driver")
    )


def compiled_driver(classpath: str) -> Path:
    """The directory holding ClientDriver's classes, compiled from the current source against
    ``classpath`` (both hashed into its name), compiling it first when it is not cached."""
    digest = hashlib.sha256(SOURCE.read_bytes() + classpath.encode()).hexdigest()[:16]
    target = _cache_root() / digest
    if (target / "ClientDriver.class").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{digest}.", dir=target.parent))
    try:
        result = subprocess.run(
            ["javac", "-proc:none", "-d", str(work), "-cp", classpath, str(SOURCE)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if result.returncode != 0:
            pytest.fail(f"javac {SOURCE} failed:\n{result.stdout}{result.stderr}", pytrace=False)
        try:
            work.rename(target)  # atomic: another session may have compiled it meanwhile
        except OSError:
            if not (target / "ClientDriver.class").is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


@pytest.fixture(scope="module")
def java_events(broker_bootstrap: str) -> Iterator[dict[str, list[dict[str, Any]]]]:
    """Both scenarios' events from one JVM, by scenario."""
    missing = ""
    try:
        classpath = kafka_classpath()
    except KafkaNotInstalledError as exc:
        missing = str(exc)
    if missing:
        pytest.fail(missing, pytrace=False)
    classes = compiled_driver(classpath)
    create_topic(broker_bootstrap, PRODUCE_TOPIC, 3)
    command = [
        "java",
        *TOOL_JVM,
        f"-Dlog4j2.configurationFile={TOOLS_LOG4J}",
        "-cp",
        f"{classes}{os.pathsep}{classpath}",
        "ClientDriver",
        "produce-consume",
        "--bootstrap",
        broker_bootstrap,
        "--topic",
        PRODUCE_TOPIC,
        "--partitions",
        "3",
        "--",
        "admin",
        "--bootstrap",
        broker_bootstrap,
        "--topic",
        ADMIN_TOPIC,
    ]
    by_scenario: dict[str, list[dict[str, Any]]] = {"produce-consume": [], "admin": []}
    for event in run_driver(command, timeout=180):
        by_scenario.setdefault(str(event.get("scenario")), []).append(event)
    yield by_scenario


@pytest.mark.compat_matrix("Java kafka-clients", "produce-consume/none")
def test_java_produce_consume(
    java_events: dict[str, list[dict[str, Any]]], broker_bootstrap: str
) -> None:
    check_produce_consume(java_events["produce-consume"])
    batches = stored_batches(broker_bootstrap, PRODUCE_TOPIC, 3)
    producers = sorted({(b["producer_id"], b["producer_epoch"]) for b in batches})
    assert len(producers) == 1 and producers[0][0] >= 0, (
        f"the default (idempotent) producer wrote batches with producer ids/epochs {producers}"
    )


START_TS = 1700000000000


def _admin_problems(events: list[dict[str, Any]], bootstrap: str) -> list[str]:
    """What the admin scenario got that Apache Kafka 4.4 would not answer (checked against
    it with this very driver), one line per difference; every step is checked."""
    steps = {e["step"]: e for e in events if e.get("event") == "admin"}
    problems: list[str] = []

    def want(step: str, field: str, expected: Any) -> None:
        event = steps.get(step)
        if event is None:
            problems.append(f"{step}: no output")
        elif "error" in event:
            problems.append(f"{step}: {event['error']}")
        elif event.get(field) != expected:
            problems.append(f"{step}.{field}: got {event.get(field)!r}, want {expected!r}")

    def dynamic(value: str) -> dict[str, str]:
        return {"value": value, "source": "DYNAMIC_TOPIC_CONFIG"}

    host, _, port = bootstrap.rpartition(":")
    want("createTopics", "listed", True)
    configs = steps.get("describeConfigs", {}).get("configs", {})
    want(
        "describeConfigs",
        "configs",
        {
            **configs,
            "retention.ms": dynamic("86400000"),
            "max.message.bytes": dynamic("500000"),
            "cleanup.policy": {"value": "delete", "source": "DEFAULT_CONFIG"},
            "segment.bytes": {"value": "1073741824", "source": "DEFAULT_CONFIG"},
        },
    )
    if configs.get("_entries", 0) < 30:
        problems.append(f"describeConfigs: only {configs.get('_entries')} entries")
    want("produce", "offsets", list(range(10)))
    want(
        "listOffsets",
        "partition0",
        {
            "earliest": {"offset": 0, "timestamp": -1},
            "latest": {"offset": 10, "timestamp": -1},
            "max_timestamp": {"offset": 9, "timestamp": START_TS + 9000},
            "for_timestamp": {"offset": 4, "timestamp": START_TS + 4000},
        },
    )
    want("deleteRecords", "low_watermark", 5)
    want("deleteRecords", "earliest_after", 5)
    # APPEND to a key the topic does not set appends to its default (Kafka: "delete,compact").
    want(
        "incrementalAlterConfigs",
        "configs",
        {
            "_entries": configs.get("_entries"),
            "retention.ms": dynamic("3600000"),
            "max.message.bytes": {"value": "1048588", "source": "DEFAULT_CONFIG"},
            "cleanup.policy": dynamic("delete,compact"),
        },
    )
    want("createPartitions", "partitions", 4)
    want("createPartitions", "leaders", [1, 1, 1, 1])
    nodes = [{"id": 1, "host": host, "port": int(port)}]
    want("describeCluster", "nodes", nodes)
    want("describeCluster", "controller", 1)
    if not steps.get("describeCluster", {}).get("cluster_id"):
        problems.append("describeCluster: no cluster id")
    want("describeLogDirs", "brokers", [1])
    want("describeLogDirs", "log_dirs", 1)
    want("describeLogDirs", "sizes", {"0": 720, "1": 0, "2": 0, "3": 0})
    want("deleteTopics", "listed", False)
    return problems


@pytest.mark.compat_matrix("Java kafka-clients", "admin")
def test_java_admin(java_events: dict[str, list[dict[str, Any]]], broker_bootstrap: str) -> None:
    problems = _admin_problems(java_events["admin"], broker_bootstrap)
    assert not problems, f"AdminClient against {broker_bootstrap}:\n" + "\n".join(problems)

"""kafkajs against millpond and Apache Kafka 4.4: every scenario of SCENARIOS.md through
``compat_tests/node/driver_kafkajs.js``, produce-consume once per codec (gzip built into
kafkajs; snappy, lz4 and zstd through its CompressionCodecs plugins).

One driver process per broker runs every scenario but ``errors`` (which needs the brokers that
never auto-create topics); the tests split its events by their ``scenario`` tag.

The Node.js packages (kafkajs and its codecs, confluent-kafka-javascript) are pinned by
``compat_tests/node/package-lock.json`` and installed into ``compat_tests/node/node_modules``
(git-ignored) by ``compat_tests/node/install.sh``: ``.ci/run`` runs it first, and the tests run
it themselves when node_modules was not installed from the current lockfile. A missing Node.js
fails the tests, it never skips them."""

from __future__ import annotations

import shutil
import subprocess
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from compat_tests.harness import (
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
from compat_tests.matrix import CODECS

pytestmark = pytest.mark.compat

NODE_DIR = Path(__file__).parent / "node"
INSTALL = NODE_DIR / "install.sh"
STAMP = NODE_DIR / "node_modules" / ".millpond-installed-lock.json"
INSTALL_TIMEOUT = 600.0  # compiling librdkafka takes about 2.5 minutes on 2 cores
DRIVER_TIMEOUT = 240.0
PARTITIONS = 3
LARGE_CONFIGS = {"max.message.bytes": "1048588"}
Events = dict[str, list[dict[str, Any]]]


def installed_node() -> str:
    """The ``node`` executable, with node_modules installed from the current lockfile."""
    node = shutil.which("node")
    if node is None or shutil.which("npm") is None:
        pytest.fail(
            "Node.js (`node` and `npm`) is not on PATH: the Node.js compat tests need Node.js "
            "18+ with npm (and the npm registry, or a warm npm cache)",
            pytrace=False,
        )
    lock = (NODE_DIR / "package-lock.json").read_bytes()
    if not STAMP.is_file() or STAMP.read_bytes() != lock:
        install = subprocess.run(
            ["bash", str(INSTALL)],
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
            check=False,
        )
        if install.returncode != 0:
            pytest.fail(
                f"{INSTALL} failed ({install.returncode}):\n{install.stdout}{install.stderr}",
                pytrace=False,
            )
    return node


def run_scenarios(node: str, driver: Path, runs: list[list[str]]) -> Events:
    """Run every run (a scenario with its flags) in one driver process; events by the
    ``scenario`` tag the driver gives them (``produce-consume/<codec>`` or the scenario)."""
    command = [node, str(driver)]
    for number, run in enumerate(runs):
        command += [*(["--"] if number else []), *run]
    by_scenario: Events = defaultdict(list)
    for event in run_driver(command, timeout=DRIVER_TIMEOUT):
        by_scenario[str(event.get("scenario"))].append(event)
    return by_scenario


def scenario_runs(bootstrap: str, prefix: str) -> list[list[str]]:
    """The runs of every scenario but ``errors``, creating their topics first (named
    ``{prefix}-...``; ``admin`` creates its own)."""
    runs = []
    for codec in CODECS:
        topic = f"{prefix}-{codec}"
        create_topic(bootstrap, topic, PARTITIONS)
        runs.append(
            ["produce-consume", "--bootstrap", bootstrap, "--topic", topic]
            + ["--partitions", str(PARTITIONS), "--compression", codec]
        )
    create_topic(bootstrap, f"{prefix}-acks", 4)
    create_topic(bootstrap, f"{prefix}-large", 1, LARGE_CONFIGS)
    for scenario in ("acks", "large", "admin"):
        runs.append([scenario, "--bootstrap", bootstrap, "--topic", f"{prefix}-{scenario}"])
    return runs


def check_codec(bootstrap: str, topic: str, codec: str) -> None:
    """Every stored batch of the produce-consume topic uses the codec the driver was given."""
    codecs = sorted({b["codec"] for b in stored_batches(bootstrap, topic, PARTITIONS)})
    assert codecs == [codec], f"{topic}: stored batches use {codecs}, want [{codec!r}]"


DRIVER = NODE_DIR / "driver_kafkajs.js"
PREFIX = "node-kafkajs"
# What kafkajs 2.2.4 reports against Apache Kafka 4.4 (auto.create.topics.enable=false):
# - unknown-topic: Metadata answers UNKNOWN_TOPIC_OR_PARTITION (3) until the retries run out;
#   the retries-exceeded error wraps that protocol error.
# - invalid-config: CreateTopics answers INVALID_CONFIG (40).
EXPECTED_ERRORS: dict[str, int | None] = {"unknown-topic": 3, "invalid-config": 40}


@pytest.fixture(scope="module")
def node() -> str:
    return installed_node()


@pytest.fixture(scope="module")
def kafkajs_events(node: str, broker_bootstrap: str) -> Events:
    """Every scenario but ``errors``, from one driver process per broker."""
    return run_scenarios(node, DRIVER, scenario_runs(broker_bootstrap, PREFIX))


@pytest.mark.compat_matrix("kafkajs", "produce-consume/{compression}")
@pytest.mark.parametrize("compression", CODECS)
def test_produce_consume(kafkajs_events: Events, broker_bootstrap: str, compression: str) -> None:
    check_produce_consume(kafkajs_events[f"produce-consume/{compression}"])
    check_codec(broker_bootstrap, f"{PREFIX}-{compression}", compression)


@pytest.mark.compat_matrix("kafkajs", "acks")
def test_acks(kafkajs_events: Events) -> None:
    check_acks(kafkajs_events["acks"])


@pytest.mark.compat_matrix("kafkajs", "idempotent")
def test_idempotent(kafkajs_events: Events, broker_bootstrap: str) -> None:
    check_idempotent_batches(stored_batches(broker_bootstrap, f"{PREFIX}-acks", 4))


@pytest.mark.compat_matrix("kafkajs", "large")
def test_large(kafkajs_events: Events) -> None:
    check_large(kafkajs_events["large"])


@pytest.mark.compat_matrix("kafkajs", "admin")
def test_admin(kafkajs_events: Events, broker_bootstrap: str) -> None:
    check_admin(kafkajs_events["admin"], broker_bootstrap)


@pytest.fixture(scope="module")
def kafkajs_errors(node: str, strict_broker_bootstrap: str) -> list[dict[str, Any]]:
    topic = f"{PREFIX}-errors"
    runs = [["errors", "--bootstrap", strict_broker_bootstrap, "--topic", topic]]
    return run_scenarios(node, DRIVER, runs)["errors"]


@pytest.mark.compat_matrix("kafkajs", "error/{step}")
@pytest.mark.parametrize("step", EXPECTED_ERRORS)
def test_errors(kafkajs_errors: list[dict[str, Any]], step: str) -> None:
    check_errors(kafkajs_errors, {step: EXPECTED_ERRORS[step]})

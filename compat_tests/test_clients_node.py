"""kafkajs against millpond and Apache Kafka 4.4: SCENARIOS.md's ``produce-consume`` through
``compat_tests/node/driver_kafkajs.js`` (keyed records with headers to a 3-partition topic, read
back by partition from the beginning and from a timestamp), uncompressed and with gzip (the
only codec built into kafkajs).

kafkajs 2.2.4 is pinned by ``compat_tests/node/package-lock.json`` and installed into
``compat_tests/node/node_modules`` (git-ignored) by ``npm ci``: ``.ci/run`` does it first, and
the tests do it themselves when the installed version is not the pinned one. A missing
Node.js fails the tests, it never skips them."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from compat_tests.harness import check_produce_consume, create_topic, run_driver

pytestmark = pytest.mark.compat

NODE_DIR = Path(__file__).parent / "node"
DRIVER = NODE_DIR / "driver_kafkajs.js"
INSTALL_TIMEOUT = 300.0
PARTITIONS = 3


def _pinned_kafkajs() -> str:
    lock = json.loads((NODE_DIR / "package-lock.json").read_text())
    version: str = lock["packages"]["node_modules/kafkajs"]["version"]
    return version


def _installed_kafkajs() -> str | None:
    manifest = NODE_DIR / "node_modules" / "kafkajs" / "package.json"
    if not manifest.is_file():
        return None
    version = json.loads(manifest.read_text()).get("version")
    return version if isinstance(version, str) else None


@pytest.fixture(scope="module")
def node() -> str:
    """The ``node`` executable, with the pinned kafkajs installed beside the driver."""
    node = shutil.which("node")
    npm = shutil.which("npm")
    if node is None or npm is None:
        pytest.fail(
            "Node.js (`node` and `npm`) is not on PATH: the kafkajs compat tests need Node.js "
            "18+ with npm (and the npm registry, or a warm npm cache)",
            pytrace=False,
        )
    if _installed_kafkajs() != _pinned_kafkajs():
        install = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--prefer-offline"],
            cwd=NODE_DIR,
            capture_output=True,
            text=True,
            timeout=INSTALL_TIMEOUT,
            check=False,
        )
        if install.returncode != 0 or _installed_kafkajs() != _pinned_kafkajs():
            pytest.fail(
                f"npm ci in {NODE_DIR} failed ({install.returncode}):\n"
                f"{install.stdout}{install.stderr}",
                pytrace=False,
            )
    return node


@pytest.mark.compat_matrix("kafkajs", "produce-consume/{compression}")
@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_produce_consume(node: str, broker_bootstrap: str, compression: str) -> None:
    topic = f"node-kafkajs-{compression}"
    create_topic(broker_bootstrap, topic, PARTITIONS)
    events = run_driver(
        [
            node,
            str(DRIVER),
            "produce-consume",
            "--bootstrap",
            broker_bootstrap,
            "--topic",
            topic,
            "--partitions",
            str(PARTITIONS),
            "--compression",
            compression,
        ]
    )
    check_produce_consume(events)

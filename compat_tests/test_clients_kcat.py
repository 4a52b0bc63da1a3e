"""kcat (Debian's, librdkafka underneath) against millpond and Apache Kafka 4.4 (SCENARIOS.md
``produce-consume``), driven by compat_tests/cli/driver_kcat.py. kcat's producer cannot set a
record's timestamp, so the records keep the wall-clock time kcat gave them (see the driver).

Uncompressed only: kcat's headers apply to a whole run, so each record has a run (and a batch)
of its own, and librdkafka sends a batch uncompressed when compressing does not make it smaller,
which for one small record it never does. The confluent-kafka tests cover librdkafka's codecs."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from compat_tests.harness import check_produce_consume, create_topic, run_driver

pytestmark = pytest.mark.compat

DRIVER = Path(__file__).resolve().parent / "cli" / "driver_kcat.py"


@pytest.mark.compat_matrix("kcat", "produce-consume/none")
def test_kcat(broker_bootstrap: str) -> None:
    if shutil.which("kcat") is None:
        pytest.fail("kcat not found on PATH: apt-get install -y kcat (.ci/run does)", pytrace=False)
    topic = "cli-kcat"
    create_topic(broker_bootstrap, topic, 3)
    events = run_driver(
        [
            sys.executable,
            str(DRIVER),
            "produce-consume",
            "--bootstrap",
            broker_bootstrap,
            "--topic",
            topic,
            "--partitions",
            "3",
        ]
    )
    thresholds = [e for e in events if e.get("event") == "threshold"]
    assert len(thresholds) == 1, f"the kcat driver printed no single replay threshold: {thresholds}"
    check_produce_consume(events, exact_timestamps=False)

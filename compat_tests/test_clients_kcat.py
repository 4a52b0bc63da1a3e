"""kcat (Debian's, librdkafka underneath) against millpond and Apache Kafka 4.4, driven by
compat_tests/cli/driver_kcat.py: SCENARIOS.md's produce-consume, acks, large and the
unknown-topic step of errors (kcat has no admin API). kcat's producer cannot set a record's
timestamp, so the records keep the wall-clock time kcat gave them (see the driver).

Uncompressed only: kcat's headers apply to a whole run, so each record has a run (and a batch)
of its own, and librdkafka sends a batch uncompressed when compressing does not make it smaller,
which for one small record it never does. The confluent-kafka tests cover librdkafka's codecs."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from compat_tests.harness import (
    check_acks,
    check_errors,
    check_idempotent_batches,
    check_large,
    check_produce_consume,
    stored_batches,
)
from compat_tests.python import runs
from compat_tests.python.runs import Runs

pytestmark = pytest.mark.compat

DRIVER = Path(__file__).resolve().parent / "cli" / "driver_kcat.py"
PREFIX = "cli-kcat"
# Against Apache Kafka 4.4, librdkafka keeps a record for a missing topic queued until
# message.timeout.ms (5 s) and kcat prints its local "Local: Message timed out": no Kafka code.
EXPECTED_ERRORS: dict[str, int | None] = {"unknown-topic": None}


def _driver() -> list[str]:
    if shutil.which("kcat") is None:
        pytest.fail("kcat not found on PATH: apt-get install -y kcat (.ci/run does)", pytrace=False)
    return runs.python_driver(str(DRIVER))


@pytest.fixture(scope="module")
def kcat(broker_bootstrap: str) -> Runs:
    scenarios = [runs.produce_consume(PREFIX, "none"), runs.acks(PREFIX), runs.large(PREFIX)]
    return Runs.start(_driver(), broker_bootstrap, scenarios)


@pytest.mark.compat_matrix("kcat", "produce-consume/none")
def test_kcat_produce_consume(kcat: Runs) -> None:
    events = kcat.of("produce-consume/none")
    thresholds = [e for e in events if e.get("event") == "threshold"]
    assert len(thresholds) == 1, f"the kcat driver printed no single replay threshold: {thresholds}"
    check_produce_consume(events, exact_timestamps=False)


@pytest.mark.compat_matrix("kcat", "acks")
def test_kcat_acks(kcat: Runs) -> None:
    check_acks(kcat.of("acks"))


@pytest.mark.compat_matrix("kcat", "idempotent")
def test_kcat_idempotent(kcat: Runs) -> None:
    kcat.of("acks")
    check_idempotent_batches(
        stored_batches(kcat.bootstrap, kcat.topic("acks"), runs.ACKS_PARTITIONS)
    )


@pytest.mark.compat_matrix("kcat", "large")
def test_kcat_large(kcat: Runs) -> None:
    check_large(kcat.of("large"))


@pytest.mark.compat_matrix("kcat", "error/unknown-topic")
def test_kcat_unknown_topic(strict_broker_bootstrap: str) -> None:
    events: list[dict[str, Any]] = Runs.start(
        _driver(), strict_broker_bootstrap, [runs.errors(PREFIX)]
    ).of("errors")
    check_errors(events, EXPECTED_ERRORS)

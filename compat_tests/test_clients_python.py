"""The Python clients against millpond and the reference Apache Kafka 4.4 (SCENARIOS.md
``produce-consume``): kafka-python (idempotent by default), confluent-kafka (librdkafka,
idempotent) with every codec, aiokafka."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from compat_tests.harness import check_produce_consume, create_topic, run_driver, stored_batches

pytestmark = pytest.mark.compat

DRIVERS = Path(__file__).resolve().parent / "python"
PARTITIONS = 3


def _produce_consume(
    bootstrap: str, driver: str, topic: str, compression: str = "none", *, idempotent: bool
) -> None:
    """Run the driver, check what it read, then check the batches stored: compressed with
    ``compression`` and, for an idempotent producer, carrying a producer id and epoch."""
    create_topic(bootstrap, topic, PARTITIONS)
    events = run_driver(
        [
            sys.executable,
            str(DRIVERS / driver),
            "produce-consume",
            "--bootstrap",
            bootstrap,
            "--topic",
            topic,
            "--partitions",
            str(PARTITIONS),
            "--compression",
            compression,
        ]
    )
    check_produce_consume(events)
    batches = stored_batches(bootstrap, topic, PARTITIONS)
    codecs = sorted({b["codec"] for b in batches})
    assert codecs == [compression], (
        f"the client asked for {compression}, the stored batches use {codecs}: {batches}"
    )
    producers = sorted({(b["producer_id"], b["producer_epoch"]) for b in batches})
    if idempotent:
        assert len(producers) == 1 and producers[0][0] >= 0, (
            f"an idempotent producer wrote batches with producer ids/epochs {producers}"
        )
    else:
        assert producers == [(-1, -1)], f"batches of a non-idempotent producer: {producers}"


@pytest.mark.compat_matrix("kafka-python", "produce-consume/none")
def test_kafka_python(broker_bootstrap: str) -> None:
    _produce_consume(broker_bootstrap, "driver_kafka_python.py", "py-kafka-python", idempotent=True)


@pytest.mark.compat_matrix("confluent-kafka", "produce-consume/{codec}")
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_confluent_kafka(broker_bootstrap: str, codec: str) -> None:
    _produce_consume(
        broker_bootstrap, "driver_confluent.py", f"py-confluent-{codec}", codec, idempotent=True
    )


@pytest.mark.compat_matrix("aiokafka", "produce-consume/none")
def test_aiokafka(broker_bootstrap: str) -> None:
    _produce_consume(broker_bootstrap, "driver_aiokafka.py", "py-aiokafka", idempotent=False)

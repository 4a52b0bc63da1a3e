"""The Python clients against millpond and the reference Apache Kafka 4.4, every scenario of
SCENARIOS.md: kafka-python (idempotent by default), confluent-kafka (librdkafka, its idempotent
producer) and aiokafka (not idempotent by default), each with every codec.

Per client and broker one driver process runs produce-consume (5 codecs), acks, large and admin
(compat_tests/python/runs.py), and one more runs errors against the broker that never creates
topics on demand."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from compat_tests.harness import (
    check_acks,
    check_admin,
    check_errors,
    check_idempotent_batches,
    check_large,
    check_produce_consume,
    stored_batches,
)
from compat_tests.matrix import CODECS
from compat_tests.python import runs
from compat_tests.python.runs import Runs

pytestmark = pytest.mark.compat

# What each client reports for SCENARIOS.md's errors against Apache Kafka 4.4 (asserted against
# both brokers), by step:
# - kafka-python: send() waits max_block_ms (5 s) for the missing topic's metadata and raises
#   KafkaTimeoutError, which carries no Kafka error code; create_topics raises
#   InvalidConfigurationError (40).
# - confluent-kafka: librdkafka keeps the record queued until message.timeout.ms (5 s) and
#   reports its local _MSG_TIMED_OUT (no Kafka code); the admin future fails with INVALID_CONFIG.
# - aiokafka: send() waits request_timeout_ms (5 s) for the topic's metadata, then raises
#   UnknownTopicOrPartitionError (3); CreateTopics answers INVALID_CONFIG (40).
EXPECTED_ERRORS: dict[str, dict[str, int | None]] = {
    "kafka-python": {"unknown-topic": None, "invalid-config": 40},
    "confluent-kafka": {"unknown-topic": None, "invalid-config": 40},
    "aiokafka": {"unknown-topic": 3, "invalid-config": 40},
}
# Whether the client's produce-consume producer is idempotent (its stored batches then carry a
# producer id), by default or as the driver configures it.
IDEMPOTENT = {"kafka-python": True, "confluent-kafka": True, "aiokafka": False}


# Client -> its driver in compat_tests/python/ and the prefix of its topics.
DRIVERS = {
    "kafka-python": ("driver_kafka_python.py", "py-kafka-python"),
    "confluent-kafka": ("driver_confluent.py", "py-confluent"),
    "aiokafka": ("driver_aiokafka.py", "py-aiokafka"),
}


def _start(client: str, bootstrap: str) -> Runs:
    driver, prefix = DRIVERS[client]
    scenarios = [
        *(runs.produce_consume(prefix, codec) for codec in CODECS),
        runs.acks(prefix),
        runs.large(prefix),
        runs.admin(prefix),
    ]
    return Runs.start(runs.python_driver(driver), bootstrap, scenarios)


@pytest.fixture(scope="module")
def kafka_python(broker_bootstrap: str) -> Runs:
    return _start("kafka-python", broker_bootstrap)


@pytest.fixture(scope="module")
def confluent(broker_bootstrap: str) -> Runs:
    return _start("confluent-kafka", broker_bootstrap)


@pytest.fixture(scope="module")
def aiokafka(broker_bootstrap: str) -> Runs:
    return _start("aiokafka", broker_bootstrap)


@pytest.fixture(scope="module")
def errors(strict_broker_bootstrap: str) -> dict[str, Runs]:
    """Every client's errors events, by client: the three drivers run at once, as they mostly
    wait out their 5 s delivery timeouts."""
    with ThreadPoolExecutor(len(DRIVERS)) as pool:
        started = {
            client: pool.submit(
                Runs.start,
                runs.python_driver(driver),
                strict_broker_bootstrap,
                [runs.errors(prefix)],
            )
            for client, (driver, prefix) in DRIVERS.items()
        }
    return {client: future.result() for client, future in started.items()}


# --- the checks, shared by the three clients -----------------------------------------------------


def _produce_consume(client: str, found: Runs, codec: str) -> None:
    """What the driver read, then the batches stored: compressed with ``codec`` and, for an
    idempotent producer, carrying a producer id and epoch."""
    label = f"produce-consume/{codec}"
    check_produce_consume(found.of(label))
    batches = stored_batches(found.bootstrap, found.topic(label), runs.PRODUCE_CONSUME_PARTITIONS)
    codecs = sorted({b["codec"] for b in batches})
    assert codecs == [codec], (
        f"the client asked for {codec}, the stored batches use {codecs}: {batches}"
    )
    producers = sorted({(b["producer_id"], b["producer_epoch"]) for b in batches})
    if IDEMPOTENT[client]:
        assert len(producers) == 1 and producers[0][0] >= 0, (
            f"an idempotent producer wrote batches with producer ids/epochs {producers}"
        )
    else:
        assert producers == [(-1, -1)], f"batches of a non-idempotent producer: {producers}"


def _idempotent(found: Runs) -> None:
    found.of("acks")  # the scenario ran (alone, if it had to)
    check_idempotent_batches(
        stored_batches(found.bootstrap, found.topic("acks"), runs.ACKS_PARTITIONS)
    )


# --- kafka-python --------------------------------------------------------------------------------


@pytest.mark.compat_matrix("kafka-python", "produce-consume/{codec}")
@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_produce_consume(kafka_python: Runs, codec: str) -> None:
    _produce_consume("kafka-python", kafka_python, codec)


@pytest.mark.compat_matrix("kafka-python", "acks")
def test_kafka_python_acks(kafka_python: Runs) -> None:
    check_acks(kafka_python.of("acks"))


@pytest.mark.compat_matrix("kafka-python", "idempotent")
def test_kafka_python_idempotent(kafka_python: Runs) -> None:
    _idempotent(kafka_python)


@pytest.mark.compat_matrix("kafka-python", "large")
def test_kafka_python_large(kafka_python: Runs) -> None:
    check_large(kafka_python.of("large"))


@pytest.mark.compat_matrix("kafka-python", "admin")
def test_kafka_python_admin(kafka_python: Runs) -> None:
    check_admin(kafka_python.of("admin"), kafka_python.bootstrap)


@pytest.mark.compat_matrix("kafka-python", "error/{step}")
@pytest.mark.parametrize("step", ["unknown-topic", "invalid-config"])
def test_kafka_python_errors(errors: dict[str, Runs], step: str) -> None:
    check_errors(errors["kafka-python"].of("errors"), {step: EXPECTED_ERRORS["kafka-python"][step]})


# --- confluent-kafka -----------------------------------------------------------------------------


@pytest.mark.compat_matrix("confluent-kafka", "produce-consume/{codec}")
@pytest.mark.parametrize("codec", CODECS)
def test_confluent_produce_consume(confluent: Runs, codec: str) -> None:
    _produce_consume("confluent-kafka", confluent, codec)


@pytest.mark.compat_matrix("confluent-kafka", "acks")
def test_confluent_acks(confluent: Runs) -> None:
    check_acks(confluent.of("acks"))


@pytest.mark.compat_matrix("confluent-kafka", "idempotent")
def test_confluent_idempotent(confluent: Runs) -> None:
    _idempotent(confluent)


@pytest.mark.compat_matrix("confluent-kafka", "large")
def test_confluent_large(confluent: Runs) -> None:
    check_large(confluent.of("large"))


@pytest.mark.compat_matrix("confluent-kafka", "admin")
def test_confluent_admin(confluent: Runs) -> None:
    check_admin(confluent.of("admin"), confluent.bootstrap)


@pytest.mark.compat_matrix("confluent-kafka", "error/{step}")
@pytest.mark.parametrize("step", ["unknown-topic", "invalid-config"])
def test_confluent_errors(errors: dict[str, Runs], step: str) -> None:
    check_errors(
        errors["confluent-kafka"].of("errors"), {step: EXPECTED_ERRORS["confluent-kafka"][step]}
    )


# --- aiokafka ------------------------------------------------------------------------------------


@pytest.mark.compat_matrix("aiokafka", "produce-consume/{codec}")
@pytest.mark.parametrize("codec", CODECS)
def test_aiokafka_produce_consume(aiokafka: Runs, codec: str) -> None:
    _produce_consume("aiokafka", aiokafka, codec)


@pytest.mark.compat_matrix("aiokafka", "acks")
def test_aiokafka_acks(aiokafka: Runs) -> None:
    check_acks(aiokafka.of("acks"))


@pytest.mark.compat_matrix("aiokafka", "idempotent")
def test_aiokafka_idempotent(aiokafka: Runs) -> None:
    _idempotent(aiokafka)


@pytest.mark.compat_matrix("aiokafka", "large")
def test_aiokafka_large(aiokafka: Runs) -> None:
    check_large(aiokafka.of("large"))


@pytest.mark.compat_matrix("aiokafka", "admin")
def test_aiokafka_admin(aiokafka: Runs) -> None:
    check_admin(aiokafka.of("admin"), aiokafka.bootstrap)


@pytest.mark.compat_matrix("aiokafka", "error/{step}")
@pytest.mark.parametrize("step", ["unknown-topic", "invalid-config"])
def test_aiokafka_errors(errors: dict[str, Runs], step: str) -> None:
    check_errors(errors["aiokafka"].of("errors"), {step: EXPECTED_ERRORS["aiokafka"][step]})

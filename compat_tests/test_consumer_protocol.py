"""A librdkafka consumer asking for the consumer group protocol (``group.protocol=consumer``,
KIP-848) from brokers that run only the classic one (the session brokers'
``group.coordinator.rebalance.protocols=classic``): it must fail with a clear error, soon.

librdkafka looks for ConsumerGroupHeartbeat (key 68) in ApiVersions; an API the broker does
not advertise reads as a coordinator that is not there yet, and it waits forever. Kafka 4.4
advertises the API and answers UNSUPPORTED_VERSION, which librdkafka raises as a fatal
error; millpond does the same."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException

pytestmark = pytest.mark.compat

#: Kafka 4.4 fails the consumer in about 0.1 s; a broker that makes it wait fails here.
DEADLINE_S = 15.0


def test_librdkafka_consumer_protocol_ends_in_a_clear_error(broker_bootstrap: str) -> None:
    name = f"consumer-protocol-{uuid.uuid4().hex[:8]}"
    consumer = Consumer(
        {
            "bootstrap.servers": broker_bootstrap,
            "group.id": name,
            "group.protocol": "consumer",
            "error_cb": lambda error: None,  # the fatal error also reaches poll()
        }
    )
    error: KafkaError | None = None
    try:
        consumer.subscribe([name])
        start = time.monotonic()
        while error is None and time.monotonic() - start < DEADLINE_S:
            try:
                message = consumer.poll(0.5)
            except KafkaException as exc:
                error = exc.args[0]
            else:
                if message is not None and message.error() is not None:
                    error = message.error()
        elapsed = time.monotonic() - start
    finally:
        consumer.close()
    assert error is not None, f"no error after {DEADLINE_S} s: the consumer waits"
    assert error.code() == KafkaError._FATAL
    assert "ConsumerGroupHeartbeat" in error.str() and "not supported" in error.str()
    assert elapsed < DEADLINE_S

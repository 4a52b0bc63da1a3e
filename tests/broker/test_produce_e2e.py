"""Real clients producing to the broker; what lands in the log is checked byte by byte."""

from __future__ import annotations

from kafka import KafkaProducer

from millpond.wire.records import iter_batches

from .harness import running_broker


def _records_in_log(
    broker: object, topic: str, partition: int
) -> list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]]:
    from millpond.broker.node import Broker

    assert isinstance(broker, Broker)
    image_topic = broker.image.topic(topic)
    assert image_topic is not None
    log = broker.replicas.log(image_topic, partition)
    assert log is not None
    data = log.read(0, 1 << 24).records.read()
    return [(r.key, r.value, r.headers) for b in iter_batches(data) for r in b.records()]


def test_kafka_python_produces_to_an_auto_created_topic() -> None:
    with running_broker() as broker:
        producer = KafkaProducer(
            bootstrap_servers=f"127.0.0.1:{broker.port}",
            enable_idempotence=False,
            acks="all",
            linger_ms=0,
        )
        try:
            for i in range(20):
                producer.send(
                    "orders",
                    key=b"k%d" % (i % 3),
                    value=b"v%d" % i,
                    headers=[("h", b"x")],
                    partition=0,
                ).get(timeout=30)
        finally:
            producer.close(timeout=10)
        records = _records_in_log(broker, "orders", 0)
        assert records == [(b"k%d" % (i % 3), b"v%d" % i, [("h", b"x")]) for i in range(20)]

"""A movement is (sku, quantity): positive for goods in, negative for goods out. Each is
one record keyed by its SKU, so one SKU's movements stay in order on one partition."""

from __future__ import annotations

import time
from collections.abc import Iterable

from confluent_kafka import Consumer, KafkaError, Producer

TOPIC = "stock-movements"


def publish_movements(bootstrap: str, movements: Iterable[tuple[str, int]]) -> int:
    """Publish every movement idempotently; returns how many the broker acknowledged."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    acknowledged = 0

    def delivered(error: KafkaError | None, _message: object) -> None:
        nonlocal acknowledged
        if error is None:
            acknowledged += 1

    for sku, quantity in movements:
        producer.produce(
            TOPIC, key=sku.encode(), value=str(quantity).encode(), on_delivery=delivered
        )
    producer.flush(30)
    return acknowledged


def stock_levels(
    bootstrap: str, group: str, expected: int, timeout_s: float = 30
) -> dict[str, int]:
    """Read ``expected`` movements as consumer group ``group`` and sum them per SKU."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([TOPIC])
    levels: dict[str, int] = {}
    seen = 0
    deadline = time.monotonic() + timeout_s
    try:
        while seen < expected and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None or message.error():
                continue
            sku = message.key().decode()
            levels[sku] = levels.get(sku, 0) + int(message.value())
            seen += 1
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return levels

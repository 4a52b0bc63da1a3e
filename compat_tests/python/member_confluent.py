"""confluent-kafka (librdkafka) as one member of SCENARIOS.md's ``group`` scenario:
``python member_confluent.py group-member --bootstrap ... --topic T --group G``.

Eager assignors (range, roundrobin) replace the assignment in each callback; the
cooperative one (cooperative-sticky) adds and removes partitions incrementally, so the
member keeps the whole set itself and prints it after every callback."""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make compat_tests importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from confluent_kafka import Consumer, KafkaException  # noqa: E402
from confluent_kafka import TopicPartition as TP  # noqa: E402

from compat_tests.python.contract import emit  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=["group-member"])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--assignor")
    parser.add_argument("--instance-id")
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    args = parser.parse_args()
    config: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": args.session_timeout_ms,
        "heartbeat.interval.ms": max(args.session_timeout_ms // 4, 100),
    }
    if args.assignor:
        config["partition.assignment.strategy"] = args.assignor
    if args.instance_id:
        config["group.instance.id"] = args.instance_id
    cooperative = args.assignor == "cooperative-sticky"
    consumer = Consumer(config)
    owned: set[int] = set()

    def report() -> None:
        emit({"event": "assigned", "partitions": sorted(owned)})

    def on_assign(_: Any, partitions: list[Any]) -> None:
        if not cooperative:
            owned.clear()
        owned.update(tp.partition for tp in partitions)
        report()

    def on_revoke(_: Any, partitions: list[Any]) -> None:
        if cooperative:
            owned.difference_update(tp.partition for tp in partitions)
        else:
            owned.clear()
        report()

    closing = threading.Event()

    def read_commands() -> None:
        for line in sys.stdin:
            if line.strip() == "close":
                closing.set()
                return
        closing.set()  # stdin closed: the harness is gone

    threading.Thread(target=read_commands, daemon=True).start()
    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    while not closing.is_set():
        messages = consumer.consume(num_messages=100, timeout=0.2)
        processed: dict[int, int] = {}
        for msg in messages:
            if msg.error() is not None:
                raise KafkaException(msg.error())
            value = msg.value()
            emit(
                {
                    "event": "record",
                    "partition": msg.partition(),
                    "offset": msg.offset(),
                    "value": value.decode() if value is not None else None,
                }
            )
            processed[msg.partition()] = msg.offset() + 1
        if processed:
            offsets = [TP(args.topic, p, o) for p, o in sorted(processed.items())]
            for tp in consumer.commit(offsets=offsets, asynchronous=False) or []:
                if tp.error is not None:
                    raise KafkaException(tp.error)
                emit({"event": "committed", "partition": tp.partition, "offset": tp.offset})
    consumer.close()
    emit({"event": "closed"})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

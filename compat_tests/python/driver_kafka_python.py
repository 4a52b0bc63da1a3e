"""kafka-python driver of ../SCENARIOS.md: ``python driver_kafka_python.py produce-consume ...``.

The producer runs in kafka-python's default configuration (idempotent since 3.0, acks=all);
the consumer reads by assignment, without a group. ``MILLPOND_DRIVER_DEBUG=1`` logs the
client's protocol traffic to stderr."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make compat_tests importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402

from compat_tests.python.contract import (  # noqa: E402
    Args,
    Deadline,
    emit_produced,
    emit_record,
    parse_args,
    record,
)


def produce(args: Args) -> None:
    producer = KafkaProducer(
        bootstrap_servers=args.bootstrap,
        compression_type=None if args.compression == "none" else args.compression,
        linger_ms=5,
    )
    try:
        futures = []
        for i in range(args.count):
            r = record(i, args.start_ts)
            futures.append(
                producer.send(
                    args.topic,
                    key=r.key,
                    value=r.value,
                    headers=r.headers,
                    timestamp_ms=r.timestamp,
                )
            )
        producer.flush(timeout=60)
        for i, future in enumerate(futures):
            metadata = future.get(timeout=60)
            emit_produced(i, metadata.partition, metadata.offset)
    finally:
        producer.close(timeout=10)


def consume(args: Args) -> None:
    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap, group_id=None, enable_auto_commit=False
    )
    try:
        partitions = [TopicPartition(args.topic, p) for p in range(args.partitions)]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        read = 0
        deadline = Deadline()
        while read < args.count:
            deadline.check(f"reading {args.count} records from the beginning (read {read})")
            for tp, messages in consumer.poll(timeout_ms=500).items():
                for m in messages:
                    emit_record(
                        "beginning", tp.partition, m.offset, m.key, m.value, m.headers, m.timestamp
                    )
                    read += 1

        found = consumer.offsets_for_times(dict.fromkeys(partitions, args.threshold))
        ends = consumer.end_offsets(partitions)
        remaining = {}
        for tp in partitions:
            hit = found.get(tp)
            if hit is not None:
                consumer.seek(tp, hit.offset)
                remaining[tp] = ends[tp]
        deadline = Deadline()
        while any(consumer.position(tp) < end for tp, end in remaining.items()):
            deadline.check(f"replaying from {args.threshold} to the ends {ends}")
            for tp, messages in consumer.poll(timeout_ms=500).items():
                for m in messages:
                    if tp in remaining and m.offset < remaining[tp]:
                        emit_record(
                            "from_timestamp",
                            tp.partition,
                            m.offset,
                            m.key,
                            m.value,
                            m.headers,
                            m.timestamp,
                        )
    finally:
        consumer.close(autocommit=False)


def main() -> int:
    args = parse_args()
    if os.environ.get("MILLPOND_DRIVER_DEBUG"):
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    produce(args)
    consume(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

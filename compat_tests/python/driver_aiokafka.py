"""aiokafka driver of ../SCENARIOS.md: ``python driver_aiokafka.py produce-consume ...``.

The producer runs in aiokafka's default configuration (not idempotent, acks=1); the consumer
reads by assignment, without a group. ``MILLPOND_DRIVER_DEBUG=1`` logs the client's protocol
traffic to stderr."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make compat_tests importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # noqa: E402

from compat_tests.python.contract import (  # noqa: E402
    MAX_WAIT,
    Args,
    Deadline,
    emit_produced,
    emit_record,
    parse_args,
    record,
)


async def produce(args: Args) -> None:
    producer = AIOKafkaProducer(
        bootstrap_servers=args.bootstrap,
        compression_type=None if args.compression == "none" else args.compression,
        linger_ms=5,
    )
    await producer.start()
    try:
        futures = []
        for i in range(args.count):
            r = record(i, args.start_ts)
            futures.append(
                await producer.send(
                    args.topic,
                    key=r.key,
                    value=r.value,
                    headers=r.headers,
                    timestamp_ms=r.timestamp,
                )
            )
        done = await asyncio.wait_for(asyncio.gather(*futures), MAX_WAIT)
        for i, metadata in enumerate(done):
            emit_produced(i, metadata.partition, metadata.offset)
    finally:
        await producer.stop()


async def consume(args: Args) -> None:
    consumer = AIOKafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=None,
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
    )
    await consumer.start()
    try:
        partitions = [TopicPartition(args.topic, p) for p in range(args.partitions)]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        read = 0
        deadline = Deadline()
        while read < args.count:
            deadline.check(f"reading {args.count} records from the beginning (read {read})")
            batches = await consumer.getmany(timeout_ms=500)
            for tp, messages in batches.items():
                for m in messages:
                    emit_record(
                        "beginning", tp.partition, m.offset, m.key, m.value, m.headers, m.timestamp
                    )
                    read += 1

        found = await consumer.offsets_for_times(dict.fromkeys(partitions, args.threshold))
        ends = await consumer.end_offsets(partitions)
        remaining = {}
        for tp in partitions:
            hit = found.get(tp)
            if hit is not None:
                consumer.seek(tp, hit.offset)
                remaining[tp] = ends[tp]
        deadline = Deadline()
        while any([await consumer.position(tp) < end for tp, end in remaining.items()]):
            deadline.check(f"replaying from {args.threshold} to the ends {ends}")
            batches = await consumer.getmany(timeout_ms=500)
            for tp, messages in batches.items():
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
        await consumer.stop()


async def run(args: Args) -> None:
    await produce(args)
    await consume(args)


def main() -> int:
    args = parse_args()
    if os.environ.get("MILLPOND_DRIVER_DEBUG"):
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

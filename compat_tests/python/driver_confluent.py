"""confluent-kafka (librdkafka) driver of ../SCENARIOS.md:
``python driver_confluent.py produce-consume ... --compression zstd``.

The producer is idempotent (``enable.idempotence=true``, which implies acks=all) and compresses
with ``--compression``; the consumer reads by assignment (its group id is required by the client,
and unused: nothing is committed).
``MILLPOND_DRIVER_DEBUG=1`` turns on librdkafka's ``debug=protocol,broker`` log on stderr."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make compat_tests importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer  # noqa: E402
from confluent_kafka import TopicPartition as TP  # noqa: E402

from compat_tests.python.contract import (  # noqa: E402
    Args,
    Deadline,
    emit_produced,
    emit_record,
    parse_args,
    record,
)


def _config(args: Args, **extra: Any) -> dict[str, Any]:
    config: dict[str, Any] = {"bootstrap.servers": args.bootstrap, **extra}
    if os.environ.get("MILLPOND_DRIVER_DEBUG"):
        config["debug"] = "protocol,broker"
    return config


def produce(args: Args) -> None:
    producer = Producer(
        _config(
            args,
            **{
                "enable.idempotence": True,
                "compression.type": args.compression,
                "linger.ms": 5,
            },
        )
    )
    reports: dict[int, tuple[int, int]] = {}
    errors: list[str] = []

    def on_delivery(i: int) -> Any:
        def report(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(f"record {i}: {err}")
            else:
                reports[i] = (msg.partition(), msg.offset())

        return report

    for i in range(args.count):
        r = record(i, args.start_ts)
        producer.produce(
            args.topic,
            key=r.key,
            value=r.value,
            headers=r.headers,
            timestamp=r.timestamp,
            on_delivery=on_delivery(i),
        )
    left = producer.flush(60)
    if errors or left:
        raise RuntimeError(f"delivery failed ({left} undelivered): {errors}")
    for i in range(args.count):
        emit_produced(i, *reports[i])


def _read(
    consumer: Any, phase: str, until: dict[int, int], what: str, stop_after: int | None = None
) -> None:
    """Poll, printing records, until every partition of ``until`` reached its offset (or
    ``stop_after`` records were read)."""
    positions = dict.fromkeys(until, -1)
    read = 0
    deadline = Deadline()
    while (
        read < stop_after
        if stop_after is not None
        else any(positions[p] + 1 < end for p, end in until.items())
    ):
        deadline.check(f"{what} (read {read})")
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error() is not None:
            raise KafkaException(msg.error())
        p, o = msg.partition(), msg.offset()
        if p not in until or (stop_after is None and o >= until[p]):
            continue
        positions[p] = o
        emit_record(phase, p, o, msg.key(), msg.value(), msg.headers(), msg.timestamp()[1])
        read += 1


def consume(args: Args) -> None:
    consumer = Consumer(
        _config(
            args,
            **{
                "group.id": f"unused-{args.topic}",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "enable.partition.eof": False,
                # A short long-poll: ListOffsets queue behind a pending Fetch on its connection.
                "fetch.wait.max.ms": 100,
            },
        )
    )
    try:
        partitions = range(args.partitions)
        consumer.assign([TP(args.topic, p, OFFSET_BEGINNING) for p in partitions])
        _read(
            consumer,
            "beginning",
            dict.fromkeys(partitions, 0),
            f"reading {args.count} records from the beginning",
            stop_after=args.count,
        )

        found = consumer.offsets_for_times(
            [TP(args.topic, p, args.threshold) for p in partitions], 30
        )
        starts = {}
        for tp in found:
            if tp.error is not None:
                raise KafkaException(tp.error)
            if tp.offset >= 0:
                starts[tp.partition] = tp.offset
        ends = {p: consumer.get_watermark_offsets(TP(args.topic, p), 30)[1] for p in starts}
        until = {p: end for p, end in ends.items() if end > starts[p]}
        consumer.assign([TP(args.topic, p, starts[p]) for p in until])
        _read(consumer, "from_timestamp", until, f"replaying from {args.threshold} to {ends}")
    finally:
        consumer.close()


def main() -> int:
    args = parse_args()
    produce(args)
    consume(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

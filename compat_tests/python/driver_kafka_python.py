"""kafka-python driver of ../SCENARIOS.md: ``python driver_kafka_python.py produce-consume ...``
(several scenarios joined with ``--`` run one after the other, see contract.run_all).

The ``produce-consume`` producer runs in kafka-python's default configuration (idempotent since
3.0, acks=all); consumers read by assignment, without a group; ``admin`` uses KafkaAdminClient,
whose every step is one of its methods. ``MILLPOND_DRIVER_DEBUG=1`` logs the client's protocol
traffic to stderr."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make compat_tests importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kafka import KafkaConsumer, KafkaProducer, TopicPartition  # noqa: E402
from kafka.admin import (  # noqa: E402
    ConfigResource,
    ConfigResourceType,
    KafkaAdminClient,
    OffsetSpec,
)

from compat_tests.python.contract import (  # noqa: E402
    ACKS_COUNT,
    ACKS_PRODUCERS,
    ADMIN_CONFIGS,
    ADMIN_DELETE_BEFORE,
    ADMIN_LOOKUP_TS,
    ADMIN_RECORDS,
    ADMIN_RETENTION,
    ADMIN_START_TS,
    LARGE_KEY,
    LARGE_LIMIT,
    LARGE_NEAR,
    LARGE_OVER,
    MAX_WAIT,
    Args,
    Deadline,
    admin_step,
    altered,
    emit,
    emit_acks_record,
    emit_error,
    emit_large_record,
    emit_produced,
    emit_record,
    large_value,
    parse_runs,
    record,
    run_all,
    shown_configs,
    wait_for,
)


def _code(exc: Exception) -> int | None:
    """Kafka's error number of a kafka-python error (its broker errors carry ``errno``)."""
    errno = getattr(exc, "errno", None)
    return errno if isinstance(errno, int) else None


def _consumer(args: Args, **extra: Any) -> Any:
    return KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=None,
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
        **extra,
    )


# --- produce-consume ---------------------------------------------------------------------------


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
        producer.flush(timeout=MAX_WAIT)
        for i, future in enumerate(futures):
            metadata = future.get(timeout=MAX_WAIT)
            emit_produced(i, metadata.partition, metadata.offset)
    finally:
        producer.close(timeout=10)


def _replay(consumer: Any, phase: str, starts: dict[Any, int], ends: dict[Any, int]) -> None:
    """Read every partition of ``starts`` from its offset there to its end in ``ends``."""
    wanted = {tp: end for tp, end in ends.items() if tp in starts and starts[tp] < end}
    consumer.assign(list(wanted))
    for tp in wanted:
        consumer.seek(tp, starts[tp])
    deadline = Deadline()
    while any(consumer.position(tp) < end for tp, end in wanted.items()):
        deadline.check(f"{phase}: reading from {starts} to {ends}")
        for tp, messages in consumer.poll(timeout_ms=500).items():
            for m in messages:
                if m.offset < wanted.get(tp, -1):
                    emit_record(
                        phase, tp.partition, m.offset, m.key, m.value, m.headers, m.timestamp
                    )


def consume(args: Args) -> None:
    consumer = _consumer(args)
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

        ends = consumer.end_offsets(partitions)
        _replay(consumer, "from_offset", {tp: 1 for tp in partitions if ends[tp] > 1}, ends)
        found = consumer.offsets_for_times(dict.fromkeys(partitions, args.threshold))
        starts = {tp: hit.offset for tp, hit in found.items() if hit is not None}
        _replay(consumer, "from_timestamp", starts, ends)
    finally:
        consumer.close(autocommit=False)


def produce_consume(args: Args) -> None:
    produce(args)
    consume(args)


# --- acks --------------------------------------------------------------------------------------


def acks(args: Args) -> None:
    for spec in ACKS_PRODUCERS:
        producer = KafkaProducer(
            bootstrap_servers=args.bootstrap,
            acks=spec.acks,
            enable_idempotence=spec.idempotent,
            linger_ms=5,
        )
        try:
            futures = [
                producer.send(
                    args.topic, key=spec.key(i), value=spec.value(i), partition=spec.partition
                )
                for i in range(ACKS_COUNT)
            ]
            producer.flush(timeout=MAX_WAIT)
            for i, future in enumerate(futures):
                metadata = future.get(timeout=MAX_WAIT)
                emit(
                    {
                        "event": "produced",
                        "producer": spec.name,
                        "i": i,
                        "partition": metadata.partition,
                        "offset": metadata.offset,
                    }
                )
        finally:
            producer.close(timeout=10)
    consumer = _consumer(args)
    try:
        partitions = [TopicPartition(args.topic, spec.partition) for spec in ACKS_PRODUCERS]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        want = len(ACKS_PRODUCERS) * ACKS_COUNT
        read = 0
        deadline = Deadline()
        while read < want:
            deadline.check(f"reading {want} records (read {read})")
            for tp, messages in consumer.poll(timeout_ms=500).items():
                for m in messages:
                    emit_acks_record(tp.partition, m.offset, m.value)
                    read += 1
    finally:
        consumer.close(autocommit=False)


# --- large -------------------------------------------------------------------------------------


def large(args: Args) -> None:
    producer = KafkaProducer(bootstrap_servers=args.bootstrap, max_request_size=LARGE_LIMIT)
    try:
        near = producer.send(args.topic, key=LARGE_KEY, value=large_value(LARGE_NEAR), partition=0)
        metadata = near.get(timeout=MAX_WAIT)
        emit(
            {
                "event": "produced",
                "step": "near-limit",
                "partition": metadata.partition,
                "offset": metadata.offset,
            }
        )
        over = producer.send(args.topic, key=LARGE_KEY, value=large_value(LARGE_OVER), partition=0)
        try:
            over.get(timeout=MAX_WAIT)
        except Exception as exc:  # noqa: BLE001 - the refusal is what this step reports
            emit_error("over-limit", _code(exc), f"{type(exc).__name__}: {exc}")
        else:
            raise RuntimeError("over-limit: the broker accepted a record over max.message.bytes")
    finally:
        producer.close(timeout=10)
    consumer = _consumer(args, max_partition_fetch_bytes=LARGE_LIMIT, fetch_max_bytes=LARGE_LIMIT)
    try:
        tp = TopicPartition(args.topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        end = consumer.end_offsets([tp])[tp]
        deadline = Deadline()
        while consumer.position(tp) < end:
            deadline.check(f"reading partition 0 to its end {end}")
            for messages in consumer.poll(timeout_ms=500).values():
                for m in messages:
                    emit_large_record(m.offset, m.value)
    finally:
        consumer.close(autocommit=False)


# --- admin -------------------------------------------------------------------------------------


def admin(args: Args) -> None:
    client = KafkaAdminClient(bootstrap_servers=args.bootstrap)
    topic = args.topic
    tp = TopicPartition(topic, 0)

    def listed() -> bool:
        return topic in client.list_topics()

    def configs() -> dict[str, Any]:
        described = client.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all"
        )
        entries = described["topic"][topic]
        return shown_configs({k: (v["value"], v["config_source"]) for k, v in entries.items()})

    def create_topics() -> dict[str, Any]:
        client.create_topics(
            {topic: {"num_partitions": 3, "replication_factor": 1, "configs": ADMIN_CONFIGS}}
        )
        return {"listed": wait_for(listed)}

    def alter_configs() -> dict[str, Any]:
        client.alter_configs(
            [
                ConfigResource(
                    ConfigResourceType.TOPIC,
                    topic,
                    configs={
                        "retention.ms": ("SET", ADMIN_RETENTION),
                        "max.message.bytes": ("DELETE", None),
                    },
                )
            ]
        )
        wait_for(lambda: altered(configs()))
        return {"configs": configs()}

    def partitions() -> int:
        return len(client.describe_topics([topic])[0]["partitions"])

    def create_partitions() -> dict[str, Any]:
        client.create_partitions({topic: 4})
        wait_for(lambda: partitions() == 4)
        return {"partitions": partitions()}

    def produce_records() -> dict[str, Any]:
        producer = KafkaProducer(bootstrap_servers=args.bootstrap)
        try:
            futures = [
                producer.send(
                    topic,
                    value=f"admin-{i}".encode(),
                    partition=0,
                    timestamp_ms=ADMIN_START_TS + i * 1000,
                )
                for i in range(ADMIN_RECORDS)
            ]
            producer.flush(timeout=MAX_WAIT)
            return {"offsets": [f.get(timeout=MAX_WAIT).offset for f in futures]}
        finally:
            producer.close(timeout=10)

    def delete_records() -> dict[str, Any]:
        deleted = client.delete_records({tp: ADMIN_DELETE_BEFORE})
        earliest = client.list_partition_offsets({tp: OffsetSpec.EARLIEST})[tp]
        return {"low_watermark": deleted[tp]["low_watermark"], "earliest_after": earliest.offset}

    def list_offsets() -> dict[str, Any]:
        found = client.list_partition_offsets({tp: ADMIN_LOOKUP_TS})[tp]
        return {"for_timestamp": found.offset}

    def delete_topics() -> dict[str, Any]:
        client.delete_topics([topic])
        wait_for(lambda: not listed())
        return {"listed": listed()}

    try:
        admin_step("createTopics", create_topics)
        admin_step("describeConfigs", lambda: {"configs": configs()})
        admin_step("alterConfigs", alter_configs)
        admin_step("createPartitions", create_partitions)
        admin_step("produce", produce_records)
        admin_step("deleteRecords", delete_records)
        admin_step("listOffsets", list_offsets)
        admin_step("deleteTopics", delete_topics)
    finally:
        client.close()


# --- errors ------------------------------------------------------------------------------------


def errors(args: Args) -> None:
    producer = KafkaProducer(
        bootstrap_servers=args.bootstrap,
        max_block_ms=5000,
        delivery_timeout_ms=5000,
        request_timeout_ms=4000,  # kafka-python wants it below the delivery timeout
    )
    try:
        producer.send(f"{args.topic}-missing", value=b"lost").get(timeout=MAX_WAIT)
    except Exception as exc:  # noqa: BLE001 - the failure is what this step reports
        emit_error("unknown-topic", _code(exc), f"{type(exc).__name__}: {exc}")
    else:
        raise RuntimeError("unknown-topic: a record to a missing topic was delivered")
    finally:
        producer.close(timeout=10)
    client = KafkaAdminClient(bootstrap_servers=args.bootstrap)
    try:
        client.create_topics(
            {
                f"{args.topic}-bad": {
                    "num_partitions": 1,
                    "replication_factor": 1,
                    "configs": {"retention.ms": "not-a-number"},
                }
            }
        )
    except Exception as exc:  # noqa: BLE001 - the refusal is what this step reports
        emit_error("invalid-config", _code(exc), f"{type(exc).__name__}: {exc}")
    else:
        raise RuntimeError("invalid-config: a topic with retention.ms=not-a-number was created")
    finally:
        client.close()


SCENARIOS = {
    "produce-consume": produce_consume,
    "acks": acks,
    "large": large,
    "admin": admin,
    "errors": errors,
}


def main() -> int:
    runs = parse_runs()
    if os.environ.get("MILLPOND_DRIVER_DEBUG"):
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    return run_all(runs, SCENARIOS)


if __name__ == "__main__":
    raise SystemExit(main())

"""confluent-kafka (librdkafka) driver of ../SCENARIOS.md:
``python driver_confluent.py produce-consume ... --compression zstd`` (several scenarios joined
with ``--`` run one after the other, see contract.run_all).

The ``produce-consume`` producer is idempotent (``enable.idempotence=true``, which implies
acks=all) and compresses with ``--compression``; consumers read by assignment (their group id is
required by the client, and unused: nothing is committed); ``admin`` uses
confluent_kafka.admin.AdminClient, which has a call for every step (incremental alter configs,
list offsets among them). ``MILLPOND_DRIVER_DEBUG=1`` turns on librdkafka's
``debug=protocol,broker`` log on stderr."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make compat_tests importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from confluent_kafka import (  # noqa: E402
    OFFSET_BEGINNING,
    Consumer,
    KafkaException,
    Producer,
)
from confluent_kafka import TopicPartition as TP  # noqa: E402
from confluent_kafka.admin import (  # noqa: E402
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    ResourceType,
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
    CONFIG_SOURCES,
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

Delivery = dict[int, tuple[Any, Any]]  # record number -> (error or None, message)


def _config(args: Args, **extra: Any) -> dict[str, Any]:
    config: dict[str, Any] = {"bootstrap.servers": args.bootstrap, **extra}
    if os.environ.get("MILLPOND_DRIVER_DEBUG"):
        config["debug"] = "protocol,broker"
    return config


def _code(err: Any) -> int | None:
    """Kafka's error number of a librdkafka error: librdkafka's own (local) errors are
    numbered -100 and below, the broker's keep Kafka's numbers (-1 being UNKNOWN_SERVER_ERROR)."""
    error = err.args[0] if isinstance(err, KafkaException) else err
    code: int = error.code()
    return code if code >= -1 else None


def _produce_all(producer: Any, sends: list[dict[str, Any]]) -> Delivery:
    """Produce every record (``produce`` keyword arguments) and wait for all delivery reports."""
    reports: Delivery = {}

    def on_delivery(i: int) -> Callable[[Any, Any], None]:
        def report(err: Any, msg: Any) -> None:
            reports[i] = (err, msg)

        return report

    for i, send in enumerate(sends):
        producer.produce(**send, on_delivery=on_delivery(i))
    left = producer.flush(MAX_WAIT)
    if left:
        raise TimeoutError(f"{left} records without a delivery report after {MAX_WAIT}s")
    return reports


def _delivered(reports: Delivery) -> list[tuple[int, int]]:
    """(partition, offset) of every record in order; raises the first delivery error."""
    errors = [f"record {i}: {err}" for i, (err, _) in sorted(reports.items()) if err is not None]
    if errors:
        raise RuntimeError(f"delivery failed: {errors}")
    return [(msg.partition(), msg.offset()) for _, (_, msg) in sorted(reports.items())]


def _consumer(args: Args, **extra: Any) -> Any:
    return Consumer(
        _config(
            args,
            **{
                "group.id": f"unused-{args.topic}",
                "enable.auto.commit": False,
                "enable.auto.offset.store": False,
                "enable.partition.eof": False,
                # A short long-poll: ListOffsets queue behind a pending Fetch on its connection,
                # and every phase ends with one (10 ms here rather than 100: 1 s less a run).
                "fetch.wait.max.ms": 10,
                **extra,
            },
        )
    )


def _read(
    consumer: Any,
    until: dict[int, int],
    what: str,
    handle: Callable[[Any], None],
    stop_after: int | None = None,
) -> None:
    """Poll, handing on every message, until every partition of ``until`` reached its offset
    (or ``stop_after`` messages were read)."""
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
        handle(msg)
        read += 1


def _record_printer(phase: str) -> Callable[[Any], None]:
    def handle(msg: Any) -> None:
        emit_record(
            phase,
            msg.partition(),
            msg.offset(),
            msg.key(),
            msg.value(),
            msg.headers(),
            msg.timestamp()[1],
        )

    return handle


# --- produce-consume ---------------------------------------------------------------------------


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
    sends = []
    for i in range(args.count):
        r = record(i, args.start_ts)
        sends.append(
            {
                "topic": args.topic,
                "key": r.key,
                "value": r.value,
                "headers": r.headers,
                "timestamp": r.timestamp,
            }
        )
    for i, (partition, offset) in enumerate(_delivered(_produce_all(producer, sends))):
        emit_produced(i, partition, offset)


def _replay(consumer: Any, args: Args, phase: str, starts: dict[int, int]) -> None:
    """Read every partition of ``starts`` from its offset there to the partition's end."""
    ends = {p: consumer.get_watermark_offsets(TP(args.topic, p), 30)[1] for p in starts}
    until = {p: end for p, end in ends.items() if end > starts[p]}
    consumer.assign([TP(args.topic, p, starts[p]) for p in until])
    _read(consumer, until, f"{phase}: reading from {starts} to {ends}", _record_printer(phase))


def consume(args: Args) -> None:
    consumer = _consumer(args)
    try:
        partitions = range(args.partitions)
        consumer.assign([TP(args.topic, p, OFFSET_BEGINNING) for p in partitions])
        _read(
            consumer,
            dict.fromkeys(partitions, 0),
            f"reading {args.count} records from the beginning",
            _record_printer("beginning"),
            stop_after=args.count,
        )
        ends = {p: consumer.get_watermark_offsets(TP(args.topic, p), 30)[1] for p in partitions}
        _replay(consumer, args, "from_offset", {p: 1 for p, end in ends.items() if end > 1})

        found = consumer.offsets_for_times(
            [TP(args.topic, p, args.threshold) for p in partitions], 30
        )
        starts = {}
        for tp in found:
            if tp.error is not None:
                raise KafkaException(tp.error)
            if tp.offset >= 0:
                starts[tp.partition] = tp.offset
        _replay(consumer, args, "from_timestamp", starts)
    finally:
        consumer.close()


def produce_consume(args: Args) -> None:
    produce(args)
    consume(args)


# --- acks --------------------------------------------------------------------------------------


def acks(args: Args) -> None:
    for spec in ACKS_PRODUCERS:
        producer = Producer(
            _config(
                args,
                **{
                    "acks": "all" if spec.acks == -1 else str(spec.acks),
                    "enable.idempotence": spec.idempotent,
                    "linger.ms": 5,
                },
            )
        )
        sends = [
            {
                "topic": args.topic,
                "partition": spec.partition,
                "key": spec.key(i),
                "value": spec.value(i),
            }
            for i in range(ACKS_COUNT)
        ]
        for i, (partition, offset) in enumerate(_delivered(_produce_all(producer, sends))):
            emit(
                {
                    "event": "produced",
                    "producer": spec.name,
                    "i": i,
                    "partition": partition,
                    # acks=0: no offset (None, or librdkafka's OFFSET_INVALID)
                    "offset": -1 if offset is None or offset < 0 else offset,
                }
            )
    consumer = _consumer(args)
    try:
        partitions = [spec.partition for spec in ACKS_PRODUCERS]
        consumer.assign([TP(args.topic, p, OFFSET_BEGINNING) for p in partitions])
        want = len(ACKS_PRODUCERS) * ACKS_COUNT
        _read(
            consumer,
            dict.fromkeys(partitions, 0),
            f"reading {want} records",
            lambda msg: emit_acks_record(msg.partition(), msg.offset(), msg.value()),
            stop_after=want,
        )
    finally:
        consumer.close()


# --- large -------------------------------------------------------------------------------------


def large(args: Args) -> None:
    producer = Producer(_config(args, **{"message.max.bytes": LARGE_LIMIT}))
    near, over = (
        {"topic": args.topic, "partition": 0, "key": LARGE_KEY, "value": large_value(size)}
        for size in (LARGE_NEAR, LARGE_OVER)
    )
    ((partition, offset),) = _delivered(_produce_all(producer, [near]))
    emit({"event": "produced", "step": "near-limit", "partition": partition, "offset": offset})
    err, _ = _produce_all(producer, [over])[0]
    if err is None:
        raise RuntimeError("over-limit: the broker accepted a record over max.message.bytes")
    emit_error("over-limit", _code(err), err.str())
    consumer = _consumer(
        args,
        **{
            "fetch.max.bytes": LARGE_LIMIT,
            "max.partition.fetch.bytes": LARGE_LIMIT,
            "receive.message.max.bytes": LARGE_LIMIT + 1024,
        },
    )
    try:
        end = consumer.get_watermark_offsets(TP(args.topic, 0), 30)[1]
        consumer.assign([TP(args.topic, 0, OFFSET_BEGINNING)])
        _read(
            consumer,
            {0: end},
            f"reading partition 0 to its end {end}",
            lambda msg: emit_large_record(msg.offset(), msg.value()),
        )
    finally:
        consumer.close()


# --- admin -------------------------------------------------------------------------------------


def _result(futures: dict[Any, Any]) -> Any:
    """The result of a one-entry admin answer (raises its error)."""
    (future,) = futures.values()
    return future.result(timeout=MAX_WAIT)


def admin(args: Args) -> None:
    client = AdminClient(_config(args))
    topic = args.topic

    def listed() -> bool:
        return topic in client.list_topics(timeout=30).topics

    def configs() -> dict[str, Any]:
        entries = _result(client.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]))
        return shown_configs(
            {
                name: (entry.value, CONFIG_SOURCES.get(entry.source, str(entry.source)))
                for name, entry in entries.items()
            }
        )

    def create_topics() -> dict[str, Any]:
        new = NewTopic(topic, num_partitions=3, replication_factor=1, config=ADMIN_CONFIGS)
        _result(client.create_topics([new], operation_timeout=30))
        return {"listed": wait_for(listed)}

    def alter_configs() -> dict[str, Any]:
        changes = [
            ConfigEntry(
                "retention.ms", ADMIN_RETENTION, incremental_operation=AlterConfigOpType.SET
            ),
            ConfigEntry("max.message.bytes", None, incremental_operation=AlterConfigOpType.DELETE),
        ]
        resource = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=changes)
        _result(client.incremental_alter_configs([resource]))
        wait_for(lambda: altered(configs()))
        return {"configs": configs()}

    def partitions() -> int:
        return len(client.list_topics(topic, timeout=30).topics[topic].partitions)

    def create_partitions() -> dict[str, Any]:
        _result(client.create_partitions([NewPartitions(topic, 4)], operation_timeout=30))
        wait_for(lambda: partitions() == 4)
        return {"partitions": partitions()}

    def produce_records() -> dict[str, Any]:
        producer = Producer(_config(args))
        sends = [
            {
                "topic": topic,
                "partition": 0,
                "value": f"admin-{i}".encode(),
                "timestamp": ADMIN_START_TS + i * 1000,
            }
            for i in range(ADMIN_RECORDS)
        ]
        return {"offsets": [o for _, o in _delivered(_produce_all(producer, sends))]}

    def earliest(spec: Any) -> int:
        found: int = _result(client.list_offsets({TP(topic, 0): spec})).offset
        return found

    def delete_records() -> dict[str, Any]:
        deleted = _result(client.delete_records([TP(topic, 0, ADMIN_DELETE_BEFORE)]))
        return {
            "low_watermark": deleted.low_watermark,
            "earliest_after": earliest(OffsetSpec.earliest()),
        }

    def delete_topics() -> dict[str, Any]:
        _result(client.delete_topics([topic], operation_timeout=30))
        wait_for(lambda: not listed())
        return {"listed": listed()}

    admin_step("createTopics", create_topics)
    admin_step("describeConfigs", lambda: {"configs": configs()})
    admin_step("alterConfigs", alter_configs)
    admin_step("createPartitions", create_partitions)
    admin_step("produce", produce_records)
    admin_step("deleteRecords", delete_records)
    admin_step(
        "listOffsets",
        lambda: {"for_timestamp": earliest(OffsetSpec.for_timestamp(ADMIN_LOOKUP_TS))},
    )
    admin_step("deleteTopics", delete_topics)


# --- errors ------------------------------------------------------------------------------------


def errors(args: Args) -> None:
    producer = Producer(_config(args, **{"message.timeout.ms": 5000}))
    try:
        reports = _produce_all(producer, [{"topic": f"{args.topic}-missing", "value": b"lost"}])
    except KafkaException as exc:  # refused before it was queued
        emit_error("unknown-topic", _code(exc), str(exc))
    else:
        err, _ = reports[0]
        if err is None:
            raise RuntimeError("unknown-topic: a record to a missing topic was delivered")
        emit_error("unknown-topic", _code(err), err.str())
    client = AdminClient(_config(args))
    bad = NewTopic(
        f"{args.topic}-bad",
        num_partitions=1,
        replication_factor=1,
        config={"retention.ms": "not-a-number"},
    )
    try:
        _result(client.create_topics([bad], operation_timeout=30))
    except KafkaException as exc:
        emit_error("invalid-config", _code(exc), exc.args[0].str())
    else:
        raise RuntimeError("invalid-config: a topic with retention.ms=not-a-number was created")


SCENARIOS = {
    "produce-consume": produce_consume,
    "acks": acks,
    "large": large,
    "admin": admin,
    "errors": errors,
}


def main() -> int:
    return run_all(parse_runs(), SCENARIOS)


if __name__ == "__main__":
    raise SystemExit(main())

"""aiokafka driver of ../SCENARIOS.md: ``python driver_aiokafka.py produce-consume ...`` (several
scenarios joined with ``--`` run one after the other, see contract.run_all).

The ``produce-consume`` producer runs in aiokafka's default configuration (not idempotent,
acks=1); consumers read by assignment, without a group. ``admin`` uses AIOKafkaAdminClient,
which answers with the raw responses (their error codes are checked here) and lacks two steps:
it alters configs with the older AlterConfigs only (the complete set, as SCENARIOS.md allows)
and has no ListOffsets, so the earliest offset and the offset for a timestamp come from the
consumer (beginning_offsets, offsets_for_times). ``MILLPOND_DRIVER_DEBUG=1`` logs the client's
protocol traffic to stderr."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make compat_tests importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition  # noqa: E402
from aiokafka.admin import (  # noqa: E402
    AIOKafkaAdminClient,
    NewPartitions,
    NewTopic,
    RecordsToDelete,
)
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType  # noqa: E402
from aiokafka.errors import for_code  # noqa: E402

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
    altered,
    emit,
    emit_acks_record,
    emit_admin,
    emit_error,
    emit_large_record,
    emit_produced,
    emit_record,
    large_value,
    parse_runs,
    record,
    run_all,
    shown_configs,
)


def _code(exc: Exception) -> int | None:
    """Kafka's error number of an aiokafka error (its broker errors carry ``errno``)."""
    errno = getattr(exc, "errno", None)
    return errno if isinstance(errno, int) else None


def _raise_errors(results: Sequence[Sequence[Any]], what: str) -> None:
    """Raise the first error of an admin response's per-topic results ``(topic, code, ...)``."""
    for result in results:
        if result[1] != 0:
            raise for_code(result[1])(f"{what} {result[0]}: {list(result[2:])}")


def _consumer(args: Args, **extra: Any) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=None,
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
        **extra,
    )


async def _until_read(
    consumer: AIOKafkaConsumer, want: int, what: str, handle: Callable[[Any, Any], None]
) -> None:
    """Poll until ``want`` messages were handed on (``handle(tp, message)``)."""
    read = 0
    deadline = Deadline()
    while read < want:
        deadline.check(f"{what} (read {read})")
        for tp, messages in (await consumer.getmany(timeout_ms=500)).items():
            for m in messages:
                handle(tp, m)
                read += 1


async def _until_end(
    consumer: AIOKafkaConsumer,
    ends: dict[TopicPartition, int],
    what: str,
    handle: Callable[[Any, Any], None],
) -> None:
    """Poll until every partition of ``ends`` reached its end there."""
    deadline = Deadline()
    while any([await consumer.position(tp) < end for tp, end in ends.items()]):
        deadline.check(what)
        for tp, messages in (await consumer.getmany(timeout_ms=500)).items():
            for m in messages:
                if m.offset < ends.get(tp, -1):
                    handle(tp, m)


def _record_printer(phase: str) -> Callable[[Any, Any], None]:
    def handle(tp: Any, m: Any) -> None:
        emit_record(phase, tp.partition, m.offset, m.key, m.value, m.headers, m.timestamp)

    return handle


# --- produce-consume ---------------------------------------------------------------------------


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


async def _replay(
    consumer: AIOKafkaConsumer,
    phase: str,
    starts: dict[TopicPartition, int],
    ends: dict[TopicPartition, int],
) -> None:
    """Read every partition of ``starts`` from its offset there to its end in ``ends``."""
    wanted = {tp: end for tp, end in ends.items() if tp in starts and starts[tp] < end}
    consumer.assign(list(wanted))
    for tp in wanted:
        consumer.seek(tp, starts[tp])
    await _until_end(
        consumer, wanted, f"{phase}: reading from {starts} to {ends}", _record_printer(phase)
    )


async def consume(args: Args) -> None:
    consumer = _consumer(args)
    await consumer.start()
    try:
        partitions = [TopicPartition(args.topic, p) for p in range(args.partitions)]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        await _until_read(
            consumer,
            args.count,
            f"reading {args.count} records from the beginning",
            _record_printer("beginning"),
        )
        ends = await consumer.end_offsets(partitions)
        await _replay(consumer, "from_offset", {tp: 1 for tp in partitions if ends[tp] > 1}, ends)
        found = await consumer.offsets_for_times(dict.fromkeys(partitions, args.threshold))
        starts = {tp: hit.offset for tp, hit in found.items() if hit is not None}
        await _replay(consumer, "from_timestamp", starts, ends)
    finally:
        await consumer.stop()


async def produce_consume(args: Args) -> None:
    await produce(args)
    await consume(args)


# --- acks --------------------------------------------------------------------------------------


async def acks(args: Args) -> None:
    for spec in ACKS_PRODUCERS:
        producer = AIOKafkaProducer(
            bootstrap_servers=args.bootstrap,
            acks="all" if spec.acks == -1 else spec.acks,
            enable_idempotence=spec.idempotent,
            linger_ms=5,
        )
        await producer.start()
        try:
            futures = [
                await producer.send(
                    args.topic, key=spec.key(i), value=spec.value(i), partition=spec.partition
                )
                for i in range(ACKS_COUNT)
            ]
            done = await asyncio.wait_for(asyncio.gather(*futures), MAX_WAIT)
        finally:
            await producer.stop()
        for i, metadata in enumerate(done):
            # acks=0: aiokafka resolves the send with no metadata at all (None), so the
            # partition is the one the record was sent to and the offset unknown
            emit(
                {
                    "event": "produced",
                    "producer": spec.name,
                    "i": i,
                    "partition": spec.partition if metadata is None else metadata.partition,
                    "offset": -1 if metadata is None else metadata.offset,
                }
            )
    consumer = _consumer(args)
    await consumer.start()
    try:
        partitions = [TopicPartition(args.topic, spec.partition) for spec in ACKS_PRODUCERS]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        want = len(ACKS_PRODUCERS) * ACKS_COUNT
        await _until_read(
            consumer,
            want,
            f"reading {want} records",
            lambda tp, m: emit_acks_record(tp.partition, m.offset, m.value),
        )
    finally:
        await consumer.stop()


# --- large -------------------------------------------------------------------------------------


async def large(args: Args) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=args.bootstrap, max_request_size=LARGE_LIMIT)
    await producer.start()
    try:
        metadata = await producer.send_and_wait(
            args.topic, key=LARGE_KEY, value=large_value(LARGE_NEAR), partition=0
        )
        emit(
            {
                "event": "produced",
                "step": "near-limit",
                "partition": metadata.partition,
                "offset": metadata.offset,
            }
        )
        try:
            await producer.send_and_wait(
                args.topic, key=LARGE_KEY, value=large_value(LARGE_OVER), partition=0
            )
        except Exception as exc:  # noqa: BLE001 - the refusal is what this step reports
            emit_error("over-limit", _code(exc), f"{type(exc).__name__}: {exc}")
        else:
            raise RuntimeError("over-limit: the broker accepted a record over max.message.bytes")
    finally:
        await producer.stop()
    consumer = _consumer(args, max_partition_fetch_bytes=LARGE_LIMIT, fetch_max_bytes=LARGE_LIMIT)
    await consumer.start()
    try:
        tp = TopicPartition(args.topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        ends = await consumer.end_offsets([tp])
        await _until_end(
            consumer,
            ends,
            f"reading partition 0 to its end {ends}",
            lambda _, m: emit_large_record(m.offset, m.value),
        )
    finally:
        await consumer.stop()


# --- admin -------------------------------------------------------------------------------------


async def _step(step: str, action: Callable[[], Awaitable[dict[str, Any]]]) -> None:
    """contract.admin_step for a coroutine."""
    try:
        fields = await action()
    except Exception as exc:  # noqa: BLE001 - a failed step is reported, not fatal
        emit_admin(step, error=f"{type(exc).__name__}: {exc}")
        return
    emit_admin(step, **fields)


async def _wait_for(condition: Callable[[], Awaitable[bool]], seconds: float = 15.0) -> bool:
    """contract.wait_for for a coroutine."""
    deadline = Deadline(seconds)
    while not await condition():
        if deadline.passed:
            return False
        await asyncio.sleep(0.1)
    return True


async def admin(args: Args) -> None:
    client = AIOKafkaAdminClient(bootstrap_servers=args.bootstrap)
    consumer = _consumer(args)
    await client.start()
    await consumer.start()
    topic = args.topic
    tp = TopicPartition(topic, 0)

    async def listed() -> bool:
        return topic in await client.list_topics()

    async def gone() -> bool:
        return not await listed()

    async def configs() -> dict[str, Any]:
        (response,) = await client.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, topic)]
        )
        ((code, message, _, name, entries, *_),) = response.resources
        if code != 0:
            raise for_code(code)(f"describe configs of {name}: {message}")
        return shown_configs({e[0]: (e[1], CONFIG_SOURCES.get(e[3], str(e[3]))) for e in entries})

    async def configs_altered() -> bool:
        return altered(await configs())

    async def create_topics() -> dict[str, Any]:
        new = NewTopic(topic, 3, 1, topic_configs=ADMIN_CONFIGS)
        response = await client.create_topics([new])
        _raise_errors(response.topic_errors, "create topic")
        return {"listed": await _wait_for(listed)}

    async def describe_configs() -> dict[str, Any]:
        return {"configs": await configs()}

    async def alter_configs() -> dict[str, Any]:
        # AlterConfigs replaces the topic's whole set: this one drops max.message.bytes
        resource = ConfigResource(
            ConfigResourceType.TOPIC, topic, {"retention.ms": ADMIN_RETENTION}
        )
        for response in await client.alter_configs([resource]):
            _raise_errors([(r[3], r[0], r[1]) for r in response.resources], "alter configs of")
        await _wait_for(configs_altered)
        return {"configs": await configs()}

    async def partitions() -> int:
        (described,) = await client.describe_topics([topic])
        return len(described["partitions"])

    async def four_partitions() -> bool:
        return await partitions() == 4

    async def create_partitions() -> dict[str, Any]:
        response = await client.create_partitions({topic: NewPartitions(4)})
        _raise_errors(response.topic_errors, "create partitions of")
        await _wait_for(four_partitions)
        return {"partitions": await partitions()}

    async def produce_records() -> dict[str, Any]:
        producer = AIOKafkaProducer(bootstrap_servers=args.bootstrap)
        await producer.start()
        try:
            futures = [
                await producer.send(
                    topic,
                    value=f"admin-{i}".encode(),
                    partition=0,
                    timestamp_ms=ADMIN_START_TS + i * 1000,
                )
                for i in range(ADMIN_RECORDS)
            ]
            done = await asyncio.wait_for(asyncio.gather(*futures), MAX_WAIT)
        finally:
            await producer.stop()
        return {"offsets": [m.offset for m in done]}

    async def delete_records() -> dict[str, Any]:
        deleted = await client.delete_records({tp: RecordsToDelete(ADMIN_DELETE_BEFORE)})
        earliest = await consumer.beginning_offsets([tp])
        return {"low_watermark": deleted[tp], "earliest_after": earliest[tp]}

    async def list_offsets() -> dict[str, Any]:
        found = await consumer.offsets_for_times({tp: ADMIN_LOOKUP_TS})
        hit = found[tp]
        return {"for_timestamp": None if hit is None else hit.offset}

    async def delete_topics() -> dict[str, Any]:
        response = await client.delete_topics([topic])
        _raise_errors(response.topic_error_codes, "delete topic")
        await _wait_for(gone)
        return {"listed": await listed()}

    try:
        await _step("createTopics", create_topics)
        await _step("describeConfigs", describe_configs)
        await _step("alterConfigs", alter_configs)
        await _step("createPartitions", create_partitions)
        await _step("produce", produce_records)
        await _step("deleteRecords", delete_records)
        await _step("listOffsets", list_offsets)
        await _step("deleteTopics", delete_topics)
    finally:
        await consumer.stop()
        await client.close()


# --- errors ------------------------------------------------------------------------------------


async def errors(args: Args) -> None:
    # aiokafka waits for a topic's metadata up to request_timeout_ms
    producer = AIOKafkaProducer(bootstrap_servers=args.bootstrap, request_timeout_ms=5000)
    await producer.start()
    try:
        await producer.send_and_wait(f"{args.topic}-missing", value=b"lost")
    except Exception as exc:  # noqa: BLE001 - the failure is what this step reports
        emit_error("unknown-topic", _code(exc), f"{type(exc).__name__}: {exc}")
    else:
        raise RuntimeError("unknown-topic: a record to a missing topic was delivered")
    finally:
        await producer.stop()
    client = AIOKafkaAdminClient(bootstrap_servers=args.bootstrap)
    await client.start()
    try:
        bad = NewTopic(f"{args.topic}-bad", 1, 1, topic_configs={"retention.ms": "not-a-number"})
        response = await client.create_topics([bad])
    finally:
        await client.close()
    ((_, code, message, *_),) = response.topic_errors
    if code == 0:
        raise RuntimeError("invalid-config: a topic with retention.ms=not-a-number was created")
    emit_error("invalid-config", code, str(message))


SCENARIOS: dict[str, Callable[[Args], Coroutine[Any, Any, None]]] = {
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

    def blocking(scenario: Callable[[Args], Coroutine[Any, Any, None]]) -> Callable[[Args], None]:
        def run(args: Args) -> None:
            asyncio.run(scenario(args))

        return run

    return run_all(runs, {name: blocking(scenario) for name, scenario in SCENARIOS.items()})


if __name__ == "__main__":
    raise SystemExit(main())

"""The load generator of bench/throughput.py: librdkafka (confluent-kafka) in a process of its
own, so its CPU time is never counted as the broker's and the same client drives every broker.

    python bench/loadgen.py '{"mode": "produce", "bootstrap": "127.0.0.1:9092", ...}'

It prints one JSON object (the measurement) on stdout. Every loop is bounded by a message
count and a deadline; a run that misses its deadline reports what it reached and says so.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import struct
import sys
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition

# librdkafka pauses fetching for a second when its local queue fills (DESIGN.md, section 3):
# large queues keep a fast broker from looking slow.
CONSUMER_QUEUES = {
    "queued.max.messages.kbytes": 1_048_576,
    "queued.min.messages": 1_000_000,
}
#: Up to 8 MiB per partition and 50 MiB per response, against the client's 1 MiB per
#: partition. A response over glibc's largest mmap threshold (32 MiB) is received into
#: freshly mapped memory every time: ~275,000 page faults per GiB read here, against ~50,000
#: with the client's sizes.
LARGE_FETCHES = {"fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": 8_388_608}
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters


def _keep_freed_memory() -> None:
    """Keep what the reader frees for its next allocations. By default glibc gives the
    freed top of the heap back to the OS, and touching it again faults every page in anew:
    with 50 MiB fetches that happened on about half the reads, at random (413,000 page
    faults per GiB instead of 275,000, and 10-40% slower), and it made the figure measure
    the reader's allocator. The mmap threshold is set to what glibc would grow it to."""
    libc = ctypes.CDLL(None)
    libc.mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024)
    libc.mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024)


STAMP = struct.Struct(">qq")  # (message index, send time in monotonic ns)


def _cpu_s() -> float:
    """CPU seconds this process has used, librdkafka's threads included."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def produce(spec: dict[str, Any]) -> dict[str, Any]:
    """As many ``size``-byte values as librdkafka takes in ``seconds`` (at most ``count``),
    round-robin over the topic's partitions and over ``producers`` producers (default 1,
    each with its own connections); throughput counts delivered messages only, from the
    first produce call to the end of the final flush. ``batch_records``, if given, makes
    every batch that many records (sent as soon as it has them; ``linger_ms`` must be long
    enough to fill it), so the log holds the same batches whatever broker it is on."""
    n = spec.get("producers", 1)
    config = {
        "bootstrap.servers": spec["bootstrap"],
        "acks": str(spec["acks"]),
        "linger.ms": spec["linger_ms"],
        "batch.size": 1_048_576,
        # 256 MiB of queue in all, at least 64 MiB each.
        "queue.buffering.max.kbytes": max(65_536, 262_144 // n),
        "enable.idempotence": False,
        "partitioner": "murmur2_random",
        **({"batch.num.messages": spec["batch_records"]} if "batch_records" in spec else {}),
    }
    clients = [Producer(config) for _ in range(n)]
    delivered = [0, 0]  # ok, failed

    def on_delivery(err: KafkaError | None, _msg: Any) -> None:
        delivered[1 if err else 0] += 1

    value = b"x" * spec["size"]
    topic, partitions = spec["topic"], spec["partitions"]
    count, seconds = spec["count"], spec["seconds"]
    for client in clients:  # connect and learn the leaders before the clock
        client.list_topics(topic, timeout=30)
    sent = 0
    cpu = _cpu_s()
    started = time.perf_counter()
    stop = started + seconds
    while sent < count and time.perf_counter() < stop:
        client = clients[sent % n]
        try:
            client.produce(topic, value, partition=sent % partitions, on_delivery=on_delivery)
            sent += 1
        except BufferError:  # librdkafka's queue is full: let deliveries drain it
            client.poll(0.001)
        if sent % 1000 == 0:
            for client in clients:
                client.poll(0)
    left = sum(client.flush(60) for client in clients)
    took = time.perf_counter() - started
    ok = delivered[0]
    return {
        "messages": ok,
        "failed": delivered[1] + left,
        "seconds": took,
        "cpu_s": _cpu_s() - cpu,
        "msgs_s": ok / took,
        "mb_s": ok * spec["size"] / took / 1e6,
    }


def consume(spec: dict[str, Any]) -> dict[str, Any]:
    """Read ``count`` messages back from the beginning of every partition (assigned, no
    group); throughput from the first message to the last."""
    _keep_freed_memory()
    consumer = Consumer(
        {
            "bootstrap.servers": spec["bootstrap"],
            "group.id": "bench-unused",  # required by the client; nothing joins or commits
            "enable.auto.commit": False,
            **CONSUMER_QUEUES,
            **(LARGE_FETCHES if spec.get("large_fetches") else {}),
        }
    )
    consumer.assign(
        [TopicPartition(spec["topic"], p, OFFSET_BEGINNING) for p in range(spec["partitions"])]
    )
    count, got, size = spec["count"], 0, 0
    cpu = _cpu_s()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    deadline = time.perf_counter() + spec["seconds"]
    first = last = 0.0
    while got < count and time.perf_counter() < deadline:
        batch = consumer.consume(10_000, 0.5)
        if not batch:
            continue
        if not first:
            first = time.perf_counter()
        for message in batch:
            if message.error() is None:
                got += 1
                size += len(message.value())
        last = time.perf_counter()
    cpu = _cpu_s() - cpu
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
    consumer.close()
    took = max(last - first, 1e-9)
    return {
        "messages": got,
        "complete": got >= count,
        "seconds": took,
        "cpu_s": cpu,
        "page_faults": faults,
        "msgs_s": got / took,
        "mb_s": size / took / 1e6,
    }


def latency_consumer(spec: dict[str, Any]) -> dict[str, Any]:
    """Receive the latency producer's ``count`` messages; each latency is the receive time
    minus the send time stamped in the value (CLOCK_MONOTONIC is shared by every process on
    the machine). Says ``ready`` on stderr once fetching, so the producer starts after."""
    consumer = Consumer(
        {
            "bootstrap.servers": spec["bootstrap"],
            "group.id": "bench-unused",
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 100,
            **CONSUMER_QUEUES,
            **LARGE_FETCHES,
        }
    )
    consumer.assign([TopicPartition(spec["topic"], 0, OFFSET_BEGINNING)])
    consumer.consume(1, 0.5)
    print("ready", file=sys.stderr, flush=True)
    latencies: list[int] = []
    count, warmup = spec["count"], spec["warmup"]
    deadline = time.perf_counter() + spec["seconds"]
    received = 0
    while received < count and time.perf_counter() < deadline:
        message = consumer.poll(0.1)  # returns as soon as one message is there
        now = time.monotonic_ns()
        if message is None or message.error() is not None:
            continue
        received += 1
        index, sent = STAMP.unpack_from(message.value())
        if index >= warmup:
            latencies.append(now - sent)
    consumer.close()
    latencies.sort()

    def pct(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * len(latencies)))] / 1e6

    if not latencies:
        return {"received": received, "samples": 0}
    return {
        "received": received,
        "samples": len(latencies),
        "p50_ms": pct(0.50),
        "p99_ms": pct(0.99),
        "p999_ms": pct(0.999),
        "max_ms": latencies[-1] / 1e6,
    }


def latency_producer(spec: dict[str, Any]) -> dict[str, Any]:
    """``count`` messages at ``rate`` per second (acks=all, linger.ms=5: the default of
    librdkafka and of Java clients since 4.0), each stamped with its index and the time it was
    handed to the client."""
    producer = Producer(
        {
            "bootstrap.servers": spec["bootstrap"],
            "acks": "all",
            "linger.ms": 5,
            "enable.idempotence": False,
        }
    )
    producer.list_topics(spec["topic"], timeout=30)
    padding = b"x" * max(0, spec["size"] - STAMP.size)
    interval = 1e9 / spec["rate"]
    count = spec["count"]
    started = time.monotonic_ns()
    for i in range(count):
        due = started + int(i * interval)
        while (now := time.monotonic_ns()) < due:
            producer.poll(0)
            if due - now > 200_000:
                time.sleep((due - now) / 2e9)
        producer.produce(spec["topic"], STAMP.pack(i, time.monotonic_ns()) + padding, partition=0)
        producer.poll(0)
    left = producer.flush(60)
    took = (time.monotonic_ns() - started) / 1e9
    return {"sent": count - left, "seconds": took, "rate": count / took}


def group(spec: dict[str, Any]) -> dict[str, Any]:
    """``members`` consumers subscribe to one topic together; time from the first subscribe
    until every member holds a share and the shares cover all ``partitions`` exactly once."""
    members = spec["members"]
    assigned: list[set[int]] = [set() for _ in range(members)]

    def callbacks(i: int) -> dict[str, Any]:
        def on_assign(_consumer: Any, partitions: list[Any]) -> None:
            assigned[i] = {p.partition for p in partitions}

        def on_revoke(_consumer: Any, _partitions: list[Any]) -> None:
            assigned[i] = set()

        return {"on_assign": on_assign, "on_revoke": on_revoke}

    consumers = [
        Consumer(
            {
                "bootstrap.servers": spec["bootstrap"],
                "group.id": spec["group"],
                "enable.auto.commit": False,
                "session.timeout.ms": 30_000,
                "heartbeat.interval.ms": 500,
                "partition.assignment.strategy": "range",
            }
        )
        for _ in range(members)
    ]
    started = time.perf_counter()
    for i, consumer in enumerate(consumers):
        consumer.subscribe([spec["topic"]], **callbacks(i))
    deadline = started + spec["seconds"]
    stable = 0.0
    while time.perf_counter() < deadline:
        for consumer in consumers:
            consumer.poll(0.01)
        shares = [len(a) for a in assigned]
        union = set().union(*assigned)
        if all(shares) and sum(shares) == spec["partitions"] == len(union):
            stable = time.perf_counter() - started
            break
    # No close: leaving the group is not timed, and a broker slow to answer LeaveGroup would
    # hold the run for many seconds; the process exits at once instead (see below).
    if not stable:
        return {"stable": False, "shares": [len(a) for a in assigned]}
    return {"stable": True, "seconds": stable}


MODES = {
    "produce": produce,
    "consume": consume,
    "latency-consumer": latency_consumer,
    "latency-producer": latency_producer,
    "group": group,
}

if __name__ == "__main__":
    request = json.loads(sys.argv[1])
    print(json.dumps(MODES[request["mode"]](request)), flush=True)
    os._exit(0)  # without librdkafka's destructors: the group's consumers are never closed

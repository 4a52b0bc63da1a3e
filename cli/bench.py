"""``millpond bench produce|consume``: a load generator for any Kafka broker.

One connection per leader and one request in flight, so each request's latency is the
broker's answer time as a client sees it. ``produce`` builds one record batch up front
and sends it again and again (the broker assigns the offsets), so the measurement is
not this tool encoding records; ``consume`` counts records from the batch headers
without decoding them. It ends with the throughput and a latency histogram.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from millpond.cli import add_command, add_connection, connect
from millpond.cli.client import EARLIEST, LATEST
from millpond.cli.errors import CliError, kafka_error
from millpond.cli.output import Progress, emit_json, table
from millpond.cli.produce import parse_acks, produce_request
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.fetch_request import FetchPartition, FetchRequest, FetchTopic
from millpond.wire.records import Compression, NewRecord, build_batch, iter_batches

PERCENTILES = (50.0, 95.0, 99.0, 99.9)


def percentile(sorted_values: list[float], pct: float) -> float:
    """Nearest-rank percentile of an ascending list (0 for an empty one)."""
    if not sorted_values:
        return 0.0
    rank = max(1, -(-len(sorted_values) * pct // 100))
    return sorted_values[min(int(rank), len(sorted_values)) - 1]


def histogram(latencies_ms: list[float]) -> list[dict[str, Any]]:
    """Counts per power-of-two bucket of milliseconds (upper bound ``le_ms``), from the
    smallest bucket holding a value to the largest."""
    if not latencies_ms:
        return []
    bound = 1 / 64
    buckets: list[dict[str, Any]] = []
    values = sorted(latencies_ms)
    i = 0
    while i < len(values):
        count = 0
        while i < len(values) and values[i] <= bound:
            count += 1
            i += 1
        if count or buckets:
            buckets.append({"le_ms": bound, "count": count})
        bound *= 2
    return buckets


def summary(
    kind: str, records: int, size: int, seconds: float, latencies_ms: list[float]
) -> dict[str, Any]:
    values = sorted(latencies_ms)
    return {
        "benchmark": kind,
        "records": records,
        "bytes": size,
        "seconds": round(seconds, 3),
        "records_per_s": round(records / seconds, 1) if seconds else 0.0,
        "mb_per_s": round(size / seconds / 1e6, 3) if seconds else 0.0,
        "requests": len(values),
        "latency_ms": {
            "mean": round(sum(values) / len(values), 3) if values else 0.0,
            **{f"p{p:g}": round(percentile(values, p), 3) for p in PERCENTILES},
            "max": round(values[-1], 3) if values else 0.0,
        },
        "histogram": histogram(values),
    }


def _report(args: argparse.Namespace, result: dict[str, Any]) -> None:
    if args.format == "json":
        emit_json(result)
        return
    out = sys.stdout
    out.write(
        f"{result['records']:,} records, {result['bytes'] / 1e6:,.1f} MB in "
        f"{result['seconds']:.2f} s: {result['records_per_s']:,.0f} records/s, "
        f"{result['mb_per_s']:,.2f} MB/s, {result['requests']:,} requests\n"
    )
    lat = result["latency_ms"]
    out.write("request latency (ms): " + "  ".join(f"{k} {v:g}" for k, v in lat.items()) + "\n")
    most = max((b["count"] for b in result["histogram"]), default=1) or 1
    rows = [
        {"le_ms": f"<= {b['le_ms']:g}", "count": b["count"], "": "#" * (40 * b["count"] // most)}
        for b in result["histogram"]
    ]
    table(rows, ["le_ms", "count", ""])


def _produce(args: argparse.Namespace) -> int:
    if args.records <= 0 or args.record_size < 0 or args.batch_size <= 0:
        raise CliError("--records and --batch-size must be positive", "e.g. --records 100000")
    payload = os.urandom(args.record_size)  # random: compression cannot flatter it
    batch = build_batch(
        [NewRecord(value=payload)] * args.batch_size,
        compression=Compression[args.compression.upper()],
    )
    latencies: list[float] = []
    sent = 0
    progress = Progress(args.records, f"bench produce {args.topic}")
    with connect(args) as client:
        leaders = client.partitions(args.topic)
        topic_id = client.topic_id(args.topic)
        partitions = sorted(leaders)
        start = time.perf_counter()
        try:
            while sent < args.records:
                partition = partitions[(sent // args.batch_size) % len(partitions)]
                count = min(args.batch_size, args.records - sent)
                records = (
                    batch
                    if count == args.batch_size
                    else build_batch(
                        [NewRecord(value=payload)] * count,
                        compression=Compression[args.compression.upper()],
                    )
                )
                request = produce_request(
                    args.topic, topic_id, {partition: records}, args.acks, args.timeout_ms
                )
                conn = client.node(leaders[partition])
                began = time.perf_counter()
                if args.acks == 0:
                    conn.send_only(request)
                else:
                    for answer in conn.request(request).responses:
                        for part in answer.partition_responses:
                            if part.error_code:
                                raise kafka_error(
                                    part.error_code, f"producing to {args.topic}-{part.index}"
                                )
                latencies.append((time.perf_counter() - began) * 1000)
                sent += count
                progress.advance(count, f"p99 {percentile(sorted(latencies[-1000:]), 99):.1f} ms")
        finally:
            progress.close()
        elapsed = time.perf_counter() - start
    _report(args, summary("produce", sent, sent * args.record_size, elapsed, latencies))
    return 0


def _consume(args: argparse.Namespace) -> int:
    latencies: list[float] = []
    got = size = 0
    with connect(args) as client:
        leaders = client.partitions(args.topic)
        topic_id = client.topic_id(args.topic)
        positions = {
            p: o for p, (o, _) in client.list_offsets(args.topic, leaders, EARLIEST).items()
        }
        ends = {p: o for p, (o, _) in client.list_offsets(args.topic, leaders, LATEST).items()}
        available = sum(ends[p] - positions[p] for p in leaders)
        target = min(args.records, available) if args.records else available
        progress = Progress(target, f"bench consume {args.topic}")
        start = time.perf_counter()
        try:
            while got < target and any(positions[p] < ends[p] for p in leaders):
                for leader in sorted(set(leaders.values())):
                    mine = [
                        p
                        for p, lead in leaders.items()
                        if lead == leader and positions[p] < ends[p]
                    ]
                    if not mine:
                        continue
                    request = FetchRequest(
                        replica_id=-1,
                        max_wait_ms=500,
                        min_bytes=1,
                        max_bytes=args.fetch_max_bytes,
                        topics=[
                            FetchTopic(
                                topic=args.topic,
                                topic_id=topic_id,
                                partitions=[
                                    FetchPartition(
                                        partition=p,
                                        fetch_offset=positions[p],
                                        partition_max_bytes=args.fetch_max_bytes,
                                    )
                                    for p in mine
                                ],
                            )
                        ],
                    )
                    began = time.perf_counter()
                    response = client.node(leader).request(request)
                    latencies.append((time.perf_counter() - began) * 1000)
                    for answer in response.responses:
                        for part in answer.partitions:
                            if part.error_code not in (ErrorCode.NONE,):
                                raise kafka_error(
                                    part.error_code, f"fetching {args.topic}-{part.partition_index}"
                                )
                            data = part.records or b""
                            size += len(data)
                            for b in iter_batches(data, allow_truncated_tail=True):
                                if b.next_offset <= positions[part.partition_index]:
                                    continue
                                n = 0 if b.is_control else b.records_count
                                got += n
                                progress.advance(n)
                                positions[part.partition_index] = b.next_offset
        finally:
            progress.close()
        elapsed = time.perf_counter() - start
    _report(args, summary("consume", got, size, elapsed, latencies))
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bench = add_command(
        commands, "bench", "load-generate: produce or consume as fast as the broker allows", __doc__
    )
    verbs = bench.add_subparsers(dest="verb", required=True, metavar="VERB")
    produce = verbs.add_parser("produce", help="produce records of a fixed size")
    produce.add_argument("topic", metavar="TOPIC")
    produce.add_argument("-n", "--records", type=int, default=100_000, help="default 100000")
    produce.add_argument(
        "-s",
        "--record-size",
        type=int,
        default=100,
        metavar="BYTES",
        help="value size (default 100)",
    )
    produce.add_argument(
        "-b",
        "--batch-size",
        type=int,
        default=500,
        metavar="N",
        help="records per batch, one batch per request (default 500)",
    )
    produce.add_argument("--acks", type=parse_acks, default=-1, metavar="{all,-1,1,0}")
    produce.add_argument(
        "-z", "--compression", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"]
    )
    produce.set_defaults(run=_produce)
    consume = verbs.add_parser("consume", help="read a topic from its start")
    consume.add_argument("topic", metavar="TOPIC")
    consume.add_argument(
        "-n",
        "--records",
        type=int,
        default=0,
        help="stop after N records (default: everything there is)",
    )
    consume.add_argument(
        "--fetch-max-bytes",
        type=int,
        default=8 << 20,
        metavar="BYTES",
        help="per Fetch and per partition (default 8 MiB)",
    )
    consume.set_defaults(run=_consume)
    for parser in (produce, consume):
        add_connection(parser)

"""``millpond produce``: one record per input line, from stdin or a file.

Keyed records go to the partition Kafka's Java client (and librdkafka's murmur2_random)
chooses, murmur2 of the key, so a key lands where those producers put it; records
without a key go round-robin. Records are sent in batches of ``--batch-size``, one
Produce request per leader, and the command ends with where every batch landed.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import IO

from millpond.cli import add_command, add_connection, connect
from millpond.cli.client import Client
from millpond.cli.errors import CliError, kafka_error
from millpond.cli.output import Progress, emit
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.produce_request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from millpond.wire.records import Compression, NewRecord, build_batch

_M = 0x5BD1E995
#: Produce errors after which a partition's batch is known not to be stored: safe to send
#: again without an idempotent producer.
NOTHING_WRITTEN = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
    }
)


def murmur2(data: bytes) -> int:
    """Kafka's default partitioner hash (32-bit murmur2, seed 0x9747b28c), as a signed int."""
    length = len(data)
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    end = length - length % 4
    for i in range(0, end, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * _M) & 0xFFFFFFFF
        h = ((h * _M) & 0xFFFFFFFF) ^ k
    tail = length % 4
    if tail == 3:
        h ^= data[end + 2] << 16
    if tail >= 2:
        h ^= data[end + 1] << 8
    if tail >= 1:
        h ^= data[end]
        h = (h * _M) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * _M) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(key: bytes, count: int) -> int:
    return (murmur2(key) & 0x7FFFFFFF) % count


#: ``--acks`` as Kafka's producers spell it: ``acks=all`` is ``-1``.
ACKS = {"all": -1, "-1": -1, "0": 0, "1": 1}


def parse_acks(value: str) -> int:
    """``--acks``' value: all, -1, 0 or 1 (argparse reports anything else)."""
    acks = ACKS.get(value.strip().lower())
    if acks is None:
        raise argparse.ArgumentTypeError(
            f"invalid value {value!r}: use all (the same as -1), 1 or 0"
        )
    return acks


def parse_headers(pairs: list[str]) -> list[tuple[str, bytes | None]]:
    headers: list[tuple[str, bytes | None]] = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CliError(f"bad --header {pair!r}", "write it as --header KEY=VALUE")
        headers.append((key, value.encode()))
    return headers


def records_of(
    lines: Iterable[bytes], separator: bytes | None, headers: list[tuple[str, bytes | None]]
) -> Iterator[NewRecord]:
    for number, raw in enumerate(lines, 1):
        line = raw.rstrip(b"\n").removesuffix(b"\r")
        key = None
        if separator is not None:
            key, sep, line = line.partition(separator)
            if not sep:
                raise CliError(
                    f"line {number} has no key separator {separator.decode()!r}",
                    "give every line a key, or leave out --key-separator",
                )
        yield NewRecord(key=key, value=line, headers=headers)


def produce_request(
    topic: str, topic_id: bytes, batches: dict[int, bytes], acks: int, timeout_ms: int
) -> ProduceRequest:
    """One Produce of a batch per partition (names and ids both set: the version picks)."""
    return ProduceRequest(
        acks=acks,
        timeout_ms=timeout_ms,
        transactional_id=None,
        topic_data=[
            TopicProduceData(
                name=topic,
                topic_id=topic_id,
                partition_data=[
                    PartitionProduceData(index=p, records=b) for p, b in sorted(batches.items())
                ],
            )
        ],
    )


class Producer:
    """Sends batches of records to their partitions' leaders and remembers what landed."""

    def __init__(
        self, client: Client, topic: str, acks: int, compression: Compression, timeout_ms: int
    ) -> None:
        self.client = client
        self.topic = topic
        self.acks = acks
        self.compression = compression
        self.timeout_ms = timeout_ms
        # A missing topic is created if the broker auto-creates topics, as for Kafka's
        # console producer and kcat (their metadata requests allow it).
        self.leaders = client.partitions(topic, create=True)
        self.landed: dict[int, list[int]] = {}  # partition -> [first offset, last, count]

    def send(self, pending: dict[int, list[NewRecord]]) -> None:
        """Send ``pending`` to the partitions' leaders; partitions answered with an error
        that means nothing was written there (leadership moved, or a new topic not yet
        known) are sent again to their current leader until the timeout."""
        deadline = time.monotonic() + self.timeout_ms / 1000
        todo = {p: records for p, records in pending.items() if records}
        while todo:
            by_leader: dict[int, dict[int, list[NewRecord]]] = {}
            for partition, records in todo.items():
                by_leader.setdefault(self.leaders[partition], {})[partition] = records
            failed: dict[int, int] = {}
            for leader, parts in by_leader.items():
                failed.update(self._send_to(leader, parts))
            if failed and time.monotonic() > deadline:
                partition, code = next(iter(failed.items()))
                raise kafka_error(code, f"producing to {self.topic}-{partition}")
            if failed:
                time.sleep(0.1)
                self.leaders = self.client.partitions(self.topic, create=True)
            todo = {p: todo[p] for p in failed}

    def _send_to(self, leader: int, parts: dict[int, list[NewRecord]]) -> dict[int, int]:
        """Send one Produce to ``leader``; returns the partitions to send again."""
        batches = {p: build_batch(recs, compression=self.compression) for p, recs in parts.items()}
        request = produce_request(
            self.topic, self.client.topic_id(self.topic), batches, self.acks, self.timeout_ms
        )
        conn = self.client.node(leader)
        if self.acks == 0:
            conn.send_only(request)
            for p, recs in parts.items():
                self._landed(p, -1, len(recs))
            return {}
        response = conn.request(request)
        again: dict[int, int] = {}
        for answer in response.responses:
            for part in answer.partition_responses:
                if part.error_code in NOTHING_WRITTEN:
                    again[part.index] = part.error_code
                    continue
                if part.error_code:
                    raise kafka_error(
                        part.error_code,
                        f"producing to {self.topic}-{part.index}",
                        part.error_message,
                    )
                self._landed(part.index, part.base_offset, len(parts[part.index]))
        return again

    def _landed(self, partition: int, base_offset: int, count: int) -> None:
        entry = self.landed.setdefault(partition, [base_offset, base_offset, 0])
        entry[1] = base_offset + count - 1 if base_offset >= 0 else -1
        entry[2] += count


def _lines(args: argparse.Namespace) -> tuple[IO[bytes], int | None]:
    if args.file in (None, "-"):
        return sys.stdin.buffer, None
    try:
        return open(args.file, "rb"), os.path.getsize(args.file)  # noqa: SIM115 (closed below)
    except OSError as exc:
        raise CliError(f"cannot read {args.file}: {exc.strerror}", "check the path") from None


def _produce(args: argparse.Namespace) -> int:
    separator = args.key_separator.encode() if args.key_separator is not None else None
    headers = parse_headers(args.header)
    source, size = _lines(args)
    progress = Progress(size, f"producing to {args.topic}", unit="bytes")
    try:
        with connect(args) as client:
            producer = Producer(
                client,
                args.topic,
                args.acks,
                Compression[args.compression.upper()],
                args.timeout_ms,
            )
            count = len(producer.leaders)
            if args.partition is not None and args.partition not in producer.leaders:
                raise CliError(
                    f"topic {args.topic!r} has no partition {args.partition}",
                    f"pass --partition between 0 and {count - 1}",
                )
            pending: dict[int, list[NewRecord]] = {}
            buffered = 0
            next_partition = 0
            # A person typing at a terminal sees each line sent as they press Enter.
            batch_size = 1 if source.isatty() else args.batch_size
            for record in records_of(source, separator, headers):
                if args.partition is not None:
                    partition = args.partition
                elif record.key is not None:
                    partition = partition_for(record.key, count)
                else:
                    partition, next_partition = next_partition, (next_partition + 1) % count
                pending.setdefault(partition, []).append(record)
                buffered += 1
                progress.advance(len(record.value or b"") + len(record.key or b"") + 1)
                if buffered >= batch_size:
                    producer.send(pending)
                    pending, buffered = {}, 0
            producer.send(pending)
    finally:
        progress.close()
        if source is not sys.stdin.buffer:
            source.close()
    rows = [
        {"partition": p, "records": n, "first_offset": first, "last_offset": last}
        for p, (first, last, n) in sorted(producer.landed.items())
    ]
    emit(
        args,
        rows,
        ["partition", "records", "first_offset", "last_offset"],
        data={"topic": args.topic, "partitions": rows},
    )
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = add_command(
        commands, "produce", "produce one record per line of stdin or a file", __doc__
    )
    parser.add_argument("topic", metavar="TOPIC")
    parser.add_argument("-f", "--file", metavar="FILE", help="read lines from FILE (default stdin)")
    parser.add_argument(
        "-k",
        "--key-separator",
        metavar="SEP",
        help="split each line at the first SEP into key and value",
    )
    parser.add_argument(
        "-H",
        "--header",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a header on every record (repeatable)",
    )
    parser.add_argument(
        "-p",
        "--partition",
        type=int,
        help="produce to this partition (default: by key, else round-robin)",
    )
    parser.add_argument(
        "--acks",
        type=parse_acks,
        default=-1,
        metavar="{all,-1,1,0}",
        help="all or -1 (every in-sync replica, the default), 1 (the leader) or 0 (none)",
    )
    parser.add_argument(
        "-z", "--compression", default="none", choices=["none", "gzip", "snappy", "lz4", "zstd"]
    )
    parser.add_argument(
        "--batch-size",
        type=int,
        default=1000,
        metavar="N",
        help="records per Produce request (default 1000; 1 when typed at a terminal)",
    )
    add_connection(parser)
    parser.set_defaults(run=_produce)

"""``millpond consume``: print a topic's records.

By default it reads up to the end each partition had when the command started, then
exits; ``--follow`` keeps waiting for new records. With ``--group`` it starts where the
group's committed offsets point and commits how far it read when it stops, as a simple
consumer (generation -1, no membership): it takes no part in rebalances and the broker
accepts its commits only while the group has no active members.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from millpond.cli import add_command, add_connection, connect
from millpond.cli.client import EARLIEST, LATEST, Client
from millpond.cli.errors import CliError, kafka_error
from millpond.cli.output import Progress, text
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.fetch_request import FetchPartition, FetchRequest, FetchTopic
from millpond.wire.records import Record, iter_batches

TEMPLATE_FIELDS = ("topic", "partition", "offset", "timestamp", "key", "value", "headers")


def fetch(
    client: Client,
    topic: str,
    leaders: dict[int, int],
    positions: dict[int, int],
    max_wait_ms: int,
    max_bytes: int = 1 << 20,
) -> tuple[dict[int, list[Record]], dict[int, int]]:
    """One Fetch per leader from ``positions``: ``({partition: records}, {partition: the
    next offset to fetch})``; control records and those before a position are skipped."""
    by_leader: dict[int, list[int]] = {}
    for partition in positions:
        by_leader.setdefault(leaders[partition], []).append(partition)
    records: dict[int, list[Record]] = {}
    next_positions = dict(positions)
    topic_id = client.topic_id(topic)
    for leader, partitions in by_leader.items():
        request = FetchRequest(
            replica_id=-1,
            max_wait_ms=max_wait_ms,
            min_bytes=1,
            max_bytes=64 << 20,
            topics=[
                FetchTopic(
                    topic=topic,
                    topic_id=topic_id,
                    partitions=[
                        FetchPartition(
                            partition=p, fetch_offset=positions[p], partition_max_bytes=max_bytes
                        )
                        for p in partitions
                    ],
                )
            ],
        )
        response = client.node(leader).request(request)
        if response.error_code:
            raise kafka_error(response.error_code, f"fetching from {topic}")
        for answer in response.responses:
            for part in answer.partitions:
                p = part.partition_index
                if part.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    raise CliError(
                        f"offset {positions[p]} is out of range for {topic}-{p}",
                        f"see the partition's offsets with `millpond topic describe {topic}`",
                    )
                if part.error_code:
                    raise kafka_error(part.error_code, f"fetching from {topic}-{p}")
                got = records.setdefault(p, [])
                for batch in iter_batches(part.records or b"", allow_truncated_tail=True):
                    next_positions[p] = max(next_positions[p], batch.next_offset)
                    if batch.is_control:
                        continue
                    got.extend(r for r in batch.records() if r.offset >= positions[p])
    return records, next_positions


def record_data(topic: str, partition: int, record: Record) -> dict[str, Any]:
    return {
        "topic": topic,
        "partition": partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key": text(record.key),
        "value": text(record.value),
        "headers": [{"key": k, "value": text(v)} for k, v in record.headers],
    }


def _formatter(args: argparse.Namespace) -> Any:
    if args.format == "json":
        return lambda data: json.dumps(data)
    template = args.template.replace("\\n", "\n").replace("\\t", "\t")

    def render(data: dict[str, Any]) -> str:
        fields = dict(data)
        fields["headers"] = ",".join(f"{h['key']}={h['value']}" for h in data["headers"])
        fields["key"] = "" if data["key"] is None else data["key"]
        fields["value"] = "" if data["value"] is None else data["value"]
        try:
            rendered: str = template.format_map(fields)
        except (KeyError, IndexError, ValueError) as exc:
            raise CliError(
                f"bad --template {args.template!r}: {exc}",
                "use the fields " + ", ".join("{" + f + "}" for f in TEMPLATE_FIELDS),
            ) from None
        return rendered

    return render


def start_offsets(
    client: Client, topic: str, leaders: dict[int, int], where: str
) -> dict[int, int]:
    """Where ``--offset`` (start, end, N or @TIMESTAMP_MS) points in each partition."""
    if where == "start":
        return {p: o for p, (o, _) in client.list_offsets(topic, leaders, EARLIEST).items()}
    if where == "end":
        return {p: o for p, (o, _) in client.list_offsets(topic, leaders, LATEST).items()}
    if where.startswith("@") and where[1:].isdigit():
        found = client.list_offsets(topic, leaders, int(where[1:]))
        end = client.list_offsets(topic, leaders, LATEST)
        return {p: o if o >= 0 else end[p][0] for p, (o, _) in found.items()}
    if where.isdigit():
        return dict.fromkeys(leaders, int(where))
    raise CliError(
        f"bad --offset {where!r}",
        "pass start, end, an offset (e.g. 42) or @TIMESTAMP_MS (e.g. @1700000000000)",
    )


def _consume(args: argparse.Namespace) -> int:
    render = _formatter(args)
    out = sys.stdout
    printed = 0
    with connect(args) as client:
        leaders = client.partitions(args.topic)
        if args.partition:
            missing = sorted(set(args.partition) - set(leaders))
            if missing:
                raise CliError(
                    f"topic {args.topic!r} has no partition {missing[0]}",
                    f"pass partitions between 0 and {len(leaders) - 1}",
                )
            leaders = {p: leaders[p] for p in args.partition}
        positions = start_offsets(client, args.topic, leaders, args.offset)
        if args.group:
            committed = client.committed(args.group, {args.topic: sorted(leaders)})
            positions.update(
                {p: committed[(args.topic, p)] for p in leaders if (args.topic, p) in committed}
            )
        ends = {p: o for p, (o, _) in client.list_offsets(args.topic, leaders, LATEST).items()}
        deadline = time.monotonic() + args.idle_timeout_ms / 1000 if args.follow else None
        total = None if args.follow else sum(max(ends[p] - o, 0) for p, o in positions.items())
        progress = Progress(total, f"consuming {args.topic}")
        progress.enabled &= not out.isatty()  # a bar among the records would garble both
        try:
            while True:
                active = (
                    positions
                    if args.follow
                    else {p: o for p, o in positions.items() if o < ends[p]}
                )
                if not active or (args.num is not None and printed >= args.num):
                    break
                got, moved = fetch(client, args.topic, leaders, active, max_wait_ms=500)
                for partition, records in sorted(got.items()):
                    for record in records:
                        if args.num is not None and printed >= args.num:
                            moved[partition] = record.offset  # the first record not printed
                            break
                        out.write(render(record_data(args.topic, partition, record)) + "\n")
                        printed += 1
                out.flush()
                progress.advance(sum(moved[p] - positions[p] for p in moved))
                positions.update(moved)
                if deadline is not None:
                    if any(got.values()):
                        deadline = time.monotonic() + args.idle_timeout_ms / 1000
                    elif args.idle_timeout_ms and time.monotonic() > deadline:
                        break
        except KeyboardInterrupt:
            if args.group:
                client.commit(args.group, {(args.topic, p): o for p, o in positions.items()})
            raise
        finally:
            progress.close()
        if args.group:
            client.commit(args.group, {(args.topic, p): o for p, o in positions.items()})
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = add_command(
        commands,
        "consume",
        "print a topic's records (from the start, an offset, a time, or a group's offsets)",
        __doc__,
    )
    parser.add_argument("topic", metavar="TOPIC")
    parser.add_argument(
        "-o",
        "--offset",
        default="start",
        metavar="WHERE",
        help="start, end, an offset N, or @TIMESTAMP_MS (default start); "
        "with --group, only for partitions the group has not committed",
    )
    parser.add_argument(
        "--from-beginning",
        dest="offset",
        action="store_const",
        const="start",
        help="the same as --offset start",
    )
    parser.add_argument(
        "-p",
        "--partition",
        type=int,
        action="append",
        metavar="N",
        help="read only this partition (repeatable; default all)",
    )
    parser.add_argument(
        "-g",
        "--group",
        help="start from this group's committed offsets and "
        "commit as a simple consumer (generation -1) when done",
    )
    parser.add_argument("-n", "--num", type=int, metavar="N", help="stop after N records")
    parser.add_argument(
        "-f", "--follow", action="store_true", help="keep waiting for new records (Ctrl-C to stop)"
    )
    parser.add_argument(
        "--idle-timeout-ms",
        type=int,
        default=0,
        metavar="MS",
        help="with --follow, stop after MS without a new record (default never)",
    )
    parser.add_argument(
        "-t",
        "--template",
        default="{value}",
        help="how to print each record (default '{value}'); fields: "
        + " ".join("{" + f + "}" for f in TEMPLATE_FIELDS),
    )
    add_connection(parser, output=False)
    parser.add_argument(
        "--format",
        choices=["text", "json"],
        default="text",
        help="text by --template (default), or one JSON object per record",
    )
    parser.set_defaults(run=_consume)

"""``millpond consume``: print a topic's records.

By default it reads up to the end each partition had when it started reading, then
exits; ``--follow`` keeps waiting for new records. With ``--group`` it joins the group as
a member (the classic protocol with the "range" assignor, which Kafka's consumers offer
by default), reads the partitions the group assigns it from the group's committed offsets
(``--offset`` where there are none), commits how far it read at every rebalance and at
the end, and leaves the group.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from collections.abc import Iterator
from typing import Any

from millpond.cli import add_command, add_connection, connect
from millpond.cli.client import EARLIEST, LATEST, Client
from millpond.cli.errors import CliError, kafka_error
from millpond.cli.membership import GroupMember
from millpond.cli.output import Progress, text
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.fetch_request import FetchPartition, FetchRequest, FetchTopic
from millpond.wire.records import (
    ControlRecordType,
    Record,
    RecordBatch,
    iter_batches,
    parse_control_key,
)

#: Kafka's isolation levels by their names in consumer configs.
ISOLATION = {"read_uncommitted": 0, "read_committed": 1}
RETRIABLE = frozenset(code for code in ErrorCode if code.retriable)
TEMPLATE_FIELDS = ("topic", "partition", "offset", "timestamp", "key", "value", "headers")


def fetch(
    client: Client,
    topic: str,
    leaders: dict[int, int],
    positions: dict[int, int],
    max_wait_ms: int,
    max_bytes: int = 1 << 20,
    isolation: int = 0,
) -> tuple[dict[int, list[Record]], dict[int, int], dict[int, int]]:
    """One Fetch per leader from ``positions``: ``({partition: records}, {partition: the
    next offset to fetch}, {partition: a retriable error code})``; control records, those
    before a position and, with ``isolation`` 1 (read_committed), those of aborted
    transactions are skipped."""
    by_leader: dict[int, list[int]] = {}
    for partition in positions:
        by_leader.setdefault(leaders[partition], []).append(partition)
    records: dict[int, list[Record]] = {}
    retry: dict[int, int] = {}
    next_positions = dict(positions)
    topic_id = client.topic_id(topic)
    for leader, partitions in by_leader.items():
        request = FetchRequest(
            replica_id=-1,
            max_wait_ms=max_wait_ms,
            min_bytes=1,
            max_bytes=64 << 20,
            isolation_level=isolation,
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
                if part.error_code in RETRIABLE:  # e.g. leadership moved: ask again
                    retry[p] = part.error_code
                    continue
                if part.error_code:
                    raise kafka_error(part.error_code, f"fetching from {topic}-{p}")
                got = records.setdefault(p, [])
                aborted = sorted(
                    (a.first_offset, a.producer_id) for a in part.aborted_transactions or []
                )
                for batch, visible in _visible(part.records or b"", aborted):
                    next_positions[p] = max(next_positions[p], batch.next_offset)
                    if visible:
                        got.extend(r for r in batch.records() if r.offset >= positions[p])
    return records, next_positions, retry


def _visible(records: bytes, aborted: list[tuple[int, int]]) -> Iterator[tuple[RecordBatch, bool]]:
    """Each batch of a Fetch answer, and whether a consumer shows its records: not a
    control batch's, nor an aborted transaction's. ``aborted`` lists the answer's aborted
    transactions as ``(first offset, producer id)``, sorted: as Kafka's consumers do, a
    producer's transactional batches are dropped from that first offset until the
    producer's ABORT marker."""
    dropping: set[int] = set()
    for batch in iter_batches(records, allow_truncated_tail=True):
        while aborted and aborted[0][0] <= batch.last_offset:
            dropping.add(aborted.pop(0)[1])
        if batch.is_control:
            if batch.producer_id in dropping and _is_abort(batch):
                dropping.discard(batch.producer_id)
            yield batch, False
        else:
            yield batch, not (batch.is_transactional and batch.producer_id in dropping)


def _is_abort(batch: RecordBatch) -> bool:
    record = next(iter(batch.records()), None)
    return record is not None and parse_control_key(record.key).type == ControlRecordType.ABORT


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


class _Session:
    """One run of ``consume``: what was printed so far, across group generations."""

    def __init__(self, client: Client, args: argparse.Namespace) -> None:
        self.client = client
        self.args = args
        self.render = _formatter(args)
        self.printed = 0
        self.progress: Progress | None = None

    def limit_reached(self) -> bool:
        return self.args.num is not None and self.printed >= self.args.num

    def positions(self, leaders: dict[int, int], member: GroupMember | None) -> dict[int, int]:
        """Where to start: ``--offset``, or the group's committed offsets where it has some."""
        if not leaders:
            return {}
        positions = start_offsets(self.client, self.args.topic, leaders, self.args.offset)
        if member is not None:
            committed = self.client.committed(member.group, {self.args.topic: sorted(leaders)})
            positions.update({p: o for (_, p), o in committed.items() if p in positions})
        return positions

    def read(
        self, leaders: dict[int, int], positions: dict[int, int], member: GroupMember | None
    ) -> bool:
        """Print records from ``positions`` (moved as it goes) until the end offsets seen
        now (or, with --follow, the idle timeout); False when the group rebalances first."""
        args, topic = self.args, self.args.topic
        isolation = ISOLATION[args.isolation_level]
        latest = self.client.list_offsets(topic, leaders, LATEST, isolation)
        ends = {p: o for p, (o, _) in latest.items()}
        if self.progress is None:
            total = None if args.follow else sum(max(ends[p] - o, 0) for p, o in positions.items())
            self.progress = Progress(total, f"consuming {topic}")
            self.progress.enabled &= not sys.stdout.isatty()  # a bar among the records...
        idle_s = args.idle_timeout_ms / 1000
        idle_until = time.monotonic() + idle_s
        beat_s = args.session_timeout_ms / 3000
        next_beat = time.monotonic() + beat_s
        failing_since = 0.0
        while not self.limit_reached():
            if member is not None and time.monotonic() >= next_beat:
                if not member.heartbeat():
                    return False
                next_beat = time.monotonic() + beat_s
            active = {p: o for p, o in positions.items() if args.follow or o < ends[p]}
            if not active and not args.follow:
                return True
            if not active:
                time.sleep(0.5)
                got: dict[int, list[Record]] = {}
            else:
                got, moved, retry = fetch(
                    self.client, topic, leaders, active, max_wait_ms=500, isolation=isolation
                )
                if retry:
                    failing_since = failing_since or time.monotonic()
                    if time.monotonic() - failing_since > args.timeout_ms / 1000:
                        partition, code = next(iter(retry.items()))
                        raise kafka_error(code, f"fetching from {topic}-{partition}")
                    time.sleep(0.1)
                    fresh = self.client.partitions(topic)
                    leaders.update({p: fresh[p] for p in leaders})
                else:
                    failing_since = 0.0
                for partition, records in sorted(got.items()):
                    for record in records:
                        if self.limit_reached():
                            moved[partition] = record.offset  # the first record not printed
                            break
                        sys.stdout.write(self.render(record_data(topic, partition, record)) + "\n")
                        self.printed += 1
                sys.stdout.flush()
                self.progress.advance(sum(moved[p] - positions[p] for p in moved))
                positions.update(moved)
            if any(got.values()):
                idle_until = time.monotonic() + idle_s
            elif args.follow and idle_s and time.monotonic() > idle_until:
                return True
        return True


def _consume(args: argparse.Namespace) -> int:
    if args.group and args.partition:
        raise CliError(
            "--partition and --group do not go together",
            "the group assigns the partitions: leave out --partition",
        )
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
        session = _Session(client, args)
        try:
            if not args.group:
                session.read(leaders, session.positions(leaders, None), None)
                return 0
            _consume_in_group(
                session, GroupMember(client, args.group, args.topic, args.session_timeout_ms)
            )
        finally:
            if session.progress is not None:
                session.progress.close()
    return 0


def _consume_in_group(session: _Session, member: GroupMember) -> None:
    """Read what the group assigns, generation after generation, committing as a member
    at the end of each; leave the group when done (or interrupted)."""
    positions: dict[int, int] = {}
    try:
        done = False
        while not done:
            assigned = member.join()
            leaders = session.client.partitions(member.topic)
            mine = {p: leaders[p] for p in assigned if p in leaders}
            positions = session.positions(mine, member)
            done = session.read(mine, positions, member)
            member.commit(positions)
            positions = {}
    except KeyboardInterrupt:
        if positions:
            member.commit(positions)
        raise
    finally:
        with contextlib.suppress(CliError):  # the session timeout removes it anyway
            member.leave()


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
        help="consume as a member of this group: its partitions, from its committed "
        "offsets, committing as it goes",
    )
    parser.add_argument("-n", "--num", type=int, metavar="N", help="stop after N records")
    parser.add_argument(
        "-f", "--follow", action="store_true", help="keep waiting for new records (Ctrl-C to stop)"
    )
    parser.add_argument(
        "--isolation-level",
        choices=sorted(ISOLATION),
        default="read_uncommitted",
        help="read_committed: only committed transactions' records, up to the last stable "
        "offset (default read_uncommitted: every record)",
    )
    parser.add_argument(
        "--session-timeout-ms",
        type=int,
        default=10000,
        metavar="MS",
        help="with --group, how long the group waits for a silent member (default 10000)",
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

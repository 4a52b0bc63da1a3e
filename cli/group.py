"""``millpond group``: list, describe (with lag), reset-offsets and delete consumer groups."""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from typing import Any

from millpond.cli import add_connection, connect
from millpond.cli.client import EARLIEST, LATEST, Client
from millpond.cli.errors import CliError, error_text, kafka_error
from millpond.cli.membership import assigned_partitions
from millpond.cli.output import blank_line, emit, emit_json, table
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.delete_groups_request import DeleteGroupsRequest
from millpond.wire.generated.api.describe_groups_request import DescribeGroupsRequest
from millpond.wire.generated.api.list_groups_request import ListGroupsRequest

#: States in which a group has no members, so offsets may be changed from outside.
INACTIVE = {"Empty", "Dead"}


def _list(args: argparse.Namespace) -> int:
    with connect(args) as client:
        client.metadata([])
        groups: dict[str, dict[str, Any]] = {}
        for node in sorted(client.brokers):  # each broker lists the groups it coordinates
            response = client.node(node).request(ListGroupsRequest())
            if response.error_code:
                raise kafka_error(response.error_code, f"ListGroups of broker {node}")
            for g in response.groups:
                groups[g.group_id] = {
                    "group": g.group_id,
                    "state": g.group_state or None,
                    "protocol_type": g.protocol_type or None,
                    "coordinator": node,
                }
    emit(args, [groups[g] for g in sorted(groups)], ["group", "state", "protocol_type"])
    return 0


def describe_group(client: Client, group: str) -> Any:
    _, response = client.group_request(
        group, lambda _: DescribeGroupsRequest(groups=[group]), lambda r: r.groups[0].error_code
    )
    (found,) = response.groups
    if found.error_code == ErrorCode.GROUP_ID_NOT_FOUND or (
        found.error_code == 0 and found.group_state == "Dead"
    ):
        raise CliError(
            f"group {group!r} does not exist", "list the groups with `millpond group list`"
        )
    if found.error_code:
        raise kafka_error(found.error_code, f"describing group {group!r}", found.error_message)
    return found


def _describe(args: argparse.Namespace) -> int:
    with connect(args) as client:
        found = describe_group(client, args.group)
        committed = client.committed(args.group, None)
        owners: dict[tuple[str, int], Any] = {}
        for member in found.members:
            if found.protocol_type == "consumer":
                for tp in assigned_partitions(member.member_assignment or b""):
                    owners[tp] = member
        topics = sorted({t for t, _ in [*committed, *owners]})
        ends: dict[tuple[str, int], int] = {}
        for topic in topics:
            leaders = client.partitions(topic)
            wanted = {
                p: leaders[p] for t, p in [*committed, *owners] if t == topic and p in leaders
            }
            ends.update(
                {(topic, p): o for p, (o, _) in client.list_offsets(topic, wanted, LATEST).items()}
            )
    offsets: list[dict[str, Any]] = []
    for tp in sorted(set(committed) | set(owners)):
        current, end = committed.get(tp), ends.get(tp)
        owner = owners.get(tp)
        offsets.append(
            {
                "topic": tp[0],
                "partition": tp[1],
                "current_offset": current,
                "log_end_offset": end,
                "lag": None if current is None or end is None else max(end - current, 0),
                "consumer_id": owner.member_id if owner else None,
                "client_id": owner.client_id if owner else None,
            }
        )
    members = [
        {
            "member_id": m.member_id,
            "client_id": m.client_id,
            "host": m.client_host,
            "partitions": len(assigned_partitions(m.member_assignment or b"")),
        }
        for m in found.members
    ]
    summary = {
        "group": args.group,
        "state": found.group_state,
        "protocol_type": found.protocol_type,
        "protocol": found.protocol_data,
        "members": len(members),
        "total_lag": sum(o["lag"] or 0 for o in offsets),
    }
    if args.format == "json":
        emit_json({**summary, "members": members, "offsets": offsets})
        return 0
    table([{"key": k, "value": v} for k, v in summary.items()], ["key", "value"])
    blank_line()
    table(
        offsets,
        [
            "topic",
            "partition",
            "current_offset",
            "log_end_offset",
            "lag",
            "consumer_id",
            "client_id",
        ],
    )
    if members:
        blank_line()
        table(members, ["member_id", "client_id", "host", "partitions"])
    return 0


def _topic_partitions(client: Client, args: argparse.Namespace) -> dict[str, dict[int, int]]:
    """``{topic: {partition: leader}}`` the reset applies to."""
    if args.all_topics:
        names = sorted({t for t, _ in client.committed(args.group, None)})
        if not names:
            raise CliError(
                f"group {args.group!r} has no committed offsets",
                "name the topics with --topic TOPIC",
            )
        return {t: client.partitions(t) for t in names}
    if not args.topic:
        raise CliError("no topic to reset", "pass --topic TOPIC[:P,P...] or --all-topics")
    result: dict[str, dict[int, int]] = {}
    for spec in args.topic:
        name, _, parts = spec.partition(":")
        leaders = client.partitions(name)
        if parts:
            try:
                chosen = [int(p) for p in parts.split(",")]
            except ValueError:
                raise CliError(
                    f"bad --topic {spec!r}", "write it as TOPIC or TOPIC:0,1,2"
                ) from None
            missing = [p for p in chosen if p not in leaders]
            if missing:
                raise CliError(
                    f"topic {name!r} has no partition {missing[0]}",
                    f"pass partitions between 0 and {len(leaders) - 1}",
                )
            leaders = {p: leaders[p] for p in chosen}
        result.setdefault(name, {}).update(leaders)
    return result


def _timestamp(args: argparse.Namespace) -> int | None:
    if args.to_timestamp is not None:
        return int(args.to_timestamp)
    if args.to_datetime is not None:
        try:
            moment = datetime.fromisoformat(args.to_datetime)
        except ValueError:
            raise CliError(
                f"bad --to-datetime {args.to_datetime!r}",
                "write it as ISO 8601, e.g. 2026-11-29T15:00:00+00:00",
            ) from None
        return int(moment.timestamp() * 1000)
    return None


def _reset_offsets(args: argparse.Namespace) -> int:
    rows = []
    with connect(args) as client:
        _, found = client.group_request(
            args.group,
            lambda _: DescribeGroupsRequest(groups=[args.group]),
            lambda r: r.groups[0].error_code,
        )
        state = found.groups[0].group_state
        if state and state not in INACTIVE:
            raise CliError(
                f"group {args.group!r} is {state}: offsets can be reset only while it has "
                "no members",
                "stop the group's consumers and retry",
            )
        targets = _topic_partitions(client, args)
        committed = client.committed(args.group, {t: sorted(p) for t, p in targets.items()})
        timestamp = _timestamp(args)
        new: dict[tuple[str, int], int] = {}
        for topic, leaders in targets.items():
            start = client.list_offsets(topic, leaders, EARLIEST)
            end = client.list_offsets(topic, leaders, LATEST)
            by_time = (
                client.list_offsets(topic, leaders, timestamp) if timestamp is not None else {}
            )
            for p in sorted(leaders):
                low, high = start[p][0], end[p][0]
                old = committed.get((topic, p))
                if args.to_earliest:
                    target = low
                elif args.to_latest:
                    target = high
                elif args.to_offset is not None:
                    target = args.to_offset
                elif args.shift_by is not None:
                    target = (high if old is None else old) + args.shift_by
                else:
                    found_offset = by_time[p][0]
                    target = high if found_offset < 0 else found_offset
                new[(topic, p)] = min(max(target, low), high)  # as Kafka's tool: within the log
                rows.append(
                    {
                        "topic": topic,
                        "partition": p,
                        "old_offset": old,
                        "new_offset": new[(topic, p)],
                    }
                )
        if args.execute:
            client.commit(args.group, new)
    emit(
        args,
        rows,
        ["topic", "partition", "old_offset", "new_offset"],
        data={"group": args.group, "executed": args.execute, "offsets": rows},
    )
    if not args.execute:
        sys.stderr.write("dry run: nothing changed; pass --execute to commit these offsets\n")
    return 0


def _delete_group(client: Client, group: str) -> Any:
    request = DeleteGroupsRequest(groups_names=[group])
    return client.group_request(group, lambda _: request, lambda r: r.results[0].error_code)[1]


def _delete(args: argparse.Namespace) -> int:
    rows = []
    with connect(args) as client:
        for group in args.groups:
            response = _delete_group(client, group)
            for r in response.results:
                status = error_text(r.error_code, r.error_message) if r.error_code else "OK"
                rows.append({"group": r.group_id, "status": status})
    emit(args, rows, ["group", "status"])
    return 0 if all(r["status"] == "OK" for r in rows) else 1


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = commands.add_parser("group", help="list, describe, reset and delete consumer groups")
    verbs = group.add_subparsers(dest="verb", required=True, metavar="VERB")

    listing = verbs.add_parser("list", help="list the groups of every broker")
    listing.set_defaults(run=_list)

    describe = verbs.add_parser(
        "describe", help="state, members, and committed offsets with their lag"
    )
    describe.add_argument("group", metavar="GROUP")
    describe.set_defaults(run=_describe)

    reset = verbs.add_parser(
        "reset-offsets",
        help="move a group's committed offsets (dry run unless --execute)",
        description="Move an inactive group's committed offsets. Without --execute, only "
        "shows what would change. Offsets are kept within each partition's log.",
    )
    reset.add_argument("group", metavar="GROUP")
    reset.add_argument(
        "--topic",
        action="append",
        metavar="TOPIC[:P,P...]",
        help="a topic, or some of its partitions (repeatable)",
    )
    reset.add_argument(
        "--all-topics", action="store_true", help="every topic the group has committed offsets for"
    )
    to = reset.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true")
    to.add_argument("--to-latest", action="store_true")
    to.add_argument("--to-offset", type=int, metavar="N")
    to.add_argument("--shift-by", type=int, metavar="N", help="move by N (negative: back)")
    to.add_argument(
        "--to-timestamp",
        type=int,
        metavar="MS",
        help="the first offset at or after this time (epoch milliseconds)",
    )
    to.add_argument("--to-datetime", metavar="ISO8601", help="the same, as a date and time")
    reset.add_argument("--execute", action="store_true", help="commit the new offsets")
    reset.set_defaults(run=_reset_offsets)

    delete = verbs.add_parser("delete", help="delete inactive groups and their offsets")
    delete.add_argument("groups", nargs="+", metavar="GROUP")
    delete.set_defaults(run=_delete)

    for parser in (listing, describe, reset, delete):
        add_connection(parser)

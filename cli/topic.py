"""``millpond topic``: create, list, describe, alter-config, delete, add-partitions."""

from __future__ import annotations

import argparse
from typing import Any

from millpond.cli import add_connection, connect
from millpond.cli.client import EARLIEST, LATEST, Client
from millpond.cli.errors import CliError, error_text, kafka_error
from millpond.cli.output import blank_line, emit, emit_json, table
from millpond.wire.generated.api.create_partitions_request import (
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from millpond.wire.generated.api.create_topics_request import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from millpond.wire.generated.api.delete_topics_request import DeleteTopicsRequest, DeleteTopicState
from millpond.wire.generated.api.describe_configs_request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from millpond.wire.generated.api.incremental_alter_configs_request import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)

TOPIC_RESOURCE, BROKER_RESOURCE = 2, 4
SET, DELETE = 0, 1
#: DescribeConfigs' config_source values, as Kafka's tools name them.
CONFIG_SOURCES = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "DYNAMIC_CLIENT_METRICS_CONFIG",
    8: "DYNAMIC_GROUP_CONFIG",
}


def key_values(pairs: list[str], flag: str) -> dict[str, str]:
    """``["k=v", ...]`` as a dict; a pair without ``=`` is the user's error."""
    result = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise CliError(f"bad {flag} {pair!r}", f"write it as {flag} KEY=VALUE")
        result[key] = value
    return result


def _create(args: argparse.Namespace) -> int:
    configs = key_values(args.config, "--config")
    with connect(args) as client:
        request = CreateTopicsRequest(
            topics=[
                CreatableTopic(
                    name=name,
                    num_partitions=args.partitions,
                    replication_factor=args.replication_factor,
                    configs=[CreatableTopicConfig(name=k, value=v) for k, v in configs.items()],
                )
                for name in args.topics
            ],
            timeout_ms=args.timeout_ms,
            validate_only=args.dry_run,
        )
        response = client.controller().request(request)
        rows = [
            {
                "topic": t.name,
                "id": _uuid(t.topic_id),
                "partitions": t.num_partitions,
                "status": "OK" if t.error_code == 0 else error_text(t.error_code, t.error_message),
            }
            for t in response.topics
        ]
        if not args.dry_run:
            for row in rows:
                if row["status"] == "OK":
                    client.partitions(row["topic"], wait_s=args.timeout_ms / 1000, created=True)
    emit(args, rows, ["topic", "id", "partitions", "status"])
    return 0 if all(r["status"] == "OK" for r in rows) else 1


def _uuid(raw: bytes | None) -> str | None:
    if not raw or raw == bytes(16):
        return None
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _list(args: argparse.Namespace) -> int:
    with connect(args) as client:
        response = client.metadata(None)
    rows = [
        {
            "name": t.name,
            "partitions": len(t.partitions),
            "replicas": max((len(p.replica_nodes) for p in t.partitions), default=0),
            "internal": t.is_internal,
        }
        for t in sorted(response.topics, key=lambda t: t.name or "")
        if args.internal or not t.is_internal
    ]
    emit(args, rows, ["name", "partitions", "replicas"])
    return 0


def describe_configs(client: Client, resource_type: int, name: str) -> list[dict[str, Any]]:
    request = DescribeConfigsRequest(
        resources=[
            DescribeConfigsResource(
                resource_type=resource_type, resource_name=name, configuration_keys=None
            )
        ]
    )
    conn = client.node(int(name)) if resource_type == BROKER_RESOURCE else client.any()
    (result,) = conn.request(request).results
    if result.error_code:
        raise kafka_error(result.error_code, f"configs of {name!r}", result.error_message)
    return [
        {
            "name": c.name,
            "value": "(sensitive)" if c.is_sensitive else c.value,
            "source": CONFIG_SOURCES.get(c.config_source, str(c.config_source)),
            "read_only": c.read_only,
        }
        for c in sorted(result.configs, key=lambda c: c.name)
    ]


def _describe(args: argparse.Namespace) -> int:
    with connect(args) as client:
        leaders = client.partitions(args.topic)
        (meta,) = [t for t in client.metadata([args.topic]).topics if t.name == args.topic]
        start = client.list_offsets(args.topic, leaders, EARLIEST)
        end = client.list_offsets(args.topic, leaders, LATEST)
        configs = describe_configs(client, TOPIC_RESOURCE, args.topic)
    partitions = [
        {
            "partition": p.partition_index,
            "leader": p.leader_id,
            "epoch": p.leader_epoch,
            "replicas": p.replica_nodes,
            "isr": p.isr_nodes,
            "log_start_offset": start[p.partition_index][0],
            "high_watermark": end[p.partition_index][0],
        }
        for p in sorted(meta.partitions, key=lambda p: p.partition_index)
    ]
    summary = {
        "name": args.topic,
        "id": _uuid(meta.topic_id),
        "internal": meta.is_internal,
        "partitions": len(partitions),
    }
    if args.format == "json":
        emit_json({**summary, "partition_details": partitions, "configs": configs})
        return 0
    table([{"key": k, "value": v} for k, v in summary.items()], ["key", "value"])
    blank_line()
    changed = [c for c in configs if c["source"] != "DEFAULT_CONFIG"]
    if changed:
        table(changed, ["name", "value", "source"])
        blank_line()
    table(partitions, list(partitions[0]) if partitions else ["partition"])
    return 0


def alter_configs(
    client: Client, resource_type: int, name: str, sets: list[str], deletes: list[str]
) -> None:
    changes = [
        AlterableConfig(name=k, config_operation=SET, value=v)
        for k, v in key_values(sets, "--set").items()
    ] + [AlterableConfig(name=k, config_operation=DELETE, value=None) for k in deletes]
    if not changes:
        raise CliError("nothing to change", "pass --set KEY=VALUE or --delete KEY")
    request = IncrementalAlterConfigsRequest(
        resources=[
            AlterConfigsResource(resource_type=resource_type, resource_name=name, configs=changes)
        ]
    )
    conn = client.node(int(name)) if resource_type == BROKER_RESOURCE else client.controller()
    (result,) = conn.request(request).responses
    if result.error_code:
        raise kafka_error(result.error_code, f"altering configs of {name!r}", result.error_message)


def _alter_config(args: argparse.Namespace) -> int:
    with connect(args) as client:
        client.partitions(args.topic)
        alter_configs(client, TOPIC_RESOURCE, args.topic, args.set, args.delete)
    rows = [{"topic": args.topic, "status": "OK"}]
    emit(args, rows, ["topic", "status"])
    return 0


def _delete(args: argparse.Namespace) -> int:
    with connect(args) as client:
        request = DeleteTopicsRequest(
            topics=[DeleteTopicState(name=t) for t in args.topics],
            topic_names=args.topics,
            timeout_ms=args.timeout_ms,
        )
        response = client.controller().request(request)
    rows = [
        {
            "topic": r.name,
            "status": "OK" if r.error_code == 0 else error_text(r.error_code, r.error_message),
        }
        for r in response.responses
    ]
    emit(args, rows, ["topic", "status"])
    return 0 if all(r["status"] == "OK" for r in rows) else 1


def _add_partitions(args: argparse.Namespace) -> int:
    with connect(args) as client:
        current = len(client.partitions(args.topic))
        total = args.total if args.total is not None else current + args.num
        request = CreatePartitionsRequest(
            topics=[CreatePartitionsTopic(name=args.topic, count=total, assignments=None)],
            timeout_ms=args.timeout_ms,
        )
        (result,) = client.controller().request(request).results
        if result.error_code:
            raise kafka_error(
                result.error_code, f"adding partitions to {args.topic!r}", result.error_message
            )
        deadline_s = args.timeout_ms / 1000
        client.partitions(args.topic, wait_s=deadline_s)
    emit(
        args,
        [{"topic": args.topic, "partitions": total, "was": current}],
        ["topic", "was", "partitions"],
    )
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    topic = commands.add_parser("topic", help="create, list, describe, alter and delete topics")
    verbs = topic.add_subparsers(dest="verb", required=True, metavar="VERB")

    create = verbs.add_parser("create", help="create topics")
    create.add_argument("topics", nargs="+", metavar="TOPIC")
    create.add_argument(
        "-p",
        "--partitions",
        type=int,
        default=-1,
        help="partition count (default: the broker's num.partitions)",
    )
    create.add_argument(
        "-r",
        "--replication-factor",
        type=int,
        default=-1,
        help="replicas per partition (default: the broker's)",
    )
    create.add_argument(
        "-c",
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a topic config (repeatable), e.g. cleanup.policy=compact",
    )
    create.add_argument("--dry-run", action="store_true", help="ask the broker to validate only")
    create.set_defaults(run=_create)

    listing = verbs.add_parser("list", help="list topics")
    listing.add_argument(
        "-i",
        "--internal",
        action="store_true",
        help="include internal topics (__consumer_offsets, ...)",
    )
    listing.set_defaults(run=_list)

    describe = verbs.add_parser(
        "describe", help="partitions (leader, replicas, offsets) and non-default configs"
    )
    describe.add_argument("topic", metavar="TOPIC")
    describe.set_defaults(run=_describe)

    alter = verbs.add_parser("alter-config", help="set or delete topic configs")
    alter.add_argument("topic", metavar="TOPIC")
    alter.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    alter.add_argument(
        "--delete", action="append", default=[], metavar="KEY", help="back to the default"
    )
    alter.set_defaults(run=_alter_config)

    delete = verbs.add_parser("delete", help="delete topics and their data")
    delete.add_argument("topics", nargs="+", metavar="TOPIC")
    delete.set_defaults(run=_delete)

    add = verbs.add_parser("add-partitions", help="add partitions to a topic")
    add.add_argument("topic", metavar="TOPIC")
    howmany = add.add_mutually_exclusive_group(required=True)
    howmany.add_argument("-n", "--num", type=int, help="how many partitions to add")
    howmany.add_argument("--total", type=int, help="the partition count wanted")
    add.set_defaults(run=_add_partitions)

    for parser in (create, listing, describe, alter, delete, add):
        add_connection(parser)

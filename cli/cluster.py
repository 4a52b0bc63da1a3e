"""``millpond cluster info|quorum|api-versions`` and ``millpond configs describe|alter``
(topics and brokers)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from millpond.cli import add_connection, connect
from millpond.cli.client import client_range
from millpond.cli.errors import CliError, kafka_error
from millpond.cli.output import blank_line, emit, emit_json, table
from millpond.cli.topic import BROKER_RESOURCE, TOPIC_RESOURCE, alter_configs, describe_configs
from millpond.wire import APIS
from millpond.wire.generated.api.describe_cluster_request import DescribeClusterRequest
from millpond.wire.generated.api.describe_quorum_request import DescribeQuorumRequest
from millpond.wire.generated.api.describe_quorum_request import PartitionData as QuorumPartition
from millpond.wire.generated.api.describe_quorum_request import TopicData as QuorumTopic

ENTITY_TYPES = {
    "topic": TOPIC_RESOURCE,
    "topics": TOPIC_RESOURCE,
    "broker": BROKER_RESOURCE,
    "brokers": BROKER_RESOURCE,
}


def _info(args: argparse.Namespace) -> int:
    with connect(args) as client:
        response = client.metadata(None)
    brokers = [
        {
            "id": b.node_id,
            "host": b.host,
            "port": b.port,
            "rack": b.rack,
            "controller": b.node_id == response.controller_id,
        }
        for b in sorted(response.brokers, key=lambda b: b.node_id)
    ]
    summary = {
        "cluster_id": response.cluster_id,
        "controller_id": response.controller_id,
        "brokers": len(brokers),
        "topics": len([t for t in response.topics if not t.is_internal]),
        "partitions": sum(len(t.partitions) for t in response.topics if not t.is_internal),
    }
    if args.format == "json":
        emit_json({**summary, "brokers": brokers})
        return 0
    table([{"key": k, "value": v} for k, v in summary.items()], ["key", "value"])
    blank_line()
    table(brokers, ["id", "host", "port", "rack", "controller"])
    return 0


def _quorum(args: argparse.Namespace) -> int:
    """The metadata quorum (what kafka-metadata-quorum describe shows) and every broker
    registered with it, fenced or not."""
    request = DescribeQuorumRequest(
        topics=[
            QuorumTopic(
                topic_name="__cluster_metadata", partitions=[QuorumPartition(partition_index=0)]
            )
        ]
    )
    with connect(args) as client:
        conn = client.any()
        described = conn.request(request)
        cluster = conn.request(DescribeClusterRequest(include_fenced_brokers=True))
    code = described.error_code or (
        described.topics[0].partitions[0].error_code if described.topics else 0
    )
    if code:
        raise kafka_error(code, "DescribeQuorum")
    if cluster.error_code:
        raise kafka_error(cluster.error_code, "DescribeCluster")
    partition = described.topics[0].partitions[0]
    leader = partition.leader_id
    now_ms = int(time.time() * 1000)
    ends = {v.replica_id: v.log_end_offset for v in partition.current_voters}
    leader_end = ends.get(leader, partition.high_watermark)

    def replica(r: Any, role: str) -> dict[str, Any]:
        def ago(ms: int) -> int | None:
            return None if ms < 0 else max(now_ms - ms, 0)

        return {
            "id": r.replica_id,
            "role": "leader" if r.replica_id == leader else role,
            "log_end_offset": r.log_end_offset,
            "lag": max(leader_end - r.log_end_offset, 0),
            "last_fetch_ms_ago": ago(r.last_fetch_timestamp),
            "last_caught_up_ms_ago": ago(r.last_caught_up_timestamp),
        }

    replicas = [replica(v, "follower") for v in partition.current_voters]
    replicas += [replica(o, "observer") for o in partition.observers]
    brokers = [
        {"id": b.broker_id, "host": b.host, "port": b.port, "fenced": b.is_fenced}
        for b in sorted(cluster.brokers, key=lambda b: b.broker_id)
    ]
    summary = {
        "leader_id": leader,
        "leader_epoch": partition.leader_epoch,
        "high_watermark": partition.high_watermark,
        "max_follower_lag": max((r["lag"] for r in replicas if r["role"] != "observer"), default=0),
        "voters": len(partition.current_voters),
    }
    if args.format == "json":
        emit_json({**summary, "replicas": replicas, "brokers": brokers})
        return 0
    table([{"key": k, "value": v} for k, v in summary.items()], ["key", "value"])
    blank_line()
    columns = ["id", "role", "log_end_offset", "lag", "last_fetch_ms_ago", "last_caught_up_ms_ago"]
    table(replicas, columns)
    blank_line()
    table(brokers, ["id", "host", "port", "fenced"])
    return 0


def _api_versions(args: argparse.Namespace) -> int:
    """What kafka-broker-api-versions shows, plus the highest version both sides speak."""
    with connect(args) as client:
        conn = client.any()
        advertised = dict(conn.versions)
    rows = []
    for key, (low, high) in sorted(advertised.items()):
        api = APIS.get(key)
        ours = client_range(key) if api else None
        usable = ours is not None and max(low, ours[0]) <= min(high, ours[1])
        rows.append(
            {
                "key": key,
                "api": api.name if api else f"unknown({key})",
                "min": low,
                "max": high,
                "negotiated": min(high, ours[1]) if ours and usable else None,
            }
        )
    emit(args, rows, ["key", "api", "min", "max", "negotiated"],
         data={"broker": conn.address, "apis": rows})  # fmt: skip
    return 0


def _entity(args: argparse.Namespace) -> tuple[int, str]:
    resource = ENTITY_TYPES[args.entity_type]
    name = args.entity_name
    if resource == BROKER_RESOURCE and not (name or "").isdigit():
        raise CliError(
            f"bad broker id {name!r}",
            "pass --entity-name with a broker's node id (see `millpond cluster info`)",
        )
    if resource == TOPIC_RESOURCE and not name:
        raise CliError("no topic given", "pass --entity-name TOPIC")
    return resource, name


def _describe(args: argparse.Namespace) -> int:
    resource, name = _entity(args)
    with connect(args) as client:
        if resource == TOPIC_RESOURCE:
            client.partitions(name)
        configs = describe_configs(client, resource, name)
    if not args.all:
        configs = [c for c in configs if c["source"] != "DEFAULT_CONFIG"]
    emit(args, configs, ["name", "value", "source", "read_only"])
    return 0


def _alter(args: argparse.Namespace) -> int:
    resource, name = _entity(args)
    with connect(args) as client:
        if resource == TOPIC_RESOURCE:
            client.partitions(name)
        alter_configs(client, resource, name, args.set, args.delete)
    emit(args, [{"entity": name, "status": "OK"}], ["entity", "status"])
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cluster = commands.add_parser("cluster", help="the cluster's id, controller and brokers")
    verbs = cluster.add_subparsers(dest="verb", required=True, metavar="VERB")
    info = verbs.add_parser("info", help="cluster id, controller, brokers, topic counts")
    info.set_defaults(run=_info)
    add_connection(info)
    quorum = verbs.add_parser(
        "quorum", help="the metadata quorum's leader, epoch and replicas, and every broker"
    )
    quorum.set_defaults(run=_quorum)
    add_connection(quorum)
    versions = verbs.add_parser(
        "api-versions",
        help="the API versions a broker serves, and the highest this tool shares with it",
    )
    versions.set_defaults(run=_api_versions)
    add_connection(versions)

    configs = commands.add_parser("configs", help="describe and alter topic or broker configs")
    verbs = configs.add_subparsers(dest="verb", required=True, metavar="VERB")
    describe = verbs.add_parser("describe", help="the configs of a topic or broker")
    describe.add_argument(
        "--all",
        action="store_true",
        help="include configs at their defaults (default: only changed ones)",
    )
    describe.set_defaults(run=_describe)
    alter = verbs.add_parser("alter", help="set configs, or delete them back to their defaults")
    alter.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    alter.add_argument("--delete", action="append", default=[], metavar="KEY")
    alter.set_defaults(run=_alter)
    for parser in (describe, alter):
        parser.add_argument("--entity-type", choices=sorted(ENTITY_TYPES), required=True)
        parser.add_argument(
            "--entity-name", metavar="NAME", help="the topic's name, or the broker's node id"
        )
        add_connection(parser)

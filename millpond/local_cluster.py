"""``millpond local-cluster``: brokers and controllers on this machine, with one command.

Each node is a ``millpond serve`` process on 127.0.0.1: controllers 1..M
(``process.roles=controller``, the static voter set of the quorum), brokers M+1..M+N
(``process.roles=broker``), their listeners on consecutive ports from
``--controller-port`` and ``--broker-port``. A node's data is ``DIR/node<ID>`` and its
output ``DIR/node<ID>.log``; the first start formats every node with one cluster id, kept
in ``DIR/cluster.id``, and later starts reuse the directories as they are.

It reports each node as it listens, then the quorum's leader and the brokers once every
broker is registered and unfenced, then the ``bootstrap.servers`` to give clients. It runs
until SIGINT or SIGTERM, which stops every node cleanly; a node that exits on its own
stops the cluster, with the last lines of its log.
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

__all__ = ["LocalNode", "plan", "register", "run"]

READY_TIMEOUT_S = 120.0


class LocalNode(NamedTuple):
    node_id: int
    roles: str
    #: Where it listens: its broker listener for a broker, its controller one otherwise.
    port: int
    props: dict[str, str]
    log: Path


def plan(
    directory: Path,
    controllers: int,
    brokers: int,
    broker_port: int,
    controller_port: int,
    extra: Mapping[str, str],
) -> list[LocalNode]:
    """The nodes of the cluster, controllers first."""
    from millpond.broker.quorum_config import node_properties  # noqa: PLC0415 (a tool's)

    voters = ",".join(f"{i}@127.0.0.1:{controller_port + i - 1}" for i in range(1, controllers + 1))
    nodes = []
    for index in range(controllers + brokers):
        node_id = index + 1
        controller = index < controllers
        roles = "controller" if controller else "broker"
        ports = (broker_port + index - controllers, controller_port + index)
        props = node_properties(
            node_id, roles, "127.0.0.1", ports, voters, directory / f"node{node_id}", extra
        )
        port = ports[1] if controller else ports[0]
        nodes.append(LocalNode(node_id, roles, port, props, directory / f"node{node_id}.log"))
    return nodes


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "local-cluster",
        help="run a cluster of brokers and controllers on this machine, for development",
        description=__doc__.split("\n\n")[0] if __doc__ else None,
    )
    parser.add_argument("--dir", default="millpond-cluster", help="where the nodes' data goes")
    parser.add_argument("--controllers", type=int, default=3, metavar="M")
    parser.add_argument("--brokers", type=int, default=3, metavar="N")
    parser.add_argument("--broker-port", type=int, default=9092, metavar="PORT")
    parser.add_argument("--controller-port", type=int, default=9192, metavar="PORT")
    parser.add_argument(
        "--override",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="set one property on every node (repeatable)",
    )


def _cluster_id(directory: Path) -> str:
    path = directory / "cluster.id"
    if path.exists():
        return path.read_text().strip()
    from millpond.broker.node import new_cluster_id  # noqa: PLC0415 (a tool's)

    cluster_id = new_cluster_id(random.SystemRandom())
    path.write_text(cluster_id + "\n")
    return cluster_id


def _overrides(props: Mapping[str, str]) -> list[str]:
    return [arg for k, v in props.items() for arg in ("--override", f"{k}={v}")]


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _parse_extra(overrides: Sequence[str]) -> dict[str, str]:
    extra = {}
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--override {item!r} is not KEY=VALUE")
        extra[key.strip()] = value
    return extra


def run(args: argparse.Namespace) -> int:
    if args.controllers < 1 or args.brokers < 1:
        sys.stderr.write("millpond local-cluster: give it at least one controller and one broker\n")
        return 2
    try:
        extra = _parse_extra(args.override)
    except ValueError as exc:
        sys.stderr.write(f"millpond local-cluster: {exc}\n")
        return 2
    directory = Path(args.dir).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    cluster_id = _cluster_id(directory)
    nodes = plan(
        directory, args.controllers, args.brokers, args.broker_port, args.controller_port, extra
    )
    serve = [sys.executable, "-m", "millpond"]
    for node in nodes:
        if not (Path(node.props["log.dirs"]) / "meta.properties").exists():
            done = subprocess.run(  # noqa: S603 (this interpreter, our own arguments)
                [*serve, "storage", "format", "-t", cluster_id, *_overrides(node.props)],
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                sys.stderr.write(f"millpond local-cluster: formatting node {node.node_id}: "
                                 f"{done.stderr.strip() or done.stdout.strip()}\n")  # fmt: skip
                return 1
    stop = {"asked": False}

    def asked(_signum: int, _frame: object) -> None:
        stop["asked"] = True

    signal.signal(signal.SIGTERM, asked)
    signal.signal(signal.SIGINT, asked)
    procs: dict[int, subprocess.Popen[bytes]] = {}
    try:
        for node in nodes:
            with node.log.open("ab") as log:
                procs[node.node_id] = subprocess.Popen(  # noqa: S603 (as above)
                    [*serve, "serve", *_overrides(node.props)],
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,  # Ctrl-C reaches this process, which stops them
                )
        _say(f"cluster {cluster_id}: {args.controllers} controllers, {args.brokers} brokers,"
             f" data in {directory}")  # fmt: skip
        code = _watch(nodes, procs, stop)
    finally:
        _stop_all(procs)
    if code == 0:
        _say("stopped cleanly")
    return code


def _say(text: str) -> None:
    sys.stdout.write(f"millpond local-cluster: {text}\n")
    sys.stdout.flush()


def _watch(
    nodes: list[LocalNode], procs: dict[int, subprocess.Popen[bytes]], stop: dict[str, bool]
) -> int:
    listening: set[int] = set()
    ready = False
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not stop["asked"]:
        for node in nodes:
            code = procs[node.node_id].poll()
            if code is not None:
                sys.stderr.write(
                    f"millpond local-cluster: node {node.node_id} exited ({code}); the last"
                    f" lines of {node.log}:\n{_tail(node.log)}\n"
                )
                return 1
            if node.node_id not in listening and "listening on" in _tail(node.log, 50):
                listening.add(node.node_id)
                _say(f"node {node.node_id} ({node.roles}) listening on 127.0.0.1:{node.port}")
        if not ready and len(listening) == len(nodes):
            status = _status(nodes)
            if status is not None:
                ready = True
                brokers = [n for n in nodes if n.roles == "broker"]
                _say(status)
                _say("bootstrap.servers=" + ",".join(f"127.0.0.1:{n.port}" for n in brokers))
        if not ready and time.monotonic() > deadline:
            sys.stderr.write(
                f"millpond local-cluster: not ready within {READY_TIMEOUT_S:.0f} s; see the"
                f" nodes' logs in {nodes[0].log.parent}\n"
            )
            return 1
        time.sleep(0.1)
    return 0


def _status(nodes: list[LocalNode]) -> str | None:
    """The quorum's leader and the brokers, once every broker is registered and unfenced
    (asked of a broker listener, which forwards DescribeQuorum to the active controller)."""
    from millpond.cli.client import Client  # noqa: PLC0415 (only once the nodes listen)
    from millpond.cli.errors import CliError  # noqa: PLC0415
    from millpond.wire.generated.api.describe_cluster_request import (  # noqa: PLC0415
        DescribeClusterRequest,
    )
    from millpond.wire.generated.api.describe_quorum_request import (  # noqa: PLC0415
        DescribeQuorumRequest,
        PartitionData,
        TopicData,
    )

    brokers = [n for n in nodes if n.roles == "broker"]
    request = DescribeQuorumRequest(
        topics=[TopicData(topic_name="__cluster_metadata", partitions=[PartitionData()])]
    )
    try:
        with Client(",".join(f"127.0.0.1:{n.port}" for n in brokers), 2000) as client:
            conn = client.any()
            quorum = conn.request(request)
            cluster = conn.request(DescribeClusterRequest(include_fenced_brokers=True))
    except (CliError, OSError):
        return None
    if quorum.error_code or not quorum.topics or quorum.topics[0].partitions[0].error_code:
        return None
    partition = quorum.topics[0].partitions[0]
    unfenced = {b.broker_id for b in cluster.brokers if not b.is_fenced}
    if partition.leader_id < 0 or not {n.node_id for n in brokers} <= unfenced:
        return None
    return (
        f"quorum leader {partition.leader_id} (epoch {partition.leader_epoch}), brokers"
        f" {', '.join(str(n.node_id) for n in brokers)} registered and unfenced"
    )


def _stop_all(procs: Mapping[int, subprocess.Popen[bytes]]) -> None:
    """Brokers first (they shut down through the controllers), then the controllers."""
    for node_id in sorted(procs, reverse=True):
        proc = procs[node_id]
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()

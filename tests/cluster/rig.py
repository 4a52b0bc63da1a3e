"""A network of namespaces for a cluster under faults, and its nodes as processes.

Each node runs in a network namespace of its own, joined by a veth pair to one hub
namespace that routes between them (node ``i`` is 10.77.i.2, the hub 10.77.i.1 on its
side). The harness runs in the hub: it reaches every node, and a partition is an
iptables rule in the hub's FORWARD chain, so cutting a node off leaves the harness's
own view of it intact. Everything the rig makes (namespaces, veths, rules, processes)
goes when it is torn down; no rule ever touches the machine's own namespace.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple

from millpond.broker.quorum_config import node_properties
from millpond.controller.image import MetadataImage
from millpond.controller.metadata_log import open_metadata_log, read_image
from millpond.storage.clock import SystemClock
from millpond.storage.fs import OsFileSystem
from millpond.wire import Message, RequestHeader, decode_response, encode_request
from millpond.wire.generated.api import describe_quorum_request as dq
from millpond.wire.generated.api.describe_quorum_response import DescribeQuorumResponse
from millpond.wire.generated.api.metadata_request import MetadataRequest
from millpond.wire.generated.api.metadata_response import MetadataResponse

BROKER_PORT = 9092
CONTROLLER_PORT = 9093
_SIZE = struct.Struct(">i")


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)


class Network:
    """The namespaces: ``prefix-hub`` and one ``prefix-nI`` per node."""

    def __init__(self, prefix: str, node_ids: Sequence[int]) -> None:
        self.prefix = prefix
        self.node_ids = list(node_ids)
        self.hub = f"{prefix}-hub"

    def namespace(self, node_id: int) -> str:
        return f"{self.prefix}-n{node_id}"

    @staticmethod
    def address(node_id: int) -> str:
        return f"10.77.{node_id}.2"

    def create(self) -> None:
        self.destroy()  # what an interrupted earlier run may have left
        _ip("netns", "add", self.hub)
        _ip("-n", self.hub, "link", "set", "lo", "up")
        for i in self.node_ids:
            ns, hub_side, node_side = self.namespace(i), f"{self.prefix}h{i}", f"{self.prefix}n{i}"
            _ip("netns", "add", ns)
            _ip("link", "add", hub_side, "type", "veth", "peer", "name", node_side)
            _ip("link", "set", hub_side, "netns", self.hub)
            _ip("link", "set", node_side, "netns", ns)
            _ip("-n", self.hub, "addr", "add", f"10.77.{i}.1/24", "dev", hub_side)
            _ip("-n", ns, "addr", "add", f"{self.address(i)}/24", "dev", node_side)
            _ip("-n", self.hub, "link", "set", hub_side, "up")
            _ip("-n", ns, "link", "set", node_side, "up")
            _ip("-n", ns, "link", "set", "lo", "up")
            _ip("-n", ns, "route", "add", "default", "via", f"10.77.{i}.1")
        self.hub_exec("sysctl", "-qw", "net.ipv4.ip_forward=1")

    def hub_exec(self, *command: str) -> None:
        subprocess.run(
            ["ip", "netns", "exec", self.hub, *command], check=True, capture_output=True, timeout=30
        )

    def destroy(self) -> None:
        existing = subprocess.run(
            ["ip", "netns", "list"], capture_output=True, text=True, check=True, timeout=30
        ).stdout.split()
        for ns in [self.hub, *(self.namespace(i) for i in self.node_ids)]:
            if ns not in existing:
                continue
            pids = subprocess.run(
                ["ip", "netns", "pids", ns], capture_output=True, text=True, timeout=30
            ).stdout.split()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(int(pid), signal.SIGKILL)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)

    def _isolation_rules(self, node_id: int) -> list[list[str]]:
        address = self.address(node_id)
        return [["FORWARD", "-s", address, "-j", "DROP"], ["FORWARD", "-d", address, "-j", "DROP"]]

    def isolate(self, node_id: int) -> None:
        """Cut ``node_id`` off from every other node (both directions)."""
        for rule in self._isolation_rules(node_id):
            self.hub_exec("iptables", "-I", *rule)

    def heal(self, node_id: int) -> None:
        for rule in self._isolation_rules(node_id):
            self.hub_exec("iptables", "-D", *rule)

    def cut(self, pairs: Collection[tuple[int, int]]) -> list[list[str]]:
        """Drop every packet between the nodes of each pair (both ways); the rules, for
        :meth:`mend`. A partition that is not one node against the rest (a majority
        split, a ring, a leader cut off from its followers only) is a set of pairs."""
        rules = []
        for a, b in pairs:
            for src, dst in ((a, b), (b, a)):
                rule = ["FORWARD", "-s", self.address(src), "-d", self.address(dst), "-j", "DROP"]
                self.hub_exec("iptables", "-I", *rule)
                rules.append(rule)
        return rules

    def mend(self, rules: Collection[list[str]]) -> None:
        for rule in rules:
            self.hub_exec("iptables", "-D", *rule)


@dataclass
class Node:
    """A ``millpond serve`` process (in ``namespace``, or this one when None)."""

    node_id: int
    roles: str
    namespace: str | None
    address: str
    data_dir: Path
    log_path: Path
    overrides: list[str]
    #: Set in the environment of ``serve`` (a fake clock's, ...).
    env: Mapping[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | None = None
    paused: bool = False
    _log: IO[bytes] | None = field(default=None, repr=False)

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles

    def command(self, *args: str) -> list[str]:
        command = [sys.executable, "-m", "millpond", *args]
        if self.namespace is None:
            return command
        return ["ip", "netns", "exec", self.namespace, *command]

    def format(self, cluster_id: str, *flags: str) -> None:
        """``millpond storage format``, plus ``flags`` (``--standalone``, ...)."""
        subprocess.run(
            self.command("storage", "format", "-t", cluster_id, *flags, *self._override_args()),
            check=True,
            capture_output=True,
            timeout=60,
        )

    def _override_args(self) -> list[str]:
        return [arg for o in self.overrides for arg in ("--override", o)]

    def start(self) -> None:
        assert self.process is None
        self._log = self.log_path.open("ab")
        self.process = subprocess.Popen(
            self.command("serve", *self._override_args()),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **self.env},
        )
        self.paused = False

    def wait_listening(self, after: int, timeout_s: float = 60) -> None:
        """Until the log, past byte ``after``, says the node listens."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if b" listening on " in self.log_path.read_bytes()[after:]:
                return
            assert self.process is not None
            if self.process.poll() is not None:
                raise AssertionError(f"node {self.node_id} exited: see {self.log_path}")
            time.sleep(0.05)
        raise AssertionError(f"node {self.node_id} did not start in {timeout_s} s")

    def kill(self) -> None:
        assert self.process is not None
        if self.paused:
            self.process.send_signal(signal.SIGCONT)
        self.process.kill()
        self.process.wait(timeout=30)
        self._close()

    def pause(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)
        self.paused = False

    def stop(self) -> None:
        """A clean stop (SIGTERM), or a kill if it does not come within 30 s."""
        if self.process is None:
            return
        if self.paused:
            self.resume()
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=30)
        self._close()

    def _close(self) -> None:
        self.process = None
        if self._log is not None:
            self._log.close()
            self._log = None


def run_in_hub(
    network: Network, module: str, args: Sequence[str], timeout_s: float, work: Path | None
) -> dict[str, Any]:
    """A fault run of ``module``: make the namespaces, run ``python -m module *args
    --inside PREFIX --work DIR`` in the hub, tear everything down, and return the JSON
    report it printed last (exit code 1 is a report with violations). Without ``work``
    the nodes' files go with the run, unless it found violations or failed: then they
    stay, and the report's ``kept`` (or the error) says where."""
    root = work or Path(tempfile.mkdtemp(prefix=f"{network.prefix}-"))
    root.mkdir(parents=True, exist_ok=True)
    network.create()
    try:
        inner = subprocess.run(
            [
                "ip", "netns", "exec", network.hub, sys.executable, "-m", module, *args,
                "--inside", network.prefix, "--work", str(root),
            ],
            capture_output=True, text=True, timeout=timeout_s,
            cwd=Path(__file__).resolve().parents[2],
        )  # fmt: skip
    finally:
        network.destroy()
    lines = inner.stdout.strip().splitlines()
    if inner.returncode not in (0, 1) or not lines:
        raise RuntimeError(
            f"the run failed ({inner.returncode}; the nodes' files are in {root}): "
            f"{inner.stderr[-4000:]}"
        )
    report: dict[str, Any] = json.loads(lines[-1])
    if report.get("violations"):
        report["kept"] = str(root)
    elif work is None:
        shutil.rmtree(root, ignore_errors=True)
    return report


def soak_main(
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    inside: Callable[[argparse.Namespace], dict[str, Any]],
    outside: Callable[[argparse.Namespace], dict[str, Any]],
) -> int:
    """A fault run's command line: ``parser`` plus ``--work`` and the hidden
    ``--inside``; run inside the hub or from outside it, print the JSON report, and exit
    1 if it holds violations."""
    parser.add_argument("--work", type=Path, help="keep the nodes' data and logs here")
    parser.add_argument("--inside", metavar="PREFIX", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    report = inside(args) if args.inside else outside(args)
    sys.stdout.write(json.dumps(report) + "\n")
    return 1 if report["violations"] else 0


def node_overrides(
    node_id: int, roles: str, voters: str, data_dir: Path, timers: Mapping[str, object]
) -> list[str]:
    """``--override`` values for a node of the rig (its own address, the usual ports)."""
    address = Network.address(node_id)
    ports = (BROKER_PORT, CONTROLLER_PORT)
    props = node_properties(node_id, roles, address, ports, voters, data_dir, timers)
    return [f"{k}={v}" for k, v in props.items()]


def request(
    address: str, port: int, body: Message, version: int, timeout_s: float = 2
) -> Message | None:
    """One request and its answer; None when none comes."""
    assert body.API_KEY is not None
    header = RequestHeader(
        request_api_key=body.API_KEY, request_api_version=version, correlation_id=1,
        client_id="rig",
    )  # fmt: skip
    frame = encode_request(header, body)
    try:
        with socket.create_connection((address, port), timeout=timeout_s) as sock:
            sock.sendall(_SIZE.pack(len(frame)) + frame)
            data = b""
            while len(data) < 4 or len(data) < 4 + _SIZE.unpack(data[:4])[0]:
                chunk = sock.recv(65536)
                if not chunk:
                    return None
                data += chunk
    except OSError:
        return None
    return decode_response(data[4:], body.API_KEY, version)[1]


def describe_quorum(
    address: str, port: int = CONTROLLER_PORT, timeout_s: float = 2
) -> DescribeQuorumResponse | None:
    """DescribeQuorum v2 at a listener (a controller's, by default); None when it does
    not answer."""
    body = dq.DescribeQuorumRequest(
        topics=[
            dq.TopicData(
                topic_name="__cluster_metadata", partitions=[dq.PartitionData(partition_index=0)]
            )
        ]
    )
    response = request(address, port, body, 2, timeout_s)
    assert response is None or isinstance(response, DescribeQuorumResponse)
    return response


class QuorumView(NamedTuple):
    leader: int
    epoch: int
    voters: list[int]
    #: Voters of ``expected`` not caught up with the leader within the last two seconds.
    behind: list[int]


def quorum_leader(
    addresses: Mapping[int, tuple[str, int]], asked: Collection[int], expected: Collection[int]
) -> QuorumView | None:
    """The quorum as the leader of the highest epoch among the ``asked`` nodes describes
    it (only a leader answers DescribeQuorum; a follower refuses with
    NOT_LEADER_OR_FOLLOWER); None when no node answers as leader."""
    leaders = []
    for i in asked:
        host, port = addresses[i]
        described = describe_quorum(host, port)
        if described is None or described.error_code or not described.topics:
            continue
        partition = described.topics[0].partitions[0]
        if partition.error_code == 0 and partition.leader_id == i:
            leaders.append((partition.leader_epoch, i, partition))
    if not leaders:
        return None
    epoch, leader, partition = max(leaders, key=lambda found: (found[0], found[1]))
    now_ms = time.time() * 1000
    behind = [
        v.replica_id
        for v in partition.current_voters
        if v.replica_id != leader
        and v.replica_id in expected
        and v.last_caught_up_timestamp < now_ms - 2000
    ]
    return QuorumView(leader, epoch, [v.replica_id for v in partition.current_voters], behind)


def live_brokers(address: str, port: int = BROKER_PORT) -> set[int] | None:
    """The brokers a broker's Metadata lists (the unfenced ones); None without answer."""
    response = request(address, port, MetadataRequest(topics=[]), 12)
    assert response is None or isinstance(response, MetadataResponse)
    return None if response is None else {b.node_id for b in response.brokers}


def create_topic(bootstrap: str, name: str, partitions: int, timeout_ms: int = 30_000) -> None:
    """CreateTopics through kafka-python's admin client, a real client; raises on an
    error code."""
    from kafka.admin import KafkaAdminClient, NewTopic  # noqa: PLC0415 (a test client)

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=timeout_ms)
    try:
        admin.create_topics([NewTopic(name, partitions, 1)])
    finally:
        admin.close()


def until(condition: Callable[[], object], what: str, seconds: float = 60) -> None:
    """Poll ``condition`` until it holds; AssertionError naming ``what`` after ``seconds``."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.1)


def metadata_batches(data_dir: Path) -> list[bytes]:
    """The bytes of every batch of a node's metadata log, from offset 0."""
    log = open_metadata_log(OsFileSystem(), str(data_dir), SystemClock())
    try:
        return [bytes(b.buffer) for b in log.batches(0)]
    finally:
        log.log.close()


def metadata_topics(data_dir: Path, cluster_id: str) -> set[str]:
    """The topics a node's metadata log (snapshot and log) holds."""
    log = open_metadata_log(OsFileSystem(), str(data_dir), SystemClock())
    try:
        return set(read_image(log, MetadataImage.empty(cluster_id)).image.topic_ids_by_name)
    finally:
        log.log.close()

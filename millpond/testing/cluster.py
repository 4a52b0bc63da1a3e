"""A cluster of millpond nodes inside the test's own process, for tests of failover.

:func:`cluster` starts ``controllers`` controller-only nodes (ids 1..M, a static quorum)
and ``brokers`` broker-only nodes (ids M+1..M+N), each the real node ``millpond serve``
runs, on its own event loop in a background thread and its own loopback ports, its data
in a directory of its own. Between the two, a test breaks it the ways production breaks:

- :meth:`EmbeddedCluster.kill` stops a node as ``kill -9`` would (sockets cut
  mid-request, nothing flushed or marked clean), :meth:`~EmbeddedCluster.restart` starts
  it again on the same data and ports, and :meth:`~EmbeddedCluster.stop` shuts it down
  cleanly;
- :meth:`EmbeddedCluster.isolate` cuts a node off from every other node and client, as
  a network partition that drops packets: its listeners take requests and never answer,
  and the other nodes never answer what it sends them; :meth:`~EmbeddedCluster.heal`
  joins it again.

The waits (:meth:`~EmbeddedCluster.wait_for_leader`, :meth:`~EmbeddedCluster.wait_ready`)
poll a real condition (the quorum's leader as the running controllers see it, the
brokers the active controller has unfenced) until a deadline, and say what they waited
for when it passes. Configuration uses Kafka's names, as :func:`millpond.testing.broker`.
"""

from __future__ import annotations

import random
import socket
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from millpond.broker.config import BrokerConfig, build_config
from millpond.broker.node import Broker, new_cluster_id, peer_client_ids
from millpond.broker.quorum_config import node_properties
from millpond.controller.raft.node import Role
from millpond.storage.clock import SystemClock
from millpond.storage.fs import OsFileSystem
from millpond.storage.log_dirs import ensure_meta_properties
from millpond.testing.embedded import EmbeddedBroker, NodeThread, _property
from millpond.wire.api import APIS

__all__ = ["ClusterNode", "EmbeddedCluster", "cluster"]

#: Quicker than Kafka's defaults, so that a test sees a failover in a second or two.
_TEST_DEFAULTS = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "300",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.replication.factor": "1",
}


class ClusterError(AssertionError):
    """A wait that timed out, or a node in the wrong state for what was asked."""


@dataclass
class ClusterNode:
    node_id: int
    #: ``controller`` or ``broker``.
    role: str
    config: BrokerConfig
    #: Its broker listener (a broker) or controller listener (a controller).
    port: int
    _thread: NodeThread | None = None
    #: Fault rule ids (per node) that cut this node off, while it is isolated.
    _cuts: dict[int, list[int]] = field(default_factory=dict)

    @property
    def running(self) -> bool:
        return self._thread is not None

    @property
    def isolated(self) -> bool:
        return bool(self._cuts)

    @property
    def handle(self) -> EmbeddedBroker:
        """The running node (its ``broker``, its helpers); ClusterError when down."""
        if self._thread is None:
            raise ClusterError(f"node {self.node_id} is not running; restart it first")
        return self._thread.handle


class EmbeddedCluster:
    def __init__(self, nodes: Iterable[ClusterNode]) -> None:
        self.nodes = {n.node_id: n for n in nodes}
        self.controllers = sorted(n.node_id for n in self.nodes.values() if n.role == "controller")
        self.brokers = sorted(n.node_id for n in self.nodes.values() if n.role == "broker")
        #: Every broker's address, for a client's ``bootstrap.servers``.
        self.bootstrap_servers = ",".join(f"127.0.0.1:{self.nodes[b].port}" for b in self.brokers)

    def __repr__(self) -> str:
        return (
            f"<embedded millpond cluster: controllers {self.controllers}, brokers {self.brokers}>"
        )

    def node(self, node_id: int) -> ClusterNode:
        if node_id not in self.nodes:
            raise ClusterError(f"no node {node_id}: the nodes are {sorted(self.nodes)}")
        return self.nodes[node_id]

    # -- starting and stopping -------------------------------------------------------

    def start(self, node_id: int) -> None:
        node = self.node(node_id)
        if node.running:
            raise ClusterError(f"node {node_id} is running already")
        config = node.config
        node._thread = NodeThread.start(
            lambda: Broker.from_config(config), name=f"millpond-node-{node_id}"
        )
        for other in self.nodes.values():  # the partitions it restarts into
            if other.isolated and other.node_id != node_id:
                other._cuts[node_id] = _cut(node.handle, peer_client_ids(other.node_id))

    def restart(self, node_id: int) -> None:
        """Start a node that was killed or stopped, on its data and ports."""
        self.start(node_id)

    def kill(self, node_id: int) -> None:
        """Stop a node as ``kill -9`` would."""
        self._end(node_id, kill=True)

    def stop(self, node_id: int) -> None:
        """Shut a node down cleanly."""
        self._end(node_id, kill=False)

    def _end(self, node_id: int, *, kill: bool) -> None:
        node = self.node(node_id)
        if node._thread is None:
            raise ClusterError(f"node {node_id} is not running")
        self.heal(node_id)
        thread, node._thread = node._thread, None
        if kill:
            thread.kill()
        else:
            thread.stop()

    def close(self) -> None:
        """Stop every running node cleanly, brokers first."""
        for node_id in [*self.brokers, *self.controllers]:
            if self.nodes[node_id].running:
                self.stop(node_id)

    # -- network partitions ----------------------------------------------------------

    def isolate(self, node_id: int) -> None:
        """Cut a running node off from every other node and client (both ways)."""
        node = self.node(node_id)
        if node.isolated:
            return
        node._cuts[node_id] = _cut(node.handle, (None,))
        for other in self.nodes.values():
            if other.node_id != node_id and other.running:
                node._cuts[other.node_id] = _cut(other.handle, peer_client_ids(node_id))

    def heal(self, node_id: int) -> None:
        """Join an isolated node to the others again (a no-op for one that is not)."""
        node = self.node(node_id)
        for at, rules in node._cuts.items():
            target = self.nodes[at]
            if target.running:
                _mend(target.handle, rules)
        node._cuts.clear()

    # -- what the quorum and the brokers say -----------------------------------------

    def leader(self) -> int | None:
        """The active controller: the quorum leader of the highest epoch among the
        running, connected controllers (None while there is none)."""
        found = []
        for node_id in self.controllers:
            node = self.nodes[node_id]
            if not node.running or node.isolated:
                continue
            role, epoch = node.handle.call(_raft_role)
            if role is Role.LEADER:
                found.append((epoch, node_id))
        return max(found)[1] if found else None

    def wait_for_leader(self, timeout_s: float = 30, *, other_than: int | None = None) -> int:
        """The active controller once there is one (not ``other_than``)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            leader = self.leader()
            if leader is not None and leader != other_than:
                return leader
            time.sleep(0.02)
        raise ClusterError(f"no controller became the quorum's leader within {timeout_s} s")

    def live_brokers(self) -> set[int]:
        """The brokers the active controller's committed metadata has unfenced."""
        leader = self.leader()
        if leader is None:
            return set()
        image = self.nodes[leader].handle.call(lambda b: b.controller_server.committed_image)
        return {i for i, b in image.brokers.items() if not b.fenced}

    def _leader_known_by(self, node_id: int) -> int:
        """The quorum leader as a node's own replica of the metadata log knows it."""
        return self.nodes[node_id].handle.call(_known_leader)

    def wait_ready(self, timeout_s: float = 30) -> None:
        """Until there is a leader, and every running, connected broker knows it (so its
        heartbeats go there) and is unfenced."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            wanted = {
                b for b in self.brokers if self.nodes[b].running and not self.nodes[b].isolated
            }
            leader = self.leader()
            if (
                leader is not None
                and all(self._leader_known_by(b) == leader for b in wanted)
                and wanted <= self.live_brokers()
            ):
                return
            time.sleep(0.02)
        raise ClusterError(
            f"the cluster was not ready within {timeout_s} s: leader {self.leader()}, "
            f"unfenced brokers {sorted(self.live_brokers())}"
        )


def _known_leader(broker: Broker) -> int:
    return broker.controller_server.raft.leader.leader_id


def _raft_role(broker: Broker) -> tuple[Role, int]:
    node = broker.controller_server.raft.node
    return node.role, node.epoch


def _cut(handle: EmbeddedBroker, clients: Iterable[str | None]) -> list[int]:
    """Rules on ``handle``'s node that leave every request of ``clients`` (None: of
    anyone) unanswered; their ids."""
    return [handle.drop(key, count=None, client_id=c)["id"] for c in clients for key in APIS]


def _mend(handle: EmbeddedBroker, rules: list[int]) -> None:
    def remove(broker: Broker) -> None:
        for rule in rules:
            broker.control.faults.remove(rule)

    handle.call(remove)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _plan(
    root: Path, controllers: int, brokers: int, configs: Mapping[str, object]
) -> list[ClusterNode]:
    ports = {i: _free_port() for i in range(1, controllers + brokers + 1)}
    voters = ",".join(f"{i}@127.0.0.1:{ports[i]}" for i in range(1, controllers + 1))
    extra = {**_TEST_DEFAULTS, **{k: _property(v) for k, v in configs.items()}}
    nodes = []
    cluster_id = new_cluster_id(random.Random())  # noqa: S311 (an id, not a secret)
    for node_id, port in ports.items():
        role = "controller" if node_id <= controllers else "broker"
        props = node_properties(
            node_id, role, "127.0.0.1", (port, port), voters, root / f"node{node_id}", extra
        )
        config, _warnings = build_config(props, env={})
        for directory in config.log_dirs:  # what `millpond storage format` does
            Path(directory).mkdir(parents=True, exist_ok=True)
            ensure_meta_properties(OsFileSystem(), directory, cluster_id, node_id, SystemClock())
        nodes.append(ClusterNode(node_id, role, config, port))
    return nodes


@contextmanager
def cluster(
    *,
    controllers: int = 3,
    brokers: int = 3,
    configs: Mapping[str, object] | None = None,
    data_dir: str | None = None,
    ready_timeout_s: float = 60,
    **keywords: object,
) -> Iterator[EmbeddedCluster]:
    """Run a cluster for the ``with`` block, ready (a quorum leader, every broker
    registered and unfenced) when it is entered. ``configs`` and keywords (underscores
    read as dots) go to every node; ``data_dir`` keeps the nodes' data in a directory of
    yours, one subdirectory per node; by default it is temporary."""
    if controllers < 1 or brokers < 0:
        raise ValueError("a cluster has at least one controller, and no negative brokers")
    settings = {**(configs or {}), **{k.replace("_", "."): v for k, v in keywords.items()}}
    with tempfile.TemporaryDirectory(prefix="millpond-cluster-") as scratch:
        root = Path(data_dir or scratch)
        running = EmbeddedCluster(_plan(root, controllers, brokers, settings))
        try:
            for node_id in [*running.controllers, *running.brokers]:
                running.start(node_id)
            running.wait_ready(ready_timeout_s)
            yield running
        finally:
            running.close()

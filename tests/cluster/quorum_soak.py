"""T12, a real KRaft quorum under faults: 3 controllers and 3 brokers as ``millpond
serve`` processes, each in its own network namespace, while topics are created,
reconfigured and deleted without pause through the brokers, and the active controller is
killed (-9), paused (SIGSTOP) or cut off (iptables), one fault after another.

    python -m tests.cluster.quorum_soak --faults 30        # the full run (as root)

It prints one JSON report: faults by kind, operations (ok / info), the checks' violations
(:mod:`tests.cluster.metadata_history`), controller elections and the longest time
without an acknowledged metadata operation. It exits 1 on a violation.

The run makes its namespaces, runs itself inside the hub one (``--inside``), then tears
everything down. Every loop is bounded in count and time.
"""

from __future__ import annotations

import argparse
import os
import random
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from millpond.controller.image import MetadataImage
from millpond.controller.metadata_log import (
    open_metadata_log,
    read_image,
    replay_batches,
    snapshot_image,
)
from millpond.storage.clock import SystemClock
from millpond.storage.fs import OsFileSystem

from .metadata_history import (
    RETENTION,
    Op,
    check_final_state,
    check_log,
    check_prefixes,
    leader_changes,
    longest_gap,
    outage_around,
)
from .rig import (
    CONTROLLER_PORT,
    Network,
    Node,
    QuorumView,
    node_overrides,
    quorum_leader,
    run_in_hub,
    soak_main,
)

CLUSTER_ID = "VDEyLXF1b3J1bS1zb2FrIQ"
CONTROLLERS = (1, 2, 3)
BROKERS = (4, 5, 6)
#: Quorum timers shorter than Kafka's defaults, so that a run of 30 faults takes minutes.
TIMERS = {
    "controller.quorum.election.timeout.ms": 500,
    "controller.quorum.fetch.timeout.ms": 1000,
    "controller.quorum.election.backoff.max.ms": 500,
    "controller.quorum.request.timeout.ms": 1000,
    "broker.heartbeat.interval.ms": 250,
    "broker.session.timeout.ms": 3000,
    "request.timeout.ms": 8000,
    # Snapshots every few dozen operations: restarts load them, the final state reads one.
    "metadata.log.max.record.bytes.between.snapshots": 32768,
}
FAULTS = ("kill", "pause", "cut")
#: How long a fault lasts, and the longest the quorum may take to recover after it.
HOLD_S = 2.5
RECOVER_S = 30.0


class Workload(threading.Thread):
    """Topics through create, config changes and delete, one operation at a time."""

    def __init__(self, bootstrap: list[str], seed: int) -> None:
        super().__init__(daemon=True)
        self.bootstrap = bootstrap
        self.rng = random.Random(seed)
        self.ops: list[Op] = []
        self.stopping = threading.Event()
        self._values = 0

    def run(self) -> None:
        from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient, NewTopic

        admin = KafkaAdminClient(
            bootstrap_servers=self.bootstrap, request_timeout_ms=10_000, client_id="t12"
        )
        try:
            n = 0
            while not self.stopping.is_set():
                n += 1
                topic = f"t{n}"
                steps: list[str] = ["create", *["alter"] * self.rng.randint(0, 2)]
                if self.rng.random() < 0.5:
                    steps.append("delete")
                for kind in steps:
                    value = None
                    if kind == "alter":
                        self._values += 1
                        value = str(60_000 + self._values)
                    start = time.monotonic()
                    try:
                        if kind == "create":
                            admin.create_topics([NewTopic(topic, 1, 1)])
                        elif kind == "alter":
                            resource = ConfigResource(
                                ConfigResourceType.TOPIC, topic, configs={RETENTION: value}
                            )
                            result = admin.alter_configs(
                                [resource], raise_on_unknown=False, incremental=True
                            )
                            if result.get("topic", {}).get(topic) != "OK":
                                raise RuntimeError(f"{topic}: {result}")
                        else:
                            admin.delete_topics([topic])
                        outcome = "ok"
                    except Exception:  # noqa: BLE001 (any failure leaves the outcome unknown)
                        outcome = "info"
                    self.ops.append(Op(kind, topic, value, start, time.monotonic(), outcome))  # type: ignore[arg-type]
                    if outcome == "info" or self.stopping.is_set():
                        break  # the topic's state is unknown from here: leave it
        finally:
            admin.close()


def _view(nodes: dict[int, Node]) -> QuorumView | None:
    addresses = {i: (nodes[i].address, CONTROLLER_PORT) for i in CONTROLLERS}
    asked = [i for i in CONTROLLERS if nodes[i].process is not None and not nodes[i].paused]
    return quorum_leader(addresses, asked, CONTROLLERS)


def active_controller(nodes: dict[int, Node]) -> tuple[int, int] | None:
    """(leader id, epoch) of the leader of the highest epoch that answers."""
    view = _view(nodes)
    return None if view is None else (view.leader, view.epoch)


def health(nodes: dict[int, Node]) -> str | None:
    """None when there is a leader and every voter has caught up with it within the
    last two seconds; else what is missing."""
    view = _view(nodes)
    if view is None:
        return "no leader answers"
    if len(view.voters) != len(CONTROLLERS) or view.behind:
        return f"voters behind leader {view.leader}: {view.behind} (voters {view.voters})"
    return None


def healthy(nodes: dict[int, Node]) -> bool:
    return health(nodes) is None


def wait_for(condition: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return False


def committed_logs(nodes: dict[int, Node]) -> dict[int, list[Any]]:
    logs = {}
    for i in CONTROLLERS:
        log = open_metadata_log(OsFileSystem(), str(nodes[i].data_dir), SystemClock())
        try:
            logs[i] = list(log.batches(0))
        finally:
            log.log.close()
    return logs


def check_snapshots(nodes: dict[int, Node], logs: dict[int, list[Any]]) -> list[str]:
    """Each node's latest snapshot (what its restart loads) holds the image a log that
    covers it replays to at the snapshot's end."""
    full = max(
        (i for i in logs if logs[i] and logs[i][0].base_offset == 0),
        key=lambda i: logs[i][-1].next_offset,
        default=None,
    )
    if full is None:
        return ["no controller kept its log from offset 0"]
    violations = []
    log = open_metadata_log(OsFileSystem(), str(nodes[full].data_dir), SystemClock())
    try:
        for i, node in nodes.items():
            theirs = open_metadata_log(OsFileSystem(), str(node.data_dir), SystemClock())
            try:
                latest = theirs.latest_snapshot()
                if latest is None or latest.offset > log.end_offset:
                    continue
                contents = theirs.snapshot_contents(latest)
            finally:
                theirs.log.close()
            loaded = snapshot_image(CLUSTER_ID, latest, contents.batches).image
            # The log alone, from offset 0: no snapshot of its own node in between.
            replayed = replay_batches(
                MetadataImage.empty(CLUSTER_ID), log.batches(0, latest.offset)
            )
            if loaded != replayed.image:
                differ = [
                    f for f in loaded._fields if getattr(loaded, f) != getattr(replayed.image, f)
                ]
                violations.append(
                    f"node {i}: snapshot {latest} is not node {full}'s log (differ: {differ})"
                )
    finally:
        log.log.close()
    return violations


def final_state(data_dir: Path) -> dict[str, str | None]:
    log = open_metadata_log(OsFileSystem(), str(data_dir), SystemClock())
    try:
        image: MetadataImage = read_image(log, MetadataImage.empty(CLUSTER_ID)).image
    finally:
        log.log.close()
    return {name: image.topic_config(name).get(RETENTION, "") for name in image.topic_ids_by_name}


def run_inside(prefix: str, work: Path, faults: int, seed: int) -> dict[str, Any]:
    network = Network(prefix, [*CONTROLLERS, *BROKERS])
    voters = ",".join(f"{i}@{Network.address(i)}:9093" for i in CONTROLLERS)
    nodes: dict[int, Node] = {}
    for i in (*CONTROLLERS, *BROKERS):
        roles = "controller" if i in CONTROLLERS else "broker"
        data = work / f"node{i}"
        nodes[i] = Node(
            i, roles, network.namespace(i), Network.address(i), data, work / f"node{i}.log",
            node_overrides(i, roles, voters, data, TIMERS),
        )  # fmt: skip
    rng = random.Random(seed)
    counts = dict.fromkeys(FAULTS, 0)
    injected: list[tuple[str, float]] = []  # (kind, when)
    liveness: list[str] = []
    started = time.monotonic()
    for node in nodes.values():
        node.format(CLUSTER_ID)
        node.start()
    for node in nodes.values():
        node.wait_listening(0)
    workload = Workload([f"{Network.address(i)}:9092" for i in BROKERS], seed)
    workload.start()
    begin = time.monotonic()
    try:
        for n in range(faults):
            if not wait_for(lambda: healthy(nodes), RECOVER_S):
                liveness.append(
                    f"before fault {n}: the quorum did not recover in {RECOVER_S} s: "
                    f"{health(nodes)}"
                )
            found = active_controller(nodes)
            if found is None:
                continue
            target = nodes[found[0]]
            kind = FAULTS[n % len(FAULTS)]
            counts[kind] += 1
            injected.append((kind, time.monotonic()))
            if kind == "kill":
                size = target.log_path.stat().st_size
                target.kill()
                time.sleep(HOLD_S * rng.uniform(0.5, 1.5))
                target.start()
                target.wait_listening(size)
            elif kind == "pause":
                target.pause()
                time.sleep(HOLD_S * rng.uniform(0.5, 1.5))
                target.resume()
            else:
                network.isolate(target.node_id)
                time.sleep(HOLD_S * rng.uniform(0.5, 1.5))
                network.heal(target.node_id)
        if not wait_for(lambda: healthy(nodes), RECOVER_S):
            liveness.append(f"after the last fault: the quorum did not recover in {RECOVER_S} s")
        time.sleep(1.0)  # a last stretch of operations with every node up
    finally:
        workload.stopping.set()
        workload.join(timeout=60)
        end = time.monotonic()
        caught_up = wait_for(lambda: healthy(nodes), RECOVER_S)
        for node in nodes.values():
            node.stop()
    logs = committed_logs(nodes)
    violations = [*liveness]
    if not caught_up:
        violations.append("the controllers did not catch up after the run")
    for i, batches in logs.items():
        violations += check_log(i, batches)
    violations += check_prefixes(
        {i: [(b.base_offset, bytes(b.buffer)) for b in bs] for i, bs in logs.items()}
    )
    violations += check_snapshots(nodes, logs)
    longest = max(logs, key=lambda i: len(logs[i]))
    ops = workload.ops
    violations += check_final_state(ops, final_state(nodes[longest].data_dir))
    epochs = {epoch for epoch, _ in leader_changes(logs[longest])}
    return {
        "faults": counts,
        "faults_total": sum(counts.values()),
        "ops_ok": sum(op.outcome == "ok" for op in ops),
        "ops_info": sum(op.outcome == "info" for op in ops),
        "topics": len({op.topic for op in ops}),
        "controller_elections": len(epochs),
        "snapshots_per_node": {
            i: len(list((nodes[i].data_dir / "__cluster_metadata-0").glob("*.checkpoint")))
            for i in (*CONTROLLERS, *BROKERS)
        },
        "longest_unavailability_s": round(longest_gap(ops, begin, end), 3),
        "longest_outage_by_fault_s": {
            kind: round(
                max(
                    (outage_around(ops, t, begin, end) for k, t in injected if k == kind), default=0
                ),
                3,
            )
            for kind in FAULTS
        },
        "metadata_batches": {i: len(b) for i, b in logs.items()},
        #: (log start, log end) per controller: a start above 0 is a snapshot installed.
        "metadata_log_range": {
            i: (b[0].base_offset, b[-1].next_offset) if b else (0, 0) for i, b in logs.items()
        },
        "run_s": round(time.monotonic() - started, 1),
        "violations": violations,
    }


def run(faults: int, seed: int, work: Path | None = None) -> dict[str, Any]:
    """The whole run: namespaces, the run inside the hub, teardown."""
    network = Network(f"mp{os.getpid() % 100000}", [*CONTROLLERS, *BROKERS])
    args = ["--faults", str(faults), "--seed", str(seed)]
    return run_in_hub(network, "tests.cluster.quorum_soak", args, 120 + faults * 60, work)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--faults", type=int, default=30)
    parser.add_argument("--seed", type=int, default=1)
    return soak_main(
        parser, argv, lambda a: run_inside(a.inside, a.work, a.faults, a.seed),
        lambda a: run(a.faults, a.seed, a.work),
    )  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())

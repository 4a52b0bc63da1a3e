"""Replication under faults: 3 controllers and 3 brokers as ``millpond serve`` processes,
each in a network namespace of its own, a topic of 3 partitions with replication factor
3, idempotent ``acks=all`` producers and ``assign`` consumers (librdkafka) running
throughout, while one scenario breaks the cluster:

- ``t4``: the leader of a partition, then the active controller, bounced cleanly
  (SIGTERM) and hard (kill -9), ``--faults`` rounds of the four;
- ``t5``: a follower cut off from the other brokers, then healed: the ISR must shrink
  within ``replica.lag.time.max.ms`` + 10 s and take it back once healed;
- ``t6``: a partition leader cut off from its followers (the ISR shrinks to it alone),
  then from the controllers too, then healed. With ``min.insync.replicas=2`` nothing is
  acknowledged while the ISR is below it and nothing acknowledged is lost; with
  ``--unclean`` (and ``min.insync.replicas=1``) a follower outside the ISR is elected
  and what the isolated leader acknowledged alone is lost, as the checker must show;
- ``t7``: ``--faults`` random faults (kill -9, SIGSTOP, network partitions: one node, a
  partition leader, the active controller, a random majority split, a ring; wall-clock
  steps of up to 5 minutes either way on up to 3 nodes, and a node's clock strobing) with
  quiet windows between them.

Every node runs on a wall clock of its own (:mod:`tests.cluster.clocks`, libfaketime).

    python -m tests.cluster.replication_soak t7 --faults 100 --seconds 300   # as root

It prints one JSON report: the configuration, faults by kind, sends (ok / info / fail),
the checker's anomalies (:mod:`tests.cluster.queue_checker`), sends acknowledged while
the ISR was below ``min.insync.replicas``, in-sync replicas that disagree with what was
read, and the longest stretch without an acknowledged send. It exits 1 on a violation.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .clocks import Clocks
from .queue_checker import Report, Send, check, version_order
from .queue_workload import Consumers, IsrMonitor, Producers, Sample, final_polls, metadata
from .replica_logs import check_agreement, read_replica
from .rig import (
    CONTROLLER_PORT,
    Network,
    Node,
    node_overrides,
    quorum_leader,
    run_in_hub,
    soak_main,
)

CLUSTER_ID = "UmVwbGljYXRpb24tc29haw"
CONTROLLERS = (1, 2, 3)
BROKERS = (4, 5, 6)
TOPIC = "queue"
PARTITIONS = 3
#: Shorter than Kafka's defaults, so that a run of many faults takes minutes.
LAG_MS = 4000
TIMERS = {
    "controller.quorum.election.timeout.ms": 500,
    "controller.quorum.fetch.timeout.ms": 1000,
    "controller.quorum.election.backoff.max.ms": 500,
    "controller.quorum.request.timeout.ms": 1000,
    "broker.heartbeat.interval.ms": 250,
    "broker.session.timeout.ms": 3000,
    "request.timeout.ms": 8000,
    "replica.lag.time.max.ms": LAG_MS,
    "replica.fetch.wait.max.ms": 200,
    "replica.fetch.backoff.ms": 200,
    "replica.socket.timeout.ms": 3000,
    "group.initial.rebalance.delay.ms": 0,
}
RECOVER_S = 45.0


@dataclass
class Run:
    """The cluster, the workload and what the faults did, for one scenario."""

    network: Network
    nodes: dict[int, Node]
    clocks: Clocks
    rng: random.Random
    monitor: IsrMonitor
    faults: dict[str, int] = field(default_factory=dict)
    #: (kind, start, end) of every fault, on the monotonic clock.
    injected: list[tuple[str, float, float]] = field(default_factory=list)
    liveness: list[str] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)
    #: Brokers the monitor should not ask (cut off: their metadata is stale).
    avoid: set[int] = field(default_factory=set)

    def broker_addresses(self) -> list[str]:
        up = [b for b in BROKERS if self.nodes[b].process is not None and not self.nodes[b].paused]
        return [self.nodes[b].address for b in sorted(up, key=lambda b: b in self.avoid)]

    def latest(self) -> Sample | None:
        return self.monitor.samples[-1] if self.monitor.samples else None

    def leader_of(self, partition: int) -> int | None:
        for address in self.broker_addresses():
            found = metadata(address, TOPIC)
            if found is not None and found[partition][0] in BROKERS:
                return found[partition][0]
        return None

    def active_controller(self) -> int | None:
        addresses = {i: (self.nodes[i].address, CONTROLLER_PORT) for i in CONTROLLERS}
        asked = [i for i in CONTROLLERS if self.nodes[i].process is not None]
        view = quorum_leader(addresses, asked, CONTROLLERS)
        return None if view is None else view.leader

    def healthy(self) -> str | None:
        """None once every partition has a leader and its whole replica set in sync, as
        a fresh Metadata answer says; else what is missing."""
        for address in self.broker_addresses():
            found = metadata(address, TOPIC)
            if found is None:
                continue
            short = {p: li for p, li in found.items() if li[0] < 0 or len(li[1]) < len(BROKERS)}
            return None if not short else f"partitions short of a leader or replicas: {short}"
        return "no broker answers Metadata"

    def recover(self, after: str) -> None:
        deadline = time.monotonic() + RECOVER_S
        while (missing := self.healthy()) is not None:
            if time.monotonic() > deadline:
                self.liveness.append(f"{after}: not recovered in {RECOVER_S} s: {missing}")
                return
            time.sleep(0.2)

    def fault(self, kind: str, start: float) -> None:
        self.faults[kind] = self.faults.get(kind, 0) + 1
        self.injected.append((kind, start, time.monotonic()))

    # -- the faults ----------------------------------------------------------------

    def bounce(self, node_id: int, hard: bool, hold_s: float) -> None:
        node, start = self.nodes[node_id], time.monotonic()
        size = node.log_path.stat().st_size
        node.kill() if hard else node.stop()
        time.sleep(hold_s)
        node.start()
        node.wait_listening(size)
        self.fault("kill" if hard else "stop", start)

    def pause(self, node_id: int, hold_s: float) -> None:
        start = time.monotonic()
        self.nodes[node_id].pause()
        time.sleep(hold_s)
        self.nodes[node_id].resume()
        self.fault("pause", start)

    def partition(self, kind: str, pairs: set[tuple[int, int]], hold_s: float) -> None:
        start = time.monotonic()
        rules = self.network.cut(sorted(pairs))
        time.sleep(hold_s)
        self.network.mend(rules)
        self.fault(f"partition-{kind}", start)

    def clock_bump(self, offsets: dict[int, float], hold_s: float) -> None:
        start = time.monotonic()
        for node_id, offset in offsets.items():
            self.clocks.set(node_id, offset)
        time.sleep(hold_s)
        for node_id in offsets:
            self.clocks.set(node_id, 0.0)
        self.fault("clock-bump", start)

    def clock_strobe(self, node_id: int, delta_s: float, hold_s: float) -> None:
        start = time.monotonic()
        self.clocks.strobe(node_id, delta_s, 0.1, hold_s, self.rng)
        self.fault("clock-strobe", start)


def _across(side: Sequence[int], others: Sequence[int]) -> set[tuple[int, int]]:
    return {(min(a, b), max(a, b)) for a in side for b in others if a != b}


def _ring(order: Sequence[int]) -> set[tuple[int, int]]:
    """Every pair but neighbours on the ring: each node hears only the two beside it."""
    n = len(order)
    near = {frozenset((order[i], order[(i + 1) % n])) for i in range(n)}
    return {(a, b) for a in order for b in order if a < b and frozenset((a, b)) not in near}


# -- the scenarios --------------------------------------------------------------------


def t4(run: Run, faults: int, _seconds: float) -> None:
    for n in range(faults):
        for target in ("leader", "controller"):
            for hard in (False, True):
                run.recover(f"before bounce {n}")
                found = (
                    run.leader_of(run.rng.randrange(PARTITIONS))
                    if target == "leader"
                    else run.active_controller()
                )
                if found is None:
                    run.liveness.append(f"bounce {n}: no {target} to bounce")
                    continue
                run.bounce(found, hard, run.rng.uniform(1.0, 3.0))
    run.recover("after the last bounce")


def _isr_seen(
    run: Run, since: float, test: Callable[[Sample], bool], seconds: float
) -> float | None:
    """Seconds from ``since`` to the first sample after it that passes ``test``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for sample in reversed(run.monitor.samples):
            if sample.at < since:
                break
            if test(sample):
                return sample.at - since
        time.sleep(0.2)
    return None


def t5(run: Run, faults: int, _seconds: float) -> None:
    shrinks, expands = [], []
    for n in range(faults):
        run.recover(f"before cut {n}")
        leader0 = run.leader_of(0)
        follower = run.rng.choice([b for b in BROKERS if b != leader0])
        followed = [p for p in range(PARTITIONS) if run.leader_of(p) != follower]
        start = time.monotonic()
        rules = run.network.cut(sorted(_across([follower], BROKERS)))
        run.avoid = {follower}

        def without(
            sample: Sample, follower: int = follower, followed: list[int] = followed
        ) -> bool:
            return all(follower not in sample.partitions[p][1] for p in followed)

        shrunk = _isr_seen(run, start, without, LAG_MS / 1000 + 10)
        shrinks.append(shrunk)
        if shrunk is None:
            run.liveness.append(f"cut {n}: broker {follower} still in the ISRs {followed}")
        time.sleep(run.rng.uniform(1.0, 3.0))
        healed = time.monotonic()
        run.network.mend(rules)
        run.avoid = set()

        def back(sample: Sample, follower: int = follower) -> bool:
            return all(follower in sample.partitions[p][1] for p in range(PARTITIONS))

        expanded = _isr_seen(run, healed, back, RECOVER_S)
        expands.append(expanded)
        if expanded is None:
            run.liveness.append(f"heal {n}: broker {follower} not back in every ISR")
        run.fault("partition-follower", start)
    run.figures["isr_shrink_s"] = [None if s is None else round(s, 2) for s in shrinks]
    run.figures["isr_expand_s"] = [None if s is None else round(s, 2) for s in expands]
    run.recover("after the last heal")


def _led_alone_by(leader: int) -> Callable[[Sample], bool]:
    return lambda sample: sample.partitions[0][1] == (leader,)


def _led_by_other_than(leader: int) -> Callable[[Sample], bool]:
    return lambda sample: sample.partitions[0][0] != leader


def t6(run: Run, faults: int, _seconds: float) -> None:
    for n in range(faults):
        run.recover(f"before round {n}")
        leader = run.leader_of(0)
        if leader is None:
            run.liveness.append(f"round {n}: partition 0 has no leader")
            continue
        start = time.monotonic()
        data = run.network.cut(sorted(_across([leader], BROKERS)))
        alone = _isr_seen(run, start, _led_alone_by(leader), LAG_MS / 1000 + 10)
        if alone is None:
            run.liveness.append(f"round {n}: the ISR of partition 0 did not shrink to {leader}")
        time.sleep(2.0)  # sends go on to the isolated leader
        control = run.network.cut(sorted(_across([leader], CONTROLLERS)))
        run.avoid = {leader}
        moved = _isr_seen(run, time.monotonic(), _led_by_other_than(leader), 20)
        run.figures.setdefault("leader_moved_s", []).append(
            None if moved is None else round(moved, 2)
        )
        time.sleep(2.0)
        run.network.mend(control)
        run.network.mend(data)
        run.avoid = set()
        run.fault("partition-leader-then-controllers", start)
    run.recover("after the last heal")


def t7(run: Run, faults: int, seconds: float) -> None:
    kinds = ("kill", "pause", "one", "leader", "controller", "majority", "ring", "bump", "strobe")
    every = [*CONTROLLERS, *BROKERS]
    deadline = time.monotonic() + seconds
    for n in range(faults):
        if time.monotonic() > deadline:
            break
        run.recover(f"before fault {n}")
        kind, hold = kinds[n % len(kinds)], run.rng.uniform(2.0, 5.0)
        if kind in ("kill", "pause"):
            target = run.rng.choice(every)
            if kind == "kill":
                run.bounce(target, True, hold)
            else:
                run.pause(target, hold)
        elif kind == "one":
            target = run.rng.choice(every)
            run.partition(kind, _across([target], every), hold)
        elif kind in ("leader", "controller"):
            found = (
                run.leader_of(run.rng.randrange(PARTITIONS))
                if kind == "leader"
                else run.active_controller()
            )
            if found is not None:
                run.partition(kind, _across([found], every), hold)
        elif kind == "majority":
            shuffled = run.rng.sample(every, len(every))
            run.partition(kind, _across(shuffled[:2], shuffled[2:]), hold)
        elif kind == "ring":
            run.partition(kind, _ring(run.rng.sample(every, len(every))), hold)
        elif kind == "bump":
            moved = run.rng.sample(every, run.rng.randint(1, 3))
            offsets = {i: run.rng.choice((-1, 1)) * run.rng.uniform(5, 300) for i in moved}
            run.clock_bump(offsets, hold)
        else:
            run.clock_strobe(run.rng.choice(every), run.rng.uniform(0.2, 5.0), hold)
        time.sleep(run.rng.uniform(1.0, 3.0))  # a quiet window
    run.recover("after the last fault")


SCENARIOS = {"t4": t4, "t5": t5, "t6": t6, "t7": t7}


# -- checks of the whole run ------------------------------------------------------------


def acked_under_min_isr(
    sends: Sequence[Send], samples: Sequence[Sample], min_isr: int
) -> list[str]:
    """I11: an ok send whose whole span, from invoke to ack, lies between two samples
    that both saw its partition's ISR below ``min_isr`` with nothing else seen between."""
    violations = []
    by_partition: dict[int, list[tuple[float, bool]]] = {}
    for sample in samples:
        for p, (_, isr) in sample.partitions.items():
            by_partition.setdefault(p, []).append((sample.at, len(isr) < min_isr))
    for send in sends:
        if send.outcome != "ok":
            continue
        seen = by_partition.get(send.partition, [])
        before = [short for at, short in seen if at <= send.invoked][-1:]
        during = [short for at, short in seen if send.invoked < at < send.completed]
        after = [short for at, short in seen if at >= send.completed][:1]
        if before == [True] and after == [True] and all(during):
            violations.append(
                f"value {send.value} acked at offset {send.offset} of partition "
                f"{send.partition} while its ISR was below {min_isr}"
            )
    return violations


def longest_send_gap(sends: Sequence[Send], begin: float, end: float) -> float:
    acked = sorted(s.completed for s in sends if s.outcome == "ok" and begin <= s.completed <= end)
    points = [begin, *acked, end]
    return max(b - a for a, b in zip(points, points[1:], strict=False))


def start_cluster(
    prefix: str, work: Path, seed: int, extra: Mapping[str, object] | None = None
) -> Run:
    """The 3 controllers and 3 brokers, formatted, started and listening (``extra``:
    settings over :data:`TIMERS`)."""
    network = Network(prefix, [*CONTROLLERS, *BROKERS])
    voters = ",".join(f"{i}@{Network.address(i)}:9093" for i in CONTROLLERS)
    nodes: dict[int, Node] = {}
    clocks = Clocks(work, [*CONTROLLERS, *BROKERS])
    settings = {**TIMERS, **(extra or {})}
    for i in (*CONTROLLERS, *BROKERS):
        roles = "controller" if i in CONTROLLERS else "broker"
        data = work / f"node{i}"
        nodes[i] = Node(
            i, roles, network.namespace(i), Network.address(i), data, work / f"node{i}.log",
            node_overrides(i, roles, voters, data, settings), clocks.env(i),
        )  # fmt: skip
    for node in nodes.values():
        node.format(CLUSTER_ID)
        node.start()
    for node in nodes.values():
        node.wait_listening(0)
    run = Run(network, nodes, clocks, random.Random(seed), IsrMonitor(lambda: [], TOPIC))
    run.monitor.addresses = run.broker_addresses
    return run


BOOTSTRAP = ",".join(f"{Network.address(b)}:9092" for b in BROKERS)


def run_inside(prefix: str, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    run = start_cluster(prefix, work, args.seed)
    nodes = run.nodes
    min_isr = 1 if args.unclean else 2
    create_topic(BOOTSTRAP, min_isr, args.unclean)
    run.recover("the topic's creation")
    producers = Producers(BOOTSTRAP, TOPIC, PARTITIONS, 2, args.rate, args.seed)
    consumers = Consumers(BOOTSTRAP, TOPIC, PARTITIONS, 2)
    run.monitor.start()
    producers.start()
    consumers.start()
    begin = time.monotonic()
    try:
        time.sleep(2.0)  # traffic before the first fault
        SCENARIOS[args.scenario](run, args.faults, args.seconds)
        time.sleep(2.0)  # and after the last
    finally:
        producers.stopping.set()
        producers.join(timeout=120)
        end = time.monotonic()
        consumers.stopping.set()
        consumers.join(timeout=60)
    run.recover("the end of the run")
    final, ends = final_polls(BOOTSTRAP, TOPIC, PARTITIONS, process=len(BROKERS) + 100)
    isrs = {p: li[1] for p, li in (metadata(run.broker_addresses()[0], TOPIC) or {}).items()}
    run.monitor.stopping.set()
    run.monitor.join(timeout=10)
    for node_id in (*BROKERS, *CONTROLLERS):
        nodes[node_id].stop()
    sends = producers.history()
    history = [*sends, *consumers.ops, *final]
    report = check(history)
    read = {p: dict(pairs) for p, pairs in version_order(final).items()}
    at_end = {v for held in read.values() for v in held.values()}
    acked_lost = [s.value for s in sends if s.outcome == "ok" and s.value not in at_end]
    logs = {b: read_replica(nodes[b].data_dir, TOPIC) for b in BROKERS}
    under_min = acked_under_min_isr(sends, run.monitor.samples, min_isr)
    disagree = check_agreement(logs, read, ends, isrs)
    violations = [*run.liveness, *under_min, *disagree]
    return {
        "scenario": args.scenario,
        "config": {
            "brokers": len(BROKERS),
            "controllers": len(CONTROLLERS),
            "partitions": PARTITIONS,
            "replication_factor": 3,
            "min.insync.replicas": min_isr,
            "acks": "all",
            "enable.idempotence": True,
            "unclean.leader.election.enable": args.unclean,
            "replica.lag.time.max.ms": LAG_MS,
            "producer": "librdkafka",
            "rate": args.rate,
        },  # fmt: skip
        "faults": run.faults,
        "faults_total": sum(run.faults.values()),
        "checker": report.as_dict(),
        "valid": report.valid,
        "acked": report.acked,
        "acked_lost": len(acked_lost),
        "acked_under_min_isr": under_min[:10],
        "replica_disagreements": disagree,
        "producer_fatal_errors": producers.fatal[:5],
        "longest_produce_outage_s": round(longest_send_gap(sends, begin, end), 2),
        "figures": run.figures,
        "run_s": round(time.monotonic() - started, 1),
        # With unclean election on, the checker's findings are the point of the run.
        "violations": violations if args.unclean else [*violations, *_findings(report)],
    }


def _findings(report: Report) -> list[str]:
    return [f"{kind}: {found[0]}" for kind, found in report.anomalies().items() if found]


def create_topic(
    bootstrap: str, min_isr: int, unclean: bool = False, partitions: int = PARTITIONS
) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic  # noqa: PLC0415 (a test client)

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=30_000)
    try:
        configs = {
            "min.insync.replicas": str(min_isr),
            "unclean.leader.election.enable": str(unclean).lower(),
        }
        admin.create_topics([NewTopic(TOPIC, partitions, 3, topic_configs=configs)])
    finally:
        admin.close()


def run(
    scenario: str,
    faults: int,
    seconds: float = 600,
    *,
    seed: int = 1,
    unclean: bool = False,
    rate: float = 300,
    work: Path | None = None,
) -> dict[str, Any]:
    """The whole run: namespaces, the run inside the hub, teardown."""
    network = Network(f"mr{os.getpid() % 100000}", [*CONTROLLERS, *BROKERS])
    args = [
        scenario, "--faults", str(faults), "--seconds", str(seconds), "--seed", str(seed),
        "--rate", str(rate), *(["--unclean"] if unclean else []),
    ]  # fmt: skip
    timeout_s = 300 + seconds + faults * 90
    return run_in_hub(network, "tests.cluster.replication_soak", args, timeout_s, work)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("scenario", choices=sorted(SCENARIOS))
    parser.add_argument("--faults", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=600, help="at most this long (t7)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rate", type=float, default=300, help="sends per second, in all")
    parser.add_argument("--unclean", action="store_true", help="t6 with unclean election")
    return soak_main(
        parser, argv, lambda a: run_inside(a.inside, a.work, a),
        lambda a: run(
            a.scenario, a.faults, a.seconds, seed=a.seed, unclean=a.unclean, rate=a.rate,
            work=a.work,
        ),
    )  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())

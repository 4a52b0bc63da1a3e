"""T10: a consumer group while its coordinator's broker is killed. The cluster of the
replication runs (:mod:`tests.cluster.replication_soak`: 3 controllers, 3 brokers, each
in a network namespace), ``__consumer_offsets`` and a topic of 6 partitions both with
replication factor 3 and ``min.insync.replicas=2``, an idempotent producer running, and
3 librdkafka members of one group (:mod:`tests.cluster.group_workload`) consuming and
committing. Each fault finds the group's coordinator, kills it with SIGKILL, and starts
it again after a few seconds.

    python -m tests.cluster.group_soak --faults 20   # as root

It prints one JSON report: the faults, the coordinators the group had, the checks of
FAULTS.md I14 (no partition held by two members at once, no committed offset read lower
than before, no commit from a member that did not hold the partition, and, at least
once, every acknowledged record below the final committed offset consumed), the
partitions given up after the group first settled, and the longest stretch without a successful
commit. It exits 1 on a violation.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from millpond.wire.generated.api.find_coordinator_request import FindCoordinatorRequest
from millpond.wire.generated.api.find_coordinator_response import FindCoordinatorResponse

from .group_workload import (
    CommitMonitor,
    GroupMembers,
    commits_outside_ownership,
    double_ownership,
    offset_regressions,
    unconsumed_below_commit,
)
from .queue_workload import Producers, metadata
from .replication_soak import BOOTSTRAP, BROKERS, CONTROLLERS, TOPIC, Run, create_topic
from .replication_soak import start_cluster as start_replication_cluster
from .rig import BROKER_PORT, Network, request, run_in_hub, soak_main, until

GROUP = "t10"
PARTITIONS = 6
OFFSETS_TOPIC = "__consumer_offsets"
SETTINGS = {
    "offsets.topic.replication.factor": 3,
    "offsets.topic.num.partitions": 6,
    "min.insync.replicas": 2,
}


def coordinator(run: Run) -> int | None:
    """The group's coordinator as a live broker answers FindCoordinator."""
    for address in run.broker_addresses():
        answer = request(address, BROKER_PORT, FindCoordinatorRequest(key=GROUP, key_type=0), 3)
        if isinstance(answer, FindCoordinatorResponse) and answer.error_code == 0:
            return answer.node_id
    return None


def _offsets_in_sync(run: Run) -> bool:
    """Every ``__consumer_offsets`` partition led and wholly in sync."""
    for address in run.broker_addresses():
        found = metadata(address, OFFSETS_TOPIC)
        if found is not None:
            return all(leader >= 0 and len(isr) == len(BROKERS) for leader, isr in found.values())
    return False


def longest_commit_gap(completed: Sequence[float], begin: float, end: float) -> float:
    points = [begin, *sorted(t for t in completed if begin <= t <= end), end]
    return max(b - a for a, b in zip(points, points[1:], strict=False))


def run_inside(prefix: str, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    run = start_replication_cluster(prefix, work, args.seed, SETTINGS)
    create_topic(BOOTSTRAP, 2, partitions=PARTITIONS)
    run.recover("the topic's creation")
    producers = Producers(BOOTSTRAP, TOPIC, PARTITIONS, 1, args.rate, args.seed)
    members = GroupMembers(BOOTSTRAP, TOPIC, PARTITIONS, GROUP, 3)
    monitor = CommitMonitor(BOOTSTRAP, TOPIC, GROUP, PARTITIONS)
    producers.start()
    members.start()
    monitor.start()
    coordinators: list[int | None] = []
    member_errors: list[str] = []
    try:
        until(lambda: {c.partition for c in members.commits} == set(range(PARTITIONS)),
              "every partition committed once", 90)  # fmt: skip
        until(members.balanced, "the partitions spread over every member", 60)
        settled = stopping = time.monotonic()
        for n in range(args.faults):
            run.recover(f"before fault {n}")
            until(lambda: _offsets_in_sync(run), f"{OFFSETS_TOPIC} in sync before fault {n}", 60)
            target = coordinator(run)
            coordinators.append(target)
            if target is None:
                run.liveness.append(f"fault {n}: no broker names the group's coordinator")
                continue
            run.bounce(target, True, run.rng.uniform(2.0, 5.0))
            time.sleep(run.rng.uniform(3.0, 6.0))  # a quiet window
        coordinators.append(coordinator(run))
        time.sleep(2.0)
    finally:
        producers.stopping.set()
        producers.join(timeout=120)
        stopping = time.monotonic()
        member_errors = members.stop()
        end = time.monotonic()
        time.sleep(1.0)  # one more read of the commits the members made as they stopped
        monitor.stopping.set()
        monitor.join(timeout=30)
    for node_id in (*BROKERS, *CONTROLLERS):
        run.nodes[node_id].stop()
    sends = producers.history()
    acked: dict[int, set[int]] = {}
    for send in sends:
        if send.outcome == "ok" and send.offset is not None:
            acked.setdefault(send.partition, set()).add(send.offset)
    final = monitor.observed[-1].offsets if monitor.observed else {}
    checks = {
        "double_ownership": double_ownership(members.held),
        "offset_regressions": offset_regressions(monitor.observed),
        "commits_outside_ownership": commits_outside_ownership(members.commits, members.held),
        "unconsumed_below_commit": unconsumed_below_commit(members.consumed, final, acked),
    }
    progress = [
        f"partition {p}: nothing committed by the end"
        for p in range(PARTITIONS)
        if final.get(p, -1) < 0
    ]
    violations = [*run.liveness, *member_errors, *progress]
    violations += [finding for found in checks.values() for finding in found]
    return {
        "scenario": "t10",
        "config": {
            "brokers": len(BROKERS),
            "controllers": len(CONTROLLERS),
            "partitions": PARTITIONS,
            "replication_factor": 3,
            **SETTINGS,
            "members": 3,
            "consumer": "librdkafka",
            "assignor": "range",
            "rate": args.rate,
        },  # fmt: skip
        "faults": run.faults,
        "coordinators": coordinators,
        "acked": sum(len(v) for v in acked.values()),
        "commits": len(members.commits),
        "final_committed": final,
        # Partitions a member gave up between settling and the members' stop.
        "revoked_after_settling": sum(
            1 for h in members.held if h.end is not None and settled < h.end < stopping
        ),
        "checks": {
            kind: {"count": len(found), "examples": found[:5]} for kind, found in checks.items()
        },
        "longest_commit_gap_s": round(
            longest_commit_gap([c.completed for c in members.commits], settled, end), 2
        ),
        "run_s": round(time.monotonic() - started, 1),
        "violations": violations,
    }


def run(
    faults: int, *, seed: int = 1, rate: float = 200, work: Path | None = None
) -> dict[str, Any]:
    """The whole run: namespaces, the run inside the hub, teardown."""
    network = Network(f"mg{os.getpid() % 100000}", [*CONTROLLERS, *BROKERS])
    args = ["--faults", str(faults), "--seed", str(seed), "--rate", str(rate)]
    return run_in_hub(network, "tests.cluster.group_soak", args, 300 + faults * 90, work)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--faults", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rate", type=float, default=200, help="sends per second")
    return soak_main(
        parser, argv, lambda a: run_inside(a.inside, a.work, a),
        lambda a: run(a.faults, seed=a.seed, rate=a.rate, work=a.work),
    )  # fmt: skip


if __name__ == "__main__":
    raise SystemExit(main())

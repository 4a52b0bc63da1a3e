"""The metadata quorum: a millpond cluster against an Apache Kafka 4.4 cluster, same
machine, same run, same layout: 3 controllers (``process.roles=controller``) and 3
brokers (``process.roles=broker``) on 127.0.0.1, a static voter set, Kafka's default
quorum and session timers on both. Every node's data directory is formatted first
(``millpond storage format``, Kafka's ``StorageTool format``): the format is not timed.

1. Start-up: from spawning the six processes until every broker's Metadata lists the
   three brokers (all registered and unfenced).
2. Create-topic latency: ``--creates`` CreateTopics (one partition each) sent one at a
   time to broker 4, which forwards them to the active controller; round trip per topic.
3. Metadata propagation: from each CreateTopics answer until all three brokers' Metadata
   name the topic with a leader (each broker polled in turn on its own connection).
4. Controller failover: ``--kills`` times, kill -9 the active controller, then send
   CreateTopics to broker 4 (a new name each try, 5 s request timeout) until one
   succeeds: the time from the kill to that committed write. The killed controller is
   started again and caught up before the next kill.

Not a test: run it by hand (Kafka's jars come from ``bash compat_tests/kafka/install.sh``);
results go in ``bench/RESULTS-quorum.md``.

    .venv/bin/python bench/quorum.py [--creates 30] [--kills 5] [--only millpond|kafka]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.kraft_node import KRaftCluster  # noqa: E402 (after the path is set)
from bench.wire_client import Client  # noqa: E402
from millpond.wire.generated.api import create_topics_request as ct  # noqa: E402
from millpond.wire.generated.api import describe_quorum_request as dq  # noqa: E402
from millpond.wire.generated.api.metadata_request import (  # noqa: E402
    MetadataRequest,
    MetadataRequestTopic,
)

CLUSTER_ID = "UXVvcnVtLWJlbmNoLXJ1bg"
CONTROLLERS = (1, 2, 3)
BROKERS = (4, 5, 6)
FIRST_BROKER = 4
READY_TIMEOUT = 180.0


def _ask(port: int, body: Any, version: int, timeout: float = 5.0) -> Any | None:
    try:
        client = Client(port, timeout=timeout)
    except OSError:
        return None
    try:
        return client.request(body, version)
    except OSError:
        return None
    finally:
        client.close()


def brokers_listed(port: int) -> set[int]:
    answer = _ask(port, MetadataRequest(topics=[], allow_auto_topic_creation=False), 12)
    return set() if answer is None else {b.node_id for b in answer.brokers}


def all_listed(cluster: KRaftCluster) -> bool:
    return all(brokers_listed(cluster.ports[i]) == set(BROKERS) for i in BROKERS)


def leader_of(cluster: KRaftCluster) -> tuple[int, bool] | None:
    """The active controller, and whether every running voter is caught up with it."""
    request = dq.DescribeQuorumRequest(
        topics=[
            dq.TopicData(
                topic_name="__cluster_metadata", partitions=[dq.PartitionData(partition_index=0)]
            )
        ]
    )
    for i in CONTROLLERS:
        if i not in cluster.procs:
            continue
        answer = _ask(cluster.ports[i], request, 2, timeout=2)
        if answer is None or answer.error_code or not answer.topics:
            continue
        partition = answer.topics[0].partitions[0]
        if partition.error_code == 0 and partition.leader_id == i:
            now_ms = time.time() * 1000
            caught_up = all(
                v.last_caught_up_timestamp >= now_ms - 2000
                for v in partition.current_voters
                if v.replica_id in cluster.procs and v.replica_id != i
            )
            return i, caught_up
    return None


def wait_for(condition: Callable[[], bool], what: str, timeout: float = READY_TIMEOUT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(what)
        time.sleep(0.005)


def create(client: Client, name: str, timeout_ms: int = 30_000) -> int:
    request = ct.CreateTopicsRequest(
        topics=[ct.CreatableTopic(name=name, num_partitions=1, replication_factor=1)],
        timeout_ms=timeout_ms,
    )
    return int(client.request(request, 7).topics[0].error_code)


def propagated(clients: dict[int, Client], name: str) -> float:
    """Seconds from now until every broker's Metadata names ``name`` with a leader."""
    start = time.monotonic()
    waiting = set(clients)
    request = MetadataRequest(
        topics=[MetadataRequestTopic(name=name)], allow_auto_topic_creation=False
    )
    deadline = start + 60
    while waiting:
        for i in sorted(waiting):
            topic = clients[i].request(request, 12).topics[0]
            if topic.error_code == 0 and topic.partitions and topic.partitions[0].leader_id >= 0:
                waiting.discard(i)
        if time.monotonic() > deadline:
            raise TimeoutError(f"{name} did not reach brokers {sorted(waiting)}")
    return time.monotonic() - start


def run(kind: str, creates: int, kills: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"bench-quorum-{kind}-") as scratch:
        cluster = KRaftCluster(kind, Path(scratch), CONTROLLERS, BROKERS)
        cluster.format(CLUSTER_ID)
        try:
            t0 = time.monotonic()
            for i in (*CONTROLLERS, *BROKERS):
                cluster.start(i)
            wait_for(lambda: all_listed(cluster), "every broker registered and unfenced")
            startup = time.monotonic() - t0

            clients = {i: Client(cluster.ports[i]) for i in BROKERS}
            latencies, spread = [], []
            for n in range(creates):
                start = time.monotonic()
                code = create(clients[FIRST_BROKER], f"bench-{n}")
                assert code == 0, f"CreateTopics bench-{n}: error {code}"
                latencies.append(time.monotonic() - start)
                spread.append(propagated(clients, f"bench-{n}"))
            for client in clients.values():
                client.close()

            failovers = []
            for n in range(kills):
                wait_for(lambda: (found := leader_of(cluster)) is not None and found[1], "quorum")
                found = leader_of(cluster)
                assert found is not None
                victim = found[0]
                t_kill = time.monotonic()
                cluster.kill(victim)
                attempt = 0
                while True:
                    attempt += 1
                    try:
                        with_client = Client(cluster.ports[FIRST_BROKER], timeout=10)
                        try:
                            code = create(with_client, f"after-kill-{n}-{attempt}", 5000)
                        finally:
                            with_client.close()
                    except OSError:
                        code = -1
                    if code == 0:
                        break
                    assert time.monotonic() - t_kill < 120, "no committed write after the kill"
                    time.sleep(0.01)
                failovers.append(time.monotonic() - t_kill)
                cluster.start(victim)
        finally:
            cluster.stop()
    return {
        "startup_s": startup,
        "create_p50_ms": statistics.median(latencies) * 1000,
        "create_p99_ms": sorted(latencies)[max(0, int(len(latencies) * 0.99) - 1)] * 1000,
        "propagation_p50_ms": statistics.median(spread) * 1000,
        "propagation_max_ms": max(spread) * 1000,
        "failover_median_s": statistics.median(failovers) if failovers else None,
        "failover_max_s": max(failovers) if failovers else None,
        "failovers_s": [round(f, 3) for f in failovers],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--creates", type=int, default=30)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--only", choices=("millpond", "kafka"))
    args = parser.parse_args(argv)
    kinds = [args.only] if args.only else ["millpond", "kafka"]
    results = {kind: run(kind, args.creates, args.kills) for kind in kinds}
    machine = f"{os.cpu_count()} CPUs, Python {platform.python_version()}"
    print(json.dumps({"machine": machine, "load": os.getloadavg(), **results}, indent=2))
    if len(results) == 2:
        for key, value in results["millpond"].items():
            other = results["kafka"][key]
            if isinstance(value, float) and isinstance(other, float) and other:
                print(f"{key}: millpond {value:.3f}, Kafka {other:.3f}, ratio {value / other:.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

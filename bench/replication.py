"""Replication: a millpond cluster against an Apache Kafka 4.4 cluster, same machine, same
run, same layout: controller 1 and brokers 2, 3 and 4 (``process.roles`` controller and
broker, one process each) on 127.0.0.1, Kafka's default timers on both (a broker is fenced
``broker.session.timeout.ms`` = 9 s after its last heartbeat). Topics have replication
factor 3 and ``min.insync.replicas=2``; the load generator is bench/loadgen.py (librdkafka
in a process of its own), as in bench/throughput.py.

1. Produce, acks=all: 1 KiB values for ``--produce-s`` to 1 and to 8 partitions
   (linger.ms=5); MB/s acknowledged, and the three brokers' CPU (user + system) per MB.
2. End-to-end latency: ``--rate`` 1 KiB values a second for ``--latency-s`` (acks=all),
   from the producer's send to the consumer's receive; p50 and p99.
3. Failover, ``--kills`` times: kill -9 the leader of a partition a producer (librdkafka,
   idempotent, acks=all) has been writing, then send one record: the time from the kill to
   that record's acknowledgement by the new leader. The killed broker is started again and
   back in the ISR before the next kill.
4. Catch-up: ``--catchup-mib`` MiB written to a partition with one replica (broker 2), then
   AlterPartitionReassignments to [2, 3]: the time until broker 3 is in the ISR, as MB/s.

Not a test: run it by hand (Kafka's jars come from ``bash compat_tests/kafka/install.sh``);
results go in ``bench/RESULTS-replication.md``.

    .venv/bin/python bench/replication.py [--kills 5] [--only millpond|kafka]
    .venv/bin/python bench/replication.py --quick        # a smoke run of every figure
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

from confluent_kafka import KafkaError, Producer  # noqa: E402 (after the path is set)

from bench.kraft_node import KRaftCluster, process_cpu_s  # noqa: E402
from bench.quorum import wait_for  # noqa: E402
from bench.throughput import end_to_end_latency, loadgen  # noqa: E402
from bench.wire_client import Client  # noqa: E402
from millpond.wire.generated.api import alter_partition_reassignments_request as apr  # noqa: E402
from millpond.wire.generated.api import create_topics_request as ct  # noqa: E402
from millpond.wire.generated.api.metadata_request import (  # noqa: E402
    MetadataRequest,
    MetadataRequestTopic,
)

CLUSTER_ID = "cmVwbGljYXRpb24tYm5jaA"
CONTROLLERS = (1,)
BROKERS = (2, 3, 4)
KIB = 1024
BROKER_CONFIG = {
    "offsets.topic.replication.factor": 3,
    "offsets.topic.num.partitions": 1,
    "transaction.state.log.replication.factor": 3,
    "group.initial.rebalance.delay.ms": 0,
}


class Bench:
    """One system's cluster, and what the figures ask of it."""

    def __init__(self, kind: str, root: Path) -> None:
        self.kind = kind
        self.cluster = KRaftCluster(kind, root, CONTROLLERS, BROKERS, BROKER_CONFIG)

    def bootstrap(self, brokers: tuple[int, ...] = BROKERS) -> str:
        return ",".join(f"127.0.0.1:{self.cluster.ports[i]}" for i in brokers)

    def live(self) -> tuple[int, ...]:
        return tuple(i for i in BROKERS if i in self.cluster.procs)

    def partitions(self, topic: str) -> list[Any] | None:
        """Metadata's partitions of ``topic`` as a running broker answers (None: no answer
        yet)."""
        request = MetadataRequest(
            topics=[MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False
        )
        for i in self.live():
            try:
                client = Client(self.cluster.ports[i], timeout=5)
            except OSError:
                continue
            try:
                [answer] = client.request(request, 12).topics
            except OSError:
                continue
            finally:
                client.close()
            if answer.error_code == 0 and answer.partitions:
                return list(answer.partitions)
        return None

    def all_in_sync(self, topic: str, replicas: int) -> bool:
        partitions = self.partitions(topic)
        return partitions is not None and all(
            p.leader_id >= 0 and len(p.isr_nodes) == replicas for p in partitions
        )

    def start(self) -> None:
        self.cluster.format(CLUSTER_ID)
        for i in (*CONTROLLERS, *BROKERS):
            self.cluster.start(i)
        # The offsets topic, fully replicated, proves every broker registered and unfenced.
        wait_for(lambda: self._brokers_listed() == set(BROKERS), "every broker registered")

    def _brokers_listed(self) -> set[int]:
        request = MetadataRequest(topics=[], allow_auto_topic_creation=False)
        try:
            client = Client(self.cluster.ports[BROKERS[0]], timeout=5)
        except OSError:
            return set()
        try:
            return {b.node_id for b in client.request(request, 12).brokers}
        except OSError:
            return set()
        finally:
            client.close()

    def create(self, topic: str, partitions: int, replicas: int = 3) -> None:
        configs = [ct.CreatableTopicConfig(name="min.insync.replicas", value=str(min(2, replicas)))]
        if replicas == 1:  # on the first broker, the one the catch-up copies from
            assignments = [
                ct.CreatableReplicaAssignment(partition_index=p, broker_ids=[BROKERS[0]])
                for p in range(partitions)
            ]
            new = ct.CreatableTopic(
                name=topic, num_partitions=-1, replication_factor=-1,
                assignments=assignments, configs=configs,
            )  # fmt: skip
        else:
            new = ct.CreatableTopic(
                name=topic, num_partitions=partitions, replication_factor=replicas,
                configs=configs,
            )  # fmt: skip
        client = Client(self.cluster.ports[self.live()[0]])
        try:
            answer = client.request(ct.CreateTopicsRequest(topics=[new], timeout_ms=60_000), 7)
        finally:
            client.close()
        [created] = answer.topics
        assert created.error_code == 0, f"creating {topic}: {created}"
        wait_for(lambda: self.all_in_sync(topic, replicas), f"{topic} in sync")

    def brokers_cpu_s(self) -> float:
        return sum(process_cpu_s(p.pid) for i, p in self.cluster.procs.items() if i in BROKERS)

    # -- the figures ---------------------------------------------------------------------

    def produce(self, partitions: int, seconds: float) -> dict[str, Any]:
        topic = f"produce-{partitions}"
        self.create(topic, partitions)
        spec = {
            "mode": "produce", "bootstrap": self.bootstrap(), "topic": topic,
            "partitions": partitions, "size": KIB, "acks": "all", "linger_ms": 5,
            "seconds": seconds, "count": 50_000_000,
        }  # fmt: skip
        cpu = self.brokers_cpu_s()
        answer = loadgen(spec, seconds + 120)
        used = self.brokers_cpu_s() - cpu
        mb = answer["messages"] * KIB / 1e6
        return {
            "mb_s": answer["mb_s"],
            "failed": answer["failed"],
            "broker_cpu_ms_per_mb": 1000 * used / mb if mb else None,
        }

    def latency(self, rate: int, seconds: float) -> dict[str, Any]:
        self.create("latency", 1)
        sent, answer = end_to_end_latency(self.bootstrap(), "latency", rate, seconds)
        return {"sent": sent["sent"], **{k: answer.get(k) for k in ("samples", "p50_ms", "p99_ms")}}

    def failovers(self, kills: int) -> list[float]:
        self.create("failover", 1)
        return [self._failover("failover", n) for n in range(kills)]

    def _failover(self, topic: str, n: int) -> float:
        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap(self.live()),
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 0,
                "message.timeout.ms": 120_000,
                "log_level": 0,  # its disconnect and reconnect lines: expected, and many
            }
        )
        acked: list[float] = []

        def delivered(error: KafkaError | None, _message: Any) -> None:
            if error is None:
                acked.append(time.monotonic())

        for _ in range(10):  # connected, and the leader known
            producer.produce(topic, b"before", partition=0, on_delivery=delivered)
        assert producer.flush(30) == 0 and len(acked) == 10, "no produce before the kill"
        partitions = self.partitions(topic)
        assert partitions is not None
        victim = partitions[0].leader_id
        acked.clear()
        killed = time.monotonic()
        self.cluster.kill(victim)
        producer.produce(topic, b"after", partition=0, on_delivery=delivered)
        left = producer.flush(130)
        assert left == 0 and acked, f"kill {n}: the record after it was never acknowledged"
        self.cluster.start(victim)
        wait_for(lambda: self.all_in_sync(topic, 3), "the killed broker back in the ISR")
        return acked[0] - killed

    def catch_up(self, mib: int) -> dict[str, Any]:
        topic = "catch-up"
        self.create(topic, 1, replicas=1)
        count = mib * 1024
        spec = {
            "mode": "produce", "bootstrap": self.bootstrap(), "topic": topic,
            "partitions": 1, "size": KIB, "acks": 1, "linger_ms": 5,
            "seconds": 600, "count": count,
        }  # fmt: skip
        wrote = loadgen(spec, 720)
        assert wrote["messages"] == count, f"wrote {wrote['messages']} of {count}"
        request = apr.AlterPartitionReassignmentsRequest(
            topics=[
                apr.ReassignableTopic(
                    name=topic,
                    partitions=[apr.ReassignablePartition(partition_index=0, replicas=[2, 3])],
                )
            ]
        )
        client = Client(self.cluster.ports[BROKERS[0]])
        try:
            started = time.monotonic()
            answer = client.request(request, 0)
        finally:
            client.close()
        [result] = answer.responses[0].partitions
        assert answer.error_code == 0 and result.error_code == 0, answer
        wait_for(lambda: self.all_in_sync(topic, 2), "the new replica in the ISR", 600)
        seconds = time.monotonic() - started
        return {"seconds": seconds, "mb_s": count * KIB / seconds / 1e6}


def run(kind: str, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"bench-replication-{kind}-") as scratch:
        bench = Bench(kind, Path(scratch))
        try:
            bench.start()
            results: dict[str, Any] = {}
            for partitions in (1, 8):
                results[f"produce_{partitions}"] = bench.produce(partitions, args.produce_s)
            results["latency"] = bench.latency(args.rate, args.latency_s)
            failovers = bench.failovers(args.kills)
            results["failover_s"] = [round(f, 3) for f in failovers]
            results["failover_median_s"] = statistics.median(failovers)
            results["catch_up"] = bench.catch_up(args.catchup_mib)
        finally:
            bench.cluster.stop()
    return results


FIGURES: list[tuple[str, Callable[[dict[str, Any]], float | None]]] = [
    ("produce RF 3 acks=all, 1 partition (MB/s, higher is better)",
     lambda r: r["produce_1"]["mb_s"]),
    ("produce RF 3 acks=all, 8 partitions (MB/s, higher is better)",
     lambda r: r["produce_8"]["mb_s"]),
    ("brokers' CPU per MB produced, 1 partition (ms)",
     lambda r: r["produce_1"]["broker_cpu_ms_per_mb"]),
    ("brokers' CPU per MB produced, 8 partitions (ms)",
     lambda r: r["produce_8"]["broker_cpu_ms_per_mb"]),
    ("end-to-end latency p50 (ms)", lambda r: r["latency"]["p50_ms"]),
    ("end-to-end latency p99 (ms)", lambda r: r["latency"]["p99_ms"]),
    ("leader kill -9 to first acknowledged produce, median (s)",
     lambda r: r["failover_median_s"]),
    ("catch-up of a new replica (MB/s, higher is better)", lambda r: r["catch_up"]["mb_s"]),
]  # fmt: skip


def table(results: dict[str, dict[str, Any]]) -> str:
    lines = ["| figure | millpond | Kafka 4.4 | millpond / Kafka |", "|---|---|---|---|"]
    for label, pick in FIGURES:
        mine, theirs = pick(results["millpond"]), pick(results["kafka"])
        ratio = f"{mine / theirs:.2f}" if mine is not None and theirs else "n/a"
        lines.append(f"| {label} | {mine:.2f} | {theirs:.2f} | {ratio} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--produce-s", type=float, default=15.0)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--latency-s", type=float, default=20.0)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--catchup-mib", type=int, default=256)
    parser.add_argument("--only", choices=("millpond", "kafka"))
    parser.add_argument("--quick", action="store_true", help="short runs of every figure")
    args = parser.parse_args(argv)
    if args.quick:
        args.produce_s, args.rate, args.latency_s, args.kills, args.catchup_mib = 3, 200, 3, 1, 16
    kinds = [args.only] if args.only else ["millpond", "kafka"]
    results = {kind: run(kind, args) for kind in kinds}
    machine = f"{os.cpu_count()} CPUs, Python {platform.python_version()}"
    print(json.dumps({"machine": machine, "load": os.getloadavg(), **results}, indent=2))
    if len(results) == 2:
        print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Snapshot load: a controller starting on a metadata snapshot of 100,000 partitions,
millpond against Apache Kafka 4.4, same machine, same run, the same snapshot file.

1. millpond writes the snapshot: an in-process controller (one static voter) registers a
   broker, creates ``--topics`` topics of ``--partitions-per-topic`` partitions, and
   snapshots its committed image (the write is timed). The file is Kafka's
   ``.checkpoint`` format; both systems load that very file.
2. Each system starts a controller (``process.roles=controller``, one static voter) on a
   data directory formatted by its own tool with nothing but that snapshot in
   ``__cluster_metadata-0``: no log to replay, so the start-up is the snapshot's load.
   Ready: the controller listener answers CreateTopics (validate-only) for the first and
   the last topic of the snapshot with TOPIC_ALREADY_EXISTS, the image loaded and
   active. Timed from spawning the process, ``--runs`` times, each on a fresh copy.
3. The same start on an empty directory (no snapshot): the difference is the load itself.

Not a test: run it by hand (Kafka's jars come from ``bash compat_tests/kafka/install.sh``);
results go in ``bench/RESULTS-quorum.md``.

    .venv/bin/python bench/snapshot_load.py [--topics 1000] [--partitions-per-topic 100]
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.kraft_node import NodeProcess  # noqa: E402 (after the path is set)
from bench.wire_client import Client  # noqa: E402
from compat_tests.kafka.reference import free_port  # noqa: E402
from millpond.controller.controller import ControllerConfig, QuorumController  # noqa: E402
from millpond.controller.image import BrokerEndpoint  # noqa: E402
from millpond.controller.metadata_log import METADATA_PARTITION_DIR, open_raft_client  # noqa: E402
from millpond.controller.raft.keys import OffsetAndEpoch  # noqa: E402
from millpond.controller.raft.snapshots import snapshot_name  # noqa: E402
from millpond.controller.replication_control import CreatableTopic  # noqa: E402
from millpond.storage.clock import SystemClock  # noqa: E402
from millpond.storage.fs import OsFileSystem  # noqa: E402
from millpond.wire.generated.api import create_topics_request as ct  # noqa: E402

CLUSTER_ID = "U25hcHNob3QtbG9hZC1iZQ"
TOPIC_ALREADY_EXISTS = 36
READY_TIMEOUT = 300.0


def write_snapshot(directory: Path, topics: int, per_topic: int) -> tuple[Path, float]:
    """The snapshot of a controller that created ``topics`` x ``per_topic`` partitions,
    and how long writing it took (seconds)."""
    rng = random.Random(1)
    raft = open_raft_client(OsFileSystem(), str(directory), SystemClock(), rng, node_id=1)
    controller = QuorumController(raft, SystemClock(), rng, ControllerConfig(1, CLUSTER_ID))
    try:
        registered = controller.register_broker(2, [BrokerEndpoint("PLAINTEXT", "b", 9092, 0)])
        controller.unfence_broker(2, registered.response.broker_epoch)
        for first in range(0, topics, 50):  # within Kafka's 10,000 records per operation
            batch = [
                CreatableTopic(f"topic-{i}", per_topic, 1)
                for i in range(first, min(first + 50, topics))
            ]
            created = controller.create_topics(batch)
            assert all(r.error.is_success for r in created.response), created.response[:1]
        started = time.perf_counter()
        snapshot_id = controller.maybe_snapshot(force=True)
        elapsed = time.perf_counter() - started
    finally:
        controller.close()
    assert isinstance(snapshot_id, OffsetAndEpoch)
    return directory / METADATA_PARTITION_DIR / snapshot_name(snapshot_id), elapsed


def controller_node(kind: str, root: Path) -> tuple[NodeProcess, int, Path]:
    """A controller-only node of ``kind``, its one static voter, in ``root``; with its
    port and data directory."""
    port = free_port()
    data = root / "data"
    props = {
        "node.id": 1,
        "process.roles": "controller",
        "listeners": f"CONTROLLER://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
        "controller.quorum.voters": f"1@127.0.0.1:{port}",
        "log.dirs": data,
    }
    return NodeProcess(kind, root, "node", props), port, data


def _exists(port: int, name: str) -> bool:
    """Whether the controller answers that ``name`` exists (its image holds it)."""
    request = ct.CreateTopicsRequest(
        topics=[ct.CreatableTopic(name=name, num_partitions=1, replication_factor=1)],
        timeout_ms=5000,
        validate_only=True,
    )
    try:
        client = Client(port, timeout=5)
    except OSError:
        return False
    try:
        return int(client.request(request, 7).topics[0].error_code) == TOPIC_ALREADY_EXISTS
    except OSError:
        return False
    finally:
        client.close()


def _ready_when(port: int, names: list[str], proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    while not all(_exists(port, n) for n in names):
        if proc.poll() is not None:
            raise RuntimeError(f"the node exited ({proc.returncode}) before it was ready")
        if time.monotonic() > deadline:
            raise TimeoutError("the controller did not load the snapshot in time")
        time.sleep(0.005)


def _empty_ready(port: int, proc: subprocess.Popen[bytes]) -> None:
    """An empty controller is ready once it answers CreateTopics at all (no broker: an
    error about replicas, but from an active controller)."""
    request = ct.CreateTopicsRequest(
        topics=[ct.CreatableTopic(name="probe", num_partitions=1, replication_factor=1)],
        timeout_ms=5000,
        validate_only=True,
    )
    deadline = time.monotonic() + READY_TIMEOUT
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"the node exited ({proc.returncode}) before it was ready")
        try:
            client = Client(port, timeout=5)
            try:
                error = int(client.request(request, 7).topics[0].error_code)
            finally:
                client.close()
            if error != 41:  # NOT_CONTROLLER: not active yet
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError("the controller did not become active in time")
        time.sleep(0.005)


def start_time(kind: str, snapshot: Path | None, names: list[str]) -> float:
    with tempfile.TemporaryDirectory(prefix=f"bench-snapshot-{kind}-") as scratch:
        node, port, data = controller_node(kind, Path(scratch))
        node.format(CLUSTER_ID)
        if snapshot is not None:
            metadata = data / METADATA_PARTITION_DIR
            metadata.mkdir(parents=True, exist_ok=True)
            shutil.copy(snapshot, metadata / snapshot.name)
        started = time.monotonic()
        proc = node.start()
        try:
            if snapshot is None:
                _empty_ready(port, proc)
            else:
                _ready_when(port, names, proc)
            return time.monotonic() - started
        except BaseException:
            sys.stderr.write(node.log.read_text()[-4000:])
            raise
        finally:
            node.kill()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--partitions-per-topic", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", choices=("millpond", "kafka"))
    args = parser.parse_args(argv)
    kinds = [args.only] if args.only else ["millpond", "kafka"]
    names = ["topic-0", f"topic-{args.topics - 1}"]
    with tempfile.TemporaryDirectory(prefix="bench-snapshot-source-") as scratch:
        source = Path(scratch)
        snapshot, write_s = write_snapshot(source, args.topics, args.partitions_per_topic)
        report: dict[str, Any] = {
            "machine": f"{platform.machine()}, {platform.python_version()}",
            "partitions": args.topics * args.partitions_per_topic,
            "snapshot_bytes": snapshot.stat().st_size,
            "millpond_snapshot_write_s": round(write_s, 3),
        }
        for kind in kinds:
            loaded = [start_time(kind, snapshot, names) for _ in range(args.runs)]
            empty = [start_time(kind, None, names) for _ in range(args.runs)]
            report[kind] = {
                "start_with_snapshot_s": round(statistics.median(loaded), 3),
                "start_empty_s": round(statistics.median(empty), 3),
                "load_s": round(statistics.median(loaded) - statistics.median(empty), 3),
                "runs_with_snapshot_s": [round(x, 3) for x in loaded],
            }
    if len(kinds) == 2:
        for key in ("start_with_snapshot_s", "load_s"):
            report[f"ratio_{key}"] = round(report["millpond"][key] / report["kafka"][key], 3)
    sys.stdout.write(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

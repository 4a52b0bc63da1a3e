"""Consumer-group benchmark: millpond against Apache Kafka 4.4, same machine, same run.

1. Rebalance time, 10 members: ten connections (a thread each) join one group on a
   64-partition topic through the classic protocol, as a consumer does (JoinGroup, the
   KIP-394 member-id round trip on the first round, SyncGroup with the leader's
   round-robin assignment). A round is timed from the first JoinGroup sent to the last
   SyncGroup answered; the first round forms the group, each later round is a
   rebalance (every member rejoins with new subscription user data, which a Stable
   group must rebalance for).
2. Offset commits per second: one connection commits sequentially (OffsetCommit v9,
   generation -1: the commit of a consumer outside group management), one partition per
   request, then 64 partitions per request (offsets per second).

Both brokers run with ``group.initial.rebalance.delay.ms=0`` (Kafka's default of 3 s
would time the delay, not the broker). Not a test: run it by hand (Kafka's jars from
``bash compat_tests/kafka/install.sh``); results go in ``bench/RESULTS-groups.md``.

    .venv/bin/python bench/groups.py [--rounds 20] [--commits 3000]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import struct
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.wire_client import Client  # noqa: E402
from compat_tests.harness import create_topic, millpond_server  # noqa: E402
from compat_tests.kafka.reference import KAFKA_VERSION, start_broker  # noqa: E402
from millpond.wire.generated.api.find_coordinator_request import FindCoordinatorRequest  # noqa: E402
from millpond.wire.generated.api.heartbeat_request import HeartbeatRequest  # noqa: E402
from millpond.wire.generated.api.join_group_request import (  # noqa: E402
    JoinGroupRequest,
    JoinGroupRequestProtocol,
)
from millpond.wire.generated.api.offset_commit_request import (  # noqa: E402
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from millpond.wire.generated.api.offset_fetch_request import OffsetFetchRequest  # noqa: E402
from millpond.wire.generated.api.sync_group_request import (  # noqa: E402
    SyncGroupRequest,
    SyncGroupRequestAssignment,
)

MEMBERS = 10
PARTITIONS = 64
TOPIC = "bench-groups"
NO_DELAY = {"group.initial.rebalance.delay.ms": "0"}
MEMBER_ID_REQUIRED = 79
REBALANCE_IN_PROGRESS = 27


def subscription(round_: int) -> bytes:
    """ConsumerProtocolSubscription v0 of TOPIC, the round in the user data."""
    topic = TOPIC.encode()
    user = struct.pack(">i", round_)
    return struct.pack(">hih", 0, 1, len(topic)) + topic + struct.pack(">i", len(user)) + user


def assignment(partitions: list[int]) -> bytes:
    """ConsumerProtocolAssignment v0: TOPIC's ``partitions``, no user data."""
    topic = TOPIC.encode()
    body = struct.pack(">hih", 0, 1, len(topic)) + topic + struct.pack(">i", len(partitions))
    return body + b"".join(struct.pack(">i", p) for p in partitions) + struct.pack(">i", -1)


class Member:
    def __init__(self, port: int, index: int) -> None:
        self.client = Client(port, client_id=f"bench-member-{index}")
        self.member_id = ""
        self.generation = -1
        self.leader = False
        self.members: list[str] = []

    def join(self, group: str, round_: int) -> None:
        while True:
            request = JoinGroupRequest(
                group_id=group,
                session_timeout_ms=30_000,
                rebalance_timeout_ms=60_000,
                member_id=self.member_id,
                protocol_type="consumer",
                protocols=[JoinGroupRequestProtocol(name="range", metadata=subscription(round_))],
            )
            response = self.client.request(request, 9)
            self.member_id = response.member_id
            if response.error_code == MEMBER_ID_REQUIRED:
                continue
            if response.error_code != 0:
                raise RuntimeError(f"JoinGroup: error {response.error_code}")
            self.generation = response.generation_id
            self.leader = response.leader == self.member_id
            self.members = [m.member_id for m in response.members]
            return

    def sync(self, group: str) -> int:
        """SyncGroup; returns its error code (REBALANCE_IN_PROGRESS: rejoin)."""
        assignments = []
        if self.leader:
            owners = sorted(self.members)
            assignments = [
                SyncGroupRequestAssignment(
                    member_id=m,
                    assignment=assignment([p for p in range(PARTITIONS) if p % len(owners) == i]),
                )
                for i, m in enumerate(owners)
            ]
        request = SyncGroupRequest(
            group_id=group,
            generation_id=self.generation,
            member_id=self.member_id,
            protocol_type="consumer",
            protocol_name="range",
            assignments=assignments,
        )
        response = self.client.request(request, 5)
        if response.error_code not in (0, REBALANCE_IN_PROGRESS):
            raise RuntimeError(f"SyncGroup: error {response.error_code}")
        return int(response.error_code)

    def heartbeat(self, group: str) -> int:
        request = HeartbeatRequest(
            group_id=group, generation_id=self.generation, member_id=self.member_id
        )
        code = int(self.client.request(request, 4).error_code)
        if code not in (0, REBALANCE_IN_PROGRESS):
            raise RuntimeError(f"Heartbeat: error {code}")
        return code

    def settle(self, group: str, round_: int, errors: list[BaseException]) -> None:
        """Join and sync until a sync succeeds, as a consumer does (a member that joined
        late makes the first generation's syncs answer REBALANCE_IN_PROGRESS)."""
        try:
            while True:
                self.join(group, round_)
                if self.sync(group) == 0:
                    return
        except (OSError, RuntimeError) as exc:
            errors.append(exc)


def find_coordinator(port: int, group: str) -> None:
    """Ask until the group has a coordinator, as clients do first (Kafka creates
    ``__consumer_offsets`` on the first lookup and answers COORDINATOR_NOT_AVAILABLE
    until it is ready) ..."""
    client = Client(port, client_id="bench-lookup")
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            response = client.request(FindCoordinatorRequest(key=group, key_type=0), 3)
            # ... and until the group's partition is loaded (OffsetFetch answers
            # COORDINATOR_LOAD_IN_PROGRESS before), so no timing includes the load.
            if response.error_code == 0:
                fetched = client.request(OffsetFetchRequest(group_id=group, topics=[]), 7)
                if fetched.error_code == 0:
                    return
            time.sleep(0.1)
        raise TimeoutError(f"no coordinator for {group} after 60 s")
    finally:
        client.close()


def rebalance_times(port: int, rounds: int) -> tuple[float, list[float]]:
    """(formation seconds, per-rebalance seconds) of MEMBERS members over ``rounds``."""
    group = f"bench-rebalance-{time.monotonic_ns()}"
    find_coordinator(port, group)
    members = [Member(port, i) for i in range(MEMBERS)]
    times: list[float] = []
    try:
        for round_ in range(rounds + 1):
            started = time.perf_counter()
            pending = members
            while pending:  # until every member is synced in the group's generation
                errors: list[BaseException] = []
                threads = [
                    threading.Thread(target=m.settle, args=(group, round_, errors)) for m in pending
                ]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                if errors:
                    raise errors[0]
                pending = [m for m in members if m.heartbeat(group) == REBALANCE_IN_PROGRESS]
            times.append(time.perf_counter() - started)
            generations = {m.generation for m in members}
            if len(generations) != 1:
                raise RuntimeError(f"round {round_}: members in generations {generations}")
    finally:
        for m in members:
            m.client.close()
    return times[0], times[1:]


def commit_rates(port: int, commits: int) -> tuple[float, float]:
    """(commits per second with one partition each, offsets per second with 64 each)."""
    client = Client(port, client_id="bench-commits")
    try:

        def rate(partitions: int, count: int) -> float:
            group = f"bench-commits-{partitions}-{time.monotonic_ns()}"
            started = time.perf_counter()
            for i in range(count):
                request = OffsetCommitRequest(
                    group_id=group,
                    generation_id_or_member_epoch=-1,
                    topics=[
                        OffsetCommitRequestTopic(
                            name=TOPIC,
                            partitions=[
                                OffsetCommitRequestPartition(partition_index=p, committed_offset=i)
                                for p in range(partitions)
                            ],
                        )
                    ],
                )
                response = client.request(request, 9)
                bad = [p.error_code for t in response.topics for p in t.partitions if p.error_code]
                if bad:
                    raise RuntimeError(f"OffsetCommit: errors {bad}")
            return count * partitions / (time.perf_counter() - started)

        find_coordinator(port, "bench-commits")
        rate(1, 100)  # warm-up: the group is created, the partition's log opened
        return rate(1, commits), rate(PARTITIONS, max(commits // 10, 10))
    finally:
        client.close()


@contextmanager
def broker(name: str, work: Path) -> Iterator[int]:
    if name == "millpond":
        overrides = [f"{k}={v}" for k, v in NO_DELAY.items()]
        with millpond_server(work, *overrides) as bootstrap:
            yield int(bootstrap.rsplit(":", 1)[1])
        return
    running = start_broker(work, config=NO_DELAY)
    try:
        yield int(running.bootstrap.rsplit(":", 1)[1])
    finally:
        running.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--commits", type=int, default=3000)
    parser.add_argument("--out", default=str(ROOT / "bench" / "RESULTS-groups.md"))
    args = parser.parse_args()
    began = time.perf_counter()
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="millpond-bench-groups-") as tmp:
        for name in ("millpond", "kafka"):
            with broker(name, Path(tmp) / name) as port:
                create_topic(f"127.0.0.1:{port}", TOPIC, PARTITIONS)
                formation, rebalances = rebalance_times(port, args.rounds)
                commits, offsets = commit_rates(port, args.commits)
            results[name] = {
                "formation_ms": formation * 1000,
                "rebalance_ms": statistics.median(rebalances) * 1000,
                "rebalance_p90_ms": sorted(rebalances)[int(len(rebalances) * 0.9) - 1] * 1000,
                "commits_s": commits,
                "offsets_s": offsets,
            }
            print(name, results[name], flush=True)
    write(Path(args.out), results, args, time.perf_counter() - began)


def write(
    path: Path, results: dict[str, dict[str, float]], args: argparse.Namespace, took: float
) -> None:
    mp, kafka = results["millpond"], results["kafka"]
    rows = [
        ("group formation, 10 members (ms, lower is better)", "formation_ms", False),
        ("rebalance, 10 members, median (ms)", "rebalance_ms", False),
        ("rebalance, 10 members, p90 (ms)", "rebalance_p90_ms", False),
        ("offset commits per second (1 partition per request)", "commits_s", True),
        ("offsets committed per second (64 partitions per request)", "offsets_s", True),
    ]
    lines = [
        "# Consumer groups: millpond against Apache Kafka",
        "",
        f"Command: `.venv/bin/python bench/groups.py --rounds {args.rounds} "
        f"--commits {args.commits}` ({took:.0f} s)  ",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Linux {platform.release()}, "
        f"Python {platform.python_version()}  ",
        f"Date: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC  ",
        f"Peer: Apache Kafka {KAFKA_VERSION} (combined KRaft node, small heap), both with "
        "`group.initial.rebalance.delay.ms=0`",
        "",
        "| figure | millpond | Kafka | millpond / Kafka |",
        "|---|---:|---:|---:|",
    ]
    for label, key, higher_better in rows:
        ratio = mp[key] / kafka[key]
        note = "x as fast" if higher_better else "x the time"
        lines.append(f"| {label} | {mp[key]:,.1f} | {kafka[key]:,.1f} | {ratio:.2f}{note} |")
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

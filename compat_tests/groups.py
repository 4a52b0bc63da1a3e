"""SCENARIOS.md's ``group`` scenario: member processes of any client's driver, started,
closed and killed by the harness, and the checks of what they report.

A driver here is one consumer (``<driver> group-member ...``); :class:`Member` runs it
with its stdin open for commands and reads its JSON lines on a thread, so the harness
waits on real conditions (an assignment printed, a record processed), each wait bounded.
"""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from compat_tests.harness import Connection, create_topic, produce_values
from millpond.wire.generated.api.find_coordinator_request import FindCoordinatorRequest
from millpond.wire.generated.api.offset_fetch_request import OffsetFetchRequest

PARTITIONS = 6
SESSION_TIMEOUT_MS = 6000  # Kafka's group.min.session.timeout.ms
#: Long enough for any client to restart (a JVM included) before its session ends.
STATIC_SESSION_TIMEOUT_MS = 15000
#: How long a change may take to settle: a session timeout, a rebalance, client backoffs.
SETTLE_TIMEOUT = 45.0
#: The broker config the scenario needs on both brokers (conftest sets it): a new group
#: forms at once instead of after Kafka's default 3 s.
BROKER_CONFIGS = {"group.initial.rebalance.delay.ms": "0"}


#: (group, group instance id or None, session timeout ms) -> a member's command line.
MemberCommand = Callable[[str, str | None, int], list[str]]


def member_command(
    program: Sequence[str], bootstrap: str, topic: str, assignor: str | None = None
) -> MemberCommand:
    """Any client's ``group-member`` driver, run by ``program`` (the interpreter and
    script, a binary, a JVM and its class): one consumer of ``topic`` in the group."""

    def command(group: str, instance_id: str | None, session_ms: int) -> list[str]:
        cmd = [
            *program, "group-member", "--bootstrap", bootstrap, "--topic", topic,
            "--group", group, "--session-timeout-ms", str(session_ms),
        ]  # fmt: skip
        if assignor:
            cmd += ["--assignor", assignor]
        if instance_id:
            cmd += ["--instance-id", instance_id]
        return cmd

    return command


class Member:
    """One ``group-member`` driver process and everything it printed."""

    def __init__(self, command: Sequence[str], name: str) -> None:
        self.name = name
        self.command = [str(c) for c in command]
        self.events: list[dict[str, Any]] = []
        self.stderr: list[str] = []
        self._changed = threading.Condition()
        self.proc = subprocess.Popen(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._readers = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                event = {"event": "garbage", "line": line}
            with self._changed:
                self.events.append(event if isinstance(event, dict) else {"event": "garbage"})
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.rstrip())

    # -- what it said --------------------------------------------------------------------

    @property
    def assignment(self) -> frozenset[int] | None:
        """The latest assignment it printed, None before the first."""
        for event in reversed(self.events):
            if event.get("event") == "assigned":
                return frozenset(event.get("partitions", []))
        return None

    def assignment_changes(self) -> int:
        return sum(1 for e in self.events if e.get("event") == "assigned")

    def records(self) -> list[tuple[int, int]]:
        return [(e["partition"], e["offset"]) for e in self.events if e.get("event") == "record"]

    def committed(self) -> dict[int, int]:
        """Per partition, the last offset it committed."""
        last: dict[int, int] = {}
        for e in self.events:
            if e.get("event") == "committed":
                last[e["partition"]] = e["offset"]
        return last

    def describe(self) -> str:
        tail = "\n    ".join(self.stderr[-15:])
        return (
            f"{self.name}: exit {self.proc.poll()}, last events {self.events[-5:]}\n"
            f"  stderr (last 15 lines):\n    {tail}"
        )

    # -- telling it ----------------------------------------------------------------------

    def close(self, timeout: float = 30.0) -> None:
        """Ask it to close cleanly and wait until it exited."""
        assert self.proc.stdin is not None
        if self.proc.poll() is not None:
            self._release()
            pytest.fail(f"{self.name} had exited before it was asked to close\n{self.describe()}")
        self.proc.stdin.write("close\n")
        self.proc.stdin.flush()
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail(f"{self.name} did not close within {timeout}s\n{self.describe()}")
        self._release()
        if self.proc.returncode != 0 or not any(e.get("event") == "closed" for e in self.events):
            pytest.fail(f"{self.name} did not close cleanly\n{self.describe()}")

    def kill(self) -> None:
        """SIGKILL it if it still runs; either way, release its pipes."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self._release()

    def _release(self) -> None:
        for reader in self._readers:
            reader.join(timeout=10)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None and not stream.closed:
                stream.close()

    def wait_for(self, what: str, done: Callable[[], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        with self._changed:
            while not done():
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None and not done():
                    pytest.fail(f"{what}: not after {timeout}s\n{self.describe()}")
                self._changed.wait(min(left, 0.5))


def wait_coordinator(bootstrap: str, group: str, timeout: float = 60.0) -> None:
    """Wait until ``group`` has a loaded coordinator: FindCoordinator answers, then
    OffsetFetch does without COORDINATOR_LOAD_IN_PROGRESS. A fresh Kafka creates and
    loads ``__consumer_offsets`` on the first lookup, and some clients (kafkajs) give up
    on a coordinator that is loading; the scenario is about the group, not the load."""
    conn = Connection(bootstrap)
    try:
        deadline = time.monotonic() + timeout
        while True:
            found = conn.request(FindCoordinatorRequest(key=group, key_type=0), 3)
            if found.error_code == 0:
                fetched = conn.request(OffsetFetchRequest(group_id=group, topics=[]), 7)
                if fetched.error_code == 0:
                    return
            if time.monotonic() > deadline:
                pytest.fail(f"no loaded coordinator for group {group} after {timeout}s")
            time.sleep(0.1)
    finally:
        conn.close()


def wait_settled(members: Sequence[Member], what: str, timeout: float = SETTLE_TIMEOUT) -> float:
    """Wait until the live ``members`` own every partition exactly once, evenly (no two
    counts differ by more than one); returns how long it took."""
    started = time.monotonic()
    deadline = started + timeout
    while True:
        assignments = [m.assignment for m in members]
        if all(a is not None for a in assignments):
            owned = [a for a in assignments if a is not None]
            counts = [len(a) for a in owned]
            union = frozenset().union(*owned)
            if (
                union == frozenset(range(PARTITIONS))
                and sum(counts) == PARTITIONS
                and max(counts) - min(counts) <= 1
            ):
                return time.monotonic() - started
        dead = [m for m in members if m.proc.poll() is not None]
        if dead or time.monotonic() > deadline:
            state = "\n".join(f"  {m.name}: {sorted(m.assignment or [])}" for m in members)
            details = "\n".join(m.describe() for m in members)
            pytest.fail(f"{what}: partitions not settled after {timeout}s:\n{state}\n{details}")
        time.sleep(0.05)


def wait_processed(members: Sequence[Member], expected: set[tuple[int, int]]) -> None:
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while True:
        seen = {r for m in members for r in m.records()}
        if expected <= seen:
            return
        if time.monotonic() > deadline:
            missing = sorted(expected - seen)
            pytest.fail(f"records never processed: {missing[:20]} ({len(missing)} in all)")
        time.sleep(0.05)


@dataclass
class GroupRun:
    """Timings of one run, for the test's report."""

    settle_times: dict[str, float]


def run_group_scenario(
    member_command: MemberCommand,
    bootstrap: str,
    topic: str,
) -> GroupRun:
    """SCENARIOS.md ``group`` checks 1-3. ``member_command(group, instance_id,
    session_timeout_ms)`` is the driver command line of one member."""
    create_topic(bootstrap, topic, PARTITIONS)
    first = produce_values(bootstrap, topic, PARTITIONS, [f"r-{i}" for i in range(60)])
    group = f"{topic}-g"
    wait_coordinator(bootstrap, group)
    names = "abcd"
    members = {n: Member(member_command(group, None, SESSION_TIMEOUT_MS), n) for n in names[:3]}
    times: dict[str, float] = {}
    try:
        times["three members"] = wait_settled(list(members.values()), "3 members joined")
        members["d"] = Member(member_command(group, None, SESSION_TIMEOUT_MS), "d")
        times["fourth joins"] = wait_settled(list(members.values()), "a fourth member joined")
        members["b"].kill()
        live = [members[n] for n in "acd"]
        times["member killed"] = wait_settled(live, "member b killed")
        second = produce_values(bootstrap, topic, PARTITIONS, [f"r-{i}" for i in range(60, 120)])
        members["c"].close()
        live = [members[n] for n in "ad"]
        times["member closed"] = wait_settled(live, "member c closed")
        wait_processed(list(members.values()), set(first) | set(second))
        for m in live:
            m.close()
        _check_processing(members, set(first) | set(second))
        wait_coordinator(bootstrap, f"{topic}-other")
        other = Member(member_command(f"{topic}-other", None, SESSION_TIMEOUT_MS), "other")
        try:
            wait_processed([other], set(first) | set(second))
            twice = [r for r, n in Counter(other.records()).items() if n > 1]
            assert not twice, f"the second group processed records twice: {twice}"
            other.close()
        finally:
            other.kill()
    finally:
        for m in members.values():
            m.kill()
    return GroupRun(times)


def _check_processing(members: dict[str, Member], produced: set[tuple[int, int]]) -> None:
    """At least once for all; twice only for what the killed member ``b`` processed after
    its last commit of that partition."""
    counts: Counter[tuple[int, int]] = Counter()
    for m in members.values():
        counts.update(m.records())
    missing = sorted(produced - set(counts))
    assert not missing, f"records never processed: {missing}"
    killed = members["b"]
    committed = killed.committed()
    uncommitted = {(p, o) for p, o in killed.records() if o >= committed.get(p, 0)}
    twice = sorted(r for r, n in counts.items() if n > 1 and r not in uncommitted)
    assert not twice, (
        f"records processed twice though not left uncommitted by the killed member: {twice}"
    )


def run_static_scenario(member_command: MemberCommand, bootstrap: str, topic: str) -> float:
    """SCENARIOS.md ``group`` check 4: a static member restarted within its session
    timeout gets its partitions back without a rebalance. Returns how long the restarted
    member took to get them."""
    create_topic(bootstrap, topic, PARTITIONS)
    group = f"{topic}-static"
    wait_coordinator(bootstrap, group)
    keep = Member(member_command(group, "s1", STATIC_SESSION_TIMEOUT_MS), "s1")
    restarted: Member | None = None
    victim = Member(member_command(group, "s2", STATIC_SESSION_TIMEOUT_MS), "s2")
    try:
        wait_settled([keep, victim], "2 static members joined")
        before = victim.assignment
        changes = keep.assignment_changes()
        victim.kill()
        started = time.monotonic()
        restarted = Member(member_command(group, "s2", STATIC_SESSION_TIMEOUT_MS), "s2 restarted")
        restarted.wait_for(
            "the restarted static member gets its partitions",
            lambda: restarted is not None and restarted.assignment is not None,
            STATIC_SESSION_TIMEOUT_MS / 1000,
        )
        took = time.monotonic() - started
        assert restarted.assignment == before, (
            f"the restarted static member got {sorted(restarted.assignment or [])}, "
            f"it had {sorted(before or [])}"
        )
        assert keep.assignment_changes() == changes, (
            f"the other static member's assignment changed: {keep.events[-3:]}"
        )
        return took
    finally:
        for m in (keep, victim, restarted):
            if m is not None:
                m.kill()

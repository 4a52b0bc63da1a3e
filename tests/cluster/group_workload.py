"""The consumer-group workload of the group fault runs (T10): librdkafka consumers in one
group, subscribed to the topic, committing what they consumed, while the group's
coordinator is killed; and the checks of what they recorded (FAULTS.md I14).

- :class:`GroupMembers` runs ``count`` members, each in a thread of its own. Each records
  when it was given and when it gave up each partition (its rebalance callbacks), every
  record it consumed, and every synchronous commit that succeeded.
- :class:`CommitMonitor` reads the group's committed offsets (OffsetFetch, from a client
  that never joins) every ``period_s``.
- :func:`double_ownership`, :func:`offset_regressions`, :func:`commits_outside_ownership`
  and :func:`unconsumed_below_commit` are the checks.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from confluent_kafka import Consumer, KafkaException, TopicPartition

#: librdkafka's default is 45 s; a coordinator failover must not cost a member its place.
SESSION_TIMEOUT_MS = 10_000


class Held(NamedTuple):
    """Member ``member`` owned ``partition`` from ``start`` to ``end`` (monotonic s; end
    is None when it still held it as it closed)."""

    member: int
    partition: int
    start: float
    end: float | None


class Commit(NamedTuple):
    member: int
    partition: int
    offset: int
    invoked: float
    completed: float


class Observed(NamedTuple):
    at: float
    offsets: dict[int, int]


def _member_config(bootstrap: str, group: str) -> dict[str, object]:
    return {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": SESSION_TIMEOUT_MS,
        "heartbeat.interval.ms": 1000,
        "fetch.wait.max.ms": 100,
        "topic.metadata.refresh.interval.ms": 1000,
        "partition.assignment.strategy": "range",
    }


class _Member(threading.Thread):
    def __init__(self, owner: GroupMembers, member: int) -> None:
        super().__init__(daemon=True, name=f"group-member-{member}")
        self.owner, self.member = owner, member
        self.holding: dict[int, float] = {}
        self.error: str | None = None

    def _assigned(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        now = time.monotonic()
        for tp in partitions:
            self.holding.setdefault(tp.partition, now)

    def _revoked(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        now = time.monotonic()
        with self.owner.lock:
            for tp in partitions:
                start = self.holding.pop(tp.partition, None)
                if start is not None:
                    self.owner.held.append(Held(self.member, tp.partition, start, now))

    def run(self) -> None:
        owner = self.owner
        consumer = Consumer(_member_config(owner.bootstrap, owner.group))
        consumer.subscribe(
            [owner.topic], on_assign=self._assigned, on_revoke=self._revoked,
            on_lost=self._revoked,
        )  # fmt: skip
        uncommitted = 0
        try:
            while not owner.stopping.is_set():
                messages = consumer.consume(200, 0.2)
                records = [m for m in messages if m.error() is None and m.value() is not None]
                with owner.lock:
                    for m in records:
                        owner.consumed.setdefault(m.partition(), set()).add(m.offset())
                uncommitted += len(records)
                if uncommitted >= owner.commit_every:
                    self._commit(consumer)
                    uncommitted = 0
        except Exception as exc:  # noqa: BLE001 (recorded: the run reports it)
            self.error = repr(exc)
        finally:
            self._commit(consumer)
            self._revoked(consumer, [TopicPartition(owner.topic, p) for p in list(self.holding)])
            consumer.close()

    def _commit(self, consumer: Consumer) -> None:
        invoked = time.monotonic()
        try:
            done = consumer.commit(asynchronous=False)
        except KafkaException:
            return  # nothing to commit, or refused (a rebalance, the coordinator moved)
        completed = time.monotonic()
        with self.owner.lock:
            for tp in done or []:
                if tp.error is None and tp.offset >= 0:
                    self.owner.commits.append(
                        Commit(self.member, tp.partition, tp.offset, invoked, completed)
                    )


class GroupMembers:
    """``count`` members of ``group`` on ``topic``, each committing every ``commit_every``
    records it consumes (and once more as it stops)."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        partitions: int,
        group: str,
        count: int,
        commit_every: int = 50,
    ) -> None:
        self.bootstrap, self.topic, self.group = bootstrap, topic, group
        self.partitions = partitions
        self.commit_every = commit_every
        self.stopping = threading.Event()
        self.lock = threading.Lock()
        self.held: list[Held] = []
        self.commits: list[Commit] = []
        self.consumed: dict[int, set[int]] = {}
        self._members = [_Member(self, m) for m in range(count)]

    def start(self) -> None:
        for member in self._members:
            member.start()

    def balanced(self) -> bool:
        """Every member holds partitions, and together they hold each of ``partitions``
        exactly once."""
        held = [set(m.holding) for m in self._members]
        total = sorted(p for h in held for p in h)
        return all(held) and total == list(range(self.partitions))

    def stop(self, timeout_s: float = 60) -> list[str]:
        """Stop every member; the errors of those that failed."""
        self.stopping.set()
        for member in self._members:
            member.join(timeout=timeout_s)
        return [f"member {m.member}: {m.error}" for m in self._members if m.error]


class CommitMonitor(threading.Thread):
    """The group's committed offsets, read every ``period_s`` without joining it."""

    def __init__(
        self, bootstrap: str, topic: str, group: str, partitions: int, period_s: float = 0.25
    ) -> None:
        super().__init__(daemon=True, name="commit-monitor")
        self.bootstrap, self.topic, self.group, self.partitions = (
            bootstrap,
            topic,
            group,
            partitions,
        )
        self.period_s = period_s
        self.stopping = threading.Event()
        self.observed: list[Observed] = []

    def run(self) -> None:
        reader = Consumer({"bootstrap.servers": self.bootstrap, "group.id": self.group})
        asked = [TopicPartition(self.topic, p) for p in range(self.partitions)]
        try:
            while not self.stopping.wait(self.period_s):
                try:
                    found = reader.committed(asked, timeout=2)
                except KafkaException:
                    continue  # no coordinator at the moment: nothing observed
                offsets = {tp.partition: tp.offset for tp in found if tp.error is None}
                self.observed.append(Observed(time.monotonic(), offsets))
        finally:
            reader.close()


# -- the checks -------------------------------------------------------------------------


def double_ownership(held: Sequence[Held]) -> list[str]:
    """Two members holding one partition at once."""
    found = []
    by_partition: dict[int, list[Held]] = {}
    for h in held:
        by_partition.setdefault(h.partition, []).append(h)
    for partition, spans in sorted(by_partition.items()):
        spans.sort(key=lambda h: h.start)
        for a, b in zip(spans, spans[1:], strict=False):
            if a.member != b.member and (a.end is None or b.start < a.end):
                found.append(
                    f"partition {partition}: member {a.member} held it from {a.start:.2f} to "
                    f"{a.end} and member {b.member} from {b.start:.2f}"
                )
    return found


def offset_regressions(observed: Sequence[Observed]) -> list[str]:
    """A committed offset read lower than one read before it (or gone, -1001)."""
    found = []
    highest: dict[int, tuple[int, float]] = {}
    for sample in observed:
        for partition, offset in sorted(sample.offsets.items()):
            before = highest.get(partition)
            if before is not None and offset < before[0]:
                found.append(
                    f"partition {partition}: committed offset {offset} at {sample.at:.2f} "
                    f"after {before[0]} at {before[1]:.2f}"
                )
            if before is None or offset > before[0]:
                highest[partition] = (offset, sample.at)
    return found


def commits_outside_ownership(commits: Sequence[Commit], held: Sequence[Held]) -> list[str]:
    """A commit that succeeded for a partition its member did not hold at any moment
    while the commit was in flight."""
    found = []
    for c in commits:
        spans = [h for h in held if h.member == c.member and h.partition == c.partition]
        if not any(h.start <= c.completed and (h.end is None or c.invoked <= h.end) for h in spans):
            found.append(
                f"member {c.member} committed offset {c.offset} of partition {c.partition} "
                "without holding it"
            )
    return found


def unconsumed_below_commit(
    consumed: Mapping[int, set[int]], final: Mapping[int, int], acked: Mapping[int, set[int]]
) -> list[str]:
    """At-least-once: an acknowledged record below its partition's final committed offset
    that no member consumed."""
    found = []
    for partition, committed in sorted(final.items()):
        missing = sorted(o for o in acked.get(partition, set()) if o < committed)
        missing = [o for o in missing if o not in consumed.get(partition, set())]
        if missing:
            found.append(
                f"partition {partition}: {len(missing)} acknowledged records below the "
                f"committed offset {committed} never consumed, first {missing[:5]}"
            )
    return found

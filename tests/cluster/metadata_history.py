"""Metadata operations as a history, and the checks of T12 on it and on the controllers'
logs (pure functions: what a run recorded in, violations out).

The workload runs each topic through create, config changes (``retention.ms``, a new
value each time) and maybe delete, one operation at a time. An operation is ``ok``
(acknowledged), or ``info``: it failed in a way that leaves unknown whether it took
effect (a timeout, NOT_CONTROLLER, a lost connection). After an ``info`` the topic is
left alone, so its final state is either the state after its last ``ok`` operation or
the state after the ``info`` one. Every acknowledged operation must survive:

- the final metadata (replayed from a controller's log) agrees with each topic's history;
- R1: each epoch of the log has at most one leader (its LeaderChange records agree);
- epochs never decrease along a log;
- R5: the controllers' logs are byte-identical up to the shortest of them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from millpond.wire.generated.data.leader_change_message import LeaderChangeMessage
from millpond.wire.records import ControlRecordType, RecordBatch, parse_control_key

Kind = Literal["create", "alter", "delete"]
Outcome = Literal["ok", "info"]
RETENTION = "retention.ms"


@dataclass(frozen=True)
class Op:
    kind: Kind
    topic: str
    value: str | None  # the retention.ms an alter sets
    start: float
    end: float
    outcome: Outcome


#: A topic's state: None (absent), or its retention.ms override ("" when it has none).
State = str | None


def _apply(state: State, op: Op) -> State:
    if op.kind == "create":
        return ""
    if op.kind == "alter":
        return op.value
    return None


def expected_states(ops: Sequence[Op]) -> dict[str, set[State]]:
    """Each topic's possible final states."""
    states: dict[str, State] = {}
    maybe: dict[str, set[State]] = {}
    for op in ops:
        before = states.get(op.topic)
        if op.outcome == "ok":
            states[op.topic] = _apply(before, op)
            maybe[op.topic] = {states[op.topic]}
        else:
            maybe[op.topic] = {before, _apply(before, op)}
    return maybe


def check_final_state(ops: Sequence[Op], final: Mapping[str, State]) -> list[str]:
    """Violations: topics whose final state no order of the history explains."""
    violations = []
    for topic, allowed in sorted(expected_states(ops).items()):
        seen = final.get(topic)
        if seen not in allowed:
            violations.append(f"{topic}: final state {seen!r}, the history allows {allowed}")
    return violations


def leader_changes(batches: Sequence[RecordBatch]) -> list[tuple[int, int]]:
    """(epoch, leader id) of every LeaderChange record, in log order."""
    found = []
    for batch in batches:
        if not batch.is_control:
            continue
        for record in batch.records():
            if parse_control_key(record.key).type == ControlRecordType.LEADER_CHANGE:
                assert record.value is not None
                message = LeaderChangeMessage.decode(bytes(record.value), 0)
                found.append((batch.partition_leader_epoch, message.leader_id))
    return found


def check_log(node_id: int, batches: Sequence[RecordBatch]) -> list[str]:
    """R1 and monotonic epochs along one controller's log."""
    violations = []
    leaders: dict[int, int] = {}
    for epoch, leader in leader_changes(batches):
        if leaders.setdefault(epoch, leader) != leader:
            violations.append(
                f"node {node_id}: epoch {epoch} has leaders {leaders[epoch]}, {leader}"
            )
    epochs = [b.partition_leader_epoch for b in batches]
    for offset, (a, b) in enumerate(zip(epochs, epochs[1:], strict=False)):
        if b < a:
            violations.append(f"node {node_id}: epoch goes back from {a} to {b} (batch {offset})")
    return violations


def check_prefixes(logs: Mapping[int, Sequence[tuple[int, bytes]]]) -> list[str]:
    """R5: every pair of logs holds the same batches over the offsets both hold. Each log
    is its ``(base offset, bytes)`` batches; one that starts later (at a snapshot it
    installed) is compared from there."""
    violations = []
    ids = sorted(logs)
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            violation = _first_difference(logs[a], logs[b])
            if violation is not None:
                violations.append(f"nodes {a} and {b} differ at offset {violation}")
    return violations


def _first_difference(a: Sequence[tuple[int, bytes]], b: Sequence[tuple[int, bytes]]) -> int | None:
    if not a or not b:
        return None
    start = max(a[0][0], b[0][0])
    ends = [offset for offset, _ in a[-1:]] + [offset for offset, _ in b[-1:]]
    last = min(ends)
    mine = {offset: data for offset, data in a if start <= offset <= last}
    theirs = {offset: data for offset, data in b if start <= offset <= last}
    for offset in sorted({*mine, *theirs}):
        if mine.get(offset) != theirs.get(offset):
            return offset
    return None


def longest_gap(ops: Sequence[Op], start: float, end: float) -> float:
    """The longest time without an acknowledged operation completing (seconds)."""
    times = sorted([start, *(op.end for op in ops if op.outcome == "ok"), end])
    return max((b - a for a, b in zip(times, times[1:], strict=False)), default=0.0)


def outage_around(ops: Sequence[Op], at: float, start: float, end: float) -> float:
    """The stretch without an acknowledged operation, within a run from ``start`` to
    ``end``, that ``at`` falls in (seconds)."""
    times = sorted(op.end for op in ops if op.outcome == "ok")
    before = max((t for t in times if t <= at), default=start)
    after = min((t for t in times if t > at), default=end)
    return after - before

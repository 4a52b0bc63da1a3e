"""The checks of a Jepsen-style Kafka "queue" workload: pure functions from a recorded
history to anomalies, so a run's verdict can be recomputed, and each check shown failing
on a small hand-built history.

The history. Producers send unique integers, each to one partition: a ``Send`` is ``ok``
(acknowledged, with the offset the broker gave it), ``info`` (indefinite: a timeout or a
lost connection, so it may or may not have been written) or ``fail`` (definitely not
written). Consumers poll; a ``Poll`` lists the ``(partition, offset, value)`` records one
ok poll delivered, in delivery order, and an ``Assign`` says a consumer (re)starts reading a
partition at an offset (a seek, a restart, a rebalance). After the faults heal, a fresh
consumer reads every partition from its start to its end: its polls are ``final``. They
are what makes "never read" mean "not in the log" rather than "not read yet". Ops are
listed in the order they completed, except that each producer's sends are listed in the
order it invoked them.

The version order. A partition's log is a sequence, but offsets are not dense (control
records and aborted batches take offsets no client sees), so a gap between offsets says
nothing. What the history does say is which offsets exist: every offset an ok send was
given and every offset a poll returned. Sorted, they give each observed record its dense
index in the partition (``idx``); two records that are neighbours in that order must be
read one after the other, whatever lies between their offsets.

The invariants (each check returns readable anomalies naming partitions, offsets and
values; none means it holds):

- I1 lost: an acknowledged value that no poll read, although some poll read a later
  (higher-index) value of its partition: it was there, and readers went past it.
- I2 unseen: an acknowledged value that no poll read at all. Without final polls this may
  just be the tail of a run; with them it is data loss too (I1 values are unseen as well).
- vanished (I10, P3): a value once acknowledged or read that the final polls do not
  return: it was in the log, consumers may have seen it, and it is gone (truncated by a
  leader that never had it). Checked only when the history has final polls.
- I3 duplicates: each value sits at exactly one (partition, offset) across sends and polls.
- I4 inconsistent offsets: each (partition, offset) holds exactly one value.
- I5 nonmonotonic send: a producer's acknowledged sends to a partition get increasing
  offsets in the order it invoked them (an idempotent producer keeps that order).
- I6 poll skip / nonmonotonic poll: each consumer reads each partition in increasing
  offsets, each record the next in the version order after the one it read before (or
  after the offset it was assigned), until it is assigned again.

Two more, about where read values came from: a phantom is a read of a value that no send
produced (at least, not to that partition), and a failed read is a read of a value whose
send definitely failed.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Literal

Outcome = Literal["ok", "info", "fail"]
#: How many skipped or unseen values one anomaly string shows.
EXAMPLES = 5
#: How many anomaly strings of each kind ``Report.as_dict`` keeps.
REPORTED = 10


@dataclass(frozen=True)
class Send:
    """One produce of a unique ``value``; ``offset`` is known only when ``ok``."""

    process: int
    partition: int
    value: int
    outcome: Outcome
    offset: int | None
    invoked: float
    completed: float


@dataclass(frozen=True)
class Poll:
    """One ok poll: ``(partition, offset, value)`` records in delivery order."""

    process: int
    records: tuple[tuple[int, int, int], ...]
    invoked: float
    completed: float
    final: bool = False


@dataclass(frozen=True)
class Assign:
    """The consumer starts reading ``partition`` at ``offset``: what it read before says
    nothing about what it reads next."""

    process: int
    partition: int
    offset: int


Op = Send | Poll | Assign
History = Sequence[Op]
#: A (partition, offset) pair.
Position = tuple[int, int]
#: A polled (partition, offset, value).
Record = tuple[int, int, int]


@dataclass(frozen=True)
class _Index:
    """What every check needs, gathered in one pass over the history."""

    sends: dict[int, Send]  # value -> its send, in history order
    consumer_ops: list[Poll | Assign]
    values_at: dict[Position, set[int]]  # from ok sends and polls
    positions_of: dict[int, set[Position]]  # value -> where ok sends and polls put it
    read: set[int]  # every value some poll returned
    final_read: set[int] | None  # what the final polls returned; None without them
    order: dict[int, list[tuple[int, int]]]  # the version order
    idx: dict[int, dict[int, int]]  # partition -> offset -> dense index


def _index(history: History) -> _Index:
    sends: dict[int, Send] = {}
    consumer_ops: list[Poll | Assign] = []
    values_at: defaultdict[Position, set[int]] = defaultdict(set)
    positions_of: defaultdict[int, set[Position]] = defaultdict(set)
    read: set[int] = set()
    final_read: set[int] | None = None
    for op in history:
        if isinstance(op, Send):
            if op.value in sends:
                # Not an anomaly of the broker: the checks rest on unique values.
                raise ValueError(f"value {op.value} is sent twice; values must be unique")
            sends[op.value] = op
            if op.outcome == "ok" and op.offset is not None:
                values_at[op.partition, op.offset].add(op.value)
                positions_of[op.value].add((op.partition, op.offset))
        else:
            consumer_ops.append(op)
            if isinstance(op, Poll):
                if op.final and final_read is None:
                    final_read = set()
                for partition, offset, value in op.records:
                    values_at[partition, offset].add(value)
                    positions_of[value].add((partition, offset))
                    read.add(value)
                    if op.final:
                        assert final_read is not None
                        final_read.add(value)
    entries: defaultdict[int, list[tuple[int, int]]] = defaultdict(list)
    for (partition, offset), values in values_at.items():
        entries[partition].append((offset, min(values)))
    order = {partition: sorted(entries[partition]) for partition in sorted(entries)}
    idx = {p: {offset: i for i, (offset, _) in enumerate(log)} for p, log in order.items()}
    return _Index(
        sends, consumer_ops, dict(values_at), dict(positions_of), read, final_read, order, idx
    )


def _some(entries: Sequence[tuple[int, int]], total: int | None = None) -> str:
    """A few ``value@offset`` entries of ``(offset, value)``, with an ellipsis for the rest."""
    total = len(entries) if total is None else total
    shown = ", ".join(f"{value}@{offset}" for offset, value in entries[:EXAMPLES])
    return shown + (", ..." if total > EXAMPLES else "")


def _joined(numbers: Iterable[int]) -> str:
    return ", ".join(str(n) for n in sorted(numbers))


def version_order(history: History) -> dict[int, list[tuple[int, int]]]:
    """Partition -> its observed ``(offset, value)`` records sorted by offset; a record's
    position in the list is its index. Where an offset holds several values the lowest
    stands in (``inconsistent_offsets`` reports the offset)."""
    return _index(history).order


def inconsistent_offsets(history: History) -> list[str]:
    """I4."""
    return _inconsistent_offsets(_index(history))


def _inconsistent_offsets(ix: _Index) -> list[str]:
    return [
        f"partition {p} offset {o}: {len(values)} values {_joined(values)}"
        for (p, o), values in sorted(item for item in ix.values_at.items() if len(item[1]) > 1)
    ]


def duplicates(history: History) -> list[str]:
    """I3."""
    return _duplicates(_index(history))


def _duplicates(ix: _Index) -> list[str]:
    found = []
    for value, positions in sorted(i for i in ix.positions_of.items() if len(i[1]) > 1):
        where = ", ".join(f"partition {p} offset {o}" for p, o in sorted(positions))
        found.append(f"value {value} at {len(positions)} positions: {where}")
    return found


def _unread_acked(ix: _Index) -> list[Send]:
    return [s for s in ix.sends.values() if s.outcome == "ok" and s.value not in ix.read]


def lost(history: History) -> list[str]:
    """I1."""
    ix = _index(history)
    return _lost(ix, _unread_acked(ix))


def _lost(ix: _Index, unread: Sequence[Send]) -> list[str]:
    # The highest index read in each partition, with its record, to name in the anomaly.
    highest: dict[int, tuple[int, int, int]] = {}
    for op in ix.consumer_ops:
        if isinstance(op, Poll):
            for p, o, v in op.records:
                i = ix.idx[p][o]
                if p not in highest or i > highest[p][0]:
                    highest[p] = (i, o, v)
    found = []
    placed = sorted((s.partition, s.offset, s.value) for s in unread if s.offset is not None)
    for p, o, value in placed:
        if p not in highest:
            continue
        i = ix.idx[p][o]
        j, read_offset, read_value = highest[p]
        if i < j:
            found.append(
                f"partition {p}: acknowledged value {value} at offset {o} (index {i}) "
                f"was never read, though value {read_value} at offset {read_offset} "
                f"(index {j}) was"
            )
    return found


def unseen(history: History) -> list[str]:
    """I2: one anomaly per partition, with the count and a few examples, since a run
    without final polls may leave many."""
    return _unseen(_unread_acked(_index(history)))


def _unseen(unread: Sequence[Send]) -> list[str]:
    by_partition: defaultdict[int, list[Send]] = defaultdict(list)
    for send in unread:
        by_partition[send.partition].append(send)
    found = []
    for p, sends in sorted(by_partition.items()):
        # Offsets first (an ack without one sorts last, shown as "?").
        sends.sort(key=lambda s: (s.offset is None, s.offset or 0, s.value))
        shown = ", ".join(
            f"{s.value}@{'?' if s.offset is None else s.offset}" for s in sends[:EXAMPLES]
        )
        more = ", ..." if len(sends) > EXAMPLES else ""
        found.append(f"partition {p}: {len(sends)} acknowledged values never read: {shown}{more}")
    return found


def vanished(history: History) -> list[str]:
    """Values that were in the log, acknowledged or read, and are not at the end."""
    return _vanished(_index(history))


def _vanished(ix: _Index) -> list[str]:
    if ix.final_read is None:
        return []
    final_read = ix.final_read
    gone: defaultdict[int, list[tuple[int, int]]] = defaultdict(list)
    for value, positions in ix.positions_of.items():
        if value in final_read:
            continue
        send = ix.sends.get(value)
        if value in ix.read or (send is not None and send.outcome == "ok"):
            for p, o in positions:
                gone[p].append((o, value))
    return [
        f"partition {p}: {len(entries)} values acknowledged or read are not in the final "
        f"read: {_some(sorted(entries))}"
        for p, entries in sorted(gone.items())
    ]


def nonmonotonic_send(history: History) -> list[str]:
    """I5: neighbours suffice, as increasing is transitive."""
    return _nonmonotonic_send(_index(history))


def _nonmonotonic_send(ix: _Index) -> list[str]:
    acked: defaultdict[tuple[int, int], list[tuple[float, int, int]]] = defaultdict(list)
    for s in ix.sends.values():
        if s.outcome == "ok" and s.offset is not None:
            acked[s.process, s.partition].append((s.invoked, s.offset, s.value))
    found = []
    for (process, p), sends in sorted(acked.items()):
        # Stable: equal invocation times keep the history's (invocation) order.
        sends.sort(key=lambda s: s[0])
        for (_, a_offset, a_value), (_, b_offset, b_value) in pairwise(sends):
            if b_offset <= a_offset:
                found.append(
                    f"producer {process}, partition {p}: value {b_value} got offset "
                    f"{b_offset}, not above offset {a_offset} of value {a_value} sent before it"
                )
    return found


def poll_skip(history: History) -> list[str]:
    """I6, skips: a consumer passed over records the version order holds."""
    return _walk_polls(_index(history))[0]


def nonmonotonic_poll(history: History) -> list[str]:
    """I6, order: a consumer went back (or stood still) in a partition."""
    return _walk_polls(_index(history))[1]


def _walk_polls(ix: _Index) -> tuple[list[str], list[str]]:
    """Both halves of I6 in one walk: (skips, nonmonotonic reads)."""
    skips: list[str] = []
    backwards: list[str] = []
    previous: dict[tuple[int, int], tuple[int, int]] = {}  # -> (offset, value) last read
    start: dict[tuple[int, int], int] = {}  # assigned offset, until the first read
    for op in ix.consumer_ops:
        if isinstance(op, Assign):
            previous.pop((op.process, op.partition), None)
            start[op.process, op.partition] = op.offset
            continue
        c = op.process
        for p, o, v in op.records:
            key = (c, p)
            log, i = ix.order[p], ix.idx[p][o]
            before = previous.get(key)
            previous[key] = (o, v)
            if before is not None:
                before_offset, before_value = before
                if o <= before_offset:
                    backwards.append(
                        f"consumer {c}, partition {p}: read value {v} at offset {o} after "
                        f"value {before_value} at offset {before_offset}"
                    )
                    continue
                first = ix.idx[p][before_offset] + 1
                after = f"after value {before_value} at offset {before_offset}"
            else:
                assigned = start.pop(key, None)
                if assigned is None:
                    continue  # the consumer's first read: no predecessor to follow
                if o < assigned:
                    backwards.append(
                        f"consumer {c}, partition {p}: read value {v} at offset {o}, "
                        f"before offset {assigned} it was assigned"
                    )
                    continue
                first = bisect_left(log, assigned, key=lambda entry: entry[0])
                after = f"first after its assignment at offset {assigned}"
            if i > first:
                skipped = _some(log[first : min(i, first + EXAMPLES)], i - first)
                skips.append(
                    f"consumer {c}, partition {p}: read value {v} at offset {o} {after}, "
                    f"skipping {i - first}: {skipped}"
                )
    return skips, backwards


def phantom(history: History) -> list[str]:
    """A read no send explains: the value was never sent, or was sent to another
    partition."""
    return _phantom(_index(history))


def _readers(ix: _Index, suspect: Callable[[int, Send | None], bool]) -> dict[Record, set[int]]:
    """The records whose read is ``suspect(partition, send of the value)``, each with the
    consumers that read it (one anomaly per record, however many read it)."""
    readers: defaultdict[Record, set[int]] = defaultdict(set)
    for op in ix.consumer_ops:
        if isinstance(op, Poll):
            for record in op.records:
                if suspect(record[0], ix.sends.get(record[2])):
                    readers[record].add(op.process)
    return readers


def _phantom(ix: _Index) -> list[str]:
    found = []
    suspect = _readers(ix, lambda p, send: send is None or send.partition != p)
    for (p, o, v), consumers in sorted(suspect.items()):
        send = ix.sends.get(v)
        why = (
            "which no send produced"
            if send is None
            else f"which was sent to partition {send.partition}"
        )
        found.append(f"partition {p} offset {o}: consumer {_joined(consumers)} read {v}, {why}")
    return found


def failed_read(history: History) -> list[str]:
    """A definite failure that was written after all."""
    return _failed_read(_index(history))


def _failed_read(ix: _Index) -> list[str]:
    found = []
    suspect = _readers(ix, lambda _, send: send is not None and send.outcome == "fail")
    for (p, o, v), consumers in sorted(suspect.items()):
        producer = ix.sends[v].process
        found.append(
            f"partition {p} offset {o}: consumer {_joined(consumers)} read {v}, "
            f"whose send by producer {producer} failed"
        )
    return found


#: The anomaly kinds, in the order a report lists them.
KINDS = (
    "lost",
    "unseen",
    "vanished",
    "duplicates",
    "inconsistent_offsets",
    "nonmonotonic_send",
    "poll_skip",
    "nonmonotonic_poll",
    "phantom",
    "failed_read",
)


@dataclass(frozen=True)
class Report:
    """Every check's anomalies over one history, with the counts that say how much of it
    there was (a valid verdict over no reads proves nothing)."""

    acked: int
    sends_ok: int
    sends_info: int
    sends_fail: int
    polled_records: int
    #: Acknowledged values never read (``unseen`` holds one anomaly per partition).
    unseen_values: int
    lost: list[str]
    unseen: list[str]
    vanished: list[str]
    duplicates: list[str]
    inconsistent_offsets: list[str]
    nonmonotonic_send: list[str]
    poll_skip: list[str]
    nonmonotonic_poll: list[str]
    phantom: list[str]
    failed_read: list[str]

    def anomalies(self) -> dict[str, list[str]]:
        """Kind -> its anomalies, in ``KINDS`` order."""
        return {kind: getattr(self, kind) for kind in KINDS}

    @property
    def valid(self) -> bool:
        return not any(self.anomalies().values())

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready summary: the counts, and a few examples of each kind."""
        return {
            "valid": self.valid,
            "acked": self.acked,
            "sends": {"ok": self.sends_ok, "info": self.sends_info, "fail": self.sends_fail},
            "polled_records": self.polled_records,
            "unseen_values": self.unseen_values,
            "anomalies": {
                kind: {"count": len(found), "examples": list(found[:REPORTED])}
                for kind, found in self.anomalies().items()
            },
        }


def check(history: History) -> Report:
    """All the checks, over one index of the history."""
    ix = _index(history)
    outcomes = [s.outcome for s in ix.sends.values()]
    unread = _unread_acked(ix)
    skips, backwards = _walk_polls(ix)
    return Report(
        acked=sum(1 for s in ix.sends.values() if s.outcome == "ok"),
        sends_ok=outcomes.count("ok"),
        sends_info=outcomes.count("info"),
        sends_fail=outcomes.count("fail"),
        polled_records=sum(len(op.records) for op in ix.consumer_ops if isinstance(op, Poll)),
        unseen_values=len(unread),
        lost=_lost(ix, unread),
        unseen=_unseen(unread),
        vanished=_vanished(ix),
        duplicates=_duplicates(ix),
        inconsistent_offsets=_inconsistent_offsets(ix),
        nonmonotonic_send=_nonmonotonic_send(ix),
        poll_skip=skips,
        nonmonotonic_poll=backwards,
        phantom=_phantom(ix),
        failed_read=_failed_read(ix),
    )

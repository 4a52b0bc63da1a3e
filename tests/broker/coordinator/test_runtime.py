"""The coordinator runtime with a toy shard (a key-value map) over an in-memory partition
whose high watermark the test moves by hand: loading, commits, failures, unloading and
the order of answers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from millpond.broker.coordinator.runtime import (
    AppendError,
    Completion,
    CoordinatorResult,
    CoordinatorRuntime,
    ShardContext,
    coordinator_error,
)
from millpond.wire.errors import ErrorCode

Put = tuple[str, int | None]  # the toy shard's record: a key and its value (None: delete)


@dataclass
class Partitions:
    """Logs by partition; appends commit only when the test says so."""

    logs: dict[int, list[tuple[bytes, bytes | None]]] = field(default_factory=dict)
    committed: dict[int, int] = field(default_factory=dict)
    fail_with: int | None = None
    auto_commit: bool = False

    def append(self, partition: int, records: Sequence[tuple[bytes, bytes | None]]) -> int:
        if self.fail_with is not None:
            raise AppendError(self.fail_with)
        log = self.logs.setdefault(partition, [])
        log.extend(records)
        if self.auto_commit:
            self.committed[partition] = len(log)
        return len(log)

    def committed_offset(self, partition: int) -> int:
        return self.committed.get(partition, 0)


class Toy:
    """A map from keys to values; ``put`` writes, ``get`` reads, a timer writes too."""

    def __init__(self, context: ShardContext[Put]) -> None:
        self.context = context
        self.values: dict[str, int] = {}
        self.unloaded = False
        self.now_ms = 0

    def replay(self, record: Put) -> None:
        key, value = record
        if value is None:
            self.values.pop(key, None)
        else:
            self.values[key] = value

    def advance(self, now_ms: int) -> None:
        self.context.timers.run_due(now_ms, self._at)
        self.now_ms = max(self.now_ms, now_ms)

    def _at(self, deadline: int) -> None:
        self.now_ms = deadline

    def on_unloaded(self) -> None:
        self.unloaded = True

    def put(self, key: str, value: int) -> CoordinatorResult[str, Put]:
        return CoordinatorResult([(key, value)], f"put {key}")


def encode(record: Put) -> tuple[bytes, bytes | None]:
    key, value = record
    return key.encode(), None if value is None else str(value).encode()


def runtime(partitions: Partitions) -> CoordinatorRuntime[Toy, Put]:
    return CoordinatorRuntime(Toy, partitions, encode)


def active(partitions: Partitions, *ids: int) -> CoordinatorRuntime[Toy, Put]:
    rt = runtime(partitions)
    for p in ids:
        assert rt.load(p, 0)
        assert rt.complete_load(p, 0)
    return rt


def answer(done: Completion[str]) -> str | int | None:
    """The response, the error code, or None while it waits."""
    if not done.done:
        return None
    return done.value if done.error is None else done.error


def test_a_partition_serves_only_once_loaded() -> None:
    rt = runtime(Partitions())
    assert rt.status(3) == ErrorCode.NOT_COORDINATOR
    assert answer(rt.write(3, lambda s: s.put("a", 1))) == ErrorCode.NOT_COORDINATOR
    assert rt.load(3, 0)
    assert rt.loading()
    assert rt.status(3) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert answer(rt.read(3, lambda s: "x")) == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert rt.replay(3, 0, [("a", 1), ("b", 2), ("a", None)])
    assert rt.complete_load(3, 0)
    assert rt.status(3) == ErrorCode.NONE and not rt.loading()
    shard = rt.shard(3)
    assert shard is not None and shard.values == {"b": 2}
    assert answer(rt.read(3, lambda s: str(s.values))) == "{'b': 2}"


def test_a_load_at_an_older_or_same_epoch_is_ignored_and_a_newer_keeps_the_load() -> None:
    rt = runtime(Partitions())
    assert rt.load(0, 5)
    assert not rt.load(0, 5) and not rt.load(0, 4)
    assert not rt.load(0, 6)  # already loading: the load goes on, now at epoch 6
    assert rt.replay(0, 5, [("k", 1)])
    assert rt.complete_load(0, 5)
    assert not rt.unload(0, 6)  # not newer than what is held
    assert rt.unload(0, 7)
    assert not rt.load(0, 7)


def test_a_superseded_load_stops_replaying() -> None:
    rt = runtime(Partitions())
    assert rt.load(0, 1)
    assert rt.unload(0, 2)
    assert not rt.replay(0, 1, [("k", 1)])
    assert not rt.complete_load(0, 1)
    assert rt.status(0) == ErrorCode.NOT_COORDINATOR


def test_a_failed_load_answers_not_coordinator_until_a_newer_load() -> None:
    rt = runtime(Partitions())
    rt.load(0, 1)
    assert rt.complete_load(0, 1, failed=True)
    assert rt.status(0) == ErrorCode.NOT_COORDINATOR
    assert rt.load(0, 2)
    assert rt.complete_load(0, 2)
    assert rt.status(0) == ErrorCode.NONE


def test_a_write_answers_only_when_its_records_are_committed() -> None:
    parts = Partitions()
    rt = active(parts, 0)
    done = rt.write(0, lambda s: s.put("a", 1))
    assert parts.logs[0] == [(b"a", b"1")]
    shard = rt.shard(0)
    assert shard is not None and shard.values == {"a": 1}  # the shard sees its own write
    assert answer(done) is None
    rt.on_committed(0, 0)
    assert answer(done) is None
    rt.on_committed(0, 1)
    assert answer(done) == "put a"


def test_writes_and_reads_answer_in_order_even_when_the_watermark_jumps() -> None:
    parts = Partitions()
    rt = active(parts, 0)
    order: list[str] = []
    first = rt.write(0, lambda s: s.put("a", 1))
    read = rt.read(0, lambda s: f"read {sorted(s.values)}")
    empty = rt.write(0, lambda s: CoordinatorResult((), "nothing written"))
    second = rt.write(0, lambda s: s.put("b", 2))
    for done in (first, read, empty, second):
        done.add_done_callback(lambda d: order.append(str(d.value)))
    assert order == []
    rt.on_committed(0, 1)  # the first record: what waited on it only
    assert order == ["put a", "read ['a']", "nothing written"]
    rt.on_committed(0, 2)
    assert order == ["put a", "read ['a']", "nothing written", "put b"]
    third = rt.write(0, lambda s: s.put("c", 3))
    fourth = rt.write(0, lambda s: s.put("d", 4))
    rt.on_committed(0, 4)  # a jump over both
    assert answer(third) == "put c" and answer(fourth) == "put d"


def test_a_write_with_nothing_pending_answers_at_once() -> None:
    rt = active(Partitions(), 0)
    assert answer(rt.write(0, lambda s: CoordinatorResult((), "ok"))) == "ok"
    assert answer(rt.read(0, lambda s: "seen")) == "seen"


def test_a_commit_reported_with_the_append_answers_at_once() -> None:
    parts = Partitions(auto_commit=True)
    rt = active(parts, 0)
    assert answer(rt.write(0, lambda s: s.put("a", 1))) == "put a"


def test_partitions_commit_independently() -> None:
    parts = Partitions()
    rt = active(parts, 0, 1)
    on_0 = rt.write(0, lambda s: s.put("a", 1))
    on_1 = rt.write(1, lambda s: s.put("a", 1))
    rt.on_committed(1, 1)
    assert answer(on_0) is None and answer(on_1) == "put a"


def test_a_failed_append_fails_the_write_with_kafkas_mapping_and_changes_nothing() -> None:
    parts = Partitions()
    rt = active(parts, 0)
    for stored, answered in [
        (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NOT_COORDINATOR),
        (ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.NOT_COORDINATOR),
        (ErrorCode.NOT_ENOUGH_REPLICAS, ErrorCode.COORDINATOR_NOT_AVAILABLE),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.COORDINATOR_NOT_AVAILABLE),
        (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.COORDINATOR_NOT_AVAILABLE),
        (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.UNKNOWN_SERVER_ERROR),
        (ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.UNKNOWN_SERVER_ERROR),
        (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_NOT_AVAILABLE),
    ]:
        assert coordinator_error(stored) == answered
        parts.fail_with = stored
        assert answer(rt.write(0, lambda s: s.put("a", 1))) == answered
    shard = rt.shard(0)
    assert shard is not None and shard.values == {}  # never replayed
    parts.fail_with = None
    assert answer(rt.write(0, lambda s: CoordinatorResult((), "after"))) == "after"


def test_an_operation_that_raises_answers_unknown_server_error() -> None:
    rt = active(Partitions(), 0)

    def broken(shard: Toy) -> CoordinatorResult[str, Put]:
        raise RuntimeError("bug")

    assert answer(rt.write(0, broken)) == ErrorCode.UNKNOWN_SERVER_ERROR
    assert answer(rt.write(0, lambda s: CoordinatorResult((), "still serving"))) == "still serving"


def test_unload_fails_what_waits_drops_the_shard_and_its_timers() -> None:
    parts = Partitions()
    rt = active(parts, 0, 1)
    pending = rt.write(0, lambda s: s.put("a", 1))
    read = rt.read(0, lambda s: "read")
    parked: list[str] = []
    shard = rt.shard(0)
    assert shard is not None
    shard.context.defer(lambda: parked.append("ran"), lambda code: parked.append(f"failed {code}"))
    shard.context.timers.schedule("t", 10, lambda: parked.append("timer"))
    other = rt.write(1, lambda s: s.put("b", 1))
    assert rt.unload(0)
    assert answer(pending) == answer(read) == ErrorCode.NOT_COORDINATOR
    assert parked == [f"failed {ErrorCode.NOT_COORDINATOR}"]
    assert shard.unloaded and rt.shard(0) is None
    assert rt.status(0) == ErrorCode.NOT_COORDINATOR
    rt.on_committed(0, 1)
    rt.advance(100)
    assert parked == [f"failed {ErrorCode.NOT_COORDINATOR}"]
    assert answer(other) is None  # partition 1 is untouched
    rt.on_committed(1, 1)
    assert answer(other) == "put b"


def test_timers_fire_through_the_runtime_and_their_writes_wait_for_the_commit() -> None:
    parts = Partitions()
    rt = active(parts, 0)
    shard = rt.shard(0)
    assert shard is not None
    fired: list[tuple[str, int]] = []

    def expire() -> None:
        fired.append(("expire", shard.now_ms))
        shard.context.append([("session", None)])
        shard.context.defer(lambda: fired.append(("answered", shard.now_ms)))

    shard.context.timers.schedule("session", 500, expire)
    assert rt.next_deadline() == 500
    rt.advance(499)
    assert fired == []
    rt.advance(800)
    assert fired == [("expire", 500)]  # at its own deadline
    assert parts.logs[0] == [(b"session", None)]
    assert rt.next_deadline() is None
    rt.on_committed(0, 1)
    assert fired == [("expire", 500), ("answered", 800)]


def test_an_eager_append_inside_an_operation_counts_towards_its_answer() -> None:
    parts = Partitions()
    rt = active(parts, 0)

    def op(shard: Toy) -> CoordinatorResult[str, Put]:
        shard.context.append([("x", 1)])
        return CoordinatorResult((), "appended inside")

    done = rt.write(0, op)
    assert answer(done) is None
    rt.on_committed(0, 1)
    assert answer(done) == "appended inside"


def test_a_loaded_partition_starts_from_the_committed_offset() -> None:
    parts = Partitions(logs={0: [(b"old", b"0")] * 7}, committed={0: 7})
    rt = active(parts, 0)
    # Nothing this shard wrote is pending: an empty write answers at once.
    assert answer(rt.write(0, lambda s: CoordinatorResult((), "ok"))) == "ok"
    done = rt.write(0, lambda s: s.put("a", 1))
    rt.on_committed(0, 7)
    assert answer(done) is None
    rt.on_committed(0, 8)
    assert answer(done) == "put a"


def test_a_new_leader_answers_nothing_until_what_it_replayed_is_committed() -> None:
    # It replayed 9 records; its followers hold 7 so far (the high watermark).
    parts = Partitions(logs={0: [(b"old", b"0")] * 9}, committed={0: 7})
    rt = runtime(parts)
    assert rt.load(0, 1)
    assert rt.replay(0, 1, [("a", 1)])
    assert rt.complete_load(0, 1, loaded_to=9)
    read = rt.read(0, lambda s: f"a={s.values['a']}")
    empty = rt.write(0, lambda s: CoordinatorResult((), "ok"))
    assert (answer(read), answer(empty)) == (None, None)
    rt.on_committed(0, 8)
    assert (answer(read), answer(empty)) == (None, None)
    rt.on_committed(0, 9)
    assert (answer(read), answer(empty)) == ("a=1", "ok")


def test_what_a_failing_operation_wrote_before_it_failed_still_gets_answered() -> None:
    parts = Partitions(auto_commit=True)
    rt = active(parts, 0)
    parked: list[str] = []

    def op(shard: Toy) -> CoordinatorResult[str, Put]:
        shard.context.append([("x", 1)])
        shard.context.defer(lambda: parked.append("answered"))
        parts.fail_with = ErrorCode.NOT_LEADER_OR_FOLLOWER
        shard.context.append([("y", 2)])  # raises
        return CoordinatorResult((), "unreachable")

    assert answer(rt.write(0, op)) == ErrorCode.NOT_COORDINATOR
    assert parked == ["answered"]  # its first record was committed

"""Group coordinator shards in the coordinator runtime, over an in-memory
``__consumer_offsets`` whose high watermark the test moves: answers wait for the commit
of what they depend on, failed appends answer as Kafka does, unloading answers what is
parked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from millpond.broker.coordinator.runtime import (
    AppendError,
    Completion,
    CoordinatorResult,
    CoordinatorRuntime,
    ShardContext,
)
from millpond.broker.groups import placement, records
from millpond.broker.groups.coordinator import (
    Caller,
    GroupConfig,
    GroupCoordinator,
    OffsetToCommit,
    Record,
)
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.join_group_request import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
)
from millpond.wire.generated.api.join_group_response import JoinGroupResponse

from .helpers import subscription

PARTITIONS = 4
GROUP = "g"
P = placement.partition_for(GROUP, PARTITIONS)


@dataclass
class Offsets:
    logs: dict[int, list[tuple[bytes, bytes | None]]] = field(default_factory=dict)
    committed: dict[int, int] = field(default_factory=dict)
    fail_with: int | None = None

    def append(self, partition: int, batch: Sequence[tuple[bytes, bytes | None]]) -> int:
        if self.fail_with is not None:
            raise AppendError(self.fail_with)
        log = self.logs.setdefault(partition, [])
        log.extend(batch)
        return len(log)

    def committed_offset(self, partition: int) -> int:
        return self.committed.get(partition, 0)


def build(offsets: Offsets) -> CoordinatorRuntime[GroupCoordinator, Record]:
    config = GroupConfig(initial_rebalance_delay_ms=0, num_partitions=PARTITIONS)

    def new_shard(context: ShardContext[Record]) -> GroupCoordinator:
        return GroupCoordinator(config, context.append, timers=context.timers)

    rt: CoordinatorRuntime[GroupCoordinator, Record] = CoordinatorRuntime(
        new_shard, offsets, records.encode
    )
    for p in range(PARTITIONS):
        rt.load(p, 0)
        rt.complete_load(p, 0)
    return rt


def commit(
    rt: CoordinatorRuntime[GroupCoordinator, Record], offset: int
) -> Completion[tuple[int, list[int]]]:
    wanted = [OffsetToCommit("t", 0, offset, -1, None)]
    return rt.write(P, lambda c: c.commit(GROUP, -1, "", None, -1, wanted, 9, 1000))


def fetch(rt: CoordinatorRuntime[GroupCoordinator, Record]) -> Completion[int | None]:
    def op(c: GroupCoordinator) -> int | None:
        [(_, [(_, found)])] = c.fetch_offsets(GROUP, [("t", [0])])
        return None if found is None else found.offset

    return rt.read(P, op)


def join(
    rt: CoordinatorRuntime[GroupCoordinator, Record], answers: list[JoinGroupResponse]
) -> Completion[None]:
    request = JoinGroupRequest(
        group_id=GROUP,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        member_id="",
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name="range", metadata=subscription("t"))],
    )
    context = rt.context(P)
    assert context is not None

    def reply(response: JoinGroupResponse) -> None:
        context.defer(lambda: answers.append(response))

    def op(c: GroupCoordinator) -> CoordinatorResult[None, Record]:
        c.join(Caller("c", "/127.0.0.1"), request, 3, 1000, reply)  # v3: no member-id round trip
        return CoordinatorResult((), None)

    return rt.write(P, op)


def test_a_commit_answers_once_committed_and_a_fetch_waits_behind_it() -> None:
    offsets = Offsets()
    rt = build(offsets)
    done = commit(rt, 42)
    assert [records.decode(k, v) is not None for k, v in offsets.logs[P]] == [True]
    read = fetch(rt)
    assert not done.done and not read.done
    rt.on_committed(P, 1)
    assert done.result() == (ErrorCode.NONE, [ErrorCode.NONE])
    assert read.result() == 42
    assert fetch(rt).result() == 42  # nothing pending: at once


def test_a_failed_commit_answers_the_mapped_error_and_stores_nothing() -> None:
    offsets = Offsets(fail_with=ErrorCode.NOT_LEADER_OR_FOLLOWER)
    rt = build(offsets)
    assert commit(rt, 42).error == ErrorCode.NOT_COORDINATOR
    offsets.fail_with = ErrorCode.NOT_ENOUGH_REPLICAS
    assert commit(rt, 43).error == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert fetch(rt).result() is None


def test_a_join_answer_waits_for_the_new_groups_record_and_unload_answers_parked_joins() -> None:
    offsets = Offsets()
    rt = build(offsets)
    first: list[JoinGroupResponse] = []
    join(rt, first)
    assert len(offsets.logs[P]) == 1  # the new group's record
    rt.advance(1000)  # the initial join phase (no delay) ends: the answer is ready...
    assert first == []  # ...and waits for the group's record
    rt.on_committed(P, 1)
    assert [r.error_code for r in first] == [ErrorCode.NONE]
    # A second member's join parks until the first rejoins: unloading answers it.
    second: list[JoinGroupResponse] = []
    join(rt, second)
    assert second == []
    assert rt.unload(P, 1)
    assert [r.error_code for r in second] == [ErrorCode.NOT_COORDINATOR]
    assert rt.status(P) == ErrorCode.NOT_COORDINATOR


def test_a_reloaded_partition_has_what_was_committed() -> None:
    offsets = Offsets()
    rt = build(offsets)
    commit(rt, 7)
    rt.on_committed(P, 1)
    rt.unload(P, 1)
    assert rt.load(P, 2)
    decoded = [records.decode(k, v) for k, v in offsets.logs[P]]
    assert rt.replay(P, 2, [r for r in decoded if r is not None])
    assert rt.complete_load(P, 2)
    assert fetch(rt).result() == 7

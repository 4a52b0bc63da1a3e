"""T12 in its short form (the full one: ``python -m tests.cluster.quorum_soak --faults
30``), and the checks it rests on, each shown failing on a history or log that breaks it."""

from __future__ import annotations

from millpond.wire.generated.data.leader_change_message import LeaderChangeMessage
from millpond.wire.records import (
    ControlRecordType,
    NewRecord,
    RecordBatch,
    build_batch,
    build_control_key,
)

from .metadata_history import (
    Op,
    check_final_state,
    check_log,
    check_prefixes,
    longest_gap,
    outage_around,
)
from .quorum_soak import run


def test_a_quorum_of_processes_keeps_every_acknowledged_operation_through_faults() -> None:
    report = run(faults=6, seed=1)
    assert report["violations"] == [], report
    assert report["faults"] == {"kill": 2, "pause": 2, "cut": 2}, report
    # Each fault on the active controller moves the leadership.
    assert report["controller_elections"] >= 1 + report["faults_total"] // 2, report
    assert report["ops_ok"] > 100, report
    ends = {end for _, end in report["metadata_log_range"].values()}
    assert len(ends) == 1, report  # every controller has the whole log (or its snapshot)


def op(kind: str, topic: str, value: str | None = None, outcome: str = "ok") -> Op:
    return Op(kind, topic, value, 0.0, 0.0, outcome)  # type: ignore[arg-type]


def test_the_final_state_must_follow_from_the_acknowledged_operations() -> None:
    history = [
        op("create", "a"),
        op("alter", "a", "61000"),
        op("create", "b"),
        op("delete", "b"),
        op("create", "c"),
        op("alter", "c", "62000", outcome="info"),
        op("create", "d", outcome="info"),
    ]
    good = {"a": "61000", "c": "62000"}
    assert check_final_state(history, good) == []
    assert check_final_state(history, {**good, "c": "", "d": ""}) == []  # info: either way
    # An acknowledged alter lost, a deleted topic back, an acknowledged create lost:
    assert check_final_state(history, {**good, "a": ""})
    assert check_final_state(history, {**good, "b": ""})
    assert check_final_state(history, {"c": "62000"})


def _leader_change(epoch: int, leader: int, offset: int) -> RecordBatch:
    value = LeaderChangeMessage(leader_id=leader).encode(0)
    record = NewRecord(
        key=build_control_key(ControlRecordType.LEADER_CHANGE), value=value, timestamp=0
    )
    return RecordBatch(
        build_batch([record], base_offset=offset, partition_leader_epoch=epoch, is_control=True)
    )


def test_one_leader_per_epoch_and_epochs_that_never_go_back() -> None:
    good = [_leader_change(1, 1, 0), _leader_change(2, 3, 1), _leader_change(2, 3, 2)]
    assert check_log(1, good) == []
    assert check_log(1, [*good, _leader_change(2, 2, 3)])  # a second leader of epoch 2
    assert check_log(1, [*good, _leader_change(1, 1, 3)])  # back to epoch 1


def test_the_controllers_logs_must_agree_up_to_the_shortest() -> None:
    abc = [(0, b"a"), (1, b"b"), (5, b"c")]
    assert check_prefixes({1: abc, 2: abc[:2], 3: abc[:1]}) == []
    assert check_prefixes({1: abc[:2], 2: [(0, b"a"), (1, b"x")]}) == [
        "nodes 1 and 2 differ at offset 1"
    ]
    # A log that starts at a snapshot is compared from its start.
    assert check_prefixes({1: abc, 2: [(5, b"c"), (9, b"d")]}) == []
    assert check_prefixes({1: abc, 2: [(5, b"z")]}) == ["nodes 1 and 2 differ at offset 5"]
    # Batches that do not line up differ too.
    assert check_prefixes({1: abc, 2: [(0, b"a"), (2, b"b")]}) == [
        "nodes 1 and 2 differ at offset 1"
    ]


def test_unavailability_is_the_longest_stretch_without_an_acknowledgement() -> None:
    ops = [Op("create", "a", None, 0, 1.0, "ok"), Op("create", "b", None, 1, 4.5, "ok")]
    assert longest_gap(ops, 0.0, 5.0) == 3.5
    assert longest_gap([Op("create", "a", None, 0, 9.0, "info")], 0.0, 10.0) == 10.0
    assert outage_around(ops, 2.0, 0.0, 5.0) == 3.5
    assert outage_around(ops, 0.5, 0.0, 5.0) == 1.0 and outage_around(ops, 4.8, 0.0, 5.0) == 0.5

"""T10 in its short form (the long one: ``python -m tests.cluster.group_soak --faults 20``),
and its checks, each shown failing on a history that breaks it."""

from __future__ import annotations

from .group_soak import longest_commit_gap, run
from .group_workload import (
    Commit,
    Held,
    Observed,
    commits_outside_ownership,
    double_ownership,
    offset_regressions,
    unconsumed_below_commit,
)


def test_t10_a_group_keeps_its_members_and_offsets_through_coordinator_kills() -> None:
    report = run(faults=2)
    assert report["violations"] == [], report
    assert report["faults"] == {"kill": 2}, report
    # The group moved: more than one broker coordinated it, and it kept committing.
    assert len({c for c in report["coordinators"] if c is not None}) > 1, report
    assert report["commits"] > 20 and report["acked"] > 1000, report
    assert all(count == 0 for count in (c["count"] for c in report["checks"].values())), report


def test_two_members_holding_a_partition_at_once_is_double_ownership() -> None:
    handed_over = [Held(0, 3, 0.0, 5.0), Held(1, 3, 5.5, None)]
    assert double_ownership(handed_over) == []
    overlapping = [Held(0, 3, 0.0, 5.0), Held(1, 3, 4.0, 9.0)]
    assert double_ownership(overlapping) == [
        "partition 3: member 0 held it from 0.00 to 5.0 and member 1 from 4.00"
    ]
    still_held = [Held(0, 3, 0.0, None), Held(1, 3, 4.0, 9.0)]
    assert len(double_ownership(still_held)) == 1
    # The same member taking a partition back is no overlap.
    assert double_ownership([Held(0, 3, 0.0, 5.0), Held(0, 3, 4.0, 9.0)]) == []


def test_a_committed_offset_read_lower_than_before_is_a_regression() -> None:
    rising = [Observed(1.0, {0: 5, 1: -1001}), Observed(2.0, {0: 9, 1: 3}), Observed(3.0, {0: 9})]
    assert offset_regressions(rising) == []
    falling = [*rising, Observed(4.0, {0: 7, 1: 3})]
    assert offset_regressions(falling) == [
        "partition 0: committed offset 7 at 4.00 after 9 at 2.00"
    ]
    gone = [*rising, Observed(4.0, {0: -1001})]
    assert len(offset_regressions(gone)) == 1


def test_a_commit_for_a_partition_its_member_did_not_hold_is_flagged() -> None:
    held = [Held(0, 2, 1.0, 4.0)]
    inside = Commit(0, 2, 10, 2.0, 2.5)
    straddling = Commit(0, 2, 11, 3.9, 4.2)  # in flight as the partition went
    assert commits_outside_ownership([inside, straddling], held) == []
    after = Commit(0, 2, 12, 5.0, 5.1)
    other = Commit(1, 2, 12, 2.0, 2.5)
    assert commits_outside_ownership([after, other], held) == [
        "member 0 committed offset 12 of partition 2 without holding it",
        "member 1 committed offset 12 of partition 2 without holding it",
    ]


def test_an_acknowledged_record_below_the_commit_that_nobody_read_is_flagged() -> None:
    acked = {0: {0, 1, 2, 3, 4}}
    assert unconsumed_below_commit({0: {0, 1, 2}}, {0: 3}, acked) == []
    assert unconsumed_below_commit({0: {0, 2}}, {0: 3}, acked) == [
        "partition 0: 1 acknowledged records below the committed offset 3 never consumed, first [1]"
    ]


def test_the_longest_commit_gap_spans_the_run() -> None:
    assert longest_commit_gap([1.0, 2.0, 6.0], 0.0, 7.0) == 4.0
    assert longest_commit_gap([], 0.0, 3.0) == 3.0

"""T4 to T7 in their short forms (the full ones: ``python -m tests.cluster.replication_soak
t7 --faults 100 --seconds 300``, and ``t4``/``t5``/``t6`` with more ``--faults``), and
the run's own checks, each shown failing on data that breaks it. The queue checker's
tests are in test_queue_checker."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .clocks import Clocks
from .queue_checker import Send
from .queue_workload import Sample
from .replica_logs import check_agreement
from .replication_soak import LAG_MS, _across, _ring, acked_under_min_isr, longest_send_gap, run


def _lossless(report: dict[str, Any]) -> None:
    assert report["violations"] == [], report
    assert report["valid"] and report["acked_lost"] == 0, report
    assert report["acked"] > 1000, report  # the verdict is over real traffic
    assert report["replica_disagreements"] == [], report


def test_t4_leaders_and_the_active_controller_bounced_clean_and_hard() -> None:
    report = run("t4", faults=1)
    _lossless(report)
    assert report["faults"] == {"stop": 2, "kill": 2}, report


def test_t5_a_cut_off_follower_leaves_the_isr_and_rejoins_once_healed() -> None:
    report = run("t5", faults=1)
    _lossless(report)
    [shrink] = report["figures"]["isr_shrink_s"]
    [expand] = report["figures"]["isr_expand_s"]
    assert shrink is not None and shrink <= LAG_MS / 1000 + 10, report
    assert expand is not None, report


def test_t6_an_isolated_leader_acknowledges_nothing_below_min_isr_and_loses_nothing() -> None:
    report = run("t6", faults=1)
    _lossless(report)
    assert report["acked_under_min_isr"] == [], report
    assert report["figures"]["leader_moved_s"][0] is not None, report


def test_t6_with_unclean_election_loses_what_the_isolated_leader_acknowledged() -> None:
    # min.insync.replicas=1: the leader, alone in its ISR, acknowledges; a follower that
    # never had those records is elected once it is fenced, and it truncates them away.
    report = run("t6", faults=1, unclean=True)
    assert report["acked_lost"] > 0, report
    assert report["checker"]["anomalies"]["vanished"]["count"] > 0, report


def test_t7_mixed_faults_lose_no_acknowledged_write() -> None:
    report = run("t7", faults=9, seconds=150)
    _lossless(report)
    assert report["faults_total"] == 9 and len(report["faults"]) == 9, report


def _sample(at: float, isr: tuple[int, ...]) -> Sample:
    return Sample(at, {0: (isr[0], isr)})


def test_an_ack_while_the_isr_was_below_min_is_flagged() -> None:
    samples = [_sample(0.0, (4, 5)), _sample(1.0, (4,)), _sample(3.0, (4,)), _sample(5.0, (4, 5))]
    inside = Send(1, 0, 7, "ok", 10, 1.5, 2.5)
    assert acked_under_min_isr([inside], samples, 2) == [
        "value 7 acked at offset 10 of partition 0 while its ISR was below 2"
    ]
    # Spanning a sample with the ISR whole again, not refused; nor an indefinite send.
    across = Send(1, 0, 8, "ok", 11, 2.5, 4.0)
    info = Send(1, 0, 9, "info", None, 1.5, 2.5)
    assert acked_under_min_isr([across, info], samples, 2) == []
    assert acked_under_min_isr([inside], samples, 1) == []


def test_in_sync_replicas_must_hold_exactly_what_was_read_below_the_high_watermark() -> None:
    read = {0: {0: 10, 1: 11, 2: 12}}
    good = {4: {0: {0: 10, 1: 11, 2: 12, 3: 13}}, 5: {0: {0: 10, 1: 11, 2: 12}}}
    assert check_agreement(good, read, {0: 3}, {0: (4, 5)}) == []
    differ = {**good, 5: {0: {0: 10, 1: 99, 2: 12}}}
    assert check_agreement(differ, read, {0: 3}, {0: (4, 5)}) == [
        "partition 0: in-sync broker 5 disagrees with the final read below the high "
        "watermark 3: missing offsets [] (0), extra [] (0), different values at [1] (1)"
    ]
    short = {**good, 5: {0: {0: 10}}}
    assert check_agreement(short, read, {0: 3}, {0: (4, 5)})
    assert check_agreement(short, read, {0: 3}, {0: (4,)}) == []  # 5 is out of sync


def test_partitions_are_the_pairs_they_cut() -> None:
    assert _across([1], [1, 2, 3]) == {(1, 2), (1, 3)}
    assert _across([1, 2], [3, 4]) == {(1, 3), (1, 4), (2, 3), (2, 4)}
    # A ring of 5: each node keeps its two neighbours and loses the other two.
    cut = _ring([1, 2, 3, 4, 5])
    assert cut == {(1, 3), (1, 4), (2, 4), (2, 5), (3, 5)}


def test_the_longest_outage_is_the_longest_stretch_without_an_ack() -> None:
    sends = [Send(1, 0, 1, "ok", 0, 0.0, 1.0), Send(1, 0, 2, "ok", 1, 1.0, 4.0)]
    assert longest_send_gap(sends, 0.0, 5.0) == 3.0
    assert longest_send_gap([], 0.0, 5.0) == 5.0


def test_a_node_reads_the_wall_clock_its_offset_file_gives(tmp_path: Path) -> None:
    clocks = Clocks(tmp_path, [1])
    program = "import time; print(time.time(), time.monotonic(), flush=True); input(); " + (
        "print(time.time(), time.monotonic())"
    )
    env = {**clocks.env(1), "PATH": "/usr/bin:/bin"}
    with subprocess.Popen(
        [sys.executable, "-c", program], env=env, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    ) as child:  # fmt: skip
        assert child.stdout is not None and child.stdin is not None
        wall, mono = map(float, child.stdout.readline().split())
        assert abs(wall - time.time()) < 5
        clocks.set(1, -250.0)  # the running process steps back, as on an NTP step
        child.stdin.write("\n")
        child.stdin.flush()
        stepped, mono_after = map(float, child.stdout.readline().split())
    assert -255 < stepped - wall < -245
    assert 0 <= mono_after - mono < 5  # the monotonic clock is not faked

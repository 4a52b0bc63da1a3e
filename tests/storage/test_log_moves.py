"""Moving a partition's log between log directories (AlterReplicaLogDirs): the future
log, its catching up, the swap, and restarts and crashes in the middle."""

from __future__ import annotations

import random

import pytest

from millpond.storage.clock import ManualClock
from millpond.storage.config import LogConfig
from millpond.storage.fs import MemFileSystem, join
from millpond.storage.log import Log
from millpond.storage.log_manager import LogDirError, LogManager
from millpond.storage.names import parse_partition_dir

from .log_helpers import T0, batch

D1, D2, D3 = "/data/d1", "/data/d2", "/data/d3"
TOPIC_ID = bytes(range(1, 17))


def manager(fs: MemFileSystem, c: ManualClock, dirs: tuple[str, ...] = (D1, D2)) -> LogManager:
    return LogManager(
        fs, list(dirs), c, cluster_id="cluster-a", node_id=1,
        default_config=LogConfig(segment_bytes=4096, file_delete_delay_ms=1000),
        rng=random.Random(3),
    )  # fmt: skip


def fill(log: Log, batches: int, epoch: int = 0) -> None:
    for _ in range(batches):
        log.append(batch(3, value_size=100), assign_offsets=True, leader_epoch=epoch)
    log.update_high_watermark(log.log_end_offset)


def content(log: Log) -> bytes:
    return log.read(log.log_start_offset, 1 << 30).records.read()


def kinds(fs: MemFileSystem, log_dir: str) -> list[str]:
    parsed = [parse_partition_dir(n) for n in fs.listdir(log_dir)]
    return sorted(p.kind or "live" for p in parsed if p is not None and p.topic == "t")


def finish(lm: LogManager, max_bytes: int = 1 << 20, steps: int = 100) -> int:
    for step in range(1, steps + 1):
        if lm.advance_move("t", 0, max_bytes):
            return step
    raise AssertionError(f"not moved in {steps} steps")


def test_a_move_copies_the_log_and_swaps_it_in() -> None:
    fs, c = MemFileSystem(), ManualClock(T0)
    lm = manager(fs, c)
    log = lm.get_or_create_log("t", 0, TOPIC_ID)
    assert lm.log_dir_of("t", 0) == D1
    fill(log, 20, epoch=3)
    before = content(log)
    assert len(log.segments) > 1
    assert lm.alter_log_dir("t", 0, D2) is True
    assert kinds(fs, D2) == ["future"] and lm.future_log_dir_of("t", 0) == D2
    assert lm.moving() == [("t", 0)]
    # Appends go on to the current log while the future one catches up.
    assert not lm.advance_move("t", 0, max_bytes=1000)
    fill(log, 2, epoch=4)
    expected = content(log)
    assert expected.startswith(before)
    assert finish(lm, max_bytes=1000) > 1
    moved = lm.get_log("t", 0)
    assert moved is not None and moved is not log
    assert lm.log_dir_of("t", 0) == D2 and lm.future_log("t", 0) is None and lm.moving() == []
    assert content(moved) == expected
    assert moved.high_watermark == moved.log_end_offset == log.log_end_offset
    assert moved.leader_epochs is not None and moved.leader_epochs.latest_epoch == 4
    assert lm.topic_id("t", 0) == TOPIC_ID
    assert kinds(fs, D1) == ["delete"] and kinds(fs, D2) == ["live"]
    c.advance(1000)
    lm.delete_pending_logs()
    assert kinds(fs, D1) == []
    # Appends go to the moved log, and it survives a restart where it now is.
    fill(moved, 1, epoch=4)
    after = content(moved)
    lm.shutdown()
    again = manager(fs, c)
    reopened = again.get_log("t", 0)
    assert again.log_dir_of("t", 0) == D2 and reopened is not None
    assert content(reopened) == after


def test_a_log_start_inside_a_batch_is_kept() -> None:
    fs, c = MemFileSystem(), ManualClock(T0)
    lm = manager(fs, c)
    log = lm.get_or_create_log("t", 0)
    fill(log, 4)
    assert log.delete_records(4)  # inside the second batch (offsets 3-5)
    lm.alter_log_dir("t", 0, D2)
    finish(lm)
    moved = lm.get_log("t", 0)
    assert moved is not None
    assert (moved.log_start_offset, moved.log_end_offset) == (4, 12)
    assert moved.read(4, 1 << 20).records.read() == log.read(4, 1 << 20).records.read()


def test_moving_where_it_is_or_where_it_goes_changes_nothing() -> None:
    fs, c = MemFileSystem(), ManualClock(T0)
    lm = manager(fs, c)
    fill(lm.get_or_create_log("t", 0), 2)
    assert lm.alter_log_dir("t", 0, D1) is False and lm.moving() == []
    assert lm.alter_log_dir("t", 0, D2) is True
    future = lm.future_log("t", 0)
    assert lm.alter_log_dir("t", 0, D2 + "/") is False and lm.future_log("t", 0) is future
    with pytest.raises(KeyError):
        lm.alter_log_dir("t", 0, "/data/elsewhere")
    with pytest.raises(KeyError):
        lm.alter_log_dir("t", 9, D2)


def test_another_destination_drops_the_move_in_progress() -> None:
    fs, c = MemFileSystem(), ManualClock(T0)
    lm = manager(fs, c, dirs=(D1, D2, D3))
    fill(lm.get_or_create_log("t", 0), 3)
    lm.alter_log_dir("t", 0, D2)
    assert lm.alter_log_dir("t", 0, D3) is True
    assert kinds(fs, D2) == ["delete"] and kinds(fs, D3) == ["future"]
    # Back to where it is: the move is cancelled.
    assert lm.alter_log_dir("t", 0, D1) is False
    assert lm.moving() == [] and kinds(fs, D3) == ["delete"] and lm.log_dir_of("t", 0) == D1


def test_new_logs_count_future_logs_and_follow_a_preferred_dir() -> None:
    fs, c = MemFileSystem(), ManualClock(T0)
    lm = manager(fs, c)
    lm.get_or_create_log("t", 0)
    lm.get_or_create_log("t", 1)  # D2
    lm.alter_log_dir("t", 0, D2)  # D2 holds a log and a future log
    lm.get_or_create_log("t", 2)
    assert lm.log_dir_of("t", 2) == D1
    lm.prefer_log_dir("t", 3, D2)
    lm.get_or_create_log("t", 3)
    assert lm.log_dir_of("t", 3) == D2


def test_deleting_a_moving_partition_removes_both_logs() -> None:
    fs, c = MemFileSystem(), ManualClock(T0)
    lm = manager(fs, c)
    fill(lm.get_or_create_log("t", 0), 2)
    lm.alter_log_dir("t", 0, D2)
    assert lm.delete_logs("t", [0], delay_ms=0) == 1
    assert lm.moving() == [] and kinds(fs, D1) == ["delete"] and kinds(fs, D2) == ["delete"]
    lm.delete_pending_logs()
    assert kinds(fs, D1) == kinds(fs, D2) == []


@pytest.mark.parametrize("crash", [False, True], ids=["clean restart", "crash"])
def test_a_move_resumes_after_a_restart(crash: bool) -> None:
    fs, c = MemFileSystem(), ManualClock(T0)
    lm = manager(fs, c)
    log = lm.get_or_create_log("t", 0, TOPIC_ID)
    fill(log, 20)
    log.flush()
    expected = content(log)
    lm.alter_log_dir("t", 0, D2)
    assert not lm.advance_move("t", 0, max_bytes=2000)
    if crash:
        fs.crash(random.Random(1), torn=True)  # the future log's copy was never synced
    else:
        lm.shutdown()
    again = manager(fs, c)
    assert again.moving() == [("t", 0)] and again.log_dir_of("t", 0) == D1
    future = again.future_log("t", 0)
    assert future is not None and future.log_end_offset <= log.log_end_offset
    finish(again, max_bytes=2000)
    moved = again.get_log("t", 0)
    assert moved is not None and again.log_dir_of("t", 0) == D2
    assert content(moved) == expected and again.topic_id("t", 0) == TOPIC_ID


def test_a_crash_between_the_swaps_two_renames_is_refused_at_the_next_start() -> None:
    """As Kafka: the partition is then in both directories, and which one to keep is the
    operator's call."""
    fs, c = MemFileSystem(), ManualClock(T0)
    lm = manager(fs, c)
    fill(lm.get_or_create_log("t", 0), 3)
    lm.alter_log_dir("t", 0, D2)
    fs.fail_next("rename", join(D1, "t-0"))
    assert lm.advance_move("t", 0) is True  # logged; the move is over either way
    assert kinds(fs, D1) == ["live"] and kinds(fs, D2) == ["live"]
    with pytest.raises(LogDirError, match="is in both"):
        manager(fs, c)


def test_a_failing_destination_drops_the_move() -> None:
    fs, c = MemFileSystem(), ManualClock(T0)
    lm = manager(fs, c)
    log = lm.get_or_create_log("t", 0)
    fill(log, 3)
    lm.alter_log_dir("t", 0, D2)
    fs.fail_next("append", D2)
    assert lm.advance_move("t", 0) is True
    assert lm.moving() == [] and lm.log_dir_of("t", 0) == D1 and lm.get_log("t", 0) is log
    assert kinds(fs, D2) == ["delete"]

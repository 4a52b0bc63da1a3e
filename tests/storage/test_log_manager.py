from __future__ import annotations

import json
import random

import pytest

from millpond.storage.checkpoints import (
    read_meta_properties,
    read_offset_checkpoint,
    read_partition_metadata,
    write_offset_checkpoint,
)
from millpond.storage.clock import ManualClock
from millpond.storage.config import LogConfig
from millpond.storage.fs import FileSystem, MemFileSystem, join
from millpond.storage.log import Log
from millpond.storage.log_manager import InconsistentTopicIdError, LogDirError, LogManager
from millpond.storage.names import (
    CLEAN_SHUTDOWN_FILE,
    LOG_START_OFFSET_CHECKPOINT_FILE,
    META_PROPERTIES_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
)
from millpond.wire.records import iter_batches

from .log_helpers import T0, CountingFs, batch


class WriteCountingFs(MemFileSystem):
    """Records the directories synced and the files replaced (checkpoints are written
    to a temporary file, then renamed over)."""

    def __init__(self) -> None:
        super().__init__()
        self.synced_dirs: list[str] = []
        self.written: list[str] = []

    def sync_dir(self, path: str) -> None:
        self.synced_dirs.append(path)
        super().sync_dir(path)

    def rename(self, src: str, dst: str) -> None:
        if src.endswith(".tmp"):
            self.written.append(dst)
        super().rename(src, dst)


D1, D2 = "/data/d1", "/data/d2"
TOPIC_ID = bytes(range(1, 17))


def manager(
    fs: FileSystem, c: ManualClock | None = None, dirs: tuple[str, ...] = (D1,), **cfg: object
) -> LogManager:
    return LogManager(
        fs, list(dirs), c or ManualClock(T0), cluster_id="cluster-a", node_id=1,
        default_config=LogConfig(**cfg),  # type: ignore[arg-type]
        rng=random.Random(3),
    )  # fmt: skip


def produce(log: Log, n: int, ts: int = T0) -> None:
    for i in range(n):
        log.append(batch(2, ts=ts + i), assign_offsets=True, leader_epoch=0)


def offsets(log: Log) -> list[int]:
    out: list[int] = []
    for segment in log.segments:
        data = segment.read(segment.base_offset, 1 << 30)
        if data is not None:
            out += [b.base_offset for b in iter_batches(data.records.read())]
    return out


# -- start-up, lazy opening, clean shutdown ------------------------------------------------


def test_new_dir_is_formatted_and_partition_created() -> None:
    fs = MemFileSystem()
    lm = manager(fs)
    meta = read_meta_properties(fs, join(D1, META_PROPERTIES_FILE))
    assert (meta.cluster_id, meta.node_id) == ("cluster-a", 1)
    assert meta.directory_id is not None and lm.directory_id(D1) == meta.directory_id
    log = lm.get_or_create_log("orders", 3, TOPIC_ID)
    assert log.directory == join(D1, "orders-3")
    assert read_partition_metadata(fs, log.directory) == TOPIC_ID
    assert lm.get_log("orders", 3) is log and lm.get_log("orders", 4) is None
    assert lm.partitions() == [("orders", 3)] and ("orders", 3) in lm


def test_clean_shutdown_then_lazy_start_reads_nothing() -> None:
    fs = CountingFs()
    lm = manager(fs)
    for p in range(3):
        produce(lm.get_or_create_log("t", p, TOPIC_ID), 5)
    lm.shutdown(broker_epoch=42)
    marker = fs.open(join(D1, CLEAN_SHUTDOWN_FILE))
    assert json.loads(marker.read_at(0, 100)) == {"version": 0, "brokerEpoch": 42}
    assert read_offset_checkpoint(fs, join(D1, RECOVERY_POINT_CHECKPOINT_FILE)) == {
        ("t", 0): 10, ("t", 1): 10, ("t", 2): 10,
    }  # fmt: skip
    fs.log_bytes_read[0] = 0
    lm = manager(fs)
    assert lm.had_clean_shutdown(D1) and lm.previous_broker_epoch() == 42
    assert not fs.exists(join(D1, CLEAN_SHUTDOWN_FILE))  # taken at start (KAFKA-10471)
    assert list(lm.opened_logs()) == [] and len(lm) == 3
    assert fs.log_bytes_read[0] == 0
    log = lm.get_log("t", 1)
    assert log is not None and log.log_end_offset == 10 and offsets(log) == list(range(0, 10, 2))
    assert [tp for tp, _ in lm.opened_logs()] == [("t", 1)]
    assert lm.topic_id("t", 2) == TOPIC_ID
    assert lm.open_all() == 2


def test_crash_after_lazy_start_recovers_unopened_logs_from_their_recovery_points() -> None:
    fs = MemFileSystem()
    lm = manager(fs)
    produce(lm.get_or_create_log("t", 0), 4)
    produce(lm.get_or_create_log("t", 1), 4)
    lm.shutdown()
    lm = manager(fs)
    log = lm.get_log("t", 0)
    assert log is not None
    produce(log, 3)  # never flushed
    lm.checkpoint_recovery_points()
    assert read_offset_checkpoint(fs, join(D1, RECOVERY_POINT_CHECKPOINT_FILE)) == {
        ("t", 0): 8, ("t", 1): 8,
    }  # fmt: skip
    fs.crash()
    lm = manager(fs)
    assert not lm.had_clean_shutdown(D1)
    assert len(list(lm.opened_logs())) == 2  # an unclean directory is recovered at start
    log0, log1 = lm.get_log("t", 0), lm.get_log("t", 1)
    assert log0 is not None and log1 is not None
    assert (log0.log_end_offset, log1.log_end_offset) == (8, 8)


def test_unclean_start_recovers_from_the_recovery_point_only() -> None:
    fs = CountingFs()
    lm = manager(fs, segment_bytes=300)
    log = lm.get_or_create_log("t", 0)
    produce(log, 12)
    log.flush()
    lm.checkpoint_recovery_points()
    produce(log, 3)
    assert len(log.segments) > 3
    fs.crash()
    fs.log_bytes_read[0] = 0
    lm = manager(fs, segment_bytes=300)
    log2 = lm.get_log("t", 0)
    assert log2 is not None and log2.log_end_offset == 24 and log2.recovery_point == 24
    assert fs.log_bytes_read[0] < log2.size / 2  # only the segments past the point
    assert offsets(log2) == list(range(0, 24, 2))


def test_malformed_recovery_checkpoint_means_full_recovery() -> None:
    fs = MemFileSystem()
    lm = manager(fs)
    log = lm.get_or_create_log("t", 0)
    produce(log, 3)
    log.flush()
    handle = fs.open(join(D1, RECOVERY_POINT_CHECKPOINT_FILE), create=True)
    handle.append(b"garbage\n")
    fs.crash()
    reopened = manager(fs).get_log("t", 0)
    assert reopened is not None and reopened.log_end_offset == 6
    assert reopened.recovery_point == 0


def test_marker_is_written_last_and_not_when_a_checkpoint_fails() -> None:
    fs = MemFileSystem()
    lm = manager(fs)
    produce(lm.get_or_create_log("t", 0), 2)
    fs.fail_next("sync", RECOVERY_POINT_CHECKPOINT_FILE)
    lm.shutdown()
    assert not fs.exists(join(D1, CLEAN_SHUTDOWN_FILE))
    lm = manager(fs)
    assert not lm.had_clean_shutdown(D1)
    log = lm.get_log("t", 0)
    assert log is not None and log.log_end_offset == 4


def test_crash_while_loading_counts_as_unclean() -> None:
    fs = MemFileSystem()
    manager(fs).shutdown()
    assert fs.exists(join(D1, CLEAN_SHUTDOWN_FILE))
    manager(fs)  # the process dies here without shutting down
    fs.crash()
    after_crash = manager(fs)
    assert not after_crash.had_clean_shutdown(D1)
    assert after_crash.previous_broker_epoch() == -1  # what the registration tells the controller


# -- identity and layout -----------------------------------------------------------------


def test_other_cluster_or_node_is_refused() -> None:
    fs = MemFileSystem()
    manager(fs).shutdown()
    with pytest.raises(LogDirError, match="cluster.id"):
        LogManager(fs, [D1], ManualClock(), cluster_id="other", node_id=1)
    with pytest.raises(LogDirError, match="node.id"):
        LogManager(fs, [D1], ManualClock(), cluster_id="cluster-a", node_id=2)


def test_new_partitions_go_to_the_emptiest_dir_and_duplicates_are_refused() -> None:
    fs = MemFileSystem()
    lm = manager(fs, dirs=(D1, D2))
    for p in range(4):
        lm.get_or_create_log("t", p)
    assert [lm.log_dir_of("t", p) for p in range(4)] == [D1, D2, D1, D2]
    lm.shutdown()
    fs.makedirs(join(D2, "t-0"))
    with pytest.raises(LogDirError, match="t-0"):
        manager(fs, dirs=(D1, D2))


def test_other_names_in_a_log_dir_are_ignored() -> None:
    fs = MemFileSystem()
    for name in ("__cluster_metadata-0", "t-1.0123456789abcdef0123456789abcdef-future", "x"):
        fs.makedirs(join(D1, name))
    fs.open(join(D1, "t-7"), create=True)  # a file, not a directory
    assert manager(fs).partitions() == []


def test_topic_id_mismatch_is_refused() -> None:
    fs = MemFileSystem()
    lm = manager(fs)
    lm.get_or_create_log("t", 0, TOPIC_ID)
    with pytest.raises(InconsistentTopicIdError):
        lm.get_or_create_log("t", 0, bytes(range(2, 18)))
    lm.get_or_create_log("t", 0, TOPIC_ID)


# -- deletion, retention, flushing, checkpoints ------------------------------------------


def test_delete_log_renames_checkpoints_and_removes_later() -> None:
    fs = MemFileSystem()
    c = ManualClock(T0)
    lm = manager(fs, c, file_delete_delay_ms=1000)
    produce(lm.get_or_create_log("t", 0), 2)
    produce(lm.get_or_create_log("t", 1), 2)
    lm.checkpoint_recovery_points()
    assert lm.delete_logs("t", [0]) == 1 and lm.delete_logs("t", [0]) == 0
    names = fs.listdir(D1)
    doomed = [n for n in names if n.endswith("-delete")]
    assert len(doomed) == 1 and doomed[0].startswith("t-0.") and "t-0" not in names
    points = read_offset_checkpoint(fs, join(D1, RECOVERY_POINT_CHECKPOINT_FILE))
    assert ("t", 0) not in points
    assert lm.retention_pass() == 0 and fs.exists(join(D1, doomed[0]))
    c.advance(1000)
    lm.retention_pass()
    assert not fs.exists(join(D1, doomed[0]))
    assert lm.get_log("t", 0) is None
    log = lm.get_or_create_log("t", 0)
    assert log.log_end_offset == 0


def test_deleted_logs_wait_the_delay_given() -> None:
    c = ManualClock(T0)
    lm = manager(MemFileSystem(), c, file_delete_delay_ms=60_000)
    lm.get_or_create_log("t", 0)
    lm.get_or_create_log("u", 0)
    assert lm.next_log_deletion_ms() is None
    lm.delete_logs("t", [0], delay_ms=500)
    c.advance(100)
    lm.delete_logs("u", [0])
    assert lm.next_log_deletion_ms() == 400
    c.advance(400)
    assert lm.next_log_deletion_ms() == 0
    assert lm.delete_pending_logs() == 1
    assert lm.next_log_deletion_ms() == 59_600
    c.advance(60_000)
    assert lm.delete_pending_logs() == 1 and lm.next_log_deletion_ms() is None


def test_deleting_a_topic_writes_each_directory_once() -> None:
    """All of a topic's partitions go in one pass: one directory sync for the renames and
    one rewrite of each checkpoint per log directory, whatever the partition count."""
    fs = WriteCountingFs()
    lm = manager(fs, dirs=(D1, D2))
    for p in range(6):
        produce(lm.get_or_create_log("t", p), 1)
    kept = lm.get_or_create_log("kept", 0)
    produce(kept, 3)
    kept.flush()
    lm.checkpoint_recovery_points()
    fs.synced_dirs.clear()
    fs.written.clear()
    assert lm.delete_logs("t", [*range(6), 99]) == 6
    # Per log directory: the renames made durable, and the recovery-point checkpoint
    # written (a temporary file renamed over, then the directory synced again).
    # Per log directory: the renames made durable, and both checkpoints written (each a
    # temporary file renamed over, then the directory synced). Nothing is flushed from
    # the logs thrown away.
    assert sorted(fs.synced_dirs) == [D1] * 3 + [D2] * 3
    checkpoints = (RECOVERY_POINT_CHECKPOINT_FILE, LOG_START_OFFSET_CHECKPOINT_FILE)
    assert sorted(fs.written) == sorted(join(d, f) for d in (D1, D2) for f in checkpoints)
    assert lm.partitions() == [("kept", 0)]
    kept_in = lm.log_dir_of("kept", 0) or ""
    points = read_offset_checkpoint(fs, join(kept_in, RECOVERY_POINT_CHECKPOINT_FILE))
    assert points == {("kept", 0): kept.log_end_offset} and kept.log_end_offset > 0
    # The directories' partition counts followed: a new log goes to the emptier one.
    lm.get_or_create_log("u", 0)
    assert lm.log_dir_of("u", 0) != kept_in


def test_delete_dirs_left_by_a_crash_are_removed() -> None:
    fs = MemFileSystem()
    lm = manager(fs)
    lm.get_or_create_log("t", 0)
    lm.delete_logs("t", [0])
    fs.crash()
    lm = manager(fs)
    assert lm.partitions() == []
    assert lm.delete_pending_logs() == 1
    assert [n for n in fs.listdir(D1) if n.startswith("t-")] == []


def test_retention_pass_skips_compacted_logs() -> None:
    fs = MemFileSystem()
    c = ManualClock(T0)
    lm = manager(fs, c, segment_bytes=300, retention_ms=1000, file_delete_delay_ms=0)
    produce(lm.get_or_create_log("t", 0), 10)
    lm.get_or_create_log("c", 0, config=LogConfig(cleanup_policy=("compact",), segment_bytes=300))
    produce(lm.get_or_create_log("c", 0), 10)
    lm.shutdown()
    lm = manager(fs, c, segment_bytes=300, retention_ms=1000, file_delete_delay_ms=0)
    lm.update_config("c", LogConfig(cleanup_policy=("compact",), segment_bytes=300))
    log, compacted = lm.get_log("t", 0), lm.get_log("c", 0)
    assert log is not None and compacted is not None
    log.update_high_watermark(20)  # the replica manager's job after a restart
    compacted.update_high_watermark(20)
    c.advance(5000)
    assert lm.retention_pass() > 0
    assert log.log_start_offset == 20 and len(log.segments) == 1
    assert compacted.log_start_offset == 0  # retention of compacted logs is the cleaner's


def test_flush_dirty_follows_flush_ms() -> None:
    fs = MemFileSystem()
    c = ManualClock(T0)
    lm = manager(fs, c, flush_ms=100)
    log = lm.get_or_create_log("t", 0)
    produce(log, 2)
    assert lm.flush_dirty() == 0 and log.recovery_point == 0
    c.advance(100)
    assert lm.flush_dirty() == 1 and log.recovery_point == 4


def test_flush_failure_takes_the_log_offline_and_withholds_the_marker() -> None:
    fs = MemFileSystem()
    c = ManualClock(T0)
    lm = manager(fs, c, flush_ms=0)
    produce(lm.get_or_create_log("t", 0), 2)
    fs.fail_next("sync", "t-0")
    assert lm.flush_dirty() == 0
    assert list(lm.offline) == [("t", 0)]
    lm.shutdown()
    assert not fs.exists(join(D1, CLEAN_SHUTDOWN_FILE))


def test_checkpoints_are_written_only_when_changed_and_log_starts_only_when_moved() -> None:
    fs = MemFileSystem()
    lm = manager(fs)
    log = lm.get_or_create_log("t", 0)
    produce(log, 4)
    lm.checkpoint_recovery_points()
    lm.checkpoint_log_start_offsets()
    assert read_offset_checkpoint(fs, join(D1, LOG_START_OFFSET_CHECKPOINT_FILE)) == {}
    fs.fail_next("rename", RECOVERY_POINT_CHECKPOINT_FILE)
    lm.checkpoint_recovery_points()  # unchanged: not rewritten, so the fault stays armed
    log.update_high_watermark(8)
    log.delete_records(4)
    lm.checkpoint_log_start_offsets()
    assert read_offset_checkpoint(fs, join(D1, LOG_START_OFFSET_CHECKPOINT_FILE)) == {("t", 0): 4}
    lm.shutdown()
    reopened = manager(fs).get_log("t", 0)
    assert reopened is not None and reopened.log_start_offset == 4


def test_unopened_log_start_offsets_are_carried_over() -> None:
    fs = MemFileSystem()
    path = join(D1, LOG_START_OFFSET_CHECKPOINT_FILE)
    lm = manager(fs)
    log = lm.get_or_create_log("t", 0)
    produce(log, 4)
    log.update_high_watermark(8)
    log.delete_records(6)
    lm.get_or_create_log("t", 1)
    lm.shutdown()
    lm = manager(fs)
    produce(lm.get_or_create_log("t", 1), 1)
    write_offset_checkpoint(fs, path, {})
    lm.shutdown()
    assert read_offset_checkpoint(fs, path) == {("t", 0): 6}

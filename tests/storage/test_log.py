from __future__ import annotations

import random

import pytest

from millpond.storage.checkpoints import read_leader_epoch_checkpoint
from millpond.storage.clock import ManualClock
from millpond.storage.config import LogConfig
from millpond.storage.fs import MemFileSystem, join
from millpond.storage.leader_epochs import LeaderEpochCache
from millpond.storage.log import Log
from millpond.storage.log_types import (
    CorruptRecordError,
    InvalidAppendOffsetError,
    OffsetOutOfRangeError,
    RecordTooLargeError,
)
from millpond.wire.records import iter_batches

from .log_helpers import DIR, T0, CountingFs, batch, clock, mem_fs, offsets_in

SIZE1 = len(batch(1))


def open_log(
    fs: MemFileSystem, c: ManualClock | None = None, *, clean: bool = False, rp: int = 0, **cfg: int
) -> Log:
    config = LogConfig(**cfg)  # type: ignore[arg-type]
    return Log(
        fs, DIR, config, c or clock(), recovery_point=rp, had_clean_shutdown=clean,
        rng=random.Random(7),
    )  # fmt: skip


def produce(log: Log, n: int = 1, count: int = 1, ts: int = T0) -> None:
    for i in range(n):
        log.append(batch(count, ts=ts + i), assign_offsets=True, leader_epoch=3)


def all_offsets(log: Log) -> list[tuple[int, int]]:
    out = []
    for seg in log.segments:
        data = seg.read(seg.base_offset, 1 << 30)
        if data is not None:
            out += offsets_in(data.records)
    return out


def log_files(fs: MemFileSystem) -> list[str]:
    return [n for n in fs.listdir(DIR) if ".log" in n]


# -- append and read ---------------------------------------------------------------------


def test_append_assigns_offsets_and_reports() -> None:
    log = open_log(mem_fs())
    info = log.append(batch(3, ts=T0 + 5), assign_offsets=True, leader_epoch=4)
    assert (info.first_offset, info.last_offset, info.records_count) == (0, 2, 3)
    assert (info.max_timestamp, info.offset_of_max_timestamp) == (T0 + 7, 2)
    info = log.append(bytes(batch(2)), assign_offsets=True, leader_epoch=4)  # read-only input
    assert (info.first_offset, info.last_offset) == (3, 4)
    assert log.log_end_offset == 5
    stored = list(iter_batches(log.read(0, 1 << 20).records.read()))
    assert [(b.base_offset, b.partition_leader_epoch) for b in stored] == [(0, 4), (3, 4)]
    assert all(b.is_valid() for b in stored)


def test_log_append_time_topics_stamp_the_append_time() -> None:
    c = clock()
    log = open_log(mem_fs(), c, message_timestamp_type="LogAppendTime")  # type: ignore[arg-type]
    c.advance(1234)
    info = log.append(batch(2, ts=5), assign_offsets=True)
    assert info.log_append_time == info.max_timestamp == T0 + 1234
    (stored,) = iter_batches(log.read(0, 1 << 20).records.read())
    assert stored.is_valid() and stored.max_timestamp == T0 + 1234


def test_replica_appends_keep_offsets_but_must_follow_the_end() -> None:
    log = open_log(mem_fs())
    log.append(batch(2, base_offset=10), assign_offsets=False)
    assert log.log_end_offset == 12
    with pytest.raises(InvalidAppendOffsetError):
        log.append(batch(1, base_offset=11), assign_offsets=False)
    two = batch(1, base_offset=20) + batch(1, base_offset=15)
    with pytest.raises(InvalidAppendOffsetError):
        log.append(two, assign_offsets=False)
    assert log.log_end_offset == 12


def test_bad_batches_are_refused_untouched() -> None:
    log = open_log(mem_fs(), max_message_bytes=SIZE1 + 5)
    bad = batch(1)
    bad[-1] ^= 1
    with pytest.raises(CorruptRecordError):
        log.append(bad, assign_offsets=True)
    with pytest.raises(CorruptRecordError):
        log.append(batch(1)[:-3], assign_offsets=True)
    with pytest.raises(RecordTooLargeError):
        log.append(batch(1, value_size=100), assign_offsets=True)
    assert log.log_end_offset == 0 and log.size == 0


def test_read_across_segments_limits_and_watermarks() -> None:
    log = open_log(mem_fs(), segment_bytes=3 * SIZE1, index_interval_bytes=0)
    produce(log, 10)
    assert len(log.segments) == 4
    assert offsets_in(log.read(4, 1 << 20).records) == [(3, 3), (4, 4), (5, 5)][1:]
    assert offsets_in(log.read(3, 2 * SIZE1).records) == [(3, 3), (4, 4)]
    assert offsets_in(log.read(7, 1).records) == [(7, 7)]  # first batch always whole
    assert offsets_in(log.read(3, 1 << 20, max_offset=5).records) == [(3, 3), (4, 4)]
    assert log.read(5, 1 << 20, max_offset=5).records.size == 0
    assert log.read(10, 1 << 20).records.size == 0
    with pytest.raises(OffsetOutOfRangeError):
        log.read(11, 100)


def test_find_offset_by_timestamp() -> None:
    log = open_log(mem_fs(), segment_bytes=3 * SIZE1)
    for i in range(6):
        log.append(batch(1, ts=T0 + 10 * i), assign_offsets=True, leader_epoch=0)
    hit = log.find_offset_by_timestamp(T0 + 25)
    assert hit is not None and (hit.timestamp, hit.offset) == (T0 + 30, 3)
    assert log.find_offset_by_timestamp(T0 + 51) is None
    assert log.find_offset_by_timestamp(-2) == (-1, 0, None)
    assert log.find_offset_by_timestamp(-1) == (-1, 6, None)
    top = log.find_offset_by_timestamp(-3)
    assert top is not None and (top.timestamp, top.offset) == (T0 + 50, 5)


# -- roll ----------------------------------------------------------------------------------


def test_roll_on_segment_bytes() -> None:
    log = open_log(mem_fs(), segment_bytes=2 * SIZE1)
    produce(log, 5)
    assert [s.base_offset for s in log.segments] == [0, 2, 4]


def test_roll_on_segment_ms_by_record_time_and_jitter() -> None:
    log = open_log(mem_fs(), segment_ms=1000)
    log.append(batch(1, ts=T0), assign_offsets=True)
    log.append(batch(1, ts=T0 + 1000), assign_offsets=True)
    assert len(log.segments) == 1  # 1000 ms waited is not more than segment.ms
    log.append(batch(1, ts=T0 + 1001), assign_offsets=True)
    assert [s.base_offset for s in log.segments] == [0, 2]

    jittered = open_log(mem_fs(), segment_ms=1000, segment_jitter_ms=500)
    jitter = jittered.active_segment.roll_jitter_ms
    assert 0 <= jitter < 500
    jittered.append(batch(1, ts=T0), assign_offsets=True)
    jittered.append(batch(1, ts=T0 + 1000 - jitter), assign_offsets=True)
    assert len(jittered.segments) == 1
    jittered.append(batch(1, ts=T0 + 1001 - jitter), assign_offsets=True)
    assert len(jittered.segments) == 2


def test_roll_on_segment_ms_by_wall_clock_without_timestamps() -> None:
    c = clock()
    log = open_log(mem_fs(), c, segment_ms=1000)
    log.append(batch(1, ts=-1), assign_offsets=True)
    c.advance(1000)
    log.append(batch(1, ts=-1), assign_offsets=True)
    assert len(log.segments) == 1
    c.advance(1)
    log.append(batch(1, ts=-1), assign_offsets=True)
    assert len(log.segments) == 2


def test_roll_on_full_index() -> None:
    # 36 bytes: 4 offset entries, 3 time entries of which the last is kept for the
    # roll, so the time index is full after 2 appended entries (appends 2 and 3).
    log = open_log(mem_fs(), segment_index_bytes=36, index_interval_bytes=0)
    produce(log, 6)
    assert [s.base_offset for s in log.segments] == [0, 3]
    assert log.segments[0].time_index.is_full
    assert not log.segments[0].offset_index.is_full


# -- retention -------------------------------------------------------------------------------


def retention_log(c: ManualClock, fs: MemFileSystem | None = None, **cfg: int) -> Log:
    config = LogConfig(segment_bytes=2 * SIZE1, file_delete_delay_ms=1000, **cfg)  # type: ignore[arg-type]
    log = Log(fs or mem_fs(), DIR, config, c, rng=random.Random(7))
    for i in range(7):  # segments [0,1] [2,3] [4,5] [6]; record i at T0 + 1000 * i
        log.append(batch(1, ts=T0 + 1000 * i), assign_offsets=True)
    log.update_high_watermark(log.log_end_offset)
    return log


def test_retention_by_time_deletes_exactly_the_old_segments() -> None:
    c = clock()
    fs = mem_fs()
    log = retention_log(c, fs, retention_ms=10_000)
    c.set_now_ms(T0 + 1000 * 3 + 10_001)  # segment [2,3] ends at T0+3000: just expired
    assert log.delete_old_segments() == 2
    assert [s.base_offset for s in log.segments] == [4, 6]
    assert log.log_start_offset == 4
    deleted = sorted(n for n in log_files(fs) if n.endswith(".deleted"))
    assert deleted == ["00000000000000000000.log.deleted", "00000000000000000002.log.deleted"]
    c.advance(999)
    assert log.delete_pending_files() == 0
    c.advance(1)
    assert log.delete_pending_files() == 2
    assert log_files(fs) == ["00000000000000000004.log", "00000000000000000006.log"]


def test_retention_when_everything_expired_rolls_and_keeps_an_active_segment() -> None:
    c = clock()
    log = retention_log(c, retention_ms=1000)
    c.set_now_ms(T0 + 100_000)
    assert log.delete_old_segments() == 4
    assert [s.base_offset for s in log.segments] == [7]
    assert log.log_start_offset == log.log_end_offset == 7
    assert log.delete_old_segments() == 0  # an empty active segment is never deleted


def test_retention_by_size_keeps_the_log_above_the_limit() -> None:
    log = retention_log(clock(), retention_bytes=3 * SIZE1)  # log holds 7 batches
    assert log.delete_old_segments() == 2
    assert [s.base_offset for s in log.segments] == [4, 6]
    assert log.size == 3 * SIZE1


def test_retention_stops_at_the_high_watermark() -> None:
    c = clock()
    log = retention_log(c, retention_ms=1000)
    log.update_high_watermark(3)
    c.set_now_ms(T0 + 100_000)
    assert log.delete_old_segments() == 1
    assert log.log_start_offset == 2


def test_delete_records_then_retention() -> None:
    log = retention_log(clock())
    with pytest.raises(OffsetOutOfRangeError):
        log.delete_records(8)
    assert log.delete_records(5)
    assert not log.delete_records(4)
    assert log.log_start_offset == 5
    with pytest.raises(OffsetOutOfRangeError):
        log.read(4, 100)
    assert log.delete_old_segments() == 2
    assert [s.base_offset for s in log.segments] == [4, 6]
    assert log.log_start_offset == 5


# -- truncation ------------------------------------------------------------------------------


def test_truncate_to_and_fully() -> None:
    fs = mem_fs()
    cache = LeaderEpochCache(fs, join(DIR, "leader-epoch-checkpoint"))
    log = Log(fs, DIR, LogConfig(segment_bytes=2 * SIZE1), clock(), leader_epochs=cache)
    for epoch in range(7):
        log.append(batch(1), assign_offsets=True, leader_epoch=epoch)
    assert cache.latest_epoch == 6
    assert not log.truncate_to(9)
    assert log.truncate_to(3)
    assert log.log_end_offset == 3 and all_offsets(log) == [(0, 0), (1, 1), (2, 2)]
    assert [s.base_offset for s in log.segments] == [0, 2]
    assert cache.latest_epoch == 2
    log.append(batch(1), assign_offsets=True, leader_epoch=9)
    assert all_offsets(log)[-1] == (3, 3)
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.log_end_offset) == (100, 100)
    assert [s.base_offset for s in log.segments] == [100]
    assert cache.latest_epoch is None


# -- flush, shutdown, recovery ------------------------------------------------------------


def test_new_epochs_reach_the_checkpoint_at_flush_and_survive_a_crash_without_it() -> None:
    """Appends note a new epoch without an fsync (Kafka 3.7+); a flush writes it, and a
    crash before one loses nothing: recovery rebuilds the entries from the batches."""
    fs = mem_fs()
    path = join(DIR, "leader-epoch-checkpoint")

    def reopen(rp: int) -> tuple[Log, LeaderEpochCache]:
        cache = LeaderEpochCache(fs, path)
        return Log(fs, DIR, LogConfig(), clock(), leader_epochs=cache, recovery_point=rp), cache

    log, cache = reopen(0)
    for epoch in (1, 1, 4):
        log.append(batch(1), assign_offsets=True, leader_epoch=epoch)
    assert cache.entries() == [(1, 0), (4, 2)]
    assert not fs.exists(path) or read_leader_epoch_checkpoint(fs, path) == []
    log.flush()
    assert read_leader_epoch_checkpoint(fs, path) == [(1, 0), (4, 2)]
    log.append(batch(1), assign_offsets=True, leader_epoch=6)
    assert read_leader_epoch_checkpoint(fs, path) == [(1, 0), (4, 2)]
    log.segments[-1].flush()  # the batch reached the disk, the checkpoint did not
    fs.crash()
    recovered, cache = reopen(log.recovery_point)
    assert recovered.log_end_offset == 4
    assert cache.entries() == [(1, 0), (4, 2), (6, 3)]


def test_clean_shutdown_reopens_without_scanning() -> None:
    fs = CountingFs()
    fs.makedirs(DIR)
    log = open_log(fs, segment_bytes=200 * SIZE1, index_interval_bytes=4096)
    produce(log, 400)
    log.close()
    fs.log_bytes_read[0] = 0
    reopened = open_log(fs, clean=True, segment_bytes=200 * SIZE1, index_interval_bytes=4096)
    assert reopened.log_end_offset == 400 and reopened.recovery_point == 400
    assert fs.log_bytes_read[0] < 4096 + 2 * SIZE1 + 16 * 1024  # one index gap, not 400 batches
    fs.log_bytes_read[0] = 0
    unclean = open_log(fs, rp=0, segment_bytes=200 * SIZE1)
    assert unclean.log_end_offset == 400
    assert fs.log_bytes_read[0] >= 400 * SIZE1  # every batch validated


def test_flush_messages_flushes_from_the_append_path() -> None:
    fs = mem_fs()
    log = open_log(fs, flush_messages=3)
    produce(log, 2)
    assert log.recovery_point == 0
    produce(log, 1)
    assert log.recovery_point == 3
    fs.crash()
    assert open_log(fs, rp=3).log_end_offset == 3


def test_flush_ms_and_rolled_segments_flush_in_maybe_flush() -> None:
    c = clock()
    log = open_log(mem_fs(), c, flush_ms=1000, segment_bytes=2 * SIZE1)
    produce(log, 3)
    log.maybe_flush()
    assert log.recovery_point == 2  # the rolled segment, not the active one
    c.advance(1000)
    log.maybe_flush()
    assert log.recovery_point == 3


@pytest.mark.parametrize("seed", range(200))
def test_torn_crash_recovers_a_valid_prefix(seed: int) -> None:
    rng = random.Random(seed)
    fs = mem_fs()
    log = open_log(fs, segment_bytes=6 * SIZE1, index_interval_bytes=0)
    written: list[tuple[int, int]] = []
    flushed = 0
    for _ in range(rng.randint(5, 30)):
        info = log.append(batch(rng.randint(1, 3)), assign_offsets=True)
        written.append((info.first_offset, info.last_offset))
        if rng.random() < 0.2:
            log.flush()
            flushed = log.log_end_offset
    fs.crash(rng, torn=True)
    reopened = open_log(fs, rp=flushed, segment_bytes=6 * SIZE1, index_interval_bytes=0)
    got = all_offsets(reopened)
    assert got == written[: len(got)]  # a prefix of what was written
    assert reopened.log_end_offset >= flushed  # nothing flushed was lost
    data = reopened.read(0, 1 << 30).records.read() if got else b""
    assert all(b.is_valid() for b in iter_batches(data))
    reopened.append(batch(1), assign_offsets=True)  # and it takes appends again
    assert reopened.log_end_offset == (got[-1][1] + 1 if got else 0) + 1


@pytest.mark.parametrize("damage", ["garbage", "bitflip", "zeros"])
def test_damaged_tail_is_cut_and_later_segments_dropped(damage: str) -> None:
    fs = mem_fs()
    log = open_log(fs, segment_bytes=4 * SIZE1)
    produce(log, 10)  # segments [0..3] [4..7] [8, 9]
    log.flush(4)
    log.close()
    path = join(DIR, "00000000000000000004.log")
    f = fs.open(path)
    raw = bytearray(f.read_at(0, f.size()))
    if damage == "garbage":
        raw[2 * SIZE1 :] = b"\xff" * (len(raw) - 2 * SIZE1)
    elif damage == "bitflip":
        raw[2 * SIZE1 + 65] ^= 0x04
    else:
        raw[2 * SIZE1 + 8 : 2 * SIZE1 + 12] = b"\x00\x00\x00\x00"
    f.truncate(0)
    f.append(raw)
    reopened = open_log(fs, rp=4, segment_bytes=4 * SIZE1)
    assert all_offsets(reopened) == [(i, i) for i in range(6)]
    assert [s.base_offset for s in reopened.segments] == [0, 4]
    assert reopened.recovered_bytes_cut == 4 * SIZE1
    assert "00000000000000000008.log" not in fs.listdir(DIR)


def test_missing_index_is_rebuilt_at_load() -> None:
    fs = mem_fs()
    log = open_log(fs, index_interval_bytes=0)
    produce(log, 5)
    entries = log.active_segment.offset_index.all_entries()
    log.close()
    fs.remove(join(DIR, "00000000000000000000.index"))
    reopened = open_log(fs, clean=True, index_interval_bytes=0)
    assert reopened.log_end_offset == 5
    assert {e.position for e in entries} <= {
        e.position for e in reopened.active_segment.offset_index.all_entries()
    }


def test_leftover_deleted_files_are_removed_at_load() -> None:
    fs = mem_fs()
    log = open_log(fs)
    produce(log, 2)
    log.close()
    for name in ("00000000000000000099.log.deleted", "00000000000000000099.index"):
        fs.open(join(DIR, name), create=True).close()
    open_log(fs, clean=True)
    assert not any("99" in n for n in fs.listdir(DIR))


def test_failed_write_and_fsync_leave_the_log_consistent() -> None:
    fs = mem_fs()
    log = open_log(fs)
    produce(log, 2)
    fs.fail_next("append", ".log")
    with pytest.raises(OSError, match="injected append"):
        produce(log, 1)
    assert log.log_end_offset == 2
    produce(log, 1)
    fs.fail_next("sync", ".log")
    with pytest.raises(OSError, match="injected sync"):
        log.flush()
    assert log.recovery_point == 0
    log.flush()
    assert log.recovery_point == 3
    fs.crash()
    assert all_offsets(open_log(fs, rp=3)) == [(0, 0), (1, 1), (2, 2)]


def test_batches_walked_by_the_caller_are_not_walked_again() -> None:
    log = open_log(mem_fs())
    data = bytearray(batch(2) + batch(3))
    walked = list(iter_batches(memoryview(data)))
    info = log.append(data, assign_offsets=True, leader_epoch=1, batches=walked)
    assert (info.first_offset, info.last_offset) == (0, 4)
    assert walked[1].base_offset == 2  # the caller's views were stamped in place
    assert all_offsets(log) == [(0, 1), (2, 4)]
    readonly = bytes(batch(1))
    with pytest.raises(ValueError, match="writable"):
        log.append(readonly, assign_offsets=True, batches=list(iter_batches(readonly)))


@pytest.mark.parametrize(("count", "ts"), [(3, T0), (1, -1)])
def test_one_batch_append_matches_the_general_path(count: int, ts: int) -> None:
    """A one-batch request takes a shorter path; what it writes and reports must be
    what the walk over batch views gives for the same bytes."""
    fast, walked = open_log(mem_fs()), open_log(mem_fs())
    infos = []
    for log, walk in ((fast, False), (walked, True)):
        produce(log, 2, count=2)  # the next append starts at offset 4
        data = batch(count, ts=ts)
        views = list(iter_batches(memoryview(data))) if walk else None
        infos.append(log.append(data, assign_offsets=True, leader_epoch=9, batches=views))
    assert infos[0] == infos[1]
    assert (infos[0].first_offset, infos[0].records_count) == (4, count)
    assert infos[0].offset_of_max_timestamp == (-1 if ts < 0 else 3 + count)
    assert log_bytes(fast) == log_bytes(walked)


def log_bytes(log: Log) -> bytes:
    reads = (s.read(s.base_offset, 1 << 30) for s in log.segments)
    return b"".join(r.records.read() for r in reads if r is not None)

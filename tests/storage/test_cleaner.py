"""Compaction: exactly which records survive, tombstones and their delete horizon,
keyless records, producer state, transactions, offsets."""

from __future__ import annotations

import threading

import pytest

from millpond.storage.cleaner.checkpoint import CleanerCheckpoint
from millpond.storage.cleaner.clean import (
    apply_cleaning,
    clean_log,
    plan_cleaning,
    run_cleaning,
)
from millpond.storage.cleaner.offset_map import CleaningAbortedError, OffsetMap
from millpond.storage.log import Log
from millpond.storage.txn_index import AbortedTxn
from millpond.wire.records import ControlRecordType, build_control_batch, iter_batches

from .cleaner_helpers import (
    KV,
    SAMPLE_AFTER,
    SAMPLE_BEFORE,
    all_batches,
    kv_batch,
    make_sample,
    new_fs,
    open_log,
    put,
    rows,
)
from .log_helpers import DIR, T0

DAY = 24 * 60 * 60 * 1000


def test_latest_record_per_key_survives_at_its_offset() -> None:
    fs, clock = new_fs()
    log = open_log(fs, clock)
    make_sample(log)
    assert rows(log) == SAMPLE_BEFORE
    result = clean_log(log, None, clock.now_ms())
    assert result is not None and result.applied
    assert result.end_offset == 6  # the active segment is never cleaned
    assert rows(log) == SAMPLE_AFTER
    assert [s.base_offset for s in log.segments] == [0, 6]
    assert (log.log_start_offset, log.log_end_offset) == (0, 7)
    assert not [n for n in fs.listdir(DIR) if n.endswith((".cleaned", ".swap"))]


def test_reads_at_removed_offsets_return_the_next_batch() -> None:
    fs, clock = new_fs()
    log = open_log(fs, clock)
    make_sample(log)
    clean_log(log, None, clock.now_ms())
    for offset, first in [(0, 3), (1, 3), (2, 3), (3, 3), (4, 4), (5, 5), (6, 6)]:
        data = log.read(offset, 1 << 20)
        assert next(iter_batches(data.records.read())).base_offset == first


def test_cleaning_twice_changes_nothing_more() -> None:
    fs, clock = new_fs()
    log = open_log(fs, clock)
    make_sample(log)
    first = clean_log(log, None, clock.now_ms())
    assert first is not None
    assert plan_cleaning(log, first.end_offset, clock.now_ms()) is None  # nothing dirty
    again = clean_log(log, first.end_offset, clock.now_ms(), force=True)
    assert again is None  # no cleanable bytes at all
    assert rows(log) == SAMPLE_AFTER


def test_tombstone_kept_until_delete_retention_then_dropped() -> None:
    fs, clock = new_fs()
    log = open_log(fs, clock, delete_retention_ms=DAY)
    make_sample(log)
    result = clean_log(log, None, clock.now_ms())
    assert result is not None
    tomb = next(b for b in all_batches(log) if b.base_offset == 4)
    assert tomb.has_delete_horizon and tomb.delete_horizon_ms == T0 + DAY
    assert [(r.offset, r.key, r.value) for r in tomb.records()] == [(4, b"k2", None)]
    checkpoint = result.end_offset

    # Another cleaning just before the horizon keeps it (and does not move the horizon).
    clock.advance(DAY - 1)
    put(log, (b"k4", b"v1"))
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    second = clean_log(log, checkpoint, clock.now_ms(), force=True)
    assert second is not None and second.applied
    tomb = next(b for b in all_batches(log) if b.base_offset == 4)
    assert tomb.delete_horizon_ms == T0 + DAY
    assert rows(log) == [(3, b"k3", b"v1"), (4, b"k2", None), (6, b"k1", b"v4"), (7, b"k4", b"v1")]

    # Once the horizon has passed, the next cleaning drops it.
    clock.advance(1)
    put(log, (b"k5", b"v1"))
    log.roll()
    log.update_high_watermark(log.log_end_offset)
    third = clean_log(log, second.end_offset, clock.now_ms(), force=True)
    assert third is not None and third.applied
    assert rows(log) == [(3, b"k3", b"v1"), (6, b"k1", b"v4"), (7, b"k4", b"v1"), (8, b"k5", b"v1")]


def test_tombstone_for_a_key_overwritten_later_goes_at_once() -> None:
    fs, clock = new_fs()
    log = open_log(fs, clock)
    put(log, (b"a", b"1"), (b"a", None), (b"a", b"2"), (b"b", None))
    log.roll()
    put(log, (b"c", b"1"))
    log.update_high_watermark(log.log_end_offset)
    clean_log(log, None, clock.now_ms())
    assert rows(log) == [(2, b"a", b"2"), (3, b"b", None), (4, b"c", b"1")]
    first = all_batches(log)[0]
    # Rebuilt in place: same offsets range, horizon set because a tombstone stayed.
    assert (first.base_offset, first.last_offset) == (0, 3)
    assert first.delete_horizon_ms == T0 + log.config.delete_retention_ms


def test_keyless_records_are_dropped_when_cleaned_and_kept_past_the_map() -> None:
    """Kafka's cleaner drops keyless records it reaches (counted as invalid); produce
    refuses them on compacted topics, so only a topic switched to compact has them."""
    fs, clock = new_fs()
    log = open_log(fs, clock)
    put(log, (None, b"x"), (b"k", b"1"))
    log.roll()
    put(log, (None, b"y"))
    log.update_high_watermark(log.log_end_offset)
    result = clean_log(log, None, clock.now_ms())
    assert result is not None and result.stats.invalid_records == 1
    assert rows(log) == [(1, b"k", b"1"), (2, None, b"y")]


def test_offset_map_full_stops_early_and_checkpoint_says_where() -> None:
    fs, clock = new_fs()
    log = open_log(fs, clock)
    put(log, (b"a", b"1"))
    put(log, (b"b", b"1"))
    put(log, (b"a", b"2"))
    put(log, (b"c", b"1"))
    put(log, (b"a", b"3"))
    log.roll()
    put(log, (b"z", b"1"))
    log.update_high_watermark(log.log_end_offset)
    result = clean_log(log, None, clock.now_ms(), offset_map_capacity=2)
    assert result is not None and result.end_offset == 3  # "c" did not fit
    # a@0 is older than a@2 (in the map); everything from offset 3 is beyond the map.
    assert rows(log) == [
        (1, b"b", b"1"),
        (2, b"a", b"2"),
        (3, b"c", b"1"),
        (4, b"a", b"3"),
        (5, b"z", b"1"),
    ]
    result = clean_log(log, result.end_offset, clock.now_ms(), force=True)
    assert result is not None and result.end_offset == 5
    assert rows(log) == [(1, b"b", b"1"), (3, b"c", b"1"), (4, b"a", b"3"), (5, b"z", b"1")]


def test_offset_map_rules() -> None:
    offsets = OffsetMap(capacity=1)
    assert offsets.put(b"a", 1) and offsets.put(b"a", 5)
    assert not offsets.put(b"b", 6)
    assert (offsets.get(b"a"), offsets.get(b"b"), len(offsets)) == (5, -1, 1)
    with pytest.raises(ValueError):
        OffsetMap(0)


def test_producer_last_batch_kept_empty_with_its_sequence() -> None:
    fs, clock = new_fs()
    log = open_log(fs, clock)
    for seq, value in enumerate([b"1", b"2"]):
        data = kv_batch([(b"k", value)], producer_id=7, producer_epoch=2, base_sequence=seq)
        log.append(data, assign_offsets=True)
    log.append(kv_batch([(b"k", b"3")], producer_id=8, producer_epoch=0, base_sequence=0),
               assign_offsets=True)  # fmt: skip
    log.roll()
    put(log, (b"x", b"1"))
    log.update_high_watermark(log.log_end_offset)
    clean_log(log, None, clock.now_ms())
    batches = all_batches(log)
    kept = [(b.base_offset, b.producer_id, b.base_sequence, b.records_count) for b in batches]
    # Producer 7's first batch went; its last one stays, emptied, with epoch and sequence.
    assert kept == [(1, 7, 1, 0), (2, 8, 0, 1), (3, -1, -1, 1)]
    assert batches[0].producer_epoch == 2 and batches[0].last_sequence == 1
    assert rows(log) == [(2, b"k", b"3"), (3, b"x", b"1")]


def test_given_producer_state_replaces_the_scan() -> None:
    fs, clock = new_fs()
    log = open_log(fs, clock)
    for seq in range(2):
        log.append(kv_batch([(b"k", bytes([seq]))], producer_id=7, producer_epoch=0,
                            base_sequence=seq), assign_offsets=True)  # fmt: skip
    put(log, (b"k", b"z"))
    log.roll()
    put(log, (b"x", b"1"))
    log.update_high_watermark(log.log_end_offset)
    clean_log(log, None, clock.now_ms(), producers={})  # producer 7 expired
    assert [b.base_offset for b in all_batches(log)] == [2, 3]


def append_txn_data(log: Log, pair: KV) -> None:
    data = kv_batch([pair], producer_id=5, producer_epoch=0, base_sequence=0, transactional=True)
    log.append(data, assign_offsets=True)


def append_abort(log: Log) -> None:
    marker = build_control_batch(
        ControlRecordType.ABORT, producer_id=5, producer_epoch=0, coordinator_epoch=1, timestamp=T0
    )
    log.append(bytearray(marker), assign_offsets=True)


def test_aborted_transaction_data_goes_and_does_not_shadow_committed_values() -> None:
    fs, clock = new_fs()
    log = open_log(fs, clock)
    put(log, (b"k", b"committed"))  # 0
    append_txn_data(log, (b"k", b"aborted"))  # 1
    append_abort(log)  # 2
    put(log, (b"j", b"1"))  # 3
    log.roll()
    segment = log.segments[0]
    segment.txn_index.append(AbortedTxn(5, 1, 2, 1))
    segment.txn_index.flush()
    put(log, (b"x", b"1"))
    log.update_high_watermark(log.log_end_offset)
    result = clean_log(log, None, clock.now_ms(), producers={})
    assert result is not None and result.applied
    assert rows(log) == [(0, b"k", b"committed"), (3, b"j", b"1"), (4, b"x", b"1")]
    # The walk still saw the aborted data, so the marker stays as it was this time.
    markers = [b for b in all_batches(log) if b.is_control]
    assert [(b.base_offset, b.delete_horizon_ms) for b in markers] == [(2, None)]
    checkpoint = result.end_offset

    def reclean_after(ms: int) -> list[tuple[int, int | None]]:
        nonlocal checkpoint
        clock.advance(ms)
        put(log, (b"y", b"1"))
        log.roll()
        log.update_high_watermark(log.log_end_offset)
        again = clean_log(log, checkpoint, clock.now_ms(), force=True, producers={})
        assert again is not None and again.applied
        checkpoint = again.end_offset
        return [(b.base_offset, b.delete_horizon_ms) for b in all_batches(log) if b.is_control]

    # Next cleaning: no data of the transaction left, so the marker gets its horizon;
    # it stays until a cleaning at or past the horizon.
    horizon = T0 + 1 + DAY
    assert reclean_after(1) == [(2, horizon)]
    assert reclean_after(DAY - 1) == [(2, horizon)]
    assert reclean_after(1) == []
    assert rows(log)[:2] == [(0, b"k", b"committed"), (3, b"j", b"1")]


def test_abort_marker_kept_while_its_data_remains_and_reindexed() -> None:
    fs, clock = new_fs()
    log = open_log(fs, clock)
    append_txn_data(log, (b"k", b"aborted"))  # 0
    append_abort(log)  # 1
    log.segments[0].txn_index.append(AbortedTxn(5, 0, 1, 0))
    log.roll()
    put(log, (b"x", b"1"))
    log.update_high_watermark(log.log_end_offset)
    # The producer's last data batch (offset 0) stays, emptied; so the marker stays too.
    clean_log(log, None, clock.now_ms())
    batches = all_batches(log)
    assert [(b.base_offset, b.records_count, b.is_control) for b in batches] == [
        (0, 0, False), (1, 1, True), (2, 1, False),
    ]  # fmt: skip
    assert log.segments[0].txn_index.all_aborted() == [AbortedTxn(5, 0, 1, 0)]


def test_empty_batch_kept_at_the_high_watermark() -> None:
    fs, clock = new_fs()
    log = open_log(fs, clock)
    put(log, (b"k", b"1"))
    put(log, (b"k", b"2"))
    put(log, (b"j", b"1"))
    log.roll()
    put(log, (b"k", b"3"))
    put(log, (b"j", b"2"))
    log.roll()
    put(log, (b"q", b"1"))
    log.update_high_watermark(4)  # the cleanable range ends at the segment base 3
    clean_log(log, None, clock.now_ms())
    assert [(b.base_offset, b.records_count) for b in all_batches(log)] == [
        (1, 1), (2, 1), (3, 1), (4, 1), (5, 1),
    ]  # fmt: skip


def test_cancelled_cleaning_leaves_no_files() -> None:
    fs, clock = new_fs()
    log = open_log(fs, clock)
    make_sample(log)
    task = plan_cleaning(log, None, clock.now_ms())
    assert task is not None
    task.cancel()
    with pytest.raises(CleaningAbortedError):
        run_cleaning(task)
    assert not [n for n in fs.listdir(DIR) if ".cleaned" in n]
    assert rows(log) == SAMPLE_BEFORE


def test_cleaning_in_a_worker_thread_while_the_log_appends() -> None:
    fs, clock = new_fs()
    log = open_log(fs, clock)
    make_sample(log)
    task = plan_cleaning(log, None, clock.now_ms())
    assert task is not None
    done: list[object] = []
    worker = threading.Thread(target=lambda: done.append(run_cleaning(task)))
    worker.start()
    for i in range(50):
        put(log, (b"k9", bytes([i])))
    worker.join()
    assert apply_cleaning(done[0]) == 6  # type: ignore[arg-type]
    assert rows(log)[:4] == SAMPLE_AFTER
    assert len(rows(log)) == 4 + 50


def test_checkpoint_file_round_trip() -> None:
    fs, clock = new_fs()
    log = open_log(fs, clock)
    make_sample(log)
    checkpoints = CleanerCheckpoint(fs, "/data")
    assert checkpoints.get(("t", 0)) is None
    result = clean_log(log, checkpoints.get(("t", 0)), clock.now_ms())
    assert result is not None
    checkpoints.update(("t", 0), result.end_offset)
    checkpoints.update(("u", 1), 9)
    assert checkpoints.read() == {("t", 0): 6, ("u", 1): 9}
    checkpoints.remove(("u", 1))
    assert fs.exists("/data/cleaner-offset-checkpoint")
    assert CleanerCheckpoint(fs, "/data").read() == {("t", 0): 6}


def test_groups_fit_one_segment_and_each_keeps_its_last_batch() -> None:
    fs, clock = new_fs()
    log = open_log(fs, clock, segment_bytes=300)
    make_sample(log)
    result = clean_log(log, None, clock.now_ms())
    assert result is not None and result.applied
    assert [g.base_offset for g in result.groups] == [0, 3]
    assert [s.base_offset for s in log.segments] == [0, 3, 6]
    assert rows(log) == SAMPLE_AFTER
    # Group [0, 3) lost every record; its last batch stays, emptied, so the cleaned
    # segment still ends where the old one did (offset 2, next segment at 3).
    kept = [(b.base_offset, b.records_count) for b in all_batches(log)]
    assert kept == [(2, 0), (3, 1), (4, 1), (5, 1), (6, 1)]
    assert log.segments[0].read_next_offset() == 3

"""Producer state: Kafka 4's idempotence rules on real batches, snapshots and restarts."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from millpond.storage.clock import ManualClock
from millpond.storage.config import LogConfig
from millpond.storage.fs import MemFileSystem
from millpond.storage.log import Log
from millpond.storage.log_types import LogAppendInfo
from millpond.storage.producer_snapshots import (
    list_snapshots,
    read_snapshot,
    snapshot_path,
    write_snapshot,
)
from millpond.storage.producer_state import (
    AppendCheck,
    AppendOrigin,
    BatchMetadata,
    CompletedTxn,
    ProducerStateEntry,
    ProducerStateManager,
)
from millpond.storage.producer_state_entry import INT32_MAX, decrement_sequence, increment_sequence
from millpond.wire.errors import ErrorCode
from millpond.wire.records import (
    ControlRecordType,
    NewRecord,
    RecordBatch,
    build_batch,
    build_control_batch,
    iter_batches,
)

T0 = 1_700_000_000_000
DIR = "/data/orders-0"
PID = 4000
DAY = 86_400_000


def data(
    pid: int = PID,
    epoch: int = 0,
    seq: int = 0,
    n: int = 1,
    *,
    ts: int = T0,
    txn: bool = False,
) -> bytes:
    records = [NewRecord(value=b"v%d" % i, timestamp=ts + i) for i in range(n)]
    return build_batch(
        records,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        is_transactional=txn,
    )


def plain(n: int = 1) -> bytes:
    return build_batch([NewRecord(value=b"x", timestamp=T0) for _ in range(n)])


def marker(
    kind: ControlRecordType, pid: int = PID, epoch: int = 0, coordinator_epoch: int = 0
) -> bytes:
    return build_control_batch(
        kind, producer_id=pid, producer_epoch=epoch, coordinator_epoch=coordinator_epoch,
        timestamp=T0 + 100,
    )  # fmt: skip


def views(*bufs: bytes) -> list[RecordBatch]:
    return list(iter_batches(b"".join(bufs)))


class Partition:
    """A manager with a stand-in log: offsets are assigned as the leader assigns them."""

    def __init__(self, clock: ManualClock | None = None) -> None:
        self.clock = clock or ManualClock(T0)
        self.state = ProducerStateManager("orders-0", DAY, self.clock)
        self.next_offset = 0
        self.log: list[bytes] = []

    def produce(
        self, *bufs: bytes, origin: AppendOrigin = AppendOrigin.CLIENT, append_time: int = -1
    ) -> AppendCheck:
        check = self.state.check_and_prepare(views(*bufs), origin)
        if check.ok:
            self.commit(check, *bufs, append_time=append_time)
        return check

    def commit(self, check: AppendCheck, *bufs: bytes, append_time: int = -1) -> None:
        stamped = bytearray(b"".join(bufs))
        batches = list(iter_batches(stamped))
        first = self.next_offset
        for b in batches:
            b.set_base_offset(self.next_offset)
            self.next_offset = b.last_offset + 1
        self.log.append(bytes(stamped))
        count = sum(b.records_count for b in batches)
        info = LogAppendInfo(
            first, self.next_offset - 1, -1, -1, append_time, 0, len(batches), count, len(stamped)
        )
        self.completed = self.state.commit(check, info)

    def entry(self, pid: int = PID) -> ProducerStateEntry:
        e = self.state.last_entry(pid)
        assert e is not None
        return e


def ok(check: AppendCheck) -> None:
    assert check.error == ErrorCode.NONE, check.message
    assert check.duplicate is None


# -- sequences ----------------------------------------------------------------------------


def test_first_batch_and_continuation_are_accepted() -> None:
    p = Partition()
    ok(p.produce(data(seq=0, n=3)))
    ok(p.produce(data(seq=3, n=2)))
    e = p.entry()
    assert (e.producer_epoch, e.first_seq, e.last_seq) == (0, 0, 4)
    assert (e.first_data_offset, e.last_data_offset, e.last_offset_delta) == (0, 4, 1)
    assert e.last_timestamp == T0 + 1
    assert p.state.map_end_offset == 5


def test_sequence_gap_is_out_of_order_and_changes_nothing() -> None:
    p = Partition()
    ok(p.produce(data(seq=0, n=2)))
    before = p.entry().copy()
    check = p.produce(data(seq=3))
    assert check.error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert int(check.error) == 45
    assert "3 (incoming seq. number), 1 (current end sequence number)" in check.message
    assert p.entry() == before
    assert p.state.map_end_offset == 2


def test_a_sequence_behind_the_last_is_out_of_order_unless_a_duplicate() -> None:
    p = Partition()
    ok(p.produce(data(seq=0, n=4)))
    # overlaps the written batch but is not the same range: not a duplicate
    assert p.produce(data(seq=2, n=2)).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_retry_of_each_of_the_last_five_batches_is_a_duplicate_with_its_offsets() -> None:
    p = Partition()
    for i in range(7):
        ok(p.produce(data(seq=2 * i, n=2, ts=T0 + 10 * i)))
    end = p.state.map_end_offset
    for i in range(2, 7):  # the last five: batches 2..6
        check = p.produce(data(seq=2 * i, n=2, ts=T0 + 10 * i))
        assert check.error == ErrorCode.NONE
        assert check.duplicate == BatchMetadata(2 * i + 1, 2 * i + 1, 1, T0 + 10 * i + 1)
        assert check.duplicate.first_offset == 2 * i
        assert check.duplicate.first_seq == 2 * i
        assert not check.ok
    assert p.state.map_end_offset == end  # nothing appended
    # the 6th-most-recent batch has dropped out: Kafka says OUT_OF_ORDER, not NONE
    for i in (0, 1):
        assert p.produce(data(seq=2 * i, n=2)).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_duplicate_in_a_newer_epoch_is_not_matched_against_the_older_one() -> None:
    p = Partition()
    ok(p.produce(data(epoch=0, seq=0)))
    ok(p.produce(data(epoch=1, seq=0)))
    # same sequence range as the epoch-0 batch, but that epoch is fenced now
    assert p.produce(data(epoch=0, seq=0)).error == ErrorCode.INVALID_PRODUCER_EPOCH
    dup = p.produce(data(epoch=1, seq=0))
    assert dup.duplicate is not None and dup.duplicate.first_offset == 1


def test_sequence_wraps_at_int32_max() -> None:
    p = Partition()
    ok(p.produce(data(seq=INT32_MAX - 1, n=2)))  # unknown producer: any start
    assert p.entry().last_seq == INT32_MAX
    ok(p.produce(data(seq=0, n=1)))
    ok(p.produce(data(seq=1)))
    p2 = Partition()
    ok(p2.produce(data(seq=INT32_MAX - 1, n=3)))  # 2147483646, 2147483647, 0
    assert p2.entry().last_seq == 0
    assert p2.entry().first_seq == INT32_MAX - 1
    ok(p2.produce(data(seq=1)))
    dup = p2.produce(data(seq=INT32_MAX - 1, n=3))
    assert dup.duplicate is not None and dup.duplicate.first_offset == 0
    assert p2.produce(data(seq=0)).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_sequence_arithmetic_matches_kafka() -> None:
    assert increment_sequence(INT32_MAX, 1) == 0
    assert increment_sequence(INT32_MAX - 1, 3) == 1
    assert decrement_sequence(0, 1) == INT32_MAX
    assert decrement_sequence(1, 3) == INT32_MAX - 1
    assert decrement_sequence(-1, 0) == INT32_MAX  # Kafka's quirk for "no sequence"
    assert decrement_sequence(5, 2) == 3


# -- epochs ------------------------------------------------------------------------------


def test_older_epoch_is_invalid_producer_epoch() -> None:
    p = Partition()
    ok(p.produce(data(epoch=3, seq=0)))
    check = p.produce(data(epoch=2, seq=1))
    assert check.error == ErrorCode.INVALID_PRODUCER_EPOCH
    assert int(check.error) == 47
    assert "is 2, which is < the last seen epoch 3" in check.message


def test_newer_epoch_must_start_at_sequence_zero() -> None:
    p = Partition()
    ok(p.produce(data(epoch=0, seq=0, n=3)))
    check = p.produce(data(epoch=1, seq=3))
    assert check.error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert "new epoch" in check.message
    ok(p.produce(data(epoch=1, seq=0)))  # KIP-360: a local epoch bump restarts at 0
    e = p.entry()
    assert (e.producer_epoch, len(e.batches), e.last_seq) == (1, 1, 0)


def test_unknown_producer_is_accepted_at_any_sequence() -> None:
    # Kafka 4 never answers UNKNOWN_PRODUCER_ID (59) on produce: a producer this
    # partition has no state for (new, expired, or its writes deleted) may start anywhere.
    p = Partition()
    check = p.produce(data(pid=77, epoch=5, seq=1234))
    assert check.error == ErrorCode.NONE
    ok(p.produce(data(pid=77, epoch=5, seq=1235)))


def test_producers_are_independent() -> None:
    p = Partition()
    ok(p.produce(data(pid=1, seq=0)))
    ok(p.produce(data(pid=2, seq=0)))
    ok(p.produce(data(pid=1, seq=1)))
    assert p.produce(data(pid=2, seq=2)).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert p.state.last_entry(3) is None


# -- one request, several batches ---------------------------------------------------------


def test_batches_in_one_request_are_checked_against_each_other() -> None:
    p = Partition()
    ok(p.produce(data(seq=0, n=2), data(seq=2, n=3), data(pid=9, seq=0)))
    assert p.entry().last_seq == 4
    assert [b.first_offset for b in p.entry().batches] == [0, 2]
    assert p.entry(9).last_data_offset == 5
    before = p.entry().copy()
    check = p.produce(data(seq=5), data(seq=7))
    assert check.error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert p.entry() == before  # the whole request is refused


def test_new_epoch_within_one_request() -> None:
    p = Partition()
    ok(p.produce(data(epoch=0, seq=0)))
    ok(p.produce(data(epoch=1, seq=0), data(epoch=1, seq=1)))
    assert (p.entry().producer_epoch, p.entry().last_seq) == (1, 1)


def test_non_idempotent_batches_only_advance_the_map_end() -> None:
    p = Partition()
    ok(p.produce(plain(3)))
    assert p.state.is_empty
    assert p.state.map_end_offset == 3


# -- validator rules -----------------------------------------------------------------------


def test_client_control_batch_is_invalid_record() -> None:
    p = Partition()
    check = p.produce(marker(ControlRecordType.COMMIT))
    assert check.error == ErrorCode.INVALID_RECORD
    assert int(check.error) == 87


def test_idempotent_batch_without_sequence_is_invalid_record() -> None:
    p = Partition()
    assert p.produce(data(seq=-1)).error == ErrorCode.INVALID_RECORD


# -- the check / commit split ------------------------------------------------------------


def test_a_failed_append_leaves_the_state_unchanged_for_the_retry() -> None:
    p = Partition()
    ok(p.produce(data(seq=0)))
    check = p.state.check_and_prepare(views(data(seq=1)))
    assert check.ok
    # the log append failed: commit is never called; the retry is judged afresh
    retry = p.state.check_and_prepare(views(data(seq=1)))
    assert retry.ok and retry.duplicate is None
    p.commit(retry, data(seq=1))
    assert p.entry().last_seq == 1


def test_a_stale_check_cannot_be_committed() -> None:
    p = Partition()
    first = p.state.check_and_prepare(views(data(seq=0)))
    second = p.state.check_and_prepare(views(data(seq=0)))
    p.commit(first, data(seq=0))
    with pytest.raises(ValueError, match="changed"):
        p.commit(second, data(seq=0))
    bad = p.state.check_and_prepare(views(data(seq=5)))
    with pytest.raises(ValueError, match="clean"):
        p.commit(bad, data(seq=5))


def test_log_append_time_is_what_a_duplicate_reports() -> None:
    p = Partition()
    ok(p.produce(data(seq=0), append_time=T0 + 999))
    dup = p.produce(data(seq=0))
    assert dup.duplicate is not None and dup.duplicate.timestamp == T0 + 999


# -- transactions (the parts the state owns) -----------------------------------------------


def test_transaction_open_and_commit_marker() -> None:
    p = Partition()
    ok(p.produce(plain(2)))
    ok(p.produce(data(seq=0, n=2, txn=True)))
    assert p.entry().current_txn_first_offset == 2
    assert p.state.first_undecided_offset() == 2
    ok(p.produce(data(seq=2, txn=True)))
    check = p.produce(data(seq=3))
    assert check.error == ErrorCode.INVALID_TXN_STATE
    assert int(check.error) == 48
    ok(
        p.produce(
            marker(ControlRecordType.COMMIT, coordinator_epoch=4), origin=AppendOrigin.COORDINATOR
        )
    )
    assert p.completed == [CompletedTxn(PID, 2, 5, False)]
    assert p.entry().current_txn_first_offset is None
    assert p.entry().coordinator_epoch == 4
    assert p.state.first_undecided_offset() is None
    ok(p.produce(data(seq=3)))  # sequences go on after the transaction


def test_marker_from_an_older_coordinator_or_epoch_is_fenced() -> None:
    p = Partition()
    ok(p.produce(data(epoch=2, seq=0, txn=True)))
    coord = AppendOrigin.COORDINATOR
    ok(p.produce(marker(ControlRecordType.ABORT, epoch=2, coordinator_epoch=5), origin=coord))
    stale = p.produce(marker(ControlRecordType.ABORT, epoch=2, coordinator_epoch=4), origin=coord)
    assert stale.error == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    assert int(stale.error) == 52
    old = p.produce(marker(ControlRecordType.ABORT, epoch=1, coordinator_epoch=5), origin=coord)
    assert old.error == ErrorCode.INVALID_PRODUCER_EPOCH


def test_tv2_marker_needs_a_newer_epoch_unless_a_retry() -> None:
    p = Partition()
    ok(p.produce(data(epoch=2, seq=0, txn=True)))
    same = p.state.check_and_prepare(views(marker(ControlRecordType.COMMIT, epoch=2)),
                                     AppendOrigin.COORDINATOR, transaction_version=2)  # fmt: skip
    assert same.error == ErrorCode.INVALID_PRODUCER_EPOCH
    bumped = p.state.check_and_prepare(views(marker(ControlRecordType.COMMIT, epoch=3)),
                                       AppendOrigin.COORDINATOR, transaction_version=2)  # fmt: skip
    assert bumped.ok
    p.commit(bumped, marker(ControlRecordType.COMMIT, epoch=3))
    retry = p.state.check_and_prepare(views(marker(ControlRecordType.COMMIT, epoch=3)),
                                      AppendOrigin.COORDINATOR, transaction_version=2)  # fmt: skip
    assert retry.ok  # KAFKA-19999: the transaction is over, a retried marker is written


# -- expiry -------------------------------------------------------------------------------


def test_idle_producers_expire_but_not_with_an_open_transaction() -> None:
    p = Partition()
    ok(p.produce(data(pid=1, seq=0)))
    ok(p.produce(data(pid=2, seq=0, txn=True)))
    p.clock.advance(DAY - 1)
    assert p.state.remove_expired_producers() == []
    p.clock.advance(1)
    assert p.state.remove_expired_producers() == [1]
    assert p.state.last_entry(2) is not None
    # an expired producer is unknown again: any sequence is accepted
    ok(p.produce(data(pid=1, seq=50)))


# -- snapshots ----------------------------------------------------------------------------


def fs_with_dir() -> MemFileSystem:
    fs = MemFileSystem()
    fs.makedirs(DIR)
    return fs


def test_snapshot_round_trip_keeps_the_last_batch_of_each_producer() -> None:
    fs = fs_with_dir()
    p = Partition()
    ok(p.produce(data(pid=1, seq=0, n=2)))
    ok(p.produce(data(pid=1, seq=2, n=3)))
    ok(p.produce(data(pid=2, epoch=7, seq=0, txn=True)))
    path = p.state.take_snapshot(fs, DIR)
    assert path == snapshot_path(DIR, 6)
    entries = read_snapshot(fs, path)
    assert [(e.producer_id, e.epoch, e.last_sequence, e.last_offset, e.offset_delta)
            for e in entries] == [(1, 0, 4, 4, 2), (2, 7, 0, 5, 0)]  # fmt: skip
    assert entries[1].current_txn_first_offset == 5
    assert entries[0].current_txn_first_offset == -1
    assert p.state.take_snapshot(fs, DIR) is None  # nothing new since

    q = ProducerStateManager("orders-0", DAY, p.clock)
    assert q.load(fs, DIR, 0, 6) == 6
    one = q.last_entry(1)
    assert one is not None
    assert list(one.batches) == [BatchMetadata(4, 4, 2, T0 + 2)]
    assert q.last_entry(2) == p.entry(2)
    assert q.first_undecided_offset() == 5


def test_snapshot_of_a_producer_without_batches() -> None:
    fs = fs_with_dir()
    p = Partition()
    ok(p.produce(data(epoch=1, seq=0, txn=True)))
    ok(p.produce(marker(ControlRecordType.ABORT, epoch=2), origin=AppendOrigin.COORDINATOR))
    assert p.entry().is_empty  # the marker's newer epoch cleared the batches
    p.state.take_snapshot(fs, DIR)
    (e,) = read_snapshot(fs, snapshot_path(DIR, 2))
    assert (e.epoch, e.last_sequence, e.last_offset, e.offset_delta) == (2, -1, -1, 0)
    q = ProducerStateManager("orders-0", DAY, p.clock)
    q.load(fs, DIR, 0, 2)
    assert q.last_entry(PID) == p.entry()


def test_snapshot_at_a_roll_moves_the_map_end() -> None:
    fs = fs_with_dir()
    p = Partition()
    ok(p.produce(data(seq=0)))
    assert p.state.take_snapshot(fs, DIR, 1) == snapshot_path(DIR, 1)
    with pytest.raises(ValueError, match="below"):
        p.state.take_snapshot(fs, DIR, 0)
    assert p.state.snapshot_offsets == [1]


def test_load_without_snapshot_replays_from_the_log_start() -> None:
    fs = fs_with_dir()
    q = ProducerStateManager("orders-0", DAY, ManualClock(T0))
    assert q.load(fs, DIR, 10, 20) == 10
    assert q.is_empty and q.map_end_offset == 10


def test_load_falls_back_past_a_corrupt_snapshot_and_deletes_it() -> None:
    fs = fs_with_dir()
    p = Partition()
    ok(p.produce(data(seq=0)))
    p.state.take_snapshot(fs, DIR)
    ok(p.produce(data(seq=1)))
    path = p.state.take_snapshot(fs, DIR)
    assert path is not None
    handle = fs.open(path)
    handle.truncate(handle.size() - 3)
    handle.close()
    q = ProducerStateManager("orders-0", DAY, p.clock)
    assert q.load(fs, DIR, 0, 2) == 1
    assert list_snapshots(fs, DIR) == [1]
    loaded = q.last_entry(PID)
    assert loaded is not None and loaded.last_seq == 0


def test_load_drops_snapshots_past_the_log_end_or_at_the_log_start() -> None:
    fs = fs_with_dir()
    for offset in (5, 10, 20):
        write_snapshot(fs, DIR, offset, [])
    q = ProducerStateManager("orders-0", DAY, ManualClock(T0))
    assert q.load(fs, DIR, 5, 15) == 10
    assert list_snapshots(fs, DIR) == [10]


def test_load_skips_expired_producers() -> None:
    fs = fs_with_dir()
    p = Partition()
    ok(p.produce(data(pid=1, seq=0, ts=T0 - DAY)))
    ok(p.produce(data(pid=2, seq=0)))
    p.state.take_snapshot(fs, DIR)
    q = ProducerStateManager("orders-0", DAY, p.clock)
    q.load(fs, DIR, 0, 2)
    assert sorted(q.active_producers) == [2]


def test_truncate_and_reload_after_log_truncation() -> None:
    fs = fs_with_dir()
    p = Partition()
    ok(p.produce(data(seq=0)))
    p.state.take_snapshot(fs, DIR)  # at 1
    ok(p.produce(data(seq=1)))
    ok(p.produce(data(seq=2)))
    p.state.take_snapshot(fs, DIR)  # at 3
    # the log is truncated to 2: the snapshot at 3 goes, the state reloads from 1
    assert p.state.truncate_and_reload(fs, DIR, 0, 2) == 1
    assert list_snapshots(fs, DIR) == [1]
    assert p.entry().last_seq == 0
    for b in iter_batches(p.log[1]):
        p.state.replay_batch(b)
    assert p.entry().last_seq == 1 and p.state.map_end_offset == 2
    # the truncated-away batch is judged afresh: the producer resends seq 2
    check = p.state.check_and_prepare(views(data(seq=2)))
    assert check.ok


def test_truncate_fully_forgets_everything() -> None:
    fs = fs_with_dir()
    p = Partition()
    ok(p.produce(data(seq=0)))
    p.state.take_snapshot(fs, DIR)
    p.state.truncate_fully_and_start_at(fs, DIR, 100)
    assert p.state.is_empty and p.state.map_end_offset == 100
    assert list_snapshots(fs, DIR) == []


def test_delete_snapshots_before_and_log_start_moves() -> None:
    fs = fs_with_dir()
    p = Partition()
    for i in range(3):
        ok(p.produce(data(seq=i)))
        p.state.take_snapshot(fs, DIR)
    p.state.delete_snapshots_before(fs, DIR, 3)
    assert list_snapshots(fs, DIR) == [3] == p.state.snapshot_offsets
    p.state.on_log_start_offset_incremented(2)
    assert p.entry().last_seq == 2  # in-memory state is kept


# -- restart with the real log ------------------------------------------------------------


def test_restart_rebuilds_from_snapshot_and_replay_and_dedupes_retries() -> None:
    fs = fs_with_dir()
    clock = ManualClock(T0)
    log = Log(fs, DIR, LogConfig(), clock, rng=random.Random(1))
    state = ProducerStateManager("orders-0", DAY, clock)

    def produce(buf: bytes) -> AppendCheck:
        check = state.check_and_prepare(views(buf))
        if check.ok:
            state.commit(check, log.append(bytearray(buf), assign_offsets=True))
        return check

    for i in range(4):
        ok(produce(data(seq=2 * i, n=2)))
    log.roll()  # Kafka snapshots at every roll, at the new segment's base offset
    state.take_snapshot(fs, DIR, log.log_end_offset)
    for i in range(4, 6):
        ok(produce(data(seq=2 * i, n=2)))
    ok(produce(plain()))
    # crash: no snapshot at the log end; the batches after offset 8 are replayed
    log.close()
    log = Log(fs, DIR, LogConfig(), clock, rng=random.Random(1))
    state = ProducerStateManager("orders-0", DAY, clock)
    start = state.load(fs, DIR, log.log_start_offset, log.log_end_offset)
    assert start == 8
    region = log.read(start, 1 << 30).records
    for b in iter_batches(region.read()):
        state.replay_batch(b)
    assert state.map_end_offset == log.log_end_offset == 13
    # retries of the replayed batches and of the snapshot's batch are duplicates
    for seq, first_offset in ((10, 10), (8, 8), (6, 6)):
        check = produce(data(seq=seq, n=2))
        assert check.duplicate is not None and check.duplicate.first_offset == first_offset
    # older ones were only in memory before the restart: out of order, as in Kafka
    assert produce(data(seq=4, n=2)).error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    ok(produce(data(seq=12)))
    assert state.take_snapshot(fs, DIR, log.log_end_offset) == snapshot_path(DIR, 14)


# -- property: random appends, retries, gaps, failures and restarts against a model ---------


@dataclass
class ModelProducer:
    epoch: int = 0
    next_seq: int = 0
    #: (first_seq, last_seq, first_offset, last_offset) of this epoch's batches
    batches: list[tuple[int, int, int, int]] = field(default_factory=list)
    #: every batch of this epoch, for picking retries (older ones than the 5 included)
    history: list[tuple[int, int, int, int]] = field(default_factory=list)


op_strategy = st.tuples(
    st.sampled_from(["next"] * 4 + ["retry"] * 3 + ["gap", "bump", "old", "fail", "restart"]),
    st.integers(1, 2),  # producer id
    st.integers(1, 3),  # records
    st.integers(0, 7),  # which batch to retry
    st.booleans(),  # snapshot before the restart
)


SIXTH_OLDEST = [("next", 1, 1, 0, False)] * 7 + [("retry", 1, 1, 5, False)]


@settings(max_examples=200, deadline=None)
@example(SIXTH_OLDEST)
@given(st.lists(op_strategy, min_size=5, max_size=80))
def test_random_interleavings_match_the_model(ops: list[tuple[str, int, int, int, bool]]) -> None:
    run_against_model(ops, event)


def run_against_model(
    ops: list[tuple[str, int, int, int, bool]], note: Callable[[str], object]
) -> None:
    """Play ``ops`` on a partition and on a model of Kafka's rules; they must agree."""
    fs = fs_with_dir()
    p = Partition()
    model: dict[int, ModelProducer] = {}
    #: what survives a restart: per producer, batches restored from snapshot + replay
    snap_at = 0

    for action, pid, n, k, snap in ops:
        m = model.get(pid)
        if action == "restart":
            if snap:
                p.state.take_snapshot(fs, DIR, p.next_offset)
                snap_at = p.next_offset
            state = ProducerStateManager("orders-0", DAY, p.clock)
            start = state.load(fs, DIR, 0, p.next_offset)
            assert start == snap_at
            for buf in p.log:
                for b in iter_batches(buf):
                    if b.base_offset >= start:
                        state.replay_batch(b)
            p.state = state
            note("restart")
            for mp in model.values():
                before = [b for b in mp.batches if b[2] < snap_at][-1:]
                mp.batches = before + [b for b in mp.batches if b[2] >= snap_at]
            continue
        if m is None:
            m = ModelProducer()
            if action == "old":
                action = "next"  # epoch -1 batches of an unknown producer: Kafka takes any
        epoch, seq = m.epoch, m.next_seq
        if action == "retry" and m.history:
            first, last, _, _ = m.history[-1 - k % len(m.history)]
            seq, n = first, last - first + 1
        elif action == "gap":
            seq += 1
        elif action == "bump":
            epoch, seq = m.epoch + 1, 0
        elif action == "old":
            epoch = m.epoch - 1
        buf = data(pid=pid, epoch=epoch, seq=seq, n=n)
        check = p.state.check_and_prepare(views(buf))

        known = pid in model
        retained = m.batches[-5:]
        dup = (
            [b for b in retained if (b[0], b[1]) == (seq, seq + n - 1)] if epoch == m.epoch else []
        )
        if known and dup:
            note("duplicate")
            assert check.duplicate is not None and check.duplicate.first_offset == dup[0][2]
            continue
        if known and epoch < m.epoch:
            note("fenced epoch")
            assert check.error == ErrorCode.INVALID_PRODUCER_EPOCH
            continue
        expected_ok = not known or (seq == 0 if epoch > m.epoch else seq == m.next_seq)
        if not expected_ok:
            note("out of order")
            assert check.error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, (action, check)
            continue
        assert check.ok, (action, check)
        if action == "fail":
            continue  # the append failed: nothing changes, in the model either
        first_offset = p.next_offset
        p.commit(check, buf)
        if epoch != m.epoch:
            m.batches, m.history = [], []
        m.epoch, m.next_seq = epoch, seq + n
        m.batches.append((seq, seq + n - 1, first_offset, first_offset + n - 1))
        m.history.append(m.batches[-1])
        m.batches = m.batches[-5:]
        model[pid] = m

    for pid, mp in model.items():
        entry = p.state.last_entry(pid)
        assert entry is not None
        assert entry.producer_epoch == mp.epoch
        assert [
            (b.first_seq, b.last_seq, b.first_offset, b.last_offset) for b in entry.batches
        ] == (mp.batches[-5:])


def test_replay_rebuilds_transactions_and_markers() -> None:
    p = Partition()
    ok(p.produce(data(seq=0, txn=True)))
    ok(
        p.produce(
            marker(ControlRecordType.ABORT, coordinator_epoch=3), origin=AppendOrigin.COORDINATOR
        )
    )
    ok(p.produce(data(seq=1, txn=True)))
    q = ProducerStateManager("orders-0", DAY, p.clock)
    completed = [q.replay_batch(b) for buf in p.log for b in iter_batches(buf)]
    assert completed == [None, CompletedTxn(PID, 0, 1, True), None]
    assert q.last_entry(PID) == p.entry()
    assert q.first_undecided_offset() == p.state.first_undecided_offset() == 2
    assert q.map_end_offset == 3

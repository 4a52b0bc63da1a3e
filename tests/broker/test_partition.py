"""Partition without sockets: the high watermark rule, registrations and epochs, and the
effective min.insync.replicas, on a log in memory."""

from __future__ import annotations

import pytest

from millpond.broker.partition import ACKS_ALL, Partition
from millpond.controller.image import PartitionRegistration
from millpond.storage.clock import ManualClock
from millpond.storage.config import LogConfig
from millpond.storage.fs import MemFileSystem, join
from millpond.storage.leader_epochs import LeaderEpochCache
from millpond.storage.log import Log
from millpond.storage.producer_state import ProducerStateManager
from millpond.wire.errors import ErrorCode
from millpond.wire.records import NewRecord, build_batch


def follow(p: Partition, replica: int, offset: int) -> bool:
    """A follower's fetch at ``offset``, its log end (True: the high watermark moved)."""
    return p.record_follower_fetch(replica, offset, 0, 0, p.log_end_offset, -1)


LEADER = 1
DIR = "/data/t-0"


def registration(
    replicas: tuple[int, ...] = (LEADER,), isr: tuple[int, ...] | None = None, epoch: int = 0
) -> PartitionRegistration:
    return PartitionRegistration(
        replicas=replicas, isr=replicas if isr is None else isr, leader=LEADER,
        leader_epoch=epoch, partition_epoch=0,
    )  # fmt: skip


def partition(reg: PartitionRegistration | None = None) -> Partition:
    fs = MemFileSystem()
    fs.makedirs(DIR)
    clock = ManualClock()
    epochs = LeaderEpochCache(fs, join(DIR, "leader-epoch-checkpoint"))
    log = Log(fs, DIR, LogConfig(), clock, leader_epochs=epochs)
    made = Partition("t", 0, b"\x01" * 16, log, ProducerStateManager("t-0", clock=clock), LEADER)
    made.update_registration(reg or registration())
    return made


def append(p: Partition, records: int) -> int:
    """Append as the leader does (offsets stamped); returns the new log end."""
    data = bytearray(build_batch([NewRecord(value=b"v") for _ in range(records)]))
    p.log.append(data, assign_offsets=True, leader_epoch=p.leader_epoch)
    return p.log_end_offset


def test_a_lone_leader_is_its_isr_and_the_watermark_follows_its_appends() -> None:
    p = partition()
    end = append(p, 3)
    assert p.high_watermark == 0  # nothing moves it but the rule
    assert p.maybe_advance_high_watermark()
    assert p.high_watermark == p.last_stable_offset == end == 3
    assert not p.maybe_advance_high_watermark()  # already there


def test_the_watermark_is_the_smallest_end_offset_in_the_isr() -> None:
    p = partition(registration(replicas=(1, 2, 3), isr=(1, 2)))
    append(p, 10)
    assert not p.maybe_advance_high_watermark()  # follower 2 has reported nothing
    assert follow(p, 2, 4)
    assert p.high_watermark == 4
    # Replica 3 is out of the ISR: however far behind, it holds nothing back.
    assert follow(p, 2, 10)
    assert p.high_watermark == 10
    assert p.replica_end_offset(3) == -1
    # Never backwards (a follower that truncated, say), and strangers are ignored.
    assert not follow(p, 2, 2)
    assert p.high_watermark == 10
    assert not follow(p, 9, 100)
    assert p.replica_end_offset(9) == -1


def test_an_isr_shrinking_to_caught_up_members_lets_the_watermark_advance() -> None:
    p = partition(registration(replicas=(1, 2, 3)))
    append(p, 5)
    follow(p, 2, 5)
    assert p.high_watermark == 0  # 3 has not caught up
    assert p.update_registration(registration(replicas=(1, 2, 3), isr=(1, 2), epoch=1))
    assert p.high_watermark == 5
    assert p.leader_epoch == 1
    assert p.isr == {1, 2}


def test_the_registration_sets_the_leader_epoch_stamped_into_appends() -> None:
    p = partition(registration(epoch=7))
    append(p, 1)
    assert p.leader_epoch == 7
    assert p.end_offset_for_epoch(7) == (7, 1)
    p.update_registration(registration(epoch=8))
    append(p, 2)
    assert p.end_offset_for_epoch(7) == (7, 1)
    assert p.end_offset_for_epoch(8) == (8, 3)


def test_min_isr_is_capped_at_the_replica_count() -> None:
    single = partition()
    assert single.effective_min_isr(2) == 1
    assert single.check_enough_replicas(ACKS_ALL, 2) == ErrorCode.NONE
    three = partition(registration(replicas=(1, 2, 3), isr=(1,)))
    assert three.effective_min_isr(2) == 2
    assert three.effective_min_isr(5) == 3
    assert three.check_enough_replicas(ACKS_ALL, 2) == ErrorCode.NOT_ENOUGH_REPLICAS
    assert three.check_enough_replicas(1, 2) == ErrorCode.NONE  # only acks=all asks
    assert three.check_enough_replicas(ACKS_ALL, 1) == ErrorCode.NONE


def test_acks_all_is_reached_when_the_watermark_covers_the_append() -> None:
    p = partition(registration(replicas=(1, 2)))
    end = append(p, 4)
    assert p.acks_all_reached(end, 2) == (False, ErrorCode.NONE)
    follow(p, 2, end)
    assert p.acks_all_reached(end, 2) == (True, ErrorCode.NONE)


def test_an_isr_that_shrank_while_waiting_answers_after_append() -> None:
    p = partition(registration(replicas=(1, 2)))
    end = append(p, 4)
    p.update_registration(registration(replicas=(1, 2), isr=(1,), epoch=0))
    assert p.high_watermark == end  # the ISR is {1} now: committed
    assert p.acks_all_reached(end, 2) == (True, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
    assert p.acks_all_reached(end, 1) == (True, ErrorCode.NONE)


@pytest.mark.parametrize("committed", [False, True])
def test_reads_stop_at_the_watermark(committed: bool) -> None:
    p = partition(registration(replicas=(1, 2)))
    append(p, 2)
    follow(p, 2, 2)
    append(p, 3)
    fetched = p.read(0, 1 << 20, committed=committed, min_one_message=True)
    assert fetched.records is not None
    # Only the first batch (offsets 0-1) is below the high watermark.
    assert fetched.records.size == p.log.read(0, 1 << 20, max_offset=2).records.size
    assert fetched.records.size < p.log.read(0, 1 << 20).records.size

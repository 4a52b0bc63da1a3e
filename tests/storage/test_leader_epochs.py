from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from millpond.storage.checkpoints import read_leader_epoch_checkpoint
from millpond.storage.fs import MemFileSystem, join
from millpond.storage.leader_epochs import (
    UNDEFINED_EPOCH,
    UNDEFINED_EPOCH_OFFSET,
    EpochEntry,
    LeaderEpochCache,
)

DIR = "/data/orders-0"
PATH = join(DIR, "leader-epoch-checkpoint")
UNDEFINED = (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)


def cache(*entries: tuple[int, int]) -> tuple[MemFileSystem, LeaderEpochCache]:
    fs = MemFileSystem()
    fs.makedirs(DIR)
    c = LeaderEpochCache(fs, PATH)
    for epoch, offset in entries:
        c.assign(epoch, offset)
    return fs, c


def file_bytes(fs: MemFileSystem) -> bytes:
    handle = fs.open(PATH)
    return handle.read_at(0, handle.size())


def test_new_cache_is_empty_and_writes_nothing() -> None:
    fs, c = cache()
    assert c.entries() == [] and c.latest_epoch is None and c.latest_entry is None
    assert not fs.exists(PATH)


def test_assign_persists_in_kafkas_format() -> None:
    fs, c = cache((0, 0), (2, 6), (5, 12))
    assert file_bytes(fs) == b"0\n3\n0 0\n2 6\n5 12\n"
    assert LeaderEpochCache(fs, PATH).entries() == [(0, 0), (2, 6), (5, 12)]
    assert c.latest_epoch == 5
    assert c.latest_entry == EpochEntry(5, 12)
    assert c.earliest_entry == EpochEntry(0, 0)


def test_reassigning_the_latest_epoch_at_a_later_offset_changes_nothing() -> None:
    fs, c = cache((2, 6))
    fs.fail_next("open")  # any write would fail
    assert not c.assign(2, 6)
    assert not c.assign(2, 10)
    assert c.entries() == [(2, 6)]


def test_latest_epoch_at_an_earlier_offset_replaces_it() -> None:
    _, c = cache((1, 0), (2, 6))
    assert c.assign(2, 4)
    assert c.entries() == [(1, 0), (2, 4)]


def test_new_entry_drops_conflicting_entries() -> None:
    # A lower epoch or offset than existing entries removes every entry not below it.
    _, c = cache((1, 0), (2, 6), (3, 8))
    assert c.assign(4, 7)
    assert c.entries() == [(1, 0), (2, 6), (4, 7)]
    assert c.assign(2, 10)
    assert c.entries() == [(1, 0), (2, 10)]
    assert c.assign(3, 0)
    assert c.entries() == [(3, 0)]


@pytest.mark.parametrize(("epoch", "offset"), [(-1, 0), (0, -1)])
def test_invalid_entries_are_refused(epoch: int, offset: int) -> None:
    _, c = cache()
    with pytest.raises(ValueError):
        c.assign(epoch, offset)


# OffsetForLeaderEpoch, on the cache (2,6) (3,8) (5,12) with log end offset 20.
@pytest.mark.parametrize(
    ("requested", "expected"),
    [
        (UNDEFINED_EPOCH, UNDEFINED),
        (5, (5, 20)),  # the latest epoch ends at the log end
        (6, UNDEFINED),  # above every known epoch
        (3, (3, 12)),
        (4, (3, 12)),  # unknown epoch between known ones: the epoch below, ending where 5 began
        (2, (2, 8)),
        (1, (1, 6)),  # older than every known epoch: itself, ending where the first began
        (0, (0, 6)),
    ],
)
def test_end_offset_for(requested: int, expected: tuple[int, int]) -> None:
    _, c = cache((2, 6), (3, 8), (5, 12))
    assert c.end_offset_for(requested, 20) == expected


def test_end_offset_for_on_an_empty_cache() -> None:
    _, c = cache()
    assert c.end_offset_for(0, 10) == UNDEFINED
    assert c.end_offset_for(UNDEFINED_EPOCH, 10) == UNDEFINED


def test_end_offset_for_a_single_epoch() -> None:
    _, c = cache((4, 5))
    assert c.end_offset_for(4, 9) == (4, 9)
    assert c.end_offset_for(3, 9) == (3, 5)
    assert c.end_offset_for(5, 9) == UNDEFINED


@pytest.mark.parametrize(
    ("end_offset", "left"),
    [
        (9, [(2, 6), (3, 8)]),
        (8, [(2, 6)]),
        (12, [(2, 6), (3, 8), (4, 11)]),  # after the latest start: nothing to do
        (11, [(2, 6), (3, 8)]),
        (0, []),
        (-1, [(2, 6), (3, 8), (4, 11)]),  # an undefined offset truncates nothing
    ],
)
def test_truncate_from_end(end_offset: int, left: list[tuple[int, int]]) -> None:
    fs, c = cache((2, 6), (3, 8), (4, 11))
    removed = c.truncate_from_end(end_offset)
    assert c.entries() == left
    assert [*left, *removed] == [(2, 6), (3, 8), (4, 11)]
    assert LeaderEpochCache(fs, PATH).entries() == left


@pytest.mark.parametrize(
    ("start_offset", "left"),
    [
        (5, [(2, 6), (3, 8), (4, 11)]),
        (6, [(2, 6), (3, 8), (4, 11)]),  # exclusive: an entry at 6 stays
        (7, [(2, 7), (3, 8), (4, 11)]),
        (8, [(3, 8), (4, 11)]),
        (9, [(3, 9), (4, 11)]),
        (11, [(4, 11)]),
        (15, [(4, 15)]),
    ],
)
def test_truncate_from_start(start_offset: int, left: list[tuple[int, int]]) -> None:
    fs, c = cache((2, 6), (3, 8), (4, 11))
    c.truncate_from_start(start_offset)
    assert c.entries() == left
    assert LeaderEpochCache(fs, PATH).entries() == left


def test_epoch_for_offset_and_previous_epoch() -> None:
    _, c = cache((2, 6), (3, 8), (5, 12))
    assert [c.epoch_for_offset(o) for o in (0, 5, 6, 7, 8, 11, 12, 100)] == [
        None,
        None,
        2,
        2,
        3,
        3,
        5,
        5,
    ]
    assert [c.previous_epoch(e) for e in (2, 3, 4, 5, 9)] == [None, 2, 3, 3, 5]


def test_deferred_flush() -> None:
    fs, c = cache((2, 6), (3, 8))
    c.truncate_from_end(8, flush=False)
    fs.crash()
    assert LeaderEpochCache(fs, PATH).entries() == [(2, 6), (3, 8)]  # stale, repaired by the log
    c.flush()
    assert LeaderEpochCache(fs, PATH).entries() == [(2, 6)]
    fs.fail_next("open")
    c.flush()  # nothing pending: no write


@pytest.mark.parametrize("operation", ["open", "append", "sync", "rename"])
def test_failed_write_changes_nothing(operation: str) -> None:
    fs, c = cache((2, 6), (3, 8))
    before = file_bytes(fs)
    fs.fail_next(operation, "leader-epoch")
    with pytest.raises(OSError):
        c.assign(4, 10)
    assert c.entries() == [(2, 6), (3, 8)]
    fs.crash(random.Random(1), torn=True)
    assert file_bytes(fs) == before
    assert c.assign(4, 10)
    fs.crash(random.Random(2), torn=True)
    assert LeaderEpochCache(fs, PATH).entries() == [(2, 6), (3, 8), (4, 10)]


def test_loading_cleans_a_file_with_conflicting_entries() -> None:
    fs, _ = cache()
    handle = fs.open(PATH, create=True)
    handle.append(b"0\n4\n1 0\n3 10\n2 5\n2 7\n")
    handle.close()
    c = LeaderEpochCache(fs, PATH)
    assert c.entries() == [(1, 0), (2, 5)]
    assert read_leader_epoch_checkpoint(fs, PATH) == [
        (1, 0),
        (3, 10),
        (2, 5),
        (2, 7),
    ]  # untouched until a change


def test_clear_and_assign_all() -> None:
    fs, c = cache((1, 0))
    assert c.assign_all([(2, 5), (3, 9), (3, 12)])
    assert c.entries() == [(1, 0), (2, 5), (3, 9)]
    assert not c.assign_all([(3, 10)])
    c.clear()
    assert c.entries() == [] and file_bytes(fs) == b"0\n0\n"


@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 200)), max_size=30))
def test_entries_stay_strictly_increasing(assignments: list[tuple[int, int]]) -> None:
    fs, c = cache()
    for epoch, offset in assignments:
        c.assign(epoch, offset)
        entries = c.entries()
        assert entries[-1] == (epoch, offset) or entries[-1].epoch == epoch
        for a, b in zip(entries, entries[1:], strict=False):
            assert a.epoch < b.epoch and a.start_offset < b.start_offset
    assert LeaderEpochCache(fs, PATH).entries() == c.entries()


@given(
    st.lists(st.tuples(st.integers(0, 20), st.integers(0, 200)), min_size=1, max_size=20),
    st.integers(-1, 25),
    st.integers(0, 300),
)
def test_end_offset_for_matches_a_plain_reading_of_the_rules(
    assignments: list[tuple[int, int]], requested: int, log_end: int
) -> None:
    _, c = cache()
    for epoch, offset in assignments:
        c.assign(epoch, offset)
    entries = c.entries()
    got = c.end_offset_for(requested, log_end)
    if requested == UNDEFINED_EPOCH or requested > entries[-1].epoch:
        assert got == UNDEFINED
    elif requested == entries[-1].epoch:
        assert got == (requested, log_end)
    else:
        following = min(e for e in entries if e.epoch > requested)
        preceding = [e.epoch for e in entries if e.epoch <= requested]
        assert got == (max(preceding, default=requested), following.start_offset)


def test_truncate_from_start_at_the_first_entry_writes_nothing() -> None:
    # Every log open truncates from its log start; when nothing changes, no checkpoint
    # rewrite (an fsync and a rename per partition) may happen.
    fs, c = cache((0, 5), (1, 9))
    fs.fail_next("rename")
    assert c.truncate_from_start(5) == []
    assert c.entries() == [EpochEntry(0, 5), EpochEntry(1, 9)]
    with pytest.raises(OSError, match="injected"):
        fs.rename("/nope", "/nope2")  # the injected failure is still armed: nothing wrote

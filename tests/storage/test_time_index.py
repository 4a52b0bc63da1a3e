from __future__ import annotations

import random
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from millpond.storage.fs import FileSystem, MemFileSystem, join
from millpond.storage.index_file import (
    CorruptIndexError,
    IndexFullError,
    IndexOffsetOverflowError,
    IndexOrderError,
)
from millpond.storage.time_index import TimeIndex, TimestampOffset

from .file_helpers import mem_path, raw, write_raw

BASE = 100
NAME = "00000000000000000100.timeindex"
T0 = 1_700_000_000_000


def mem() -> tuple[MemFileSystem, str]:
    return mem_path(NAME)


def entries(*pairs: tuple[int, int]) -> bytes:
    return b"".join(struct.pack(">qi", t, r) for t, r in pairs)


# -- the format ------------------------------------------------------------------------------


def test_known_bytes(fs_root: tuple[FileSystem, str]) -> None:
    fs, root = fs_root
    path = join(root, NAME)
    index = TimeIndex(fs, path, BASE)
    assert index.maybe_append(T0, 101)
    assert index.maybe_append(2**63 - 1, 100 + 2**31 - 1)
    assert raw(fs, path) == b"" and index.pending_entries == 2  # written on flush
    index.flush()
    expected = bytes.fromhex("0000018bcfe56800 00000001 7fffffffffffffff 7fffffff")
    assert raw(fs, path) == expected == index.to_bytes()
    assert index.size_in_bytes == 24


def test_reads_hand_written_bytes(fs_root: tuple[FileSystem, str]) -> None:
    fs, root = fs_root
    path = join(root, NAME)
    write_raw(fs, path, entries((T0, 0), (T0 + 5, 7), (T0 + 9, 7)))
    index = TimeIndex(fs, path, BASE)
    assert index.all_entries() == [(T0, 100), (T0 + 5, 107), (T0 + 9, 107)]
    assert index.entry(2) == TimestampOffset(T0 + 9, 107)
    assert index.last_entry == (T0 + 9, 107)
    index.sanity_check()


def test_reopen_equals(fs_root: tuple[FileSystem, str]) -> None:
    fs, root = fs_root
    path = join(root, NAME)
    index = TimeIndex(fs, path, BASE)
    for i in range(300):
        index.maybe_append(T0 + 7 * i - (i % 3), BASE + 2 * i)
    index.flush()
    index.close()
    again = TimeIndex(fs, path, BASE)
    assert again.all_entries() == index.all_entries()
    assert again.to_bytes() == index.to_bytes() == raw(fs, path)
    again.sanity_check()


# -- lookups ---------------------------------------------------------------------------------


def test_lookup() -> None:
    fs, path = mem()
    index = TimeIndex(fs, path, BASE)
    assert index.lookup(T0) == (-1, BASE)  # empty: Kafka's "no timestamp" and the base
    assert index.last_entry == (-1, BASE)
    for ts, offset in [(T0 + 10, 110), (T0 + 20, 120), (T0 + 30, 130)]:
        index.maybe_append(ts, offset)
    assert index.lookup(T0) == (-1, BASE)  # below the first entry
    assert index.lookup(T0 + 9) == (-1, BASE)
    assert index.lookup(T0 + 10) == (T0 + 10, 110)
    assert index.lookup(T0 + 29) == (T0 + 20, 120)
    assert index.lookup(2**63 - 1) == (T0 + 30, 130)


# -- maybe_append: Kafka's rule ----------------------------------------------------------------


def test_maybe_append_rule() -> None:
    fs, path = mem()
    index = TimeIndex(fs, path, BASE)
    assert not index.maybe_append(-1, 105)  # no timestamp (v0 messages): never indexed
    assert index.entries == 0
    assert index.maybe_append(T0, 105)
    assert not index.maybe_append(T0, 105)  # the same entry again (roll, close): no-op
    assert not index.maybe_append(T0, 110)  # the max timestamp did not grow: skipped
    assert index.maybe_append(T0 + 1, 105)  # same offset, later timestamp: Kafka takes it
    with pytest.raises(IndexOrderError, match="offset 104 is below"):
        index.maybe_append(T0 + 2, 104)
    with pytest.raises(IndexOrderError, match="timestamp .* is below"):
        index.maybe_append(T0 - 1, 120)
    with pytest.raises(IndexOffsetOverflowError):
        index.maybe_append(T0 + 5, BASE + 2**31)
    assert index.all_entries() == [(T0, 105), (T0 + 1, 105)]
    index.flush()
    assert raw(fs, path) == index.to_bytes()


def test_full_index_keeps_a_slot_for_the_roll() -> None:
    fs, path = mem()
    index = TimeIndex(fs, path, BASE, max_index_size=12 * 4)
    assert index.max_entries == 4
    for i in range(3):
        assert not index.is_full
        index.maybe_append(T0 + i, BASE + i)
    assert index.is_full  # one entry early, as Kafka
    with pytest.raises(IndexFullError):
        index.maybe_append(T0 + 10, BASE + 10)
    assert index.maybe_append(T0 + 10, BASE + 10, skip_full_check=True)
    assert index.entries == 4


def test_full_check_comes_before_the_skip() -> None:
    fs, path = mem()
    index = TimeIndex(fs, path, BASE, max_index_size=12 * 2)
    index.maybe_append(T0, BASE)
    with pytest.raises(IndexFullError):
        index.maybe_append(T0, BASE)  # even a no-op append of a full index raises, as Kafka


# -- truncation ------------------------------------------------------------------------------


def test_truncate_to_drops_by_offset() -> None:
    fs, path = mem()
    index = TimeIndex(fs, path, BASE)
    for i in range(1, 6):
        index.maybe_append(T0 + i, BASE + 10 * i)  # offsets 110 .. 150
    index.flush()
    index.truncate_to(151)
    assert index.entries == 5
    index.truncate_to(140)
    assert [e.offset for e in index.all_entries()] == [110, 120, 130]
    index.truncate_to(125)
    assert index.last_entry == (T0 + 2, 120)
    assert raw(fs, path) == entries((T0 + 1, 10), (T0 + 2, 20))
    # After truncation the index accepts timestamps above the new last entry again.
    assert index.maybe_append(T0 + 3, 130)
    index.truncate_to(BASE)
    assert index.entries == 0 and index.last_entry == (-1, BASE)


def test_truncate_to_with_repeated_offsets() -> None:
    fs, path = mem()
    index = TimeIndex(fs, path, BASE)
    index.maybe_append(T0, 110)
    index.maybe_append(T0 + 1, 120)
    index.maybe_append(T0 + 2, 120)
    index.maybe_append(T0 + 3, 130)
    index.truncate_to(120)  # every entry at offset 120 goes
    assert index.all_entries() == [(T0, 110)]


# -- laziness and faults ---------------------------------------------------------------------


def test_construction_does_not_touch_the_file() -> None:
    fs, path = mem()
    write_raw(fs, path, entries((T0, 1)))
    fs.fail_next("open", NAME)
    index = TimeIndex(fs, path, BASE)
    assert not index.is_loaded
    with pytest.raises(OSError, match="injected open"):
        index.lookup(T0)
    fs.fail_next("read", NAME)
    with pytest.raises(OSError, match="injected read"):
        _ = index.last_entry
    assert not index.is_loaded
    assert index.lookup(T0) == (T0, 101)


def test_failed_write_keeps_the_entries_pending() -> None:
    fs, path = mem()
    index = TimeIndex(fs, path, BASE)
    index.maybe_append(T0, 101)
    index.flush()
    assert index.maybe_append(T0 + 1, 102)
    fs.fail_next("append", NAME)
    with pytest.raises(OSError):
        index.close()  # close writes the pending entry: the failure surfaces there
    assert index.all_entries() == [(T0, 101), (T0 + 1, 102)]
    assert raw(fs, path) == entries((T0, 1))
    index.flush()
    assert raw(fs, path) == index.to_bytes()
    fs.fail_next("truncate", NAME)
    with pytest.raises(OSError):
        index.truncate_to(102)
    assert index.entries == 2 and raw(fs, path) == index.to_bytes()


def test_torn_tail_after_crash() -> None:
    seen_torn = False
    for seed in range(40):
        fs, path = mem()
        index = TimeIndex(fs, path, BASE)
        for i in range(3):
            index.maybe_append(T0 + i, BASE + i)
        index.flush()
        for i in range(3, 7):
            index.maybe_append(T0 + i, BASE + i)
        index.trim_to_valid_size()  # written (as on roll), not synced
        fs.crash(random.Random(seed), torn=True)
        length = len(raw(fs, path))
        again = TimeIndex(fs, path, BASE)
        assert again.all_entries() == index.all_entries()[: length // 12]
        if length % 12:
            seen_torn = True
            with pytest.raises(CorruptIndexError, match="multiple of the entry size 12"):
                again.sanity_check()
            again.close()
            assert len(raw(fs, path)) == 12 * again.entries
        again.sanity_check()
    assert seen_torn


# -- sanity checks ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (entries((T0, 1)) + b"\x00\x01", "length 14 is not a multiple"),
        (entries((T0, 1), (T0 - 1, 2)), "last timestamp .* is below its first timestamp"),
        (entries((T0, 1), (T0 + 1, -1)), "last offset 99 is below the base offset 100"),
        (entries((T0, 1), (T0 + 5, 2), (T0 + 2, 3)), "timestamps are not strictly increasing"),
        (entries((T0, 1), (T0 + 1, 1), (T0 + 1, 2)), "timestamps are not strictly increasing"),
        (entries((T0, 5), (T0 + 1, 3), (T0 + 2, 7)), "offsets decrease"),
        (entries((T0, -3), (T0 + 1, 3)), "offset below base"),
    ],
)
def test_sanity_check_detects_corruption(data: bytes, message: str) -> None:
    fs, path = mem()
    write_raw(fs, path, data)
    with pytest.raises(CorruptIndexError, match=message):
        TimeIndex(fs, path, BASE).sanity_check()


# -- a model -----------------------------------------------------------------------------------

_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(-2, 20), st.integers(-2, 20), st.booleans()),
        st.tuples(st.just("lookup"), st.integers(T0 - 10, T0 + 800)),
        st.tuples(st.just("truncate_to"), st.integers(BASE - 5, BASE + 800)),
        st.tuples(st.just("truncate_to_entries"), st.integers(0, 60)),
        st.tuples(st.just("reopen")),
        st.tuples(st.just("reset")),
    ),
    max_size=80,
)


@settings(max_examples=150, deadline=None)
@given(ops=_OPS, max_entries=st.integers(1, 30))
def test_against_a_list_model(ops: list[tuple[object, ...]], max_entries: int) -> None:
    fs, path = mem()
    index = TimeIndex(fs, path, BASE, max_index_size=12 * max_entries)
    model: list[tuple[int, int]] = []
    for name, *args in ops:
        if name == "append":
            dt, doffset, skip = int(str(args[0])), int(str(args[1])), bool(args[2])
            last_ts, last_offset = model[-1] if model else (T0 - 1, BASE)
            ts, offset = last_ts + dt, last_offset + doffset
            if not skip and len(model) >= max_entries - 1:
                with pytest.raises(IndexFullError):
                    index.maybe_append(ts, offset, skip)
            elif model and (offset < last_offset or ts < last_ts):
                with pytest.raises(IndexOrderError):
                    index.maybe_append(ts, offset, skip)
            elif ts <= (last_ts if model else -1):
                assert not index.maybe_append(ts, offset, skip)
            elif offset < BASE:
                with pytest.raises(IndexOffsetOverflowError):
                    index.maybe_append(ts, offset, skip)
            else:
                assert index.maybe_append(ts, offset, skip)
                model.append((ts, offset))
        elif name == "lookup":
            target = int(str(args[0]))
            below = [e for e in model if e[0] <= target]
            assert index.lookup(target) == (below[-1] if below else (-1, BASE))
        elif name == "truncate_to":
            index.truncate_to(int(str(args[0])))
            model = [e for e in model if e[1] < int(str(args[0]))]
        elif name == "truncate_to_entries":
            index.truncate_to_entries(int(str(args[0])))
            model = model[: int(str(args[0]))]
        elif name == "reopen":
            index.close()
            index = TimeIndex(fs, path, BASE, max_index_size=12 * max_entries)
        else:
            index.reset()
            model = []
        assert index.entries == len(model)
        assert index.last_entry == (model[-1] if model else (-1, BASE))
    assert index.all_entries() == model
    index.flush()
    assert raw(fs, path) == entries(*((t, o - BASE) for t, o in model))
    index.sanity_check()

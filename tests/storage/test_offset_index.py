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
from millpond.storage.offset_index import OffsetIndex, OffsetPosition

from .file_helpers import mem_path, raw, write_raw

BASE = 100
NAME = "00000000000000000100.index"


def mem() -> tuple[MemFileSystem, str]:
    return mem_path(NAME)


# -- the format ------------------------------------------------------------------------------


def test_known_bytes(fs_root: tuple[FileSystem, str]) -> None:
    fs, root = fs_root
    path = join(root, NAME)
    index = OffsetIndex(fs, path, BASE)
    index.append(101, 0)
    index.append(105, 4096)
    index.append(100 + 2**31 - 1, 2**31 - 1)
    assert raw(fs, path) == b"" and index.pending_entries == 3  # written on flush
    index.flush()
    expected = bytes.fromhex("00000001 00000000 00000005 00001000 7fffffff 7fffffff")
    assert raw(fs, path) == expected == index.to_bytes()
    assert index.size_in_bytes == index.length == 24


def test_reads_hand_written_bytes(fs_root: tuple[FileSystem, str]) -> None:
    fs, root = fs_root
    path = join(root, NAME)
    write_raw(fs, path, struct.pack(">iiii", 3, 0, 9, 8000))
    index = OffsetIndex(fs, path, BASE)
    assert index.all_entries() == [(103, 0), (109, 8000)]
    assert index.entry(1) == OffsetPosition(109, 8000)
    assert index.last_offset == 109
    index.sanity_check()


def test_reopen_equals(fs_root: tuple[FileSystem, str]) -> None:
    fs, root = fs_root
    path = join(root, NAME)
    index = OffsetIndex(fs, path, BASE)
    for i in range(1, 200):
        index.append(BASE + 3 * i, 4096 * i)
    index.flush()
    index.close()
    again = OffsetIndex(fs, path, BASE)
    assert again.all_entries() == index.all_entries()
    assert again.to_bytes() == index.to_bytes() == raw(fs, path)
    again.sanity_check()


# -- lookups ---------------------------------------------------------------------------------


def test_lookup() -> None:
    fs, path = mem()
    index = OffsetIndex(fs, path, BASE)
    assert index.lookup(0) == (BASE, 0)
    assert index.lookup(10**12) == (BASE, 0)
    assert index.last_offset == BASE
    for offset, position in [(110, 500), (120, 1000), (130, 1500)]:
        index.append(offset, position)
    assert index.lookup(99) == (BASE, 0)
    assert index.lookup(109) == (BASE, 0)
    assert index.lookup(110) == (110, 500)
    assert index.lookup(119) == (110, 500)
    assert index.lookup(120) == (120, 1000)
    assert index.lookup(10**12) == (130, 1500)


def test_fetch_upper_bound_offset() -> None:
    fs, path = mem()
    index = OffsetIndex(fs, path, BASE)
    assert index.fetch_upper_bound_offset(0, 100) is None
    for offset, position in [(110, 500), (120, 1000), (130, 1500)]:
        index.append(offset, position)
    assert index.fetch_upper_bound_offset(0, 100) == (110, 500)
    assert index.fetch_upper_bound_offset(500, 500) == (120, 1000)
    assert index.fetch_upper_bound_offset(500, 501) == (130, 1500)
    assert index.fetch_upper_bound_offset(1000, 501) is None


def test_lookup_position() -> None:
    fs, path = mem()
    index = OffsetIndex(fs, path, BASE)
    assert index.lookup_position(10**9) is None
    for offset, position in [(110, 500), (120, 1000)]:
        index.append(offset, position)
    assert index.lookup_position(499) is None
    assert index.lookup_position(500) == (110, 500)
    assert index.lookup_position(999) == (110, 500)
    assert index.lookup_position(10**9) == (120, 1000)


def test_entry_out_of_range() -> None:
    fs, path = mem()
    index = OffsetIndex(fs, path, BASE)
    index.append(101, 0)
    with pytest.raises(IndexError):
        index.entry(1)
    with pytest.raises(IndexError):
        index.entry(-1)


# -- appends ---------------------------------------------------------------------------------


def test_append_rejects_out_of_order_and_overflow() -> None:
    fs, path = mem()
    index = OffsetIndex(fs, path, BASE)
    with pytest.raises(IndexOffsetOverflowError):
        index.append(BASE - 1, 0)
    index.append(BASE, 0)  # the base offset itself is a valid first entry
    with pytest.raises(IndexOrderError):
        index.append(BASE, 10)
    index.append(105, 10)
    with pytest.raises(IndexOrderError):
        index.append(104, 20)
    with pytest.raises(IndexOffsetOverflowError):
        index.append(BASE + 2**31, 20)
    with pytest.raises(ValueError):
        index.append(106, -1)
    assert index.can_append_offset(BASE + 2**31 - 1)
    assert not index.can_append_offset(BASE + 2**31)
    assert not index.can_append_offset(BASE - 1)
    assert index.all_entries() == [(100, 0), (105, 10)]
    index.flush()
    assert raw(fs, path) == index.to_bytes()


def test_full_index() -> None:
    fs, path = mem()
    index = OffsetIndex(fs, path, BASE, max_index_size=35)  # rounds down to 4 entries
    assert index.max_entries == 4
    for i in range(4):
        assert not index.is_full
        index.append(BASE + i, 10 * i)
    assert index.is_full
    with pytest.raises(IndexFullError):
        index.append(BASE + 10, 100)
    index.flush()
    assert index.entries == 4 and len(raw(fs, path)) == 32
    index.resize(48)
    assert index.entries < index.max_entries
    index.append(BASE + 10, 100)
    with pytest.raises(ValueError):
        OffsetIndex(fs, path, BASE, max_index_size=7)


# -- truncation ------------------------------------------------------------------------------


def test_truncate_to() -> None:
    fs, path = mem()
    index = OffsetIndex(fs, path, BASE)
    for i in range(1, 6):
        index.append(BASE + 10 * i, 100 * i)  # 110 .. 150
    index.truncate_to(200)  # above everything: no change
    assert index.entries == 5
    index.truncate_to(140)  # exact: drops 140 and above
    assert [e.offset for e in index.all_entries()] == [110, 120, 130]
    index.truncate_to(125)  # between: drops above
    assert [e.offset for e in index.all_entries()] == [110, 120]
    assert index.last_offset == 120
    index.append(121, 250)
    index.truncate_to(0)  # below everything: empty
    assert index.entries == 0 and raw(fs, path) == b""
    assert index.last_offset == BASE


def test_truncate_to_entries_and_reset() -> None:
    fs, path = mem()
    index = OffsetIndex(fs, path, BASE)
    for i in range(1, 6):
        index.append(BASE + i, i)
    index.truncate_to_entries(9)
    assert index.entries == 5
    index.flush()
    index.truncate_to_entries(2)
    assert raw(fs, path) == struct.pack(">iiii", 1, 1, 2, 2)
    with pytest.raises(ValueError):
        index.truncate_to_entries(-1)
    index.reset()
    assert index.entries == 0 and raw(fs, path) == b""
    index.append(BASE + 1, 0)
    assert index.entries == 1


def test_reset_does_not_read_the_file() -> None:
    fs, path = mem()
    write_raw(fs, path, struct.pack(">ii", 1, 0))
    index = OffsetIndex(fs, path, BASE)
    fs.fail_next("read", NAME)  # a read would fail: reset must not need one
    index.reset()
    with pytest.raises(OSError, match="injected read"):
        raw(fs, path)  # the fault is still pending: reset read nothing
    assert index.entries == 0 and raw(fs, path) == b""


# -- laziness --------------------------------------------------------------------------------


def test_construction_does_not_touch_the_file() -> None:
    fs, path = mem()
    fs.fail_next("open", NAME)
    index = OffsetIndex(fs, path, BASE)  # the fault does not fire
    assert not index.is_loaded and not fs.exists(path)
    with pytest.raises(OSError, match="injected open"):
        index.lookup(5)
    assert not index.is_loaded
    assert index.entries == 0  # a retry works, and creates the file as Kafka does
    assert fs.exists(path)


def test_load_is_retried_after_a_failed_read() -> None:
    fs, path = mem()
    write_raw(fs, path, struct.pack(">ii", 1, 0))
    fs.fail_next("read", NAME)
    index = OffsetIndex(fs, path, BASE)
    with pytest.raises(OSError, match="injected read"):
        _ = index.entries
    assert not index.is_loaded
    assert index.lookup(105) == (101, 0)


def test_flush_and_close_of_an_unused_index_read_nothing() -> None:
    fs, path = mem()
    write_raw(fs, path, struct.pack(">ii", 1, 0))
    index = OffsetIndex(fs, path, BASE)
    fs.fail_next("read", NAME)
    index.flush()
    index.close()
    assert not index.is_loaded
    with pytest.raises(OSError, match="injected read"):
        raw(fs, path)  # still pending


# -- faults ----------------------------------------------------------------------------------


def test_failed_write_keeps_the_entries_pending() -> None:
    # Appends only touch memory: a failed write surfaces from the flush (or roll, or
    # close) that writes them, and the next one writes them again.
    fs, path = mem()
    index = OffsetIndex(fs, path, BASE)
    index.append(101, 0)
    index.flush()
    index.append(102, 10)
    fs.fail_next("append", NAME)
    with pytest.raises(OSError):
        index.flush()
    assert index.all_entries() == [(101, 0), (102, 10)] and index.pending_entries == 1
    assert raw(fs, path) == struct.pack(">ii", 1, 0)
    index.append(103, 20)
    index.flush()
    assert index.pending_entries == 0 and raw(fs, path) == index.to_bytes()
    assert index.all_entries() == [(101, 0), (102, 10), (103, 20)]


def test_failed_truncate_and_sync() -> None:
    fs, path = mem()
    index = OffsetIndex(fs, path, BASE)
    for i in range(1, 4):
        index.append(BASE + i, i)
    index.flush()
    fs.fail_next("truncate", NAME)
    with pytest.raises(OSError):
        index.truncate_to(102)
    assert index.entries == 3 and raw(fs, path) == index.to_bytes()
    fs.fail_next("sync", NAME)
    with pytest.raises(OSError):
        index.flush()
    index.flush()
    index.truncate_to(102)
    assert index.entries == 1


def test_torn_tail_after_crash() -> None:
    seen_torn = False
    for seed in range(40):
        fs, path = mem()
        index = OffsetIndex(fs, path, BASE)
        for i in range(1, 4):
            index.append(BASE + i, 10 * i)
        index.flush()
        for i in range(4, 8):
            index.append(BASE + i, 10 * i)
        index.trim_to_valid_size()  # written (as on roll), not synced
        fs.crash(random.Random(seed), torn=True)
        length = len(raw(fs, path))
        again = OffsetIndex(fs, path, BASE)
        # Whole entries load (a prefix of what was written); a partial one is ignored.
        assert again.all_entries() == index.all_entries()[: length // 8]
        assert again.entries >= 3
        if length % 8:
            seen_torn = True
            with pytest.raises(CorruptIndexError, match="multiple of the entry size 8"):
                again.sanity_check()
            # The next write cuts the torn tail first, so entries stay aligned.
            again.append(BASE + 100, 1000)
            again.flush()
            assert raw(fs, path) == again.to_bytes()
        again.sanity_check()
    assert seen_torn


def test_close_trims_a_torn_tail() -> None:
    fs, path = mem()
    write_raw(fs, path, struct.pack(">ii", 1, 0) + b"\x00\x00\x00")
    index = OffsetIndex(fs, path, BASE)
    index.close()  # trims even without loading, as Kafka trims on close
    assert raw(fs, path) == struct.pack(">ii", 1, 0)
    index = OffsetIndex(fs, path, BASE)
    write_raw(fs, path, struct.pack(">ii", 1, 0) + b"\x00")
    assert index.entries == 1
    index.close()
    assert raw(fs, path) == struct.pack(">ii", 1, 0)
    assert index.entries == 1  # usable after close: the file is reopened


# -- sanity checks ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (struct.pack(">ii", 1, 0) + b"\x01", "length 9 is not a multiple"),
        (struct.pack(">iiii", 1, 0, -1, 10), "last offset 99 is below the base offset 100"),
        (struct.pack(">iiii", -5, 0, 1, 10), "offset below base"),
        (struct.pack(">iiii", 5, 0, 5, 10), "offsets are not strictly increasing"),
        (struct.pack(">iiiiii", 5, 0, 3, 10, 9, 20), "offsets are not strictly increasing"),
        (struct.pack(">iiii", 1, 10, 2, 10), "positions are not strictly increasing"),
        (struct.pack(">iiii", 1, -10, 2, 10), "negative position"),
    ],
)
def test_sanity_check_detects_corruption(data: bytes, message: str) -> None:
    fs, path = mem()
    write_raw(fs, path, data)
    index = OffsetIndex(fs, path, BASE)
    with pytest.raises(CorruptIndexError, match=message):
        index.sanity_check()


def test_sanity_check_passes_empty_and_base_entry() -> None:
    fs, path = mem()
    index = OffsetIndex(fs, path, BASE)
    index.sanity_check()
    index.append(BASE, 0)
    index.sanity_check()


# -- rename and delete -----------------------------------------------------------------------


def test_rename_and_delete(fs_root: tuple[FileSystem, str]) -> None:
    fs, root = fs_root
    path = join(root, NAME)
    index = OffsetIndex(fs, path, BASE)
    index.append(101, 0)
    index.rename_to(path + ".deleted")
    assert index.path == path + ".deleted" and not fs.exists(path)
    index.append(102, 10)
    index.flush()
    assert raw(fs, path + ".deleted") == index.to_bytes()
    assert index.delete()
    assert not fs.exists(path + ".deleted")
    assert not index.delete()


# -- a model -----------------------------------------------------------------------------------

_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(-2, 40), st.integers(-2, 5000)),
        st.tuples(st.just("lookup"), st.integers(BASE - 10, BASE + 1500)),
        st.tuples(st.just("upper"), st.integers(0, 60000), st.integers(0, 9000)),
        st.tuples(st.just("position"), st.integers(-1, 60000)),
        st.tuples(st.just("truncate_to"), st.integers(BASE - 10, BASE + 1500)),
        st.tuples(st.just("truncate_to_entries"), st.integers(0, 60)),
        st.tuples(st.just("reopen"), st.just(0)),
        st.tuples(st.just("reset"), st.just(0)),
    ),
    max_size=80,
)


@settings(max_examples=150, deadline=None)
@given(ops=_OPS, max_entries=st.integers(1, 40))
def test_against_a_list_model(ops: list[tuple[int | str, ...]], max_entries: int) -> None:
    fs, path = mem()
    index = OffsetIndex(fs, path, BASE, max_index_size=8 * max_entries)
    model: list[tuple[int, int]] = []
    for op in ops:
        name, *args = op
        assert isinstance(name, str)
        ints = [int(a) for a in args]
        if name == "append":
            offset = (model[-1][0] if model else BASE) + ints[0]
            position = (model[-1][1] if model else 0) + ints[1]
            if len(model) >= max_entries:
                with pytest.raises(IndexFullError):
                    index.append(offset, position)
            elif model and offset <= model[-1][0]:
                with pytest.raises(IndexOrderError):
                    index.append(offset, position)
            elif offset < BASE or position < 0:
                with pytest.raises(ValueError):
                    index.append(offset, position)
            elif model and position <= model[-1][1]:
                continue  # a writer never does this; not the index's job to refuse it
            else:
                index.append(offset, position)
                model.append((offset, position))
        elif name == "lookup":
            below = [e for e in model if e[0] <= ints[0]]
            assert index.lookup(ints[0]) == (below[-1] if below else (BASE, 0))
        elif name == "upper":
            above = [e for e in model if e[1] >= ints[0] + ints[1]]
            assert index.fetch_upper_bound_offset(ints[0], ints[1]) == (above[0] if above else None)
        elif name == "position":
            at_most = [e for e in model if e[1] <= ints[0]]
            assert index.lookup_position(ints[0]) == (at_most[-1] if at_most else None)
        elif name == "truncate_to":
            index.truncate_to(ints[0])
            model = [e for e in model if e[0] < ints[0]]
        elif name == "truncate_to_entries":
            index.truncate_to_entries(ints[0])
            model = model[: ints[0]]
        elif name == "reopen":
            index.close()
            index = OffsetIndex(fs, path, BASE, max_index_size=8 * max_entries)
        else:
            index.reset()
            model = []
        assert index.entries == len(model)
    assert index.all_entries() == model
    index.flush()
    assert raw(fs, path) == b"".join(struct.pack(">ii", o - BASE, p) for o, p in model)
    assert index.is_full == (len(model) >= max_entries)
    index.sanity_check()

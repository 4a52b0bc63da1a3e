from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from millpond.storage.fs import FileSystem, MemFileSystem, join
from millpond.storage.index_file import CorruptIndexError, IndexOrderError
from millpond.storage.txn_index import ENTRY_SIZE, AbortedTxn, TransactionIndex

from .file_helpers import mem_path, raw, write_raw

START = 100
NAME = "00000000000000000100.txnindex"


def mem() -> tuple[MemFileSystem, str]:
    return mem_path(NAME)


def test_known_bytes(fs_root: tuple[FileSystem, str]) -> None:
    fs, root = fs_root
    path = join(root, NAME)
    index = TransactionIndex(fs, path, START)
    index.append(AbortedTxn(producer_id=7, first_offset=90, last_offset=105, last_stable_offset=90))
    expected = bytes.fromhex(
        "0000 0000000000000007 000000000000005a 0000000000000069 000000000000005a"
    )
    assert ENTRY_SIZE == 34
    assert raw(fs, path) == expected == index.to_bytes()
    again = TransactionIndex(fs, path, START)
    assert again.all_aborted() == [AbortedTxn(7, 90, 105, 90)]


def test_file_is_created_only_by_the_first_append(fs_root: tuple[FileSystem, str]) -> None:
    fs, root = fs_root
    path = join(root, NAME)
    index = TransactionIndex(fs, path, START)
    assert index.all_aborted() == [] and index.entries == 0
    index.truncate_to(0)
    index.reset()
    index.flush()
    index.close()
    assert not fs.exists(path)
    assert index.collect_aborted(0, 1000) == ([], False)
    index.append(AbortedTxn(1, 100, 110, 100))
    assert fs.exists(path)


def test_construction_does_not_touch_the_file() -> None:
    fs, path = mem()
    write_raw(fs, path, AbortedTxn(1, 100, 110, 100).to_bytes())
    fs.fail_next("open", NAME)
    index = TransactionIndex(fs, path, START)
    assert not index.is_loaded
    with pytest.raises(OSError, match="injected open"):
        index.all_aborted()
    fs.fail_next("read", NAME)
    with pytest.raises(OSError, match="injected read"):
        index.collect_aborted(0, 200)
    assert index.collect_aborted(0, 200) == ([AbortedTxn(1, 100, 110, 100)], False)


def test_append_order() -> None:
    fs, path = mem()
    index = TransactionIndex(fs, path, START)
    index.append(AbortedTxn(1, 100, 110, 100))
    with pytest.raises(IndexOrderError):
        index.append(AbortedTxn(2, 100, 110, 100))
    with pytest.raises(IndexOrderError):
        index.append(AbortedTxn(2, 100, 109, 100))
    index.append(AbortedTxn(2, 105, 111, 100))
    # The order holds across a reopen too (Kafka forgets it when the file is reopened).
    again = TransactionIndex(fs, path, START)
    with pytest.raises(IndexOrderError):
        again.append(AbortedTxn(3, 100, 111, 100))


def test_collect_aborted() -> None:
    fs, path = mem()
    index = TransactionIndex(fs, path, START)
    a = AbortedTxn(1, first_offset=100, last_offset=120, last_stable_offset=100)
    b = AbortedTxn(2, first_offset=115, last_offset=130, last_stable_offset=115)
    c = AbortedTxn(3, first_offset=140, last_offset=150, last_stable_offset=150)
    d = AbortedTxn(4, first_offset=145, last_offset=160, last_stable_offset=155)
    for txn in (a, b, c, d):
        index.append(txn)
    # A range that overlaps a and b: c's LSO (150) is past the bound, so the search is done.
    assert index.collect_aborted(110, 125) == ([a, b], True)
    # After a; b overlaps; c starts at the bound (excluded) and its LSO ends the search.
    assert index.collect_aborted(121, 140) == ([b], True)
    # An upper bound beyond every LSO: the next segment must be searched too.
    assert index.collect_aborted(0, 1000) == ([a, b, c, d], False)
    # The search stops at the first entry whose LSO reaches the bound: b's, here, so
    # nothing after it is looked at.
    assert index.collect_aborted(100, 101) == ([a], True)
    assert index.collect_aborted(146, 151) == ([c, d], True)
    assert index.collect_aborted(151, 156) == ([d], False)


def test_truncate_to_and_reset() -> None:
    fs, path = mem()
    index = TransactionIndex(fs, path, START)
    txns = [AbortedTxn(i, 100 + 10 * i, 105 + 10 * i, 100) for i in range(5)]
    for txn in txns:
        index.append(txn)
    index.truncate_to(200)
    assert index.entries == 5
    index.truncate_to(125)  # drops last offsets 125, 135, 145
    assert index.all_aborted() == txns[:2]
    assert raw(fs, path) == b"".join(t.to_bytes() for t in txns[:2])
    index.append(txns[2])  # the order restarts from the new last entry
    index.reset()
    assert index.entries == 0 and raw(fs, path) == b""
    index.append(txns[0])


def test_reset_does_not_read_the_file() -> None:
    fs, path = mem()
    write_raw(fs, path, AbortedTxn(1, 100, 110, 100).to_bytes())
    index = TransactionIndex(fs, path, START)
    fs.fail_next("read", NAME)
    index.reset()
    with pytest.raises(OSError, match="injected read"):
        raw(fs, path)
    assert raw(fs, path) == b"" and index.entries == 0


def test_version_other_than_zero_is_corrupt() -> None:
    fs, path = mem()
    data = bytearray(AbortedTxn(1, 100, 110, 100).to_bytes())
    data[1] = 1
    write_raw(fs, path, bytes(data))
    with pytest.raises(CorruptIndexError, match="version 1"):
        TransactionIndex(fs, path, START).sanity_check()


def test_sanity_check() -> None:
    fs, path = mem()
    write_raw(fs, path, AbortedTxn(1, 50, 99, 50).to_bytes())
    with pytest.raises(CorruptIndexError, match="below the start offset 100"):
        TransactionIndex(fs, path, START).sanity_check()
    write_raw(
        fs, path, AbortedTxn(1, 50, 110, 50).to_bytes() + AbortedTxn(2, 50, 110, 50).to_bytes()
    )
    with pytest.raises(CorruptIndexError, match="do not increase"):
        TransactionIndex(fs, path, START).sanity_check()
    write_raw(fs, path, AbortedTxn(1, 50, 100, 50).to_bytes())
    TransactionIndex(fs, path, START).sanity_check()


def test_torn_tail_is_ignored_then_cut_on_append() -> None:
    seen_torn = False
    for seed in range(30):
        fs, path = mem()
        index = TransactionIndex(fs, path, START)
        txns = [AbortedTxn(i, 100 + i, 110 + i, 100) for i in range(4)]
        index.append(txns[0])
        index.flush()
        for txn in txns[1:]:
            index.append(txn)
        fs.crash(random.Random(seed), torn=True)
        length = len(raw(fs, path))
        again = TransactionIndex(fs, path, START)
        assert again.all_aborted() == txns[: length // ENTRY_SIZE]
        again.sanity_check()  # a torn tail is not corruption, as in Kafka
        if length % ENTRY_SIZE:
            seen_torn = True
            again.append(AbortedTxn(9, 200, 300, 200))
            assert raw(fs, path) == again.to_bytes()
    assert seen_torn


def test_faults() -> None:
    fs, path = mem()
    index = TransactionIndex(fs, path, START)
    index.append(AbortedTxn(1, 100, 110, 100))
    fs.fail_next("append", NAME)
    with pytest.raises(OSError):
        index.append(AbortedTxn(2, 100, 120, 100))
    assert index.entries == 1 and raw(fs, path) == index.to_bytes()
    index.append(AbortedTxn(2, 100, 120, 100))
    fs.fail_next("truncate", NAME)
    with pytest.raises(OSError):
        index.truncate_to(115)
    assert index.entries == 2
    fs.fail_next("sync", NAME)
    with pytest.raises(OSError):
        index.flush()
    index.flush()


def test_rename_and_delete(fs_root: tuple[FileSystem, str]) -> None:
    fs, root = fs_root
    path = join(root, NAME)
    index = TransactionIndex(fs, path, START)
    index.rename_to(path + ".deleted")  # no file yet: just the new name
    index.append(AbortedTxn(1, 100, 110, 100))
    assert fs.exists(path + ".deleted") and not fs.exists(path)
    index.rename_to(path)
    assert raw(fs, path) == index.to_bytes()
    assert index.delete() and not fs.exists(path)
    assert not index.delete()


# -- a model -----------------------------------------------------------------------------------

_TXN = st.tuples(st.integers(0, 5), st.integers(0, 30), st.integers(1, 30), st.integers(0, 40))


def kafka_collect(
    txns: list[AbortedTxn], fetch_offset: int, upper: int
) -> tuple[list[AbortedTxn], bool]:
    found = [t for t in txns if t.last_offset >= fetch_offset and t.first_offset < upper]
    for i, txn in enumerate(txns):
        if txn.last_stable_offset >= upper:
            done = [t for t in txns[: i + 1] if t in found]
            return done, True
    return found, False


@settings(max_examples=100, deadline=None)
@given(
    txns=st.lists(_TXN, max_size=20),
    queries=st.lists(st.tuples(st.integers(90, 800), st.integers(0, 300)), max_size=10),
    cut=st.integers(90, 800),
)
def test_against_a_list_model(
    txns: list[tuple[int, int, int, int]], queries: list[tuple[int, int]], cut: int
) -> None:
    fs, path = mem()
    index = TransactionIndex(fs, path, START)
    model: list[AbortedTxn] = []
    last = START
    for pid, back, step, lso_back in txns:
        last += step
        txn = AbortedTxn(pid, last - back, last, max(0, last - lso_back))
        index.append(txn)
        model.append(txn)
    for fetch_offset, size in queries:
        assert index.collect_aborted(fetch_offset, fetch_offset + size) == kafka_collect(
            model, fetch_offset, fetch_offset + size
        )
    index.close()
    index = TransactionIndex(fs, path, START)
    index.truncate_to(cut)
    model = [t for t in model if t.last_offset < cut]
    assert index.all_aborted() == model
    assert TransactionIndex(fs, path, START).all_aborted() == model
    index.sanity_check()

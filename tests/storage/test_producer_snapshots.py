from __future__ import annotations

import random
import struct

import pytest
from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st

from millpond.storage.fs import MemFileSystem, join
from millpond.storage.producer_snapshots import (
    CorruptSnapshotError,
    ProducerEntry,
    decode_snapshot,
    delete_snapshots_below,
    encode_snapshot,
    list_snapshots,
    read_snapshot,
    snapshot_path,
    write_snapshot,
)

DIR = "/data/orders-0"

entries_strategy = st.lists(
    st.builds(
        ProducerEntry,
        producer_id=st.integers(-(2**63), 2**63 - 1),
        epoch=st.integers(-(2**15), 2**15 - 1),
        last_sequence=st.integers(-(2**31), 2**31 - 1),
        last_offset=st.integers(-(2**63), 2**63 - 1),
        offset_delta=st.integers(-(2**31), 2**31 - 1),
        timestamp=st.integers(-(2**63), 2**63 - 1),
        coordinator_epoch=st.integers(-(2**31), 2**31 - 1),
        current_txn_first_offset=st.integers(-(2**63), 2**63 - 1),
    ),
    max_size=8,
)


def mem() -> MemFileSystem:
    fs = MemFileSystem()
    fs.makedirs(DIR)
    return fs


def entry(
    producer_id: int = 1000,
    *,
    epoch: int = 3,
    last_sequence: int = 41,
    last_offset: int = 1234,
    offset_delta: int = 4,
    timestamp: int = 1_700_000_000_000,
    coordinator_epoch: int = -1,
    current_txn_first_offset: int = -1,
) -> ProducerEntry:
    return ProducerEntry(
        producer_id=producer_id,
        epoch=epoch,
        last_sequence=last_sequence,
        last_offset=last_offset,
        offset_delta=offset_delta,
        timestamp=timestamp,
        coordinator_epoch=coordinator_epoch,
        current_txn_first_offset=current_txn_first_offset,
    )


def raw(fs: MemFileSystem, path: str) -> bytes:
    handle = fs.open(path)
    return handle.read_at(0, handle.size())


def test_crc32c_is_castagnoli() -> None:
    assert crc32c(b"123456789") == 0xE3069283


def test_empty_snapshot_bytes() -> None:
    # version 1, CRC-32C of the four-byte zero entry count, the count.
    assert encode_snapshot([]) == b"\x00\x01" + struct.pack(">I", 0x48674BC7) + b"\x00\x00\x00\x00"


def test_snapshot_layout_is_kafkas() -> None:
    first = entry(1000)
    second = entry(
        2001,
        epoch=0,
        last_sequence=0,
        last_offset=7,
        offset_delta=0,
        coordinator_epoch=5,
        current_txn_first_offset=5,
    )
    data = encode_snapshot([first, second])
    body = struct.pack(">i", 2)
    for e in (first, second):
        body += struct.pack(
            ">qhiqiqiq",
            e.producer_id,
            e.epoch,
            e.last_sequence,
            e.last_offset,
            e.offset_delta,
            e.timestamp,
            e.coordinator_epoch,
            e.current_txn_first_offset,
        )
    assert len(body) == 4 + 2 * 46
    assert data == struct.pack(">hI", 1, crc32c(body)) + body


def test_write_and_read() -> None:
    fs = mem()
    path = write_snapshot(fs, DIR, 1235, [entry(1000), entry(1001)])
    assert path == join(DIR, "00000000000000001235.snapshot") == snapshot_path(DIR, 1235)
    assert raw(fs, path) == encode_snapshot([entry(1000), entry(1001)])
    assert read_snapshot(fs, path) == [entry(1000), entry(1001)]


@given(entries_strategy)
def test_round_trip(entries: list[ProducerEntry]) -> None:
    assert decode_snapshot(encode_snapshot(entries)) == entries


def test_values_that_do_not_fit_are_refused() -> None:
    with pytest.raises(ValueError, match="snapshot"):
        write_snapshot(mem(), DIR, 0, [entry(epoch=2**15)])


def test_every_flipped_byte_is_caught() -> None:
    data = encode_snapshot([entry(1000), entry(1001)])
    for i in range(len(data)):
        for bit in (0x01, 0x80):
            corrupt = bytearray(data)
            corrupt[i] ^= bit
            with pytest.raises(CorruptSnapshotError):
                decode_snapshot(bytes(corrupt))


@pytest.mark.parametrize(
    ("mutate", "words"),
    [
        (lambda d: d[:5], "shorter than the header"),
        (lambda d: d[:-1], "CRC mismatch"),
        (lambda d: b"\x00\x02" + d[2:], "unknown version 2"),
        (lambda d: b"\x00\x00" + d[2:], "unknown version 0"),
        (lambda d: d + b"\x00", "CRC mismatch"),
    ],
)
def test_corrupt_files_name_the_file(mutate: object, words: str) -> None:
    assert callable(mutate)
    fs = mem()
    path = snapshot_path(DIR, 10)
    handle = fs.open(path, create=True)
    handle.append(mutate(encode_snapshot([entry()])))
    handle.close()
    with pytest.raises(CorruptSnapshotError) as info:
        read_snapshot(fs, path)
    assert info.value.path == path and path in str(info.value) and words in str(info.value)


def _with_crc(body: bytes) -> bytes:
    return struct.pack(">hI", 1, crc32c(body)) + body


def test_structural_damage_under_a_valid_crc_is_caught() -> None:
    good = encode_snapshot([entry()])[6:]
    for body in (good + b"\x00", good[:-1], struct.pack(">i", 5) + good[4:]):
        with pytest.raises(CorruptSnapshotError):
            decode_snapshot(_with_crc(body), "x.snapshot")


def test_list_and_delete_snapshots() -> None:
    fs = mem()
    for offset in (0, 100, 250, 7):
        write_snapshot(fs, DIR, offset, [])
    for name in (
        "00000000000000000000.log",
        "00000000000000000300.snapshot.deleted",
        "00000000000000000400.snapshot.tmp",
        "leader-epoch-checkpoint",
    ):
        fs.open(join(DIR, name), create=True).close()
    assert list_snapshots(fs, DIR) == [0, 7, 100, 250]
    assert delete_snapshots_below(fs, DIR, 100) == [0, 7]
    assert list_snapshots(fs, DIR) == [100, 250]
    assert delete_snapshots_below(fs, DIR, 100) == []
    assert fs.exists(join(DIR, "00000000000000000000.log"))


@pytest.mark.parametrize("operation", ["open", "truncate", "append", "sync", "rename"])
@pytest.mark.parametrize("torn", [False, True])
def test_rewriting_a_snapshot_is_atomic(operation: str, torn: bool) -> None:
    fs = mem()
    old, new = [entry(1)], [entry(1), entry(2), entry(3)]
    path = write_snapshot(fs, DIR, 50, old)
    fs.fail_next(operation, ".snapshot")
    with pytest.raises(OSError):
        write_snapshot(fs, DIR, 50, new)
    fs.crash(random.Random(3), torn=torn)
    assert read_snapshot(fs, path) == old
    assert list_snapshots(fs, DIR) == [50]


@pytest.mark.parametrize("seed", range(10))
def test_a_new_snapshot_survives_a_crash_whole_or_not_at_all(seed: int) -> None:
    fs = mem()
    fs.fail_next("rename", ".snapshot")
    with pytest.raises(OSError):
        write_snapshot(fs, DIR, 60, [entry()])
    fs.crash(random.Random(seed), torn=True)
    assert list_snapshots(fs, DIR) == []
    write_snapshot(fs, DIR, 60, [entry()])
    fs.crash(random.Random(seed), torn=True)
    assert read_snapshot(fs, snapshot_path(DIR, 60)) == [entry()]

from __future__ import annotations

from pathlib import Path

import pytest

from millpond.storage.config import LogConfig
from millpond.storage.fs import FileSystem, OsFileSystem, join
from millpond.storage.segment import LogSegment
from millpond.storage.segment_read import walk_headers
from millpond.wire.records import RecordBatch, iter_batches

from .log_helpers import DIR, T0, batch, clock, mem_fs, offsets_in


def open_segment(fs: FileSystem, base: int = 0, directory: str = DIR, **config: int) -> LogSegment:
    cfg = LogConfig(**config)  # type: ignore[arg-type]
    return LogSegment(fs, directory, base, cfg, clock(), create=True)


def put(segment: LogSegment, data: bytes | bytearray) -> None:
    segment.append(data, list(iter_batches(data)))


def fill(segment: LogSegment, sizes: list[int], first: int = 0) -> list[tuple[int, int]]:
    """Append one batch of each record count; return (base, last) offsets."""
    out = []
    offset = first
    for n in sizes:
        data = batch(n, base_offset=offset, ts=T0 + offset)
        put(segment, data)
        out.append((offset, offset + n - 1))
        offset += n
    return out


@pytest.fixture(params=["mem", "os"])
def seg_fs(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[FileSystem, str]:
    if request.param == "os":
        return OsFileSystem(), str(tmp_path)
    return mem_fs(), DIR


def test_read_returns_the_batch_containing_the_offset(seg_fs: tuple[FileSystem, str]) -> None:
    fs, directory = seg_fs
    seg = open_segment(fs, directory=directory, index_interval_bytes=0)
    spans = fill(seg, [3, 1, 5, 2])
    for base, last in spans:
        for offset in range(base, last + 1):
            data = seg.read(offset, 1 << 20)
            assert data is not None
            assert offsets_in(data.records)[0] == (base, last)
            assert offsets_in(data.records)[-1] == spans[-1]
    assert seg.read(11, 100) is None
    assert seg.read_next_offset() == 11
    if isinstance(fs, OsFileSystem):
        assert seg.log_file.fileno() is not None  # a region the broker can sendfile


def test_index_entries_follow_kafkas_rule() -> None:
    seg = open_segment(mem_fs(), index_interval_bytes=0)
    size = len(batch(2))
    fill(seg, [2, 2, 2])
    # No entry for the first batch (nothing since the last entry yet), then one per
    # batch: (the batch's last offset, the batch's position), as Kafka 4's LogSegment.
    assert seg.offset_index.all_entries() == [(3, size), (5, 2 * size)]
    assert [tuple(e) for e in seg.time_index.all_entries()] == [(T0 + 3, 3), (T0 + 5, 5)]

    # Several batches in one append are indexed one by one, like separate appends.
    together = open_segment(mem_fs(), index_interval_bytes=0)
    data = b"".join(batch(2, base_offset=o, ts=T0 + o) for o in (0, 2, 4))
    together.append(data, list(iter_batches(data)))
    assert together.offset_index.all_entries() == seg.offset_index.all_entries()
    assert together.time_index.all_entries() == seg.time_index.all_entries()

    sparse = open_segment(mem_fs(), index_interval_bytes=3 * size)
    fill(sparse, [2] * 10)
    positions = [e.position for e in sparse.offset_index.all_entries()]
    assert positions == [4 * size, 8 * size]


def test_max_bytes_keeps_whole_batches_and_the_first_one() -> None:
    seg = open_segment(mem_fs(), index_interval_bytes=0)
    fill(seg, [1] * 6)
    size = len(batch(1))
    data = seg.read(0, 3 * size + size // 2)
    assert data is not None and offsets_in(data.records) == [(0, 0), (1, 1), (2, 2)]
    small = seg.read(2, 1)
    assert small is not None and offsets_in(small.records) == [(2, 2)]
    assert not small.first_entry_incomplete
    strict = seg.read(2, 1, min_one_message=False)
    assert strict is not None and strict.records.size == 0 and strict.first_entry_incomplete
    capped = seg.read(1, 1 << 20, max_position=4 * size)
    assert capped is not None and offsets_in(capped.records) == [(1, 1), (2, 2), (3, 3)]


def test_large_batches_and_long_walks() -> None:
    seg = open_segment(mem_fs(), index_interval_bytes=100_000)
    spans = fill(seg, [1, 2000, 1, 3] * 5)  # batches bigger than a header window
    for base, last in spans:
        data = seg.read(last, 10)
        assert data is not None and offsets_in(data.records) == [(base, last)]
    assert seg.read_next_offset() == spans[-1][1] + 1
    headers = list(walk_headers(seg.log_file, 0, seg.size))
    assert [(h.base_offset, h.last_offset) for h in headers] == spans


def test_find_offset_by_timestamp_decodes_only_the_answer() -> None:
    seg = open_segment(mem_fs(), index_interval_bytes=0)
    fill(seg, [4, 4, 4])  # record at offset o has timestamp T0 + o
    found = seg.find_offset_by_timestamp(T0 + 6, 0)
    assert found is not None and (found.timestamp, found.offset) == (T0 + 6, 6)
    found = seg.find_offset_by_timestamp(T0 - 100, 5)
    assert found is not None and found.offset == 5
    assert seg.find_offset_by_timestamp(T0 + 100, 0) is None


def test_truncate_to_removes_the_straddling_batch() -> None:
    seg = open_segment(mem_fs(), index_interval_bytes=0)
    fill(seg, [3, 3, 3])
    removed = seg.truncate_to(4)
    assert removed == 2 * len(batch(3))
    assert seg.read_next_offset() == 3
    assert seg.offset_index.all_entries() == []
    assert seg.max_timestamp_so_far.timestamp == T0 + 2


def test_recover_cuts_garbage_and_rebuilds_the_index() -> None:
    fs = mem_fs()
    seg = open_segment(fs, index_interval_bytes=0)
    fill(seg, [2] * 8)
    good_entries = seg.offset_index.all_entries()
    good_size = seg.size
    seg.log_file.append(b"\x00garbage" * 20)
    assert seg.recover() == 160
    assert seg.size == good_size
    # Rebuilt per batch, so at least the append-time entries' positions are there.
    rebuilt = seg.offset_index.all_entries()
    assert {e.position for e in good_entries} <= {e.position for e in rebuilt}
    assert seg.read_next_offset() == 16


def test_recover_stops_at_a_flipped_bit() -> None:
    fs = mem_fs()
    seg = open_segment(fs)
    fill(seg, [2] * 5)
    size = len(batch(2))
    f = fs.open(join(DIR, "00000000000000000000.log"))
    raw = bytearray(f.read_at(0, seg.size))
    raw[2 * size + 70] ^= 0x10  # inside the third batch's records: CRC fails
    f.truncate(0)
    f.append(raw)
    assert seg.recover() == 3 * size
    assert seg.read_next_offset() == 4


def test_recover_rejects_offsets_that_go_backwards() -> None:
    seg = open_segment(mem_fs())
    put(seg, batch(2, base_offset=0))
    put(seg, batch(2, base_offset=0))  # a duplicate the log would refuse
    assert seg.recover() == len(batch(2))


def test_corrupt_index_is_rebuilt_on_first_use() -> None:
    fs = mem_fs()
    seg = open_segment(fs, index_interval_bytes=0)
    fill(seg, [2] * 4)
    seg.close()
    index = fs.open(join(DIR, "00000000000000000000.index"))
    index.append(b"\x01\x02\x03")  # not a multiple of 8
    reopened = LogSegment(fs, DIR, 0, LogConfig(index_interval_bytes=0), clock())
    data = reopened.read(5, 1 << 20)
    assert data is not None and offsets_in(data.records)[0] == (4, 5)
    assert fs.file_size(join(DIR, "00000000000000000000.index")) % 8 == 0


def test_failed_write_leaves_the_segment_unchanged() -> None:
    fs = mem_fs()
    seg = open_segment(fs, index_interval_bytes=0)
    fill(seg, [2])
    fs.fail_next("append", ".log")
    with pytest.raises(OSError, match="injected"):
        put(seg, batch(2, base_offset=2))
    assert seg.read_next_offset() == 2 and not seg.failed
    fill(seg, [2], first=2)
    assert seg.read_next_offset() == 4
    # Index entries are written on flush, roll or close: a failed .index write surfaces
    # there, and the entry stays pending for the next try.
    fs.fail_next("append", ".index")
    with pytest.raises(OSError, match="injected"):
        seg.flush()
    assert seg.offset_index.entries == 1 and seg.offset_index.pending_entries == 1
    seg.flush()
    assert seg.offset_index.pending_entries == 0


def test_index_entries_reach_the_files_on_flush_roll_and_close() -> None:
    fs = mem_fs()
    seg = open_segment(fs, index_interval_bytes=0)
    index_path = join(DIR, "00000000000000000000.index")
    time_path = join(DIR, "00000000000000000000.timeindex")
    fill(seg, [1, 1, 1])
    assert seg.offset_index.entries == 2 and fs.file_size(index_path) == 0  # pending
    seg.flush()
    assert fs.file_size(index_path) == 16 and fs.file_size(time_path) == 24
    fill(seg, [1], first=3)
    seg.on_become_inactive()  # the roll
    assert fs.file_size(index_path) == 24
    assert seg.offset_index.pending_entries == seg.time_index.pending_entries == 0
    fill(seg, [1], first=4)
    seg.close()
    again = open_segment(fs)
    assert again.offset_index.all_entries() == seg.offset_index.all_entries()
    assert again.time_index.all_entries() == seg.time_index.all_entries()


def test_rename_to_deleted_keeps_open_regions_readable() -> None:
    fs = mem_fs()
    seg = open_segment(fs, index_interval_bytes=0)
    fill(seg, [2, 2, 2])
    data = seg.read(0, 1 << 20)
    assert data is not None
    seg.rename_to_deleted()
    names = fs.listdir(DIR)
    assert "00000000000000000000.log.deleted" in names
    assert "00000000000000000000.index.deleted" in names
    assert not any(n.endswith(".log") for n in names)
    assert len(RecordBatch(data.records.read()[: len(batch(2))]).buffer) == len(batch(2))
    seg.delete()
    assert fs.listdir(DIR) == []


def test_should_roll_conditions() -> None:
    cfg = LogConfig(segment_bytes=1000, segment_ms=100)
    seg = LogSegment(mem_fs(), DIR, 0, cfg, clock(), create=True)
    assert not seg.should_roll(cfg, 500, T0, 0, T0)
    put(seg, batch(1))
    assert seg.should_roll(cfg, 1000, T0, 1, T0)  # size
    assert not seg.should_roll(cfg, 10, T0 + 100, 1, T0)  # record time, not yet past
    assert seg.should_roll(cfg, 10, T0 + 101, 1, T0)  # record time past segment.ms
    assert seg.should_roll(cfg, 10, T0, 2**31, T0)  # relative offset overflow
    jittered = LogSegment(mem_fs(), DIR, 0, cfg, clock(), roll_jitter_ms=30, create=True)
    put(jittered, batch(1))
    assert jittered.should_roll(cfg, 10, T0 + 71, 1, T0)
    no_ts = LogSegment(mem_fs(), DIR, 0, cfg, clock(), create=True)
    put(no_ts, batch(1, ts=-1))
    assert not no_ts.should_roll(cfg, 10, -1, 1, T0 + 100)  # wall clock since creation
    assert no_ts.should_roll(cfg, 10, -1, 1, T0 + 101)

"""Shared helpers for the segment and log tests: real batches, a read-counting file
system, and ways to list what a log holds."""

from __future__ import annotations

from millpond.storage.clock import ManualClock
from millpond.storage.fs import Buffer, File, MemFileSystem
from millpond.storage.segment_read import FileRegion
from millpond.wire.records import NewRecord, RecordBatch, build_batch, iter_batches

from .file_helpers import FileWrapper

T0 = 1_700_000_000_000
DIR = "/data/t-0"


def batch(
    n: int = 1, *, base_offset: int = 0, ts: int = T0, value_size: int = 10, epoch: int = -1
) -> bytearray:
    """A real v2 batch of ``n`` records with timestamps ts, ts+1, ..."""
    records = [NewRecord(value=bytes([i % 256]) * value_size, timestamp=ts + i) for i in range(n)]
    return bytearray(build_batch(records, base_offset=base_offset, partition_leader_epoch=epoch))


def batches_in(data: Buffer) -> list[RecordBatch]:
    return list(iter_batches(data))


def offsets_in(region: FileRegion) -> list[tuple[int, int]]:
    """(base, last) offsets of the batches in a region (which must be whole batches)."""
    return [(b.base_offset, b.last_offset) for b in iter_batches(region.read())]


def mem_fs() -> MemFileSystem:
    fs = MemFileSystem()
    fs.makedirs(DIR)
    return fs


def clock() -> ManualClock:
    return ManualClock(T0)


class CountingFile(FileWrapper):
    """Wraps a file and counts the bytes read through it."""

    def __init__(self, inner: File, counter: list[int]) -> None:
        super().__init__(inner)
        self._counter = counter

    def read_at(self, position: int, size: int) -> bytes:
        data = self._inner.read_at(position, size)
        self._counter[0] += len(data)
        return data


class CountingFs(MemFileSystem):
    """A MemFileSystem that counts bytes read from ``.log`` files."""

    def __init__(self) -> None:
        super().__init__()
        self.log_bytes_read = [0]

    def open(self, path: str, *, create: bool = False) -> File:
        handle = super().open(path, create=create)
        if path.endswith(".log"):
            return CountingFile(handle, self.log_bytes_read)
        return handle

"""Builders for the compaction tests: keyed batches, a compacted log, and what it reads."""

from __future__ import annotations

import random

from millpond.storage.clock import ManualClock
from millpond.storage.config import LogConfig
from millpond.storage.fs import MemFileSystem
from millpond.storage.log import Log
from millpond.wire.records import NewRecord, RecordBatch, build_batch, iter_batches

from .log_helpers import DIR, T0

KV = tuple[bytes | None, bytes | None]
Row = tuple[int, bytes | None, bytes | None]


def kv_batch(
    pairs: list[KV],
    *,
    ts: int = T0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    transactional: bool = False,
) -> bytearray:
    records = [NewRecord(key=k, value=v, timestamp=ts) for k, v in pairs]
    return bytearray(
        build_batch(
            records,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=base_sequence,
            is_transactional=transactional,
        )
    )


def open_log(
    fs: MemFileSystem,
    clock: ManualClock,
    *,
    policy: tuple[str, ...] = ("compact",),
    clean: bool = True,
    **cfg: int | float,
) -> Log:
    config = LogConfig(cleanup_policy=policy, **cfg)  # type: ignore[arg-type]
    return Log(fs, DIR, config, clock, had_clean_shutdown=clean, rng=random.Random(3))


def put(log: Log, *pairs: KV, ts: int | None = None) -> int:
    """Append one batch of ``pairs``; return its first offset."""
    stamp = T0 if ts is None else ts
    return log.append(kv_batch(list(pairs), ts=stamp), assign_offsets=True).first_offset


def all_batches(log: Log) -> list[RecordBatch]:
    """Every batch from the log start to the log end, through :meth:`Log.read`."""
    out: list[RecordBatch] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 30)
        found = list(iter_batches(data.records.read()))
        if not found:
            break
        out += found
        offset = found[-1].last_offset + 1
    return out


def rows(log: Log) -> list[Row]:
    """(offset, key, value) of every data record the log returns to a reader (control
    batches are not records to a consumer)."""
    return [
        (r.offset, r.key, r.value)
        for b in all_batches(log)
        if not b.is_control
        for r in b.records()
    ]


def make_sample(log: Log) -> None:
    """Segments [0-2], [3-5], active [6]: keys overwritten, one tombstone."""
    put(log, (b"k1", b"v1"))
    put(log, (b"k2", b"v1"))
    put(log, (b"k1", b"v2"))
    log.roll()
    put(log, (b"k3", b"v1"))
    put(log, (b"k2", None))
    put(log, (b"k1", b"v3"))
    log.roll()
    put(log, (b"k1", b"v4"))
    log.update_high_watermark(log.log_end_offset)


SAMPLE_BEFORE: list[Row] = [
    (0, b"k1", b"v1"),
    (1, b"k2", b"v1"),
    (2, b"k1", b"v2"),
    (3, b"k3", b"v1"),
    (4, b"k2", None),
    (5, b"k1", b"v3"),
    (6, b"k1", b"v4"),
]
SAMPLE_AFTER: list[Row] = [
    (3, b"k3", b"v1"),
    (4, b"k2", None),
    (5, b"k1", b"v3"),
    (6, b"k1", b"v4"),
]


def new_fs() -> tuple[MemFileSystem, ManualClock]:
    fs = MemFileSystem()
    fs.makedirs(DIR)
    return fs, ManualClock(T0)

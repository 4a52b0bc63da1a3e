"""Micro-benchmark: walk the headers of a 1 MiB records blob and validate every CRC.

This is the per-Produce work of the broker (DESIGN.md section 3): a 1 MiB blob of
16 KiB v2 batches, each header unpacked once and its CRC-32C checked; then the same
with the in-place offset and leader-epoch stamping a leader does on append.
Prints GB/s (medians of repeated runs). Not a test: run it by hand.

    .venv/bin/python bench/record_batches.py
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable

from millpond.wire.records import NewRecord, build_batch, iter_batches

BLOB_SIZE = 1024 * 1024
BATCH_SIZE = 16 * 1024
ROUNDS = 25
LOOPS = 40


def make_blob() -> bytes:
    # 15 records of 1 KiB random values per batch, padded so each batch is 16 KiB.
    parts: list[bytes] = []
    offset = 0
    while len(parts) * BATCH_SIZE < BLOB_SIZE:
        records = [
            NewRecord(b"key-%d" % i, os.urandom(1024), timestamp=1_700_000_000_000)
            for i in range(15)
        ]
        probe = build_batch(records, base_offset=offset)
        pad = BATCH_SIZE - len(probe)
        records.append(NewRecord(b"pad", os.urandom(pad - 12), timestamp=1_700_000_000_000))
        batch = build_batch(records, base_offset=offset)
        assert len(batch) == BATCH_SIZE, len(batch)
        parts.append(batch)
        offset += len(records)
    return b"".join(parts)


def walk_and_validate(blob: bytes | bytearray) -> int:
    n = 0
    for batch in iter_batches(blob):
        batch.validate()
        n += 1
    return n


def walk_validate_and_stamp(blob: bytearray) -> int:
    next_offset = 0
    for batch in iter_batches(blob):
        batch.validate()
        batch.set_base_offset(next_offset)
        batch.set_partition_leader_epoch(7)
        next_offset = batch.next_offset
    return next_offset


def measure(name: str, fn: Callable[[], object], size: int) -> None:
    fn()
    rates = []
    for _ in range(ROUNDS):
        start = time.perf_counter()
        for _ in range(LOOPS):
            fn()
        elapsed = time.perf_counter() - start
        rates.append(size * LOOPS / elapsed / 1e9)
    per_blob_us = size / (statistics.median(rates) * 1e9) * 1e6
    print(
        f"{name:<40} median {statistics.median(rates):6.2f} GB/s  "
        f"(min {min(rates):.2f}, max {max(rates):.2f}; {per_blob_us:.0f} us per 1 MiB)"
    )


def main() -> None:
    blob = make_blob()
    batches = walk_and_validate(blob)
    print(f"blob: {len(blob)} bytes, {batches} batches of {BATCH_SIZE} bytes")
    writable = bytearray(blob)
    measure("walk headers only", lambda: sum(1 for _ in iter_batches(blob)), len(blob))
    measure("walk + CRC-32C validate", lambda: walk_and_validate(blob), len(blob))
    measure(
        "walk + validate + stamp offset/epoch",
        lambda: walk_validate_and_stamp(writable),
        len(blob),
    )


if __name__ == "__main__":
    main()

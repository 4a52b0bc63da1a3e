"""The cleaner's offset map: for each key in the dirty section, the latest offset.

Kafka keeps a fixed-size open-addressing table of key digests (``log.cleaner.dedupe.
buffer.size``); here a dict of 16-byte BLAKE2b digests to offsets, capped at
``capacity`` keys, does the same job. Digests rather than keys keep the memory per key
fixed whatever the key size; as in Kafka, two keys sharing a digest (odds about 2^-128
per pair) would be treated as one.

When the map fills, the walk stops at the last whole batch: :attr:`OffsetMap.latest_offset`
then marks how far this cleaning reaches, records past it are kept untouched, and the
next cleaning starts there.

Used by one cleaning at a time in one thread; not thread-safe.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from hashlib import blake2b
from typing import NamedTuple

from millpond.storage.cleaner.txn_state import TxnState
from millpond.storage.fs import File
from millpond.storage.segment import LogSegment
from millpond.storage.txn_index import AbortedTxn
from millpond.wire.exceptions import DecodeError
from millpond.wire.records import BATCH_HEADER_SIZE, LOG_OVERHEAD, RecordBatch, iter_batches
from millpond.wire.records.batch import HEADER

#: Keys a map holds by default (Kafka's default 128 MiB buffer at 24 bytes a slot and a
#: 0.9 load factor holds about 5 million keys; a dict entry here costs about 100 bytes).
DEFAULT_CAPACITY = 1_000_000
#: Bytes read at a time when walking a segment's batches.
READ_CHUNK = 1024 * 1024


class CleaningAbortedError(Exception):
    """The cleaning was cancelled, or its source segments changed under it."""


def key_digest(key: bytes) -> bytes:
    return blake2b(key, digest_size=16).digest()


class OffsetMap:
    """Key digest -> latest offset, plus the last offset the map covers."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        if capacity < 1:
            raise ValueError(f"offset map capacity {capacity} must be positive")
        self.capacity = capacity
        self._offsets: dict[bytes, int] = {}
        self.latest_offset = -1

    def __len__(self) -> int:
        return len(self._offsets)

    def put(self, key: bytes, offset: int) -> bool:
        """Record ``offset`` for ``key``; False (nothing stored) when a new key would
        not fit."""
        digest = key_digest(key)
        if digest not in self._offsets and len(self._offsets) >= self.capacity:
            return False
        self._offsets[digest] = offset
        return True

    def get(self, key: bytes) -> int:
        """The latest offset of ``key``, or -1 when the dirty section does not hold it."""
        return self._offsets.get(key_digest(key), -1)

    def update_latest_offset(self, offset: int) -> None:
        self.latest_offset = max(self.latest_offset, offset)


class SourceSegment(NamedTuple):
    """A segment as the plan saw it: the object (identity, for the swap check), its base
    offset, its size then, its open ``.log`` file and its ``.txnindex`` path."""

    segment: LogSegment
    base_offset: int
    size: int
    file: File
    txn_index_path: str


Check = Callable[[], None]


def iter_segment_batches(
    source: SourceSegment, check: Check, start: int = 0
) -> Iterator[tuple[int, RecordBatch]]:
    """(position, batch) for every batch of ``source`` from byte ``start`` to the size
    the plan saw, reading a chunk at a time; ``check`` runs between chunks (it raises
    :class:`CleaningAbortedError` when the cleaning was cancelled)."""
    pos, end, want = start, source.size, READ_CHUNK
    while pos < end:
        check()
        chunk = source.file.read_at(pos, min(want, end - pos))
        consumed = 0
        try:
            for batch in iter_batches(chunk, allow_truncated_tail=True):
                yield pos + consumed, batch
                consumed += batch.size_in_bytes
        except DecodeError as exc:
            raise CleaningAbortedError(f"{source.file.path}: {exc}") from None
        if consumed == 0:
            if len(chunk) < BATCH_HEADER_SIZE:
                raise CleaningAbortedError(f"{source.file.path}: truncated at {pos}")
            want = HEADER.unpack_from(chunk)[1] + LOG_OVERHEAD
            if pos + want > end:
                raise CleaningAbortedError(f"{source.file.path}: batch overruns at {pos}")
            continue
        pos += consumed
        want = READ_CHUNK


def build_offset_map(
    sources: Sequence[SourceSegment],
    start: int,
    end: int,
    offset_map: OffsetMap,
    aborted: Sequence[AbortedTxn],
    check: Check,
) -> bool:
    """Fill ``offset_map`` from the keyed records at offsets in [``start``, ``end``) of
    ``sources`` (the segments overlapping that range, in order), skipping batches of
    aborted transactions (their keys must not displace committed records). Returns True
    when the map filled before ``end``."""
    txns = TxnState(aborted)
    for i, source in enumerate(sources):
        for _, batch in iter_segment_batches(source, check):
            if batch.last_offset < start:
                continue
            if batch.base_offset >= end:
                return False
            if batch.is_control:
                txns.on_control_batch(batch)
            elif not txns.on_data_batch(batch):
                for record in batch.records():
                    keyed = record.key is not None and record.offset >= start
                    if keyed and not offset_map.put(record.key or b"", record.offset):
                        return True
            offset_map.update_latest_offset(batch.last_offset)
        following = sources[i + 1].base_offset if i + 1 < len(sources) else end
        offset_map.update_latest_offset(min(following, end) - 1)
    return False

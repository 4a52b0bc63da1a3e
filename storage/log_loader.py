"""Opening a partition directory: find the segments, recover them if needed.

What Kafka's log loader does, in the parts that apply to us:

- Files left in transit are settled first: a compaction swap a crash interrupted is
  rolled back or finished (``*.cleaned`` and ``*.swap`` files, by Kafka's rules: see
  :mod:`millpond.storage.cleaner.swap`); ``*.deleted`` files (a removal the process did
  not live to finish) are removed, as are index files whose ``.log`` is gone.
- A segment whose offset index is missing is rebuilt from its ``.log``.
- After a clean shutdown nothing is scanned: the log end comes from the last segment's
  last index entry plus a walk of the headers after it.
- After an unclean shutdown, every segment from the one holding the recovery point
  onwards is recovered (each batch validated, indexes rebuilt); at the first segment
  that had to be cut, every later segment is dropped, since what follows a hole cannot
  be trusted to be a prefix of what was written. Stricter than Kafka: an unflushed
  segment that ends before the next one begins is a hole too (write-back may keep a
  later file's tail and lose an earlier one's, cutting exactly at a batch boundary),
  so it also drops what follows. Compaction gaps never lie past the recovery point
  as long as the cleaner flushes (and checkpoints) what it swaps in.
- A log whose end falls below the checkpointed log start offset (files deleted behind
  our back) is emptied and restarted at the log start offset.

Not thread-safe; runs before the log is shared.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import NamedTuple

from millpond.storage.cleaner.swap import settle_interrupted_swaps
from millpond.storage.clock import Clock
from millpond.storage.config import LogConfig
from millpond.storage.fs import FileSystem, join
from millpond.storage.names import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    LOG_SUFFIX,
    SEGMENT_SUFFIXES,
    SNAPSHOT_SUFFIX,
    parse_segment_file_name,
    segment_file_name,
)
from millpond.storage.segment import LogSegment
from millpond.wire.records import RecordBatch


class LoadedLog(NamedTuple):
    segments: list[LogSegment]
    log_start_offset: int
    recovery_point: int
    log_end_offset: int
    recovered_bytes_cut: int


def new_segment(
    fs: FileSystem,
    directory: str,
    base_offset: int,
    config: LogConfig,
    clock: Clock,
    rng: random.Random,
) -> LogSegment:
    """A fresh, empty segment; stale files at its name (from a crash mid-roll) go first."""
    for suffix in SEGMENT_SUFFIXES:
        path = join(directory, segment_file_name(base_offset, suffix))
        if fs.exists(path):
            fs.remove(path)
    jitter = config.random_segment_jitter(rng)
    return LogSegment(fs, directory, base_offset, config, clock, roll_jitter_ms=jitter, create=True)


def load_log(
    fs: FileSystem,
    directory: str,
    config: LogConfig,
    clock: Clock,
    rng: random.Random,
    *,
    recovery_point: int,
    log_start_offset: int,
    had_clean_shutdown: bool,
    on_batch: Callable[[RecordBatch], None] | None = None,
) -> LoadedLog:
    """Open (and if needed recover) the segments of ``directory``."""
    bases = _settle_files(fs, directory)
    segments = [
        LogSegment(
            fs, directory, base, config, clock, roll_jitter_ms=config.random_segment_jitter(rng)
        )
        for base in bases
    ]
    cut = 0
    for segment in segments:
        if not segment.index_files_exist():
            cut += segment.recover()
    if not had_clean_shutdown:
        cut += _recover_from(segments, recovery_point, on_batch)
    if not segments:
        segments.append(new_segment(fs, directory, log_start_offset, config, clock, rng))
    log_end = segments[-1].read_next_offset()
    if log_end < log_start_offset:
        for segment in segments:
            segment.close()
            segment.delete()
        segments[:] = [new_segment(fs, directory, log_start_offset, config, clock, rng)]
        log_end = log_start_offset
    start = max(log_start_offset, segments[0].base_offset)
    point = log_end if had_clean_shutdown else min(recovery_point, log_end)
    return LoadedLog(segments, start, point, log_end, cut)


def _settle_files(fs: FileSystem, directory: str) -> list[int]:
    """Settle swaps, remove leftovers and orphaned indexes; return the segments' bases."""
    settle_interrupted_swaps(fs, directory)
    names = fs.listdir(directory)
    bases: set[int] = set()
    indexes: list[tuple[int, str]] = []
    for name in names:
        parsed = parse_segment_file_name(name)
        if parsed is None:
            continue
        if parsed.extra in (DELETED_SUFFIX, CLEANED_SUFFIX):
            fs.remove(join(directory, name))
        elif parsed.extra:
            continue
        elif parsed.suffix == LOG_SUFFIX:
            bases.add(parsed.base_offset)
        elif parsed.suffix != SNAPSHOT_SUFFIX:
            indexes.append((parsed.base_offset, name))
    for base, name in indexes:
        if base not in bases:
            fs.remove(join(directory, name))
    return sorted(bases)


def _recover_from(
    segments: list[LogSegment],
    recovery_point: int,
    on_batch: Callable[[RecordBatch], None] | None,
) -> int:
    """Recover the segments holding offsets >= ``recovery_point``; drop everything
    after the first segment that had to be cut. Returns the bytes cut."""
    first = 0
    for i, segment in enumerate(segments):
        if segment.base_offset <= recovery_point:
            first = i
    for i in range(first, len(segments)):
        cut = segments[i].recover(on_batch)
        following = segments[i + 1].base_offset if i + 1 < len(segments) else None
        if cut or (following is not None and segments[i].read_next_offset() < following):
            for later in segments[i + 1 :]:
                cut += later.size
                later.close()
                later.delete()
            del segments[i + 1 :]
            return cut
    return 0

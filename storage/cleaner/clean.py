"""One cleaning of one log, in three calls: plan (loop), run (any thread), apply (loop).

:func:`plan_cleaning` measures the log (:mod:`.selection`) and, if it needs cleaning,
snapshots what the cleaning will read: every segment object with its size and open
``.log`` file at that moment, the dirty section's bounds, the high watermark and the
time. :func:`run_cleaning` then does all the reading and writing, as Kafka's cleaner:

1. build the offset map (key -> latest offset) over the dirty section; where it stops
   (all of it, or less when the map fills) is the cleaning's end offset;
2. group the segments from the log start up to that end offset so that each group's
   files fit one segment (``segment.bytes``, ``segment.index.bytes``, offsets within
   2^31 of the base), oldest first;
3. clean each group into one ``<first base>.log.cleaned`` segment, batch by batch
   (:mod:`.batch_filter`): the clean section is cleaned again too, which is how
   tombstones and markers whose horizon has passed go.

:func:`apply_cleaning` swaps each group in (:mod:`.swap`), checking first that the group's
segments are still the log's and unchanged; it returns the new checkpoint for
``cleaner-offset-checkpoint`` (:mod:`.checkpoint`), or None when the log moved on and
the cleaning was discarded. :func:`clean_log` does all three in the calling thread.

Threads: see the package docstring. :meth:`CleaningTask.cancel` may be called from any
thread; the worker notices between chunks and raises
:class:`~.offset_map.CleaningAbortedError` (after removing its files).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from millpond.storage.cleaner.batch_filter import BatchFilter, CleanerStats, LastRecord
from millpond.storage.cleaner.offset_map import (
    DEFAULT_CAPACITY,
    CleaningAbortedError,
    OffsetMap,
    SourceSegment,
    build_offset_map,
    iter_segment_batches,
)
from millpond.storage.cleaner.producers import scan_producers
from millpond.storage.cleaner.selection import LogToClean, log_to_clean
from millpond.storage.cleaner.swap import (
    SwapAbortedError,
    remove_segment_files,
    segment_path,
    swap_in,
)
from millpond.storage.cleaner.txn_state import TxnState
from millpond.storage.cleaner.writer import CleanedSegmentWriter
from millpond.storage.config import LogConfig
from millpond.storage.fs import FileSystem
from millpond.storage.log import Log
from millpond.storage.names import CLEANED_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX
from millpond.storage.txn_index import AbortedTxn, TransactionIndex

INT32_MAX = 2**31 - 1


@dataclass
class CleaningTask:
    """What :func:`run_cleaning` needs, captured on the log's thread."""

    log: Log
    candidate: LogToClean
    fs: FileSystem
    directory: str
    config: LogConfig
    now_ms: int
    high_watermark: int
    #: Every segment of the log at plan time, oldest first.
    sources: tuple[SourceSegment, ...]
    producers: Mapping[int, LastRecord] | None
    offset_map_capacity: int = DEFAULT_CAPACITY
    _cancelled: threading.Event = field(default_factory=threading.Event)

    def cancel(self) -> None:
        """Ask the worker to stop (thread-safe); its files are removed."""
        self._cancelled.set()

    def check(self) -> None:
        if self._cancelled.is_set():
            raise CleaningAbortedError(f"cleaning of {self.directory} was cancelled")


@dataclass
class CleanedGroup:
    """A cleaned segment on disk (``.cleaned``) and the segments it replaces."""

    base_offset: int
    sources: tuple[SourceSegment, ...]


@dataclass
class CleaningResult:
    task: CleaningTask
    groups: list[CleanedGroup]
    #: The first offset this cleaning did not reach: the next first dirty offset.
    end_offset: int
    stats: CleanerStats
    #: Set by :func:`apply_cleaning` once every group is in the log.
    applied: bool = False


def plan_cleaning(
    log: Log,
    checkpoint: int | None,
    now_ms: int,
    *,
    last_stable_offset: int | None = None,
    producers: Mapping[int, LastRecord] | None = None,
    force: bool = False,
    offset_map_capacity: int = DEFAULT_CAPACITY,
) -> CleaningTask | None:
    """On the log's thread: a task if ``log`` (compacted) should be cleaned now, else
    None. ``checkpoint`` is the log's ``cleaner-offset-checkpoint`` entry; ``force``
    cleans whatever is cleanable regardless of the dirty ratio."""
    if not log.config.compact:
        return None
    candidate = log_to_clean(log, checkpoint, now_ms, last_stable_offset)
    if candidate.cleanable_bytes == 0 or not (force or candidate.should_clean):
        return None
    sources = tuple(
        SourceSegment(
            s,
            s.base_offset,
            s.size,
            s.log_file,
            segment_path(log.directory, s.base_offset, TXN_INDEX_SUFFIX),
        )
        for s in log.segments
    )
    return CleaningTask(
        log, candidate, log.file_system, log.directory, log.config, now_ms,
        log.high_watermark, sources, producers, offset_map_capacity,
    )  # fmt: skip


def _aborted_in(task: CleaningTask, source: SourceSegment) -> list[AbortedTxn]:
    fs = task.fs
    if not fs.exists(source.txn_index_path):
        return []
    index = TransactionIndex(fs, source.txn_index_path, source.base_offset)
    try:
        return index.all_aborted()
    finally:
        index.close()


def _file_size(fs: FileSystem, path: str) -> int:
    return fs.file_size(path) if fs.exists(path) else 0


def group_segments(
    task: CleaningTask, sources: Sequence[SourceSegment], following: int
) -> list[tuple[SourceSegment, ...]]:
    """Kafka's grouping: consecutive segments whose ``.log``, ``.index`` and
    ``.timeindex`` sizes each sum to at most one segment's limits and whose offsets fit
    4-byte relative offsets from the group's base (``following``: the base after the
    last source, bounding its last offset)."""
    fs, directory, config = task.fs, task.directory, task.config

    def sizes(s: SourceSegment) -> tuple[int, int, int]:
        base = s.base_offset
        return (
            s.size,
            _file_size(fs, segment_path(directory, base, INDEX_SUFFIX)),
            _file_size(fs, segment_path(directory, base, TIME_INDEX_SUFFIX)),
        )

    limits = (config.segment_bytes, config.segment_index_bytes, config.segment_index_bytes)
    groups: list[tuple[SourceSegment, ...]] = []
    i = 0
    while i < len(sources):
        group = [sources[i]]
        total = sizes(sources[i])
        i += 1
        while i < len(sources):
            more = sizes(sources[i])
            bound = sources[i + 1].base_offset if i + 1 < len(sources) else following
            if any(t + m > limit for t, m, limit in zip(total, more, limits, strict=True)):
                break
            if sources[i].size and bound - 1 - group[0].base_offset > INT32_MAX:
                break
            group.append(sources[i])
            total = (total[0] + more[0], total[1] + more[1], total[2] + more[2])
            i += 1
        groups.append(tuple(group))
    return groups


def run_cleaning(task: CleaningTask) -> CleaningResult:
    """In any thread: build the offset map and write the cleaned segments (``.cleaned``
    files). Raises :class:`CleaningAbortedError` when cancelled or when a source segment
    no longer reads as it did (nothing is left on disk then)."""
    candidate = task.candidate
    dirty, uncleanable = candidate.first_dirty, candidate.first_uncleanable
    cleanable = [s for s in task.sources if s.base_offset < uncleanable]
    producers = task.producers
    if producers is None:
        producers = scan_producers(task.sources, task.check)
    aborted = {s.base_offset: _aborted_in(task, s) for s in cleanable}
    dirty_sources = [
        s
        for i, s in enumerate(cleanable)
        if i + 1 == len(cleanable) or cleanable[i + 1].base_offset > dirty
    ]
    dirty_aborted = [
        t
        for s in dirty_sources
        for t in aborted[s.base_offset]
        if t.last_offset >= dirty and t.first_offset < uncleanable
    ]
    offset_map = OffsetMap(task.offset_map_capacity)
    build_offset_map(dirty_sources, dirty, uncleanable, offset_map, dirty_aborted, task.check)
    end_offset = max(offset_map.latest_offset + 1, dirty)
    to_clean = [s for s in cleanable if s.base_offset < end_offset]
    following = next(
        (s.base_offset for s in task.sources if s.base_offset >= end_offset), end_offset
    )
    txns = TxnState()
    rules = BatchFilter(
        offset_map, txns, task.now_ms, task.config.delete_retention_ms, producers,
        task.high_watermark,
    )  # fmt: skip
    groups: list[CleanedGroup] = []
    try:
        for group in group_segments(task, to_clean, following):
            _clean_group(task, group, rules, aborted)
            groups.append(CleanedGroup(group[0].base_offset, group))
    except BaseException:
        discard_cleaning(CleaningResult(task, groups, end_offset, rules.stats))
        raise
    return CleaningResult(task, groups, end_offset, rules.stats)


def _clean_group(
    task: CleaningTask,
    group: tuple[SourceSegment, ...],
    rules: BatchFilter,
    aborted: Mapping[int, list[AbortedTxn]],
) -> None:
    """Write the cleaned segment of ``group``; its files are gone if this raises."""
    writer = CleanedSegmentWriter(
        task.fs, task.directory, group[0].base_offset, task.config.index_interval_bytes
    )
    try:
        last = max((i for i, s in enumerate(group) if s.size), default=-1)
        for i, source in enumerate(group):
            rules.txns.add_aborted(aborted.get(source.base_offset, []))
            for position, batch in iter_segment_batches(source, task.check):
                is_last = i == last and position + batch.size_in_bytes == source.size
                data = rules.filter(batch, keep_empty=is_last)
                if data is not None:
                    writer.append(data)
                for txn in rules.txns.retained_aborted:
                    writer.add_aborted(txn)
                rules.txns.retained_aborted.clear()
        writer.finish()
    except BaseException:
        writer.discard()
        raise


def discard_cleaning(result: CleaningResult) -> None:
    """Remove the ``.cleaned`` files of groups not swapped in."""
    task = result.task
    for group in result.groups:
        remove_segment_files(task.fs, task.directory, group.base_offset, CLEANED_SUFFIX)


def _still_live(log: Log, group: CleanedGroup) -> bool:
    """The group's segments are, in order and unchanged in size, live inactive
    segments of ``log``."""
    live = log.segments
    ids = [id(s) for s in live[:-1]]
    first = id(group.sources[0].segment)
    if first not in ids:
        return False
    at = ids.index(first)
    run = live[at : at + len(group.sources)]
    if len(run) != len(group.sources) or at + len(run) >= len(live):
        return False
    return all(
        seg is src.segment and seg.size == src.size
        for seg, src in zip(run, group.sources, strict=True)
    )


def apply_cleaning(result: CleaningResult) -> int | None:
    """On the log's thread: swap the cleaned groups in, oldest first. Returns the new
    cleaner checkpoint (:attr:`CleaningResult.end_offset`), or None if a group's sources
    changed (that group and the later ones are discarded; earlier ones stay, which is
    harmless: a cleaned segment is a valid compaction on its own)."""
    log = result.task.log
    for i, group in enumerate(result.groups):
        if not _still_live(log, group):
            discard_cleaning(CleaningResult(result.task, result.groups[i:], 0, result.stats))
            return None
        old = [s.segment for s in group.sources]
        try:
            swap_in(log, old, group.base_offset)
        except SwapAbortedError:
            discard_cleaning(CleaningResult(result.task, result.groups[i + 1 :], 0, result.stats))
            return None
    result.applied = True
    return result.end_offset


def clean_log(
    log: Log,
    checkpoint: int | None,
    now_ms: int,
    *,
    last_stable_offset: int | None = None,
    producers: Mapping[int, LastRecord] | None = None,
    force: bool = False,
    offset_map_capacity: int = DEFAULT_CAPACITY,
) -> CleaningResult | None:
    """Plan, run and apply in the calling thread (tests, tools, a broker without a
    worker). Returns the result (see :attr:`CleaningResult.applied`), or None when the
    log did not need cleaning."""
    task = plan_cleaning(
        log, checkpoint, now_ms, last_stable_offset=last_stable_offset, producers=producers,
        force=force, offset_map_capacity=offset_map_capacity,
    )  # fmt: skip
    if task is None:
        return None
    result = run_cleaning(task)
    apply_cleaning(result)
    return result

"""Putting cleaned segments in place, crash-safely, and settling a swap a crash interrupted.

A cleaned segment is written as ``<base>.log.cleaned`` (with ``.index.cleaned``,
``.timeindex.cleaned`` and, when it has aborted transactions, ``.txnindex.cleaned``),
synced, and then swapped in for the group of old segments it was cleaned from, on the
thread that owns the log, in Kafka's order:

1. every ``.cleaned`` file is renamed ``.swap`` (the ``.log`` last), then the directory
   is synced (the renames that follow must never reach the disk before these);
2. :meth:`~millpond.storage.log.Log.replace_segments` retires the old segments as
   retention does (renamed ``.deleted``, their open files kept for
   ``file.delete.delay.ms``, so fetches already sending from them keep valid bytes);
3. every ``.swap`` file is renamed to its final name (the ``.log`` first; the new
   segment's base is the first old segment's, so that name was freed in step 2), the
   directory is synced, and the new segment takes the old ones' place in the log's list.

What a reload finds after a crash (:func:`settle_interrupted_swaps`, run by the log
loader before it lists segments), by Kafka's loader rules:

- any ``.cleaned`` file: the swap of that base, and of every base above it, had not
  finished step 1: their ``.swap`` files and all ``.cleaned`` files are removed. The
  old segments are untouched: the log has its old contents.
- ``.swap`` files and no ``.cleaned`` at or below them: step 1 finished. Every plain
  segment file whose base lies in [swap base, swap's next offset) is an old segment
  the swap replaces (the cleaner keeps the group's last batch, even emptied, so the
  range covers every old segment; see :mod:`.batch_filter`) and is removed; ``.deleted``
  files are removed by the loader anyway; the ``.swap`` files take their final names.
  The log has its new contents.

A failure inside a running broker: in step 1, the cleaner removes the group's new files
and the log is unchanged (if even that fails, the log goes offline, and its reload
rolls the swap back); in steps 2-3, the log goes offline keeping its old segments in
memory (still readable), and its reload finishes the swap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from millpond.storage.fs import FileSystem, join
from millpond.storage.names import (
    CLEANED_SUFFIX,
    LOG_SUFFIX,
    SEGMENT_SUFFIXES,
    SWAP_SUFFIX,
    parse_segment_file_name,
    segment_file_name,
)
from millpond.storage.segment_read import CorruptSegmentError, walk_headers

if TYPE_CHECKING:
    from millpond.storage.log import Log
    from millpond.storage.segment import LogSegment

LOG_LAST = (*(s for s in SEGMENT_SUFFIXES if s != LOG_SUFFIX), LOG_SUFFIX)
LOG_FIRST = (LOG_SUFFIX, *(s for s in SEGMENT_SUFFIXES if s != LOG_SUFFIX))


class SwapAbortedError(Exception):
    """The swap was refused or undone before the log changed; the log is as it was."""


def segment_path(directory: str, base: int, suffix: str, extra: str = "") -> str:
    return join(directory, segment_file_name(base, suffix, extra))


def rename_suffixes(
    fs: FileSystem, directory: str, base: int, old: str, new: str, *, log_first: bool
) -> None:
    """Rename the files of segment ``base`` from suffix ``old`` to ``new`` (those that
    exist). Into ``.swap`` the ``.log`` goes last, out of it first: either way a
    reload that sees ``<base>.log.swap`` knows step 1 finished and step 3 has not
    started (an index already renamed in step 3 is rebuilt if the reload removes it)."""
    for suffix in LOG_FIRST if log_first else LOG_LAST:
        src = segment_path(directory, base, suffix, old)
        if fs.exists(src):
            fs.rename(src, segment_path(directory, base, suffix, new))


def remove_segment_files(fs: FileSystem, directory: str, base: int, *extras: str) -> None:
    """Remove segment ``base``'s files carrying any of ``extras`` (those that exist)."""
    for extra in extras:
        for suffix in SEGMENT_SUFFIXES:
            path = segment_path(directory, base, suffix, extra)
            if fs.exists(path):
                fs.remove(path)


def swap_in(log: Log, old: Sequence[LogSegment], base: int) -> None:
    """Swap the cleaned segment ``base`` in for ``old`` (see the module docstring).
    Raises :class:`SwapAbortedError` if the log did not change."""
    fs, directory = log.file_system, log.directory
    try:
        rename_suffixes(fs, directory, base, CLEANED_SUFFIX, SWAP_SUFFIX, log_first=False)
        fs.sync_dir(directory)
    except OSError as exc:
        try:
            remove_segment_files(fs, directory, base, CLEANED_SUFFIX, SWAP_SUFFIX)
        except OSError:
            log.mark_offline()
            raise exc from None
        raise SwapAbortedError(f"swap of segment {base} undone: {exc}") from exc

    def install() -> None:
        rename_suffixes(fs, directory, base, SWAP_SUFFIX, "", log_first=True)
        fs.sync_dir(directory)

    log.replace_segments(old, [base], install)


def _next_offset(fs: FileSystem, path: str, base: int) -> int:
    """One past the last offset of the valid batches at the start of ``path``."""
    handle = fs.open(path)
    last = base - 1
    try:
        for header in walk_headers(handle, 0, handle.size()):
            last = header.last_offset
    except CorruptSegmentError:
        pass
    finally:
        handle.close()
    return last + 1


def settle_interrupted_swaps(fs: FileSystem, directory: str) -> None:
    """Roll back or finish a swap a crash interrupted (see the module docstring)."""
    cleaned: set[int] = set()
    swaps: dict[int, list[str]] = {}
    for name in fs.listdir(directory):
        parsed = parse_segment_file_name(name)
        if parsed is None:
            continue
        if parsed.extra == CLEANED_SUFFIX:
            cleaned.add(parsed.base_offset)
        elif parsed.extra == SWAP_SUFFIX:
            swaps.setdefault(parsed.base_offset, []).append(name)
    lowest_cleaned = min(cleaned, default=None)
    for base in list(swaps):
        if lowest_cleaned is not None and base >= lowest_cleaned:
            for name in swaps.pop(base):
                fs.remove(join(directory, name))
    for base in cleaned:
        remove_segment_files(fs, directory, base, CLEANED_SUFFIX)
    if not swaps:
        return
    ranges = [
        (base, _next_offset(fs, segment_path(directory, base, LOG_SUFFIX, SWAP_SUFFIX), base))
        for base in swaps
        if fs.exists(segment_path(directory, base, LOG_SUFFIX, SWAP_SUFFIX))
    ]
    for name in fs.listdir(directory):
        parsed = parse_segment_file_name(name)
        if parsed is None or parsed.extra or parsed.suffix not in SEGMENT_SUFFIXES:
            continue
        if any(low <= parsed.base_offset < high for low, high in ranges):
            fs.remove(join(directory, name))
    for base in swaps:
        rename_suffixes(fs, directory, base, SWAP_SUFFIX, "", log_first=True)
    fs.sync_dir(directory)

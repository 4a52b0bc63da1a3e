"""Shared machinery of the fixed-size-entry index files (``.index`` and ``.timeindex``).

A segment's offset and time indexes are flat files of big-endian, fixed-size entries
with no header and no checksum: Kafka rebuilds them from the ``.log`` when they look
wrong, so they only need to be cheap to read and easy to sanity-check. This module
holds what both kinds share: opening and loading the file lazily, appending an entry to
the file and to an in-memory copy, truncating to a number of entries, syncing, trimming
a torn tail, renaming, deleting, and the checks that decide whether an index must be
rebuilt. :mod:`offset_index` and :mod:`time_index` add the entry layouts and lookups.

Where we differ from Kafka, and why
-----------------------------------
Kafka memory-maps each index and preallocates it to ``segment.index.bytes`` (zero
filled), trimming it to the valid entries when the segment is rolled or closed. We keep
the file exactly as long as its entries (append only, never preallocated) and keep the
entries in typed arrays (``array``) searched with ``bisect``, so a lookup is O(log n) in
C and nothing is mapped. The bytes on disk are the same as a trimmed Kafka index, so
Kafka's tools read our files, and we read Kafka's: a file whose length is not a multiple
of the entry size is loaded as its whole entries (the tail is ignored, as Kafka's loader
does) but fails :meth:`IndexFile.sanity_check`, exactly as in Kafka; :meth:`close`
trims such a tail away, as Kafka's close trims to the valid size. A Kafka index left
untrimmed by an unclean shutdown (its zero-filled preallocated tail reads as entries)
fails our stricter order checks and so gets rebuilt, which Kafka's recovery does anyway.

Loading is lazy: constructing an index neither opens nor reads its file (opening ten
thousand partitions must not read every index); the first operation that needs the
entries opens the file (creating it if missing, like Kafka's index constructor) and
reads it whole. The ``is_full`` cap is ``max_index_size // entry_size`` entries,
whatever the file's length, where Kafka's cap follows the mapped length.

Instances are not thread-safe: the owning segment serializes access to them.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from itertools import islice
from operator import le, lt
from typing import ClassVar

from millpond.storage.fs import File, FileSystem

INT32_MAX = 2**31 - 1
DEFAULT_MAX_INDEX_SIZE = 10 * 1024 * 1024  # segment.index.bytes' default

# The entry arrays use C int for int32 fields and long long for int64 ones.
if array("i").itemsize != 4 or array("q").itemsize != 8:  # pragma: no cover
    raise ImportError("millpond's index files need a 4-byte C int and an 8-byte long long")


class IndexFileError(Exception):
    """Base of the errors raised by the index modules."""


class CorruptIndexError(IndexFileError):
    """An index file failed its sanity check: the caller should rebuild it from the log."""


class IndexOrderError(IndexFileError, ValueError):
    """An append would break the index's order (Kafka's InvalidOffsetException)."""


class IndexFullError(IndexFileError):
    """An append to an index that already holds its maximum number of entries."""


class IndexOffsetOverflowError(IndexFileError, ValueError):
    """An offset that does not fit the 4-byte offset relative to the base offset."""


def is_strictly_increasing(values: Sequence[int]) -> bool:
    # map over two iterators keeps the loop in C (about 40 ns an entry).
    return all(map(lt, values, islice(values, 1, None)))


def is_non_decreasing(values: Sequence[int]) -> bool:
    return all(map(le, values, islice(values, 1, None)))


class IndexFile:
    """A file of ``entry_size``-byte entries mirrored by in-memory arrays.

    Subclasses set :attr:`entry_size` and implement :meth:`_load_entries`,
    :meth:`_truncate_entries` and :meth:`_check_entries`; they append through
    :meth:`_append_entry`, which writes the file first and only then lets the subclass
    update its arrays, so a failed write leaves the in-memory entries unchanged.
    """

    entry_size: ClassVar[int]
    kind: ClassVar[str] = "index"

    def __init__(
        self,
        fs: FileSystem,
        path: str,
        base_offset: int,
        max_index_size: int = DEFAULT_MAX_INDEX_SIZE,
    ) -> None:
        if max_index_size < self.entry_size:
            raise ValueError(f"invalid max index size {max_index_size} for {path}")
        self._fs = fs
        self._path = path
        self._base_offset = base_offset
        self._max_index_size = max_index_size
        self._file: File | None = None
        self._keep_open = False  # set once an entry is appended (the active segment)
        self._loaded = False
        self._count = 0
        # Bytes in the file as far as we know: entries * entry_size, plus a partial tail
        # when the file was torn (by a crash, or by a failed append).
        self._length = 0

    # -- properties ----------------------------------------------------------------------

    @property
    def path(self) -> str:
        return self._path

    @property
    def base_offset(self) -> int:
        return self._base_offset

    @property
    def max_index_size(self) -> int:
        return self._max_index_size

    @property
    def max_entries(self) -> int:
        return self._max_index_size // self.entry_size

    @property
    def is_loaded(self) -> bool:
        """Whether the file has been read (for tests of laziness and for diagnostics)."""
        return self._loaded

    @property
    def entries(self) -> int:
        """The number of entries (loads the file)."""
        self._ensure_loaded()
        return self._count

    @property
    def is_full(self) -> bool:
        self._ensure_loaded()
        return self._count >= self.max_entries

    @property
    def size_in_bytes(self) -> int:
        """Bytes taken by the valid entries."""
        self._ensure_loaded()
        return self._count * self.entry_size

    @property
    def length(self) -> int:
        """The file's length as last seen (may include a torn tail)."""
        self._ensure_loaded()
        return self._length

    def relative_offset(self, offset: int) -> int:
        """``offset - base_offset``, which must fit a non-negative int32."""
        relative = offset - self._base_offset
        if relative < 0 or relative > INT32_MAX:
            raise IndexOffsetOverflowError(
                f"offset {offset} does not fit {self._path} (base offset {self._base_offset})"
            )
        return relative

    def can_append_offset(self, offset: int) -> bool:
        return 0 <= offset - self._base_offset <= INT32_MAX

    def resize(self, max_index_size: int) -> None:
        """Change the cap on the number of entries (``segment.index.bytes`` changed).

        Nothing on disk changes: the file is never preallocated."""
        if max_index_size < self.entry_size:
            raise ValueError(f"invalid max index size {max_index_size} for {self._path}")
        self._max_index_size = max_index_size

    # -- loading -------------------------------------------------------------------------

    def load(self) -> None:
        """Open (creating it if missing) and read the file now, if not done yet."""
        self._ensure_loaded()

    def _handle(self) -> File:
        if self._file is None:
            self._file = self._fs.open(self._path, create=True)
        return self._file

    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        handle = self._handle()
        size = handle.size()
        data = handle.read_at(0, size) if size else b""
        count = len(data) // self.entry_size
        self._load_entries(memoryview(data)[: count * self.entry_size], count)
        self._count = count
        self._length = len(data)
        self._loaded = True
        if not self._keep_open:
            # Inactive segments are read, never written: holding their descriptors would
            # cost two per segment (ten thousand partitions exhaust the process limit).
            self._close_handle()

    # -- mutation ------------------------------------------------------------------------

    def _append_entry(self, data: bytes) -> None:
        """Write one encoded entry at the end of the valid entries.

        A torn tail (left by a crash or a failed append) is cut off first, so entries
        stay aligned. If the write fails, the file's length is re-read so the next
        append (or :meth:`close`) trims whatever part of the entry got written."""
        self._keep_open = True
        handle = self._handle()
        valid = self._count * self.entry_size
        if self._length != valid:
            handle.truncate(valid)
            self._length = valid
        try:
            handle.append(data)
        except BaseException:
            self._length = handle.size()
            raise
        self._length += len(data)
        self._count += 1

    def truncate_to_entries(self, n: int) -> None:
        """Keep only the first ``n`` entries (more than there are: no change)."""
        if n < 0:
            raise ValueError(f"cannot truncate {self._path} to {n} entries")
        if not self._loaded and n == 0:
            self.reset()
            return
        self._ensure_loaded()
        n = min(n, self._count)
        size = n * self.entry_size
        if size != self._length:
            self._handle().truncate(size)
        self._length = size
        self._count = n
        self._truncate_entries(n)

    def reset(self) -> None:
        """Remove every entry (does not need to read the file first)."""
        handle = self._handle()
        if not self._loaded or self._length:
            handle.truncate(0)
        self._load_entries(memoryview(b""), 0)
        self._count = 0
        self._length = 0
        self._loaded = True

    def trim_to_valid_size(self) -> None:
        """Cut a torn tail so the file holds whole entries only (Kafka trims on roll and
        close; our files have no preallocated space, so only a torn tail can be cut)."""
        if self._loaded:
            valid = self._count * self.entry_size
            if self._length != valid:
                self._handle().truncate(valid)
                self._length = valid
            return
        if not self._fs.exists(self._path):
            return
        size = self._fs.file_size(self._path)
        if size % self.entry_size:
            self._handle().truncate(size - size % self.entry_size)

    def flush(self) -> None:
        """Make the appended entries durable (nothing to do if the file was never written)."""
        if self._file is not None:
            self._file.sync()

    def close(self) -> None:
        """Trim a torn tail and release the file handle. The in-memory entries are kept;
        any later use reopens the file."""
        try:
            self.trim_to_valid_size()
        finally:
            self._close_handle()

    def _close_handle(self) -> None:
        self._keep_open = False
        if self._file is not None:
            handle, self._file = self._file, None
            handle.close()

    def rename_to(self, new_path: str) -> None:
        """Rename the file (e.g. to ``.deleted``); the index keeps working at the new path."""
        self._close_handle()
        if self._fs.exists(self._path):
            self._fs.rename(self._path, new_path)
        self._path = new_path

    def delete(self) -> bool:
        """Remove the file; True if it existed. The index is empty afterwards."""
        self._close_handle()
        self._load_entries(memoryview(b""), 0)
        self._count = 0
        self._length = 0
        self._loaded = False
        if not self._fs.exists(self._path):
            return False
        self._fs.remove(self._path)
        return True

    # -- checks --------------------------------------------------------------------------

    def sanity_check(self) -> None:
        """Raise :class:`CorruptIndexError` if the index is obviously damaged.

        Kafka's own checks (the ones that make its log loader rebuild an index) come
        first, in Kafka's order, then our stricter order checks over every entry, which a
        rebuilt index always passes."""
        self._ensure_loaded()
        self._check_entries()
        if self._length % self.entry_size:
            raise CorruptIndexError(
                f"{self.kind} file {self._path} is corrupt: its length {self._length} is not "
                f"a multiple of the entry size {self.entry_size}"
            )
        self._check_order()

    # -- subclass hooks ------------------------------------------------------------------

    def _load_entries(self, data: memoryview, count: int) -> None:
        """Replace the in-memory entries with the ``count`` entries in ``data``."""
        raise NotImplementedError

    def _truncate_entries(self, n: int) -> None:
        """Keep the first ``n`` in-memory entries."""
        raise NotImplementedError

    def _check_entries(self) -> None:
        """Kafka's entry checks (first/last entry against the base offset)."""
        raise NotImplementedError

    def _check_order(self) -> None:
        """Our full order check over every entry."""
        raise NotImplementedError

"""Shared machinery of the index files (``.index``, ``.timeindex``, and ``.txnindex``).

A segment's offset and time indexes are flat files of big-endian, fixed-size entries
with no header and no checksum: Kafka rebuilds them from the ``.log`` when they look
wrong, so they only need to be cheap to read and easy to sanity-check. This module
holds what both kinds share: opening and loading the file lazily, appending an entry to
the in-memory copy and writing it out later, truncating to a number of entries, syncing,
trimming a torn tail, renaming, deleting, the checks that decide whether an index must
be rebuilt, and what the two entry layouts have in common (the relative offsets).
:mod:`offset_index` and :mod:`time_index` add the entry layouts and lookups.
:class:`IndexPath` (the file handle, renaming, deleting, writing after the valid bytes)
also serves :mod:`txn_index`.

Where we differ from Kafka, and why
-----------------------------------
Kafka memory-maps each index and preallocates it to ``segment.index.bytes`` (zero
filled), trimming it to the valid entries when the segment is rolled or closed. We keep
the file exactly as long as its entries (never preallocated) and keep the entries in
typed arrays (``array``) searched with ``bisect``, so a lookup is O(log n) in C and
nothing is mapped. The bytes on disk are the same as a trimmed Kafka index, so Kafka's
tools read our files, and we read Kafka's: a file whose length is not a multiple of the
entry size is loaded as its whole entries (the tail is ignored, as Kafka's loader does)
but fails :meth:`IndexFile.sanity_check`, exactly as in Kafka; :meth:`IndexFile.close`
trims such a tail away, as Kafka's close trims to the valid size. A Kafka index left
untrimmed by an unclean shutdown (its zero-filled preallocated tail reads as entries)
fails our stricter order checks and so gets rebuilt, which Kafka's recovery does anyway.

Appended entries are *pending*: they live in the arrays only, and reach the file (one
write for all of them) on :meth:`IndexFile.flush`, on roll
(:meth:`IndexFile.trim_to_valid_size`) and on :meth:`IndexFile.close`. That is what
Kafka's mmap amounts to (entries sit in the page cache until the segment is flushed),
without a ``pwrite`` of a few bytes per produce request. Durability is unchanged: a
flushed segment has its entries written and synced; after an unclean shutdown the
segments past the recovery point are recovered and their indexes rebuilt from the
``.log``. A failed write leaves the entries pending (and the file's torn part is cut
before the next try), so the error surfaces from the flush, roll or close.

Loading is lazy: constructing an index neither opens nor reads its file (opening ten
thousand partitions must not read every index); the first operation that needs the
entries opens the file (creating it if missing, like Kafka's index constructor) and
reads it whole. The ``is_full`` cap is ``max_index_size // entry_size`` entries,
whatever the file's length, where Kafka's cap follows the mapped length.

Instances are not thread-safe: the owning segment serializes access to them.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left
from collections.abc import Sequence
from itertools import islice
from operator import le, lt
from typing import ClassVar

from millpond.storage.fs import Buffer, File, FileSystem

INT32_MAX = 2**31 - 1
DEFAULT_MAX_INDEX_SIZE = 10 * 1024 * 1024  # segment.index.bytes' default
#: The arrays hold native-order integers; the files are big-endian.
SWAP_BYTES = sys.byteorder == "little"

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


class IndexPath:
    """An index's file: its path, a handle opened on demand, the length last seen
    (a torn tail included), renaming and deleting. Subclasses keep the entries and
    implement :meth:`_forget_entries`."""

    __slots__ = (
        "_file",
        "_fs",
        "_length",
        "_loaded",
        "_path",
    )

    def __init__(self, fs: FileSystem, path: str) -> None:
        self._fs = fs
        self._path = path
        self._file: File | None = None
        self._loaded = False
        # Bytes in the file as far as we know: the written entries, plus a partial tail
        # when the file was torn (by a crash, or by a failed write).
        self._length = 0

    @property
    def path(self) -> str:
        return self._path

    @property
    def is_loaded(self) -> bool:
        """Whether the file has been read (for tests of laziness and for diagnostics)."""
        return self._loaded

    def _handle(self) -> File:
        if self._file is None:
            self._file = self._fs.open(self._path, create=True)
        return self._file

    def _close_handle(self) -> None:
        if self._file is not None:
            handle, self._file = self._file, None
            handle.close()

    def _write_after(self, valid: int, data: Buffer) -> None:
        """Write ``data`` after the first ``valid`` bytes of the file, cutting a torn
        tail first so entries stay aligned. If the write fails, the file's length is
        re-read so the next write (or a trim) cuts whatever part of ``data`` got in."""
        handle = self._handle()
        if self._length != valid:
            handle.truncate(valid)
            self._length = valid
        try:
            handle.append(data)
        except BaseException:
            self._length = handle.size()
            raise
        self._length += len(data)

    def rename_to(self, new_path: str) -> None:
        """Rename the file (e.g. to ``.deleted``); the index keeps working at the new path."""
        self._close_handle()
        if self._fs.exists(self._path):
            self._fs.rename(self._path, new_path)
        self._path = new_path

    def delete(self) -> bool:
        """Remove the file; True if it existed. The index is empty afterwards."""
        self._close_handle()
        self._forget_entries()
        self._length = 0
        self._loaded = False
        if not self._fs.exists(self._path):
            return False
        self._fs.remove(self._path)
        return True

    def _forget_entries(self) -> None:
        """Drop the in-memory entries (pending ones included)."""
        raise NotImplementedError


class IndexFile(IndexPath):
    """A file of ``entry_size``-byte entries mirrored by in-memory arrays.

    Subclasses set :attr:`entry_size` and implement :meth:`_load_entries`,
    :meth:`_encode_entries`, :meth:`_truncate_entries`, :meth:`_check_entries` and
    :meth:`_check_order`; they append to their arrays (``_relative`` among them, the
    entries' offsets relative to the base offset) and count the entry in ``_count``.
    Entries from ``_written`` on are pending (see the module docstring).
    """

    __slots__ = (
        "_base_offset",
        "_count",
        "_keep_open",
        "_max_entries",
        "_max_index_size",
        "_written",
    )

    entry_size: ClassVar[int]
    kind: ClassVar[str] = "index"
    _relative: array[int]

    def __init__(
        self,
        fs: FileSystem,
        path: str,
        base_offset: int,
        max_index_size: int = DEFAULT_MAX_INDEX_SIZE,
    ) -> None:
        if max_index_size < self.entry_size:
            raise ValueError(f"invalid max index size {max_index_size} for {path}")
        super().__init__(fs, path)
        self._base_offset = base_offset
        self._max_index_size = max_index_size
        self._max_entries = max_index_size // self.entry_size
        self._keep_open = False  # set once entries are written (the active segment)
        self._count = 0
        self._written = 0  # entries in the file; the rest are pending
        self._load_entries(memoryview(b""), 0)

    # -- properties ----------------------------------------------------------------------

    @property
    def base_offset(self) -> int:
        return self._base_offset

    @property
    def max_index_size(self) -> int:
        return self._max_index_size

    @property
    def max_entries(self) -> int:
        return self._max_entries

    @property
    def entries(self) -> int:
        """The number of entries, pending ones included (loads the file)."""
        if not self._loaded:
            self._ensure_loaded()
        return self._count

    @property
    def pending_entries(self) -> int:
        """Entries appended but not yet written to the file."""
        return self._count - self._written

    @property
    def is_full(self) -> bool:
        if not self._loaded:
            self._ensure_loaded()
        return self._count >= self._max_entries

    @property
    def size_in_bytes(self) -> int:
        """Bytes taken by the valid entries (pending ones included)."""
        self._ensure_loaded()
        return self._count * self.entry_size

    @property
    def length(self) -> int:
        """The file's length as last seen (may include a torn tail; excludes pending
        entries)."""
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
        self._max_entries = max_index_size // self.entry_size

    def to_bytes(self) -> bytes:
        """The valid entries exactly as they are (or will be) on disk."""
        self._ensure_loaded()
        return self._encode_entries(0)

    def _check_slot(self, n: int) -> None:
        self._ensure_loaded()
        if not 0 <= n < self._count:
            raise IndexError(f"entry {n} of {self._path}, which has {self._count} entries")

    # -- loading -------------------------------------------------------------------------

    def load(self) -> None:
        """Open (creating it if missing) and read the file now, if not done yet."""
        self._ensure_loaded()

    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        handle = self._handle()
        size = handle.size()
        data = handle.read_at(0, size) if size else b""
        count = len(data) // self.entry_size
        self._load_entries(memoryview(data)[: count * self.entry_size], count)
        self._count = self._written = count
        self._length = len(data)
        self._loaded = True
        if not self._keep_open:
            # Inactive segments are read, never written: holding their descriptors would
            # cost two per segment (ten thousand partitions exhaust the process limit).
            self._close_handle()

    # -- mutation ------------------------------------------------------------------------

    def _write_pending(self) -> None:
        """Write the pending entries to the file, after the written ones."""
        written, count = self._written, self._count
        if written == count:
            return
        self._keep_open = True
        self._write_after(written * self.entry_size, self._encode_entries(written))
        self._written = count

    def truncate_to(self, offset: int) -> None:
        """Drop every entry whose offset is >= ``offset``."""
        self._ensure_loaded()
        self.truncate_to_entries(bisect_left(self._relative, offset - self._base_offset))

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
        if size < self._length:
            self._handle().truncate(size)
            self._length = size
        self._written = min(self._written, n)
        self._count = n
        self._truncate_entries(n)

    def reset(self) -> None:
        """Remove every entry (does not need to read the file first)."""
        handle = self._handle()
        if not self._loaded or self._length:
            handle.truncate(0)
        self._forget_entries()
        self._length = 0
        self._loaded = True

    def _forget_entries(self) -> None:
        self._load_entries(memoryview(b""), 0)
        self._count = self._written = 0

    def trim_to_valid_size(self) -> None:
        """Write the pending entries and cut a torn tail, so the file holds exactly the
        valid entries (done on roll; Kafka trims its preallocated files then)."""
        if self._loaded:
            self._write_pending()
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
        """Write the pending entries and make the file durable (nothing to do if the file
        was never written)."""
        self._write_pending()
        if self._file is not None:
            self._file.sync()

    def close(self) -> None:
        """Write the pending entries, trim a torn tail and release the file handle. The
        in-memory entries are kept; any later use reopens the file."""
        try:
            self.trim_to_valid_size()
        finally:
            self._close_handle()

    def _close_handle(self) -> None:
        self._keep_open = False
        super()._close_handle()

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

    def _check_last_offset(self) -> None:
        """Kafka's check shared by both kinds: the last entry is not below the base."""
        if self._count and self._relative[-1] < 0:
            raise CorruptIndexError(
                f"corrupt {self.kind} {self._path}: it has entries but its last offset "
                f"{self._base_offset + self._relative[-1]} is below the base offset "
                f"{self._base_offset}"
            )

    # -- subclass hooks ------------------------------------------------------------------

    def _load_entries(self, data: memoryview, count: int) -> None:
        """Replace the in-memory entries with the ``count`` entries in ``data``."""
        raise NotImplementedError

    def _encode_entries(self, start: int) -> bytes:
        """The file's bytes of the in-memory entries from ``start`` on."""
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

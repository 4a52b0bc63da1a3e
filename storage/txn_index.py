"""The transaction index (``.txnindex``): the aborted transactions a segment's markers close.

A read_committed fetch must tell the client which producers' records in the fetched
range belong to aborted transactions. The segment whose log holds an ABORT marker gets
one entry per aborted transaction, in the order of the markers.

On-disk format (Kafka's, unchanged): a flat sequence of 34-byte entries, no header, no
checksum, each big-endian:

    version             int16   0 (the only version)
    producer_id         int64
    first_offset        int64   the transaction's first offset (maybe in an older segment)
    last_offset         int64   the offset of its ABORT marker
    last_stable_offset  int64   the partition's LSO when the marker was written

Entries are appended in strictly increasing ``last_offset`` order. Unlike the offset and
time indexes there is no size cap, and, as in Kafka, the file is not created until the
first entry is appended (most segments never see an abort).

Kafka's reader inspects only the first byte of the version field and fails on a
version above 0 when it meets the entry; we reject any non-zero version, and we report
it as :class:`CorruptIndexError` (when the file is loaded), so the segment's indexes
are rebuilt rather than the log directory failed. A trailing partial entry is ignored
on reading, as Kafka ignores it, and, unlike Kafka (which would append after it and
misalign every later entry), we cut it off before the next append.

Entries are kept in memory (loaded lazily on first use) besides the file.
"""

from __future__ import annotations

import struct
from itertools import pairwise
from typing import NamedTuple

from millpond.storage.fs import FileSystem
from millpond.storage.index_file import CorruptIndexError, IndexOrderError, IndexPath

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34
CURRENT_VERSION = 0


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def to_bytes(self) -> bytes:
        return _ENTRY.pack(
            CURRENT_VERSION,
            self.producer_id,
            self.first_offset,
            self.last_offset,
            self.last_stable_offset,
        )


class TransactionIndex(IndexPath):
    """Aborted transactions of one segment (see the module docstring). Unlike the offset
    and time indexes, an append writes the file at once (aborts are rare)."""

    __slots__ = (
        "_start_offset",
        "_txns",
    )

    def __init__(self, fs: FileSystem, path: str, start_offset: int) -> None:
        super().__init__(fs, path)
        self._start_offset = start_offset
        self._txns: list[AbortedTxn] = []

    # -- properties ----------------------------------------------------------------------

    @property
    def start_offset(self) -> int:
        return self._start_offset

    @property
    def entries(self) -> int:
        self._ensure_loaded()
        return len(self._txns)

    @property
    def length(self) -> int:
        """The file's length as last seen (0 when there is no file)."""
        self._ensure_loaded()
        return self._length

    # -- loading -------------------------------------------------------------------------

    def load(self) -> None:
        """Read the file now, if not done yet (a missing file is an empty index)."""
        self._ensure_loaded()

    def _ensure_loaded(self) -> None:
        if self._loaded:
            return
        if self._file is None and not self._fs.exists(self._path):
            txns: list[AbortedTxn] = []
            length = 0
        else:
            handle = self._handle()
            size = handle.size()
            data = handle.read_at(0, size) if size else b""
            length = len(data)
            whole = length - length % ENTRY_SIZE
            txns = []
            for version, *fields in _ENTRY.iter_unpack(memoryview(data)[:whole]):
                if version != CURRENT_VERSION:
                    raise CorruptIndexError(
                        f"transaction index {self._path} has an entry of version {version}; "
                        f"the only known version is {CURRENT_VERSION}"
                    )
                txns.append(AbortedTxn(*fields))
        self._txns = txns
        self._length = length
        self._loaded = True

    # -- reads ---------------------------------------------------------------------------

    def all_aborted(self) -> list[AbortedTxn]:
        self._ensure_loaded()
        return list(self._txns)

    def collect_aborted(
        self, fetch_offset: int, upper_bound_offset: int
    ) -> tuple[list[AbortedTxn], bool]:
        """The aborted transactions overlapping ``[fetch_offset, upper_bound_offset)``,
        and whether the search is complete (True) or must go on into the next segment.

        Kafka's rule, entry by entry in file order: an entry overlaps when its last offset
        is >= ``fetch_offset`` and its first offset is < ``upper_bound_offset``; the
        search stops, complete, at the first entry whose last stable offset is >=
        ``upper_bound_offset`` (no transaction still open below the bound can be aborted
        by a later marker)."""
        self._ensure_loaded()
        found: list[AbortedTxn] = []
        for txn in self._txns:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return found, True
        return found, False

    def to_bytes(self) -> bytes:
        """The valid entries exactly as they are (or should be) on disk."""
        self._ensure_loaded()
        return b"".join(txn.to_bytes() for txn in self._txns)

    # -- writes --------------------------------------------------------------------------

    def append(self, aborted: AbortedTxn) -> None:
        """Add an aborted transaction; its last offset must be above the previous one's."""
        self._ensure_loaded()
        if self._txns and aborted.last_offset <= self._txns[-1].last_offset:
            raise IndexOrderError(
                f"aborted transaction last offset {aborted.last_offset} is not above "
                f"{self._txns[-1].last_offset}, the last one in {self._path}"
            )
        self._write_after(len(self._txns) * ENTRY_SIZE, aborted.to_bytes())
        self._txns.append(aborted)

    def truncate_to(self, offset: int) -> None:
        """Drop every entry whose last offset is >= ``offset``."""
        self._ensure_loaded()
        keep = len(self._txns)
        while keep and self._txns[keep - 1].last_offset >= offset:
            keep -= 1
        if keep == len(self._txns):
            return
        self._handle().truncate(keep * ENTRY_SIZE)
        self._length = keep * ENTRY_SIZE
        del self._txns[keep:]

    def reset(self) -> None:
        """Remove every entry (without reading the file; a missing file stays missing)."""
        if self._file is not None or self._fs.exists(self._path):
            self._handle().truncate(0)
        self._txns = []
        self._length = 0
        self._loaded = True

    def flush(self) -> None:
        if self._file is not None:
            self._file.sync()

    def close(self) -> None:
        """Release the file handle (entries stay in memory; later use reopens the file)."""
        self._close_handle()

    def _forget_entries(self) -> None:
        self._txns = []

    # -- checks --------------------------------------------------------------------------

    def sanity_check(self) -> None:
        """Raise :class:`CorruptIndexError` if the index is obviously damaged.

        Kafka's check first (no transaction may end below the segment's start offset),
        then ours: last offsets strictly increasing, as every writer appends them. A
        torn tail is not an error here (Kafka ignores it too)."""
        self._ensure_loaded()
        for txn in self._txns:
            if txn.last_offset < self._start_offset:
                raise CorruptIndexError(
                    f"transaction index {self._path} is corrupt: aborted transaction {txn} "
                    f"ends below the start offset {self._start_offset}"
                )
        for earlier, later in pairwise(self._txns):
            if later.last_offset <= earlier.last_offset:
                raise CorruptIndexError(
                    f"transaction index {self._path} is corrupt: last offsets "
                    f"{earlier.last_offset} then {later.last_offset} do not increase"
                )

"""What a segment read returns, and the header-only walk over a ``.log`` file.

Kept apart from :mod:`millpond.storage.segment` so the broker's fetch path can depend
on the small result types without the segment machinery. The walk reads batch headers
only (never records) through the wire layer's header struct.

Stateless; safe to call from any thread that owns the file it reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple

from millpond.storage.fs import File
from millpond.wire.records import BATCH_HEADER_SIZE, LOG_OVERHEAD
from millpond.wire.records.batch import HEADER, MAGIC, MIN_BATCH_LENGTH

#: Bytes read at a time by a header walk (a window holds many small batch headers).
HEADER_WINDOW = 16 * 1024


class CorruptSegmentError(Exception):
    """Bytes below the segment's end that are not a valid batch header: the file was
    damaged after it was written or recovered (the log must be recovered or go offline)."""


class FileRegion(NamedTuple):
    """``size`` bytes at ``position`` of an open segment file: what a fetch response
    carries, to be sent with ``os.sendfile`` or ``pread`` + send."""

    file: File
    position: int
    size: int

    def read(self) -> bytes:
        return self.file.read_at(self.position, self.size) if self.size else b""


class FetchData(NamedTuple):
    """A segment read: whole batches from the one holding ``fetch_offset``."""

    fetch_offset: int
    segment_base_offset: int
    position: int
    records: FileRegion
    #: The first batch is larger than the limit and min_one_message was off.
    first_entry_incomplete: bool = False


class BatchHeader(NamedTuple):
    """Where a batch sits and the header fields the log needs (no records decoded)."""

    position: int
    size: int
    base_offset: int
    last_offset: int
    max_timestamp: int
    partition_leader_epoch: int


class TimestampAndOffset(NamedTuple):
    timestamp: int
    offset: int
    leader_epoch: int | None


def walk_headers(file: File, start: int, end: int) -> Iterator[BatchHeader]:
    """The batch headers in ``[start, end)`` of ``file``, ``start`` being a batch start.

    Reads a window of headers at a time (one pread serves many small batches; a large
    batch costs one small read), unpacks each with the wire layer's header struct and
    never touches records. :func:`iter_batches` cannot serve here because it wants whole
    batches in memory; the two checks it makes on a header (length, magic) are repeated.
    """
    pos = start
    buf = b""
    buf_start = start
    while pos < end:
        off = pos - buf_start
        if off + BATCH_HEADER_SIZE > len(buf):
            buf = file.read_at(pos, max(BATCH_HEADER_SIZE, min(HEADER_WINDOW, end - pos)))
            buf_start, off = pos, 0
            if len(buf) < BATCH_HEADER_SIZE:
                raise CorruptSegmentError(f"{file.path}: truncated batch header at {pos}")
        h = HEADER.unpack_from(buf, off)
        size = h[1] + LOG_OVERHEAD
        if h[1] < MIN_BATCH_LENGTH or h[3] != MAGIC or pos + size > end:
            raise CorruptSegmentError(f"{file.path}: invalid batch header at {pos}")
        yield BatchHeader(pos, size, h[0], h[0] + h[6], h[8], h[2])
        pos += size

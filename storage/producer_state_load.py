"""Loading a partition's producer state from its log, as Kafka's ``UnifiedLog`` does
when it opens a log: the newest valid ``.snapshot`` file, then a header-only walk of the
batches after it up to the log end (records are never decoded; a transaction marker's
batch is the one thing read whole), then a snapshot at the log end so that the next
load after a crash starts there.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from millpond.storage.fs import Buffer, File
from millpond.storage.log import Log
from millpond.storage.producer_state import ProducerStateManager
from millpond.storage.segment_read import walk_headers
from millpond.wire.records import BATCH_HEADER_SIZE, RecordBatch
from millpond.wire.records.batch import CONTROL_BIT, HEADER, MIN_BATCH_LENGTH

#: Where ``batch_length`` sits in a batch header (after the int64 base offset).
_BATCH_LENGTH = struct.Struct(">i")
_BATCH_LENGTH_OFFSET = 8
_ATTRIBUTES_FIELD = 5
_PRODUCER_ID_FIELD = 9


def load_producer_state(producers: ProducerStateManager, log: Log) -> None:
    """Kafka's load of a log's producer state: the newest valid snapshot, then a replay
    of the batch headers from its offset to the log end, then a snapshot at the log end
    (so the next load after a crash starts there)."""
    fs, directory = log.file_system, log.directory
    start = producers.load(fs, directory, log.log_start_offset, log.log_end_offset)
    if start < log.log_end_offset:
        for batch in _producer_batches(log, start):
            producers.replay_batch(batch)
        producers.update_map_end_offset(log.log_end_offset)
    producers.take_snapshot(fs, directory)


def _producer_batches(log: Log, start: int) -> Iterator[RecordBatch]:
    """The batches from the one holding ``start`` to the log end that carry a producer
    id, as header-only :class:`RecordBatch` views (a 61-byte header whose
    ``batch_length`` says "no records"). A control batch is read whole: the state reads
    a transaction marker's record."""
    segments = log.segments
    for i, segment in enumerate(segments):
        following = segments[i + 1].base_offset if i + 1 < len(segments) else None
        if following is not None and following <= start:
            continue
        position = 0
        if segment.base_offset < start:
            first = segment.translate_offset(start)
            if first is None:
                continue
            position = first.position
        file = _WindowedFile(segment.log_file)
        for header in walk_headers(file, position, segment.size):
            raw = file.read_at(header.position, BATCH_HEADER_SIZE)
            fields = HEADER.unpack_from(raw)
            if fields[_PRODUCER_ID_FIELD] < 0:
                continue
            if fields[_ATTRIBUTES_FIELD] & CONTROL_BIT:
                yield RecordBatch(segment.log_file.read_at(header.position, header.size))
                continue
            view = bytearray(raw)
            _BATCH_LENGTH.pack_into(view, _BATCH_LENGTH_OFFSET, MIN_BATCH_LENGTH)
            yield RecordBatch(view)


class _WindowedFile:
    """A segment file that keeps the last window it read, so the header walk's windows
    also serve the full-header reads that follow (one pread per window, not per batch)."""

    def __init__(self, file: File) -> None:
        self._file = file
        self._start = 0
        self._buf = b""

    @property
    def path(self) -> str:
        return self._file.path

    def size(self) -> int:
        return self._file.size()

    def read_at(self, position: int, size: int) -> bytes:
        offset = position - self._start
        if offset >= 0 and offset + size <= len(self._buf):
            return self._buf[offset : offset + size]
        data = self._file.read_at(position, size)
        self._start, self._buf = position, data
        return data

    def append(self, data: Buffer) -> None:
        raise OSError(f"{self.path}: opened for the producer state replay, read-only")

    def truncate(self, size: int) -> None:
        raise OSError(f"{self.path}: opened for the producer state replay, read-only")

    def sync(self) -> None:
        """Nothing to sync: reads only."""

    def close(self) -> None:
        """The segment owns the file."""

    def fileno(self) -> int | None:
        return self._file.fileno()

"""Record batches v2 (magic 2): a zero-copy view over the 61-byte header, and the walk.

Layout (big-endian), ``batch_length`` counting everything after itself::

    0  base_offset int64          27 base_timestamp int64
    8  batch_length int32         35 max_timestamp int64
    12 partition_leader_epoch i32 43 producer_id int64
    16 magic int8 (= 2)           51 producer_epoch int16
    17 crc uint32                 53 base_sequence int32
    21 attributes int16           57 records_count int32
    23 last_offset_delta int32    61 records (compressed as a whole if a codec is set)

The CRC-32C covers bytes 21 to the end. The broker's produce path reads only this
header: it validates the length, magic and CRC, then stamps ``base_offset`` and
``partition_leader_epoch`` in place (the two fields the CRC leaves out, so they can be
rewritten without recomputing it). Hence a view that unpacks the header with a single
precompiled struct call and leaves the records untouched until someone asks.
"""

from __future__ import annotations

from collections.abc import Iterator
from struct import Struct

from millpond.wire.crc32c import crc32c
from millpond.wire.exceptions import DecodeError
from millpond.wire.records.compression import COMPRESSION_MASK, Compression, decompress
from millpond.wire.records.record import Record, iter_records
from millpond.wire.records.timestamp_type import TIMESTAMP_TYPE_BIT, TimestampType

Buffer = bytes | bytearray | memoryview

MAGIC = 2
HEADER = Struct(">qiibIhiqqqhii")
BATCH_HEADER_SIZE = HEADER.size  # 61
#: base_offset + batch_length: the bytes a batch_length does not count.
LOG_OVERHEAD = 12
#: The smallest valid batch_length: a header with no records.
MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - LOG_OVERHEAD
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
MAX_TIMESTAMP_OFFSET = 35

TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

#: Default cap on a batch's decompressed records section (a decompression bomb guard).
DEFAULT_MAX_RECORDS_SIZE = 64 * 1024 * 1024

_INT64 = Struct(">q")
_INT32 = Struct(">i")
_INT16 = Struct(">h")
_UINT32 = Struct(">I")
_INT32_MAX = 0x7FFFFFFF

_new = object.__new__


class RecordBatch:
    """A v2 record batch over a buffer slice of exactly its size; nothing is copied.

    Header fields are unpacked once, at construction. The ``set_*`` methods write
    through to the buffer, so they need a writable one (a ``bytearray`` or a memoryview
    of one), and keep the unpacked header in step.
    """

    __slots__ = ("_buf", "_h")

    _buf: memoryview
    _h: tuple[int, ...]

    def __init__(self, buf: Buffer) -> None:
        """View ``buf`` as one batch; it must hold exactly one whole batch."""
        view = _byte_view(buf)
        if len(view) < BATCH_HEADER_SIZE:
            raise DecodeError(f"record batch of {len(view)} bytes is shorter than its header")
        h = HEADER.unpack_from(view, 0)
        if h[3] != MAGIC:
            raise DecodeError(f"record batch magic {h[3]}, expected {MAGIC}")
        if h[1] + LOG_OVERHEAD != len(view):
            raise DecodeError(f"batch_length {h[1]} does not match a buffer of {len(view)} bytes")
        self._buf = view
        self._h = h

    # --- header fields -------------------------------------------------------------

    @property
    def base_offset(self) -> int:
        return self._h[0]

    @property
    def batch_length(self) -> int:
        return self._h[1]

    @property
    def partition_leader_epoch(self) -> int:
        return self._h[2]

    @property
    def magic(self) -> int:
        return self._h[3]

    @property
    def crc(self) -> int:
        return self._h[4]

    @property
    def attributes(self) -> int:
        return self._h[5]

    @property
    def last_offset_delta(self) -> int:
        return self._h[6]

    @property
    def base_timestamp(self) -> int:
        return self._h[7]

    @property
    def max_timestamp(self) -> int:
        return self._h[8]

    @property
    def producer_id(self) -> int:
        return self._h[9]

    @property
    def producer_epoch(self) -> int:
        return self._h[10]

    @property
    def base_sequence(self) -> int:
        return self._h[11]

    @property
    def records_count(self) -> int:
        return self._h[12]

    # --- derived -------------------------------------------------------------------

    @property
    def compression(self) -> Compression:
        """The codec of the records section; an unknown id raises :class:`DecodeError`."""
        codec = self._h[5] & COMPRESSION_MASK
        try:
            return Compression(codec)
        except ValueError:
            raise DecodeError(f"unknown compression codec id {codec}") from None

    @property
    def timestamp_type(self) -> TimestampType:
        if self._h[5] & TIMESTAMP_TYPE_BIT:
            return TimestampType.LOG_APPEND_TIME
        return TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self._h[5] & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self._h[5] & CONTROL_BIT)

    @property
    def has_delete_horizon(self) -> bool:
        """Compaction set a delete horizon; ``base_timestamp`` then holds it (KIP-534)."""
        return bool(self._h[5] & DELETE_HORIZON_BIT)

    @property
    def delete_horizon_ms(self) -> int | None:
        return self._h[7] if self._h[5] & DELETE_HORIZON_BIT else None

    @property
    def last_offset(self) -> int:
        return self._h[0] + self._h[6]

    @property
    def next_offset(self) -> int:
        return self._h[0] + self._h[6] + 1

    @property
    def size_in_bytes(self) -> int:
        return self._h[1] + LOG_OVERHEAD

    @property
    def last_sequence(self) -> int:
        """Sequence of the last record; sequences wrap from int32 max to 0, as Kafka's do."""
        base = self._h[11]
        if base == NO_SEQUENCE:
            return NO_SEQUENCE
        return (base + self._h[6]) % (_INT32_MAX + 1)

    @property
    def has_producer_id(self) -> bool:
        return self._h[9] > NO_PRODUCER_ID

    @property
    def buffer(self) -> memoryview:
        """The batch's bytes (a view of the caller's buffer)."""
        return self._buf

    @property
    def records_data(self) -> memoryview:
        """The records section as stored (compressed if a codec is set)."""
        return self._buf[BATCH_HEADER_SIZE:]

    # --- CRC -----------------------------------------------------------------------

    def compute_crc(self) -> int:
        """CRC-32C of bytes 21 to the end, computed over the buffer without copying."""
        return crc32c(self._buf[ATTRIBUTES_OFFSET:])

    def is_valid(self) -> bool:
        """Does the stored CRC match the bytes?"""
        return crc32c(self._buf[ATTRIBUTES_OFFSET:]) == self._h[4]

    def validate(self) -> None:
        """Raise :class:`DecodeError` (Kafka's ``CORRUPT_MESSAGE``) on a CRC mismatch."""
        computed = crc32c(self._buf[ATTRIBUTES_OFFSET:])
        if computed != self._h[4]:
            raise DecodeError(
                f"record batch at offset {self._h[0]} is corrupt "
                f"(stored crc {self._h[4]:#010x}, computed {computed:#010x})"
            )

    # --- in-place rewrites ---------------------------------------------------------

    def set_base_offset(self, base_offset: int) -> None:
        """Stamp the batch's first offset; not covered by the CRC, so nothing else changes."""
        _INT64.pack_into(self._writable(), 0, base_offset)
        self._h = (base_offset, *self._h[1:])

    def set_partition_leader_epoch(self, epoch: int) -> None:
        """Stamp the leader epoch of the append; not covered by the CRC either."""
        _INT32.pack_into(self._writable(), PARTITION_LEADER_EPOCH_OFFSET, epoch)
        h = self._h
        self._h = (h[0], h[1], epoch, *h[3:])

    def set_max_timestamp(self, timestamp_type: TimestampType, max_timestamp: int) -> None:
        """Rewrite the timestamp type bit and ``max_timestamp``, then the CRC.

        This is what a ``LogAppendTime`` topic does on append: readers then report
        ``max_timestamp`` as every record's timestamp, so the records stay untouched
        (as in Kafka, ``base_timestamp`` keeps the producer's value).
        """
        buf = self._writable()
        attributes = self._h[5] & ~TIMESTAMP_TYPE_BIT
        if timestamp_type == TimestampType.LOG_APPEND_TIME:
            attributes |= TIMESTAMP_TYPE_BIT
        _INT16.pack_into(buf, ATTRIBUTES_OFFSET, attributes)
        _INT64.pack_into(buf, MAX_TIMESTAMP_OFFSET, max_timestamp)
        _UINT32.pack_into(buf, CRC_OFFSET, crc32c(buf[ATTRIBUTES_OFFSET:]))
        self._h = HEADER.unpack_from(buf, 0)

    def set_log_append_time(self, timestamp: int) -> None:
        """Shorthand for ``set_max_timestamp(LOG_APPEND_TIME, timestamp)``."""
        self.set_max_timestamp(TimestampType.LOG_APPEND_TIME, timestamp)

    def _writable(self) -> memoryview:
        if self._buf.readonly:
            raise TypeError("record batch buffer is read-only; rewrite a bytearray")
        return self._buf

    # --- records -------------------------------------------------------------------

    def records(self, *, max_size: int = DEFAULT_MAX_RECORDS_SIZE) -> Iterator[Record]:
        """Iterate the records, decompressing the section first (at most ``max_size``).

        Raises :class:`DecodeError` (possibly mid-iteration) on malformed records, a
        count that does not match ``records_count``, or trailing bytes.
        """
        data: Buffer = self._buf[BATCH_HEADER_SIZE:]
        codec = self.compression
        if codec is not Compression.NONE:
            data = decompress(codec, data, max_size=max_size)
        h = self._h
        log_append_time = h[8] if h[5] & TIMESTAMP_TYPE_BIT else None
        return iter_records(data, h[12], h[0], h[7], log_append_time)

    def __repr__(self) -> str:
        return (
            f"RecordBatch(base_offset={self.base_offset}, last_offset_delta="
            f"{self.last_offset_delta}, records_count={self.records_count}, "
            f"size={self.size_in_bytes}, attributes={self.attributes:#x}, "
            f"producer_id={self.producer_id}, base_sequence={self.base_sequence})"
        )


def _byte_view(buf: Buffer) -> memoryview:
    view = memoryview(buf)
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view


def read_magic(buf: Buffer, pos: int = 0) -> int:
    """The magic byte of the batch or legacy message at ``pos`` (both keep it at +16).

    Lets a reader of a mixed log (old segments hold magic 0/1) pick the right parser.
    """
    if len(buf) - pos <= MAGIC_OFFSET:
        raise DecodeError("truncated record batch: no magic byte")
    magic = buf[pos + MAGIC_OFFSET]
    return magic if magic < 128 else magic - 256


def iter_batches(buf: Buffer, *, allow_truncated_tail: bool = False) -> Iterator[RecordBatch]:
    """Walk the v2 batches of a records blob (a Produce ``records`` field, a segment slice).

    Checks each batch's length and magic, never its CRC (call :meth:`RecordBatch.validate`)
    and never its records. A truncated or malformed batch raises :class:`DecodeError`;
    with ``allow_truncated_tail`` (Fetch responses, where brokers cut the last batch at
    the size limit) an incomplete last batch ends the walk instead.
    """
    view = _byte_view(buf)
    end = len(view)
    pos = 0
    unpack = HEADER.unpack_from
    while pos < end:
        remaining = end - pos
        if remaining < BATCH_HEADER_SIZE:
            if allow_truncated_tail:
                return
            raise DecodeError(f"truncated record batch: {remaining} bytes left at {pos}")
        h = unpack(view, pos)
        size = h[1] + LOG_OVERHEAD
        if h[1] < MIN_BATCH_LENGTH:
            raise DecodeError(f"record batch at {pos} has invalid batch_length {h[1]}")
        if h[3] != MAGIC:
            raise DecodeError(f"record batch at {pos} has magic {h[3]}, expected {MAGIC}")
        if size > remaining:
            if allow_truncated_tail:
                return
            raise DecodeError(
                f"truncated record batch at {pos}: {size} bytes announced, {remaining} left"
            )
        batch = _new(RecordBatch)
        batch._buf = view[pos : pos + size]
        batch._h = h
        yield batch
        pos += size

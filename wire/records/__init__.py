"""Record batches (v2) and legacy message sets (v0/v1), with their compression codecs.

The broker's hot path needs only :func:`iter_batches` and the :class:`RecordBatch`
header view (length, magic, CRC, in-place offset stamping); everything that looks
inside records (:meth:`RecordBatch.records`, the builders, legacy sets) is for
compaction, transactions, conversion, tools and tests.
"""

from millpond.wire.records.batch import (
    BATCH_HEADER_SIZE,
    DEFAULT_MAX_RECORDS_SIZE,
    LOG_OVERHEAD,
    RecordBatch,
    iter_batches,
    read_magic,
)
from millpond.wire.records.builder import NewRecord, build_batch, build_control_batch
from millpond.wire.records.compression import Compression, compress, decompress
from millpond.wire.records.control import (
    ControlKey,
    ControlRecordType,
    EndTxnMarker,
    build_control_key,
    build_end_txn_marker,
    parse_control_key,
    parse_end_txn_marker,
)
from millpond.wire.records.legacy import (
    LegacyRecord,
    build_legacy_message_set,
    iter_legacy_entries,
    iter_legacy_records,
)
from millpond.wire.records.record import Record
from millpond.wire.records.timestamp_type import NO_TIMESTAMP, TimestampType

__all__ = [
    "BATCH_HEADER_SIZE",
    "DEFAULT_MAX_RECORDS_SIZE",
    "LOG_OVERHEAD",
    "NO_TIMESTAMP",
    "Compression",
    "ControlKey",
    "ControlRecordType",
    "EndTxnMarker",
    "LegacyRecord",
    "NewRecord",
    "Record",
    "RecordBatch",
    "TimestampType",
    "build_batch",
    "build_control_batch",
    "build_control_key",
    "build_end_txn_marker",
    "build_legacy_message_set",
    "compress",
    "decompress",
    "iter_batches",
    "iter_legacy_entries",
    "iter_legacy_records",
    "parse_control_key",
    "parse_end_txn_marker",
    "read_magic",
]

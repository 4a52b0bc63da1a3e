"""The log's errors (each maps to one Kafka error code) and its append report.

Separate from :mod:`millpond.storage.log` so request handlers can catch and map them
without importing the log itself. Immutable values; thread-safe.
"""

from __future__ import annotations

from typing import NamedTuple


class LogError(Exception):
    """Base of the errors the log raises for bad requests (mapped to Kafka codes)."""


class OffsetOutOfRangeError(LogError):
    """OFFSET_OUT_OF_RANGE: outside [log start offset, log end offset]."""


class CorruptRecordError(LogError):
    """CORRUPT_MESSAGE: a batch with a bad length, magic or CRC."""


class RecordTooLargeError(LogError):
    """MESSAGE_TOO_LARGE / RECORD_LIST_TOO_LARGE: over max.message.bytes or segment.bytes."""


class InvalidAppendOffsetError(LogError):
    """A replicated append whose offsets do not follow the log end, or go backwards."""


class LogOfflineError(OSError):
    """KAFKA_STORAGE_ERROR: a write failed and could not be undone; the log is unusable
    until it is reopened (which recovers it)."""


class LogAppendInfo(NamedTuple):
    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    log_start_offset: int
    num_batches: int
    records_count: int
    valid_bytes: int

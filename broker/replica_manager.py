"""Partitions as the broker serves them: logs found through the metadata image.

Single node for now: this broker leads every partition and is its whole ISR, so the
high watermark follows the log end after each append (``acks=all`` is satisfied by
the leader alone). The structure is the one a cluster needs: the image says which
partitions exist and at which leader epoch; the log manager owns their logs.

Each open partition also has its idempotent-producer state
(:class:`~millpond.broker.producer_state.ProducerStateManager`), created with the log:
loaded from the partition's newest ``.snapshot`` file, then brought up to the log end
by a header-only walk of the batches after it (records are never decoded; a
transaction marker's batch is the one thing read whole). An append is judged by the
state first (CRC and size checks come before it, as in Kafka's ``UnifiedLog.append``);
a duplicate of one of the producer's last 5 batches appends nothing and answers the
original offsets. A snapshot is written when an append rolls a segment (at the new
segment's base offset, before the batches in it are committed to the state) and for
every open partition at a clean shutdown (:meth:`ReplicaManager.shutdown`), so a
restart replays little. :meth:`ReplicaManager.remove_expired_producers` is the hook a
periodic task calls every ``producer.id.expiration.check.interval.ms``.

Not thread-safe: the broker's event loop makes every call.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterator, Mapping
from typing import NamedTuple

from millpond.broker.producer_state import PRODUCER_ID_EXPIRATION_MS_DEFAULT, ProducerStateManager
from millpond.controller.image import MetadataImage, TopicImage
from millpond.storage.clock import Clock, SystemClock
from millpond.storage.config import ConfigError, LogConfig
from millpond.storage.fs import Buffer, File
from millpond.storage.log import Log
from millpond.storage.log_manager import LogManager
from millpond.storage.log_types import CorruptRecordError, LogAppendInfo, RecordTooLargeError
from millpond.storage.segment_read import walk_headers
from millpond.wire import DecodeError
from millpond.wire.errors import ErrorCode
from millpond.wire.records import BATCH_HEADER_SIZE, RecordBatch, iter_batches
from millpond.wire.records.batch import CONTROL_BIT, HEADER, MIN_BATCH_LENGTH

_log = logging.getLogger("millpond.broker")

#: Where ``batch_length`` sits in a batch header (after the int64 base offset).
_BATCH_LENGTH = struct.Struct(">i")
_BATCH_LENGTH_OFFSET = 8
_ATTRIBUTES_FIELD = 5
_PRODUCER_ID_FIELD = 9


class AppendResult(NamedTuple):
    error: ErrorCode
    message: str | None = None
    info: LogAppendInfo | None = None
    #: The batches duplicate ones already in the log (``info`` holds the originals'
    #: offsets, and the log append time is the original batch's timestamp, as Kafka says).
    duplicate: bool = False


class _Partition(NamedTuple):
    log: Log
    producers: ProducerStateManager


class ReplicaManager:
    def __init__(
        self,
        log_manager: LogManager,
        image: Callable[[], MetadataImage],
        log_config: Callable[[Mapping[str, str]], LogConfig],
        node_id: int,
        *,
        clock: Clock | None = None,
        producer_id_expiration_ms: int = PRODUCER_ID_EXPIRATION_MS_DEFAULT,
    ) -> None:
        self._logs = log_manager
        self._image = image
        self._log_config = log_config
        self.node_id = node_id
        self._clock: Clock = clock or SystemClock()
        self._producer_id_expiration_ms = producer_id_expiration_ms
        self._on_append: list[Callable[[], None]] = []
        self._partitions: dict[tuple[str, int], _Partition] = {}

    def on_append(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` after every successful append (wakes long-poll fetches)."""
        self._on_append.append(callback)

    def log_config(self, topic: str) -> LogConfig:
        """The topic's effective config: broker-level defaults overlaid by its own (the
        broker config knows which topic configs storage uses)."""
        try:
            return self._log_config(self._image().topic_config(topic))
        except ConfigError:
            return self._log_config({})

    def log(self, topic: TopicImage, partition: int) -> Log | None:
        """The partition's log, created on first use; None if the image has no such
        partition or another broker leads it."""
        registration = topic.partitions.get(partition)
        if registration is None or registration.leader != self.node_id:
            return None
        log = self._logs.get_log(topic.name, partition)
        if log is None:
            config = self.log_config(topic.name)
            log = self._logs.get_or_create_log(topic.name, partition, topic.topic_id, config)
        if log.high_watermark < log.log_end_offset:
            # A single node is its partitions' whole ISR: everything in a log it leads
            # is committed, also what a previous run of this broker wrote.
            log.update_high_watermark(log.log_end_offset)
        return log

    def producer_state(self, topic: TopicImage, partition: int) -> ProducerStateManager | None:
        """The partition's producer state (loaded with its log), or None as :meth:`log`."""
        log = self.log(topic, partition)
        return None if log is None else self._partition(topic.name, partition, log).producers

    def append(self, topic: TopicImage, partition: int, records: memoryview) -> AppendResult:
        log = self.log(topic, partition)
        if log is None:
            return AppendResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        producers = self._partition(topic.name, partition, log).producers
        if records.readonly:  # offsets and epoch are stamped into the batches in place
            records = memoryview(bytearray(records))
        try:
            batches = _checked_batches(records, log.config.max_message_bytes)
        except RecordTooLargeError as exc:
            return AppendResult(ErrorCode.MESSAGE_TOO_LARGE, str(exc))
        except CorruptRecordError as exc:
            return AppendResult(ErrorCode.CORRUPT_MESSAGE, str(exc))
        problem = _invalid_records(batches, log.config, self._clock.now_ms())
        if problem is not None:
            return AppendResult(*problem)
        check = producers.check_and_prepare(batches)
        if check.duplicate is not None:
            original = check.duplicate
            info = LogAppendInfo(
                original.first_offset, original.last_offset, original.timestamp,
                original.last_offset, original.timestamp, log.log_start_offset, 0, 0, 0,
            )  # fmt: skip
            return AppendResult(ErrorCode.NONE, None, info, duplicate=True)
        if not check.ok:
            return AppendResult(check.error, check.message)
        epoch = topic.partitions[partition].leader_epoch
        active = log.active_segment.base_offset
        try:
            info = log.append(records, assign_offsets=True, leader_epoch=epoch, batches=batches)
        except RecordTooLargeError as exc:
            return AppendResult(ErrorCode.MESSAGE_TOO_LARGE, str(exc))
        except CorruptRecordError as exc:
            return AppendResult(ErrorCode.CORRUPT_MESSAGE, str(exc))
        rolled_to = log.active_segment.base_offset
        if rolled_to != active and producers.map_end_offset == rolled_to:
            # The state still ends where the new segment starts: Kafka's snapshot at roll.
            self._snapshot(log, producers)
        producers.commit(check, info)
        log.update_high_watermark(log.log_end_offset)
        for callback in self._on_append:
            callback()
        return AppendResult(ErrorCode.NONE, None, info)

    # -- producer state ------------------------------------------------------------------

    def _partition(self, topic: str, partition: int, log: Log) -> _Partition:
        """The partition's state, loaded when its log is first seen (or was replaced: a
        deleted and re-created topic gets a new log, and a new state)."""
        key = (topic, partition)
        known = self._partitions.get(key)
        if known is not None and known.log is log:
            return known
        producers = ProducerStateManager(
            f"{topic}-{partition}", self._producer_id_expiration_ms, self._clock
        )
        _load_producer_state(producers, log)
        known = _Partition(log, producers)
        self._partitions[key] = known
        return known

    def _snapshot(self, log: Log, producers: ProducerStateManager) -> None:
        """A snapshot at the state's map end offset; a failure to write one is logged
        and costs only a longer replay at the next load."""
        try:
            producers.take_snapshot(log.file_system, log.directory)
        except OSError as exc:
            _log.warning("producer snapshot of %s failed: %s", producers.partition, exc)

    def producer_states(self) -> Iterator[tuple[str, int, ProducerStateManager]]:
        """(topic, partition, producer state) of every partition opened so far."""
        for (topic, partition), known in self._partitions.items():
            yield topic, partition, known.producers

    def remove_expired_producers(self, now_ms: int | None = None) -> int:
        """Forget producers idle for ``producer.id.expiration.ms`` in every open
        partition; returns how many. For a periodic task (Kafka runs it every
        ``producer.id.expiration.check.interval.ms``, 10 minutes by default)."""
        return sum(
            len(p.producers.remove_expired_producers(now_ms)) for p in self._partitions.values()
        )

    def shutdown(self) -> None:
        """A clean shutdown's producer snapshots: one at the log end of every open
        partition, so the next start replays nothing. Call before the logs close."""
        for partition in self._partitions.values():
            log, producers = partition
            if log.log_end_offset >= producers.map_end_offset:
                producers.update_map_end_offset(log.log_end_offset)
            self._snapshot(log, producers)
        self._partitions.clear()


def _checked_batches(records: memoryview, max_message_bytes: int) -> list[RecordBatch]:
    """The request's batches, each within ``max.message.bytes`` and with a good CRC
    (Kafka's ``analyzeAndValidateRecords``, which runs before the producer state is
    asked); the log is handed these views, so it walks nothing again."""
    try:
        batches = list(iter_batches(records))
    except DecodeError as exc:
        raise CorruptRecordError(str(exc)) from None
    if not batches:
        raise CorruptRecordError("no record batches to append")
    for batch in batches:
        if batch.size_in_bytes > max_message_bytes:
            raise RecordTooLargeError(
                f"batch of {batch.size_in_bytes} bytes exceeds max.message.bytes "
                f"{max_message_bytes}"
            )
        if not batch.is_valid():
            raise CorruptRecordError(f"batch at offset {batch.base_offset} fails its CRC")
    return batches


def _invalid_records(
    batches: list[RecordBatch], config: LogConfig, now_ms: int
) -> tuple[ErrorCode, str] | None:
    """Kafka's record checks that need the topic config: CreateTime timestamps within
    ``message.timestamp.before.max.ms`` / ``after.max.ms`` of now (INVALID_TIMESTAMP), and
    keys on compacted topics (INVALID_RECORD). Timestamps are checked on the batch
    headers (first and largest timestamp), never per record; keys are the one reason to
    decode records, and only on compacted topics."""
    if not config.log_append_time:
        earliest = now_ms - config.message_timestamp_before_max_ms
        latest = now_ms + config.message_timestamp_after_max_ms
        for batch in batches:
            for ts in (batch.base_timestamp, batch.max_timestamp):
                if ts >= 0 and not earliest <= ts <= latest:
                    return ErrorCode.INVALID_TIMESTAMP, (
                        f"Timestamp {ts} of the batch at offset {batch.base_offset} is out of "
                        f"range: it must be within [{earliest}, {latest}] (see "
                        "message.timestamp.before.max.ms and message.timestamp.after.max.ms)"
                    )
    if config.compact:
        for batch in batches:
            if batch.is_control:
                continue
            try:
                keyless = any(record.key is None for record in batch.records())
            except DecodeError as exc:
                return ErrorCode.CORRUPT_MESSAGE, f"undecodable records: {exc}"
            if keyless:
                return ErrorCode.INVALID_RECORD, (
                    "Compacted topic cannot accept message without key; give every record "
                    "a key, or use cleanup.policy=delete"
                )
    return None


def _load_producer_state(producers: ProducerStateManager, log: Log) -> None:
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

"""Partitions as the broker serves them, and the one door for appending to and reading
from them: Kafka's ``ReplicaManager``.

The metadata image says which partitions exist, who leads them, their ISR and leader
epoch; the log manager owns their logs. Each partition this broker leads is a
:class:`~millpond.broker.partition.Partition`, made on first use with its log and its
idempotent-producer state (:class:`~millpond.storage.producer_state.ProducerStateManager`,
loaded by :func:`~millpond.storage.producer_state_load.load_producer_state`), and
brought up to date with the image's registration on every lookup. The high watermark
moves by the partition's ISR rule after each append; with this broker as the whole ISR
it follows the log end.

An append walks the request's batches once: lengths and magic (INVALID_RECORD), then
``min.insync.replicas`` for ``acks=all`` (NOT_ENOUGH_REPLICAS, through the partition's
effective minimum), then base offsets, sizes, CRCs and the topic's record rules, then
the producer state (as Kafka's ``UnifiedLog.append``); a duplicate of one of the
producer's last 5 batches appends nothing and answers the original offsets. A request
of one batch reaches the log's one-batch append. A snapshot is written when an append
rolls a segment (at the new segment's base offset, before the batches in it are
committed to the state) and for every open partition at a clean shutdown
(:meth:`ReplicaManager.shutdown`), so a restart replays little.
:meth:`ReplicaManager.remove_expired_producers` is the hook a periodic task calls every
``producer.id.expiration.check.interval.ms``.

Requests that must wait (``acks=all`` produces until the high watermark covers them,
fetches until ``min_bytes``) wait in :attr:`ReplicaManager.delayed_produces` and
:attr:`ReplicaManager.delayed_fetches`, keyed by (topic, partition); an append or a
high watermark move retries only the operations on that partition.
:meth:`ReplicaManager.stop_partitions` drops partitions (their logs deleted with their
topic) and completes what waited on them.

Not thread-safe: the broker's event loop makes every call.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import NamedTuple

from millpond.broker import purgatory_timer
from millpond.broker.control.clock import ControlledClock
from millpond.broker.partition import ACKS_ALL, REPLICA_LAG_TIME_MAX_MS, Partition
from millpond.broker.purgatory import Purgatory
from millpond.broker.replication.isr_changes import IsrAction, IsrChangeSender
from millpond.broker.replication.leader import IsrProposal
from millpond.controller.image import MetadataImage, PartitionRegistration, TopicImage
from millpond.storage.clock import Clock, SystemClock
from millpond.storage.config import ConfigError, LogConfig
from millpond.storage.log import Log
from millpond.storage.log_manager import LogManager
from millpond.storage.log_types import CorruptRecordError, LogAppendInfo, RecordTooLargeError
from millpond.storage.producer_state import (
    PRODUCER_ID_EXPIRATION_MS_DEFAULT,
    ProducerStateManager,
)
from millpond.storage.producer_state_load import load_producer_state
from millpond.wire import DecodeError
from millpond.wire.errors import ErrorCode
from millpond.wire.records import RecordBatch, iter_batches

_log = logging.getLogger("millpond.broker")

MIN_INSYNC_REPLICAS_KEY = "min.insync.replicas"

#: A partition's key in the table and the purgatories.
PartitionId = tuple[str, int]


class AppendResult(NamedTuple):
    error: ErrorCode
    message: str | None = None
    info: LogAppendInfo | None = None
    #: The batches duplicate ones already in the log (``info`` holds the originals'
    #: offsets, and the log append time is the original batch's timestamp, as Kafka says).
    duplicate: bool = False
    #: The log start offset, for the failures Kafka answers with it (else -1).
    log_start_offset: int = -1
    #: The partition appended to (``acks=all`` waits on it).
    partition: Partition | None = None


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
        min_insync_replicas: int = 1,
        replica_lag_time_max_ms: int = REPLICA_LAG_TIME_MAX_MS,
    ) -> None:
        self._logs = log_manager
        self._image = image
        self._log_config = log_config
        self.node_id = node_id
        self._clock: Clock = clock or SystemClock()
        #: (topic, partition) whose last append the disk refused (logged once).
        self._failing: set[tuple[str, int]] = set()
        self._producer_id_expiration_ms = producer_id_expiration_ms
        self._min_insync_replicas = min_insync_replicas
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self._partitions: dict[PartitionId, Partition] = {}
        # Waits end on the system's time even while a controlled clock is frozen.
        waits = (
            self._clock.wait_clock() if isinstance(self._clock, ControlledClock) else self._clock
        )
        self.delayed_produces: Purgatory[PartitionId] = Purgatory(waits)
        self.delayed_fetches: Purgatory[PartitionId] = Purgatory(waits)
        #: Where partition leaders' ISR changes go (None: nowhere yet, so none is made).
        self.isr_changes: IsrChangeSender | None = None
        #: By topic: told (partition, high watermark) when a high watermark here moves
        #: other than by an append (a coordinator, which asks after its own appends,
        #: answers what its partition committed).
        self._watermark_listeners: dict[str, Callable[[int, int], None]] = {}

    def on_high_watermark(self, topic: str, listener: Callable[[int, int], None]) -> None:
        """Tell ``listener`` (partition, high watermark) whenever one of ``topic``'s
        high watermarks moves on this broker, other than by an append."""
        self._watermark_listeners[topic] = listener

    def log_config(self, topic: str) -> LogConfig:
        """The topic's effective config: broker-level defaults overlaid by its own (the
        broker config knows which topic configs storage uses)."""
        try:
            return self._log_config(self._image().topic_config(topic))
        except ConfigError:
            return self._log_config({})

    def min_insync_replicas(self, topic: str) -> int:
        """The topic's ``min.insync.replicas`` (the broker's when it sets none)."""
        value = self._image().topic_config(topic).get(MIN_INSYNC_REPLICAS_KEY)
        try:
            return int(value) if value is not None else self._min_insync_replicas
        except ValueError:
            return self._min_insync_replicas

    def partition(self, topic: TopicImage, index: int) -> Partition | None:
        """The partition as this broker leads it, its log created on first use; None if
        the image has no such partition or another broker leads it."""
        registration = topic.partitions.get(index)
        if registration is None or registration.leader != self.node_id:
            return None
        name = topic.name
        log = self._logs.get_log(name, index)
        known = self._partitions.get((name, index))
        if known is None or known.log is not log or log is None:
            if log is None:
                log = self._logs.get_or_create_log(
                    name, index, topic.topic_id, self.log_config(name)
                )
            known = self._open(topic, index, log)
        if known.registration is not registration and known.update_registration(
            registration, self._clock.monotonic_ms()
        ):
            self._wake((name, index))
        return known

    def apply_image(self, image: MetadataImage) -> None:
        """Bring every open partition up to the image's registration (a publisher calls
        this after each metadata change): a changed ISR may move a high watermark and
        complete the produces waiting on it."""
        for (name, index), known in list(self._partitions.items()):
            topic = image.topic(name)
            registration = None if topic is None else topic.partitions.get(index)
            if registration is None or registration is known.registration:
                continue
            if known.update_registration(registration, self._clock.monotonic_ms()):
                self._wake((name, index))

    def wake(self, topic: str, partition: int) -> None:
        """A followed partition's high watermark moved (consumers may read more)."""
        self._wake((topic, partition))

    def _wake(self, key: PartitionId) -> None:
        """The partition's high watermark moved: retry what waits on it."""
        self.delayed_produces.check_and_complete(key)
        self.delayed_fetches.check_and_complete(key)
        self._tell_watermark(key)

    def _tell_watermark(self, key: PartitionId) -> None:
        listener = self._watermark_listeners.get(key[0])
        known = self._partitions.get(key)
        if listener is not None and known is not None:
            listener(key[1], known.high_watermark)

    # -- replication ---------------------------------------------------------------------

    def follower_fetched(
        self,
        partition: Partition,
        replica: int,
        fetch_offset: int,
        log_start: int,
        leader_end: int,
        broker_epoch: int,
    ) -> bool:
        """A follower's fetch, read without an error or a diverging epoch, says how far
        its log reaches (``leader_end``: this log's end when the fetch came). False when
        the metadata knows a newer epoch of the follower's broker than the one it
        fetched with (KIP-903: an old incarnation; its fetch is refused). It may add the
        follower to the ISR and move the high watermark."""
        broker = self._image().brokers.get(replica)
        if broker_epoch != -1 and broker is not None and broker.broker_epoch > broker_epoch:
            return False
        now = self._clock.monotonic_ms()
        if partition.record_follower_fetch(
            replica, fetch_offset, log_start, now, leader_end, broker_epoch
        ):
            self._wake((partition.topic, partition.index))
        if self.isr_changes is not None:
            proposal = partition.propose_expand(replica)
            if proposal is not None:
                self.isr_changes.submit(partition, proposal)
        return True

    def shrink_isrs(self) -> int:
        """Ask the controller to drop from each led partition's ISR the followers that
        are not caught up (every ``replica.lag.time.max.ms`` / 2, as Kafka's
        isr-expiration task); how many changes went."""
        if self.isr_changes is None:
            return 0
        now = self._clock.monotonic_ms()
        sent = 0
        image = self._image()
        for (name, index), known in list(self._partitions.items()):
            topic = image.topic(name)
            registration = None if topic is None else topic.partitions.get(index)
            if registration is None or registration.leader != self.node_id:
                continue
            if len(known.replicas) < 2:
                continue
            proposal = known.propose_shrink(now)
            if proposal is not None:
                self.isr_changes.submit(known, proposal)
                sent += 1
        return sent

    def on_isr_answer(
        self,
        partition: Partition,
        proposal: IsrProposal,
        action: IsrAction,
        registration: PartitionRegistration | None,
    ) -> None:
        """The controller answered an ISR change: the leader takes it, and what waits on
        a moved high watermark is retried."""
        if partition.on_isr_answer(proposal, action, registration, self._clock.monotonic_ms()):
            self._wake((partition.topic, partition.index))

    def follower_log(self, topic: TopicImage, partition: int) -> Log:
        """The log of a partition this broker follows, created if it has none."""
        name = topic.name
        log = self._logs.get_log(name, partition)
        if log is None:
            log = self._logs.get_or_create_log(
                name, partition, topic.topic_id, self.log_config(name)
            )
        return log

    def existing_log(self, topic: str, partition: int) -> Log | None:
        """The partition's log if this broker has one, led or followed."""
        return self._logs.get_log(topic, partition)

    def log(self, topic: TopicImage, partition: int) -> Log | None:
        """The partition's log (see :meth:`partition`)."""
        known = self.partition(topic, partition)
        return None if known is None else known.log

    def producer_state(self, topic: TopicImage, partition: int) -> ProducerStateManager | None:
        """The partition's producer state (loaded with its log), or None as :meth:`partition`."""
        known = self.partition(topic, partition)
        return None if known is None else known.producers

    def _storage_failure(self, topic: str, partition: int, log: Log, exc: OSError) -> AppendResult:
        """An append the disk refused (full, failing): the write was undone, or the log
        went offline if even that failed; the producer gets KAFKA_STORAGE_ERROR and
        nothing is acknowledged. Logged once until an append succeeds again."""
        state = "offline until the broker restarts" if log.offline else "still online"
        why = (
            f"writing to {topic}-{partition} failed: {exc}; the log is {state}. Free space "
            "on (or repair) its log directory; the producer retries."
        )
        if (topic, partition) not in self._failing:
            self._failing.add((topic, partition))
            _log.warning("%s", why)
        return AppendResult(ErrorCode.KAFKA_STORAGE_ERROR, why)

    def append(
        self, topic: TopicImage, partition: int, records: memoryview, *, acks: int = 1
    ) -> AppendResult:
        """Append a produce request's records to the partition, as its leader."""
        if records.readonly:  # offsets and epoch are stamped into the batches in place
            records = memoryview(bytearray(records))
        try:
            batches = list(iter_batches(records))
        except DecodeError:
            batches = []
        if not batches:
            # Kafka sends no error_message for these, nor for oversized or corrupt batches
            # (checked against the real broker by compat_tests/test_differential.py).
            return AppendResult(ErrorCode.INVALID_RECORD)
        known = self.partition(topic, partition)
        if known is None:
            return AppendResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        log = known.log
        if acks == ACKS_ALL and len(known.isr) < len(known.replicas):  # else always enough
            enough = known.check_enough_replicas(acks, self.min_insync_replicas(topic.name))
            if enough != ErrorCode.NONE:  # Kafka answers it without a message
                return AppendResult(enough)
        config = log.config
        for batch in batches:
            if batch.base_offset != 0:
                # Refused when the log validates the batch: the answer has its log start.
                return AppendResult(ErrorCode.INVALID_RECORD, log_start_offset=log.log_start_offset)
            if batch.size_in_bytes > config.max_message_bytes:
                return AppendResult(
                    ErrorCode.MESSAGE_TOO_LARGE,
                    f"batch of {batch.size_in_bytes} bytes exceeds max.message.bytes "
                    f"{config.max_message_bytes}",
                )
            if not batch.is_valid():
                return AppendResult(
                    ErrorCode.CORRUPT_MESSAGE,
                    f"batch at offset {batch.base_offset} fails its CRC",
                )
        problem = _invalid_records(batches, config, self._clock.now_ms())
        if problem is not None:
            return AppendResult(*problem)
        producers = known.producers
        check = producers.check_and_prepare(batches)
        if check.duplicate is not None:
            original = check.duplicate
            info = LogAppendInfo(
                original.first_offset, original.last_offset, original.timestamp,
                original.last_offset, original.timestamp, log.log_start_offset, 0, 0, 0,
            )  # fmt: skip
            return AppendResult(ErrorCode.NONE, None, info, duplicate=True, partition=known)
        if not check.ok:
            return AppendResult(check.error, check.message)
        # One batch (most requests): the log's one-batch append reads the header itself.
        appended = None if len(batches) == 1 and not config.log_append_time else batches
        active = log.active_segment.base_offset
        try:
            info = log.append(
                records,
                assign_offsets=True,
                leader_epoch=known.leader_epoch,
                validate_crc=False,
                batches=appended,
            )
        except RecordTooLargeError as exc:
            return AppendResult(ErrorCode.MESSAGE_TOO_LARGE, str(exc))
        except CorruptRecordError as exc:
            return AppendResult(ErrorCode.CORRUPT_MESSAGE, str(exc))
        except OSError as exc:
            return self._storage_failure(topic.name, partition, log, exc)
        if (topic.name, partition) in self._failing:
            self._failing.discard((topic.name, partition))
            _log.warning("appends to %s-%d succeed again", topic.name, partition)
        rolled_to = log.active_segment.base_offset
        if rolled_to != active and producers.map_end_offset == rolled_to:
            # The state still ends where the new segment starts: Kafka's snapshot at roll.
            self._snapshot(log, producers)
        producers.commit(check, info)
        key = (topic.name, partition)
        moved = known.maybe_advance_high_watermark(self._clock.monotonic_ms())
        if moved and self.delayed_produces.watching(key):
            self.delayed_produces.check_and_complete(key)
        if self.delayed_fetches.watching(key):
            self.delayed_fetches.check_and_complete(key)
        return AppendResult(ErrorCode.NONE, None, info, partition=known)

    # -- partitions ----------------------------------------------------------------------

    def _open(self, topic: TopicImage, index: int, log: Log) -> Partition:
        """A partition's state, made when its log is first seen (or was replaced: a
        deleted and re-created topic gets a new log, and a new state)."""
        name = topic.name
        producers = ProducerStateManager(
            f"{name}-{index}", self._producer_id_expiration_ms, self._clock
        )
        load_producer_state(producers, log)
        known = Partition(
            name,
            index,
            topic.topic_id,
            log,
            producers,
            self.node_id,
            max_lag_ms=self.replica_lag_time_max_ms,
            min_isr=lambda: self.min_insync_replicas(name),
            eligible=self.may_join_isr,
        )
        self._partitions[(name, index)] = known
        return known

    def may_join_isr(self, broker_id: int, broker_epoch: int) -> bool:
        """Whether the metadata lets a broker, fetching with ``broker_epoch`` (-1: not
        said), join an ISR: registered, unfenced, not shutting down, that epoch (KIP-903)."""
        broker = self._image().brokers.get(broker_id)
        return (
            broker is not None
            and not broker.fenced
            and not broker.in_controlled_shutdown
            and broker_epoch in (-1, broker.broker_epoch)
        )

    def stop_partitions(
        self, topic: str, indexes: Iterable[int], *, delete: bool, delay_ms: int | None = None
    ) -> int:
        """Stop serving a topic's partitions: drop them from the table and, with
        ``delete``, delete their logs (the files go ``delay_ms`` later; see
        :meth:`LogManager.delete_logs`). Without it the logs stay, and a snapshot of
        the producer state is taken. Operations waiting on them complete now (their
        partitions are gone). Returns how many were open here."""
        wanted = list(indexes)
        stopped = 0
        for index in wanted:
            known = self._partitions.pop((topic, index), None)
            if known is None:
                continue
            stopped += 1
            if not delete:
                self._snapshot(known.log, known.producers)
        if delete:
            self._logs.delete_logs(topic, wanted, delay_ms)
        for index in wanted:
            self._wake((topic, index))
        return stopped

    def resign(self, topic: str, index: int) -> None:
        """This broker no longer leads the partition: it leaves the table (the log stays,
        followed now or not at all), and the produces waiting on it are answered
        NOT_LEADER_OR_FOLLOWER at once. A high watermark the partition reaches later as
        a follower counts the new leader's records, which need not be the ones those
        produces wrote. Leading it again loads its producer state from the log afresh."""
        if self._partitions.pop((topic, index), None) is not None:
            self._wake((topic, index))

    def poke_delayed(self) -> None:
        """The clock jumped: expire the delayed operations it made due, now."""
        purgatory_timer.poke(self.delayed_produces)
        purgatory_timer.poke(self.delayed_fetches)

    def open_partitions(self) -> list[PartitionId]:
        """(topic, partition) of every partition in the table."""
        return list(self._partitions)

    def is_open(self, topic: str, index: int) -> bool:
        """Whether the partition is still served (a delayed operation asks)."""
        return (topic, index) in self._partitions

    # -- producer state ------------------------------------------------------------------

    def log_moved(self, topic: str, partition: int, log: Log) -> None:
        """The partition's log was moved to another log directory (same records, a new
        :class:`Log`): the partition and its producer state carry over to the new log."""
        known = self._partitions.get((topic, partition))
        if known is not None:
            known.log = log

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
        for known in self._partitions.values():
            log, producers = known.log, known.producers
            if log.log_end_offset >= producers.map_end_offset:
                producers.update_map_end_offset(log.log_end_offset)
            self._snapshot(log, producers)
        self._partitions.clear()


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

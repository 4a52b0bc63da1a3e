"""The group coordinator in the running broker: ``__consumer_offsets`` as its storage,
the event loop as its clock.

- The topic is created (50 compacted partitions by default, Kafka's configs) when a
  group is first looked up or used, as Kafka does; a broker that finds it at start-up
  replays it, partition by partition, in a task that yields to the event loop, and
  answers COORDINATOR_LOAD_IN_PROGRESS for a group whose partition is not loaded yet.
- Records are appended as a batch per request through the replica manager, like any
  produce; the coordinator sees a failed append as :class:`StorageError`.
- One task sleeps until the coordinator's next deadline (sessions, join and sync
  phases) and fires it; every request wakes it, since a request may move a deadline.

Single-node: this broker leads every partition of the topic, so it coordinates every
group (FindCoordinator says so).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from millpond.broker.groups.placement import OFFSETS_TOPIC, partition_for
from millpond.storage.log import Log
from millpond.wire.errors import ErrorCode
from millpond.wire.exceptions import DecodeError
from millpond.wire.records import NewRecord, build_batch, iter_batches

if TYPE_CHECKING:
    from millpond.broker.groups.coordinator import GroupCoordinator
    from millpond.broker.node import Broker

log = logging.getLogger("millpond.groups")

#: Bytes read at a time while replaying a partition.
LOAD_CHUNK = 1 << 20


class GroupService:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self.partitions = broker.config.offsets_topic_num_partitions
        self._coordinator: GroupCoordinator | None = None
        self._loaded: set[int] = set()
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def coordinator(self) -> GroupCoordinator:
        """Built with the first group request or replay: a broker no group uses never
        imports it (about 5% of start-up)."""
        if self._coordinator is None:
            from millpond.broker.groups.coordinator import (  # noqa: PLC0415
                GroupConfig,
                GroupCoordinator,
            )

            config = self._broker.config
            group_config = GroupConfig(
                min_session_timeout_ms=config.group_min_session_timeout_ms,
                max_session_timeout_ms=config.group_max_session_timeout_ms,
                initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
                max_size=config.group_max_size,
                offset_metadata_max_bytes=config.offset_metadata_max_bytes,
                offsets_retention_ms=config.offsets_retention_minutes * 60_000,
                num_partitions=self.partitions,
            )
            self._coordinator = GroupCoordinator(group_config, self._append)
        return self._coordinator

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._run_timers()))
        topic = self._broker.image.topic(OFFSETS_TOPIC)
        if topic is None:
            return  # created (empty, so nothing to load) when first needed
        self.partitions = len(topic.partitions)
        self._tasks.append(loop.create_task(self._load()))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()

    # -- what handlers ask -----------------------------------------------------------------

    def now_ms(self) -> int:
        return self._broker.clock.now_ms()

    def poke(self) -> None:
        """After a request: its deadlines may be earlier than the one slept on."""
        self._wake.set()

    def availability(self, group_id: str) -> int:
        """NONE when the coordinator can serve ``group_id`` now; else the error to answer:
        NOT_COORDINATOR before ``__consumer_offsets`` exists (as Kafka: no partition, no
        coordinator; a client's FindCoordinator creates it first), and
        COORDINATOR_LOAD_IN_PROGRESS while the group's partition is replayed."""
        if self._broker.image.topic(OFFSETS_TOPIC) is None:
            return ErrorCode.NOT_COORDINATOR
        if partition_for(group_id, self.partitions) not in self._loaded:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    def loading(self) -> bool:
        """Whether some partition of an existing ``__consumer_offsets`` is still being
        replayed (what an answer about every group must wait for)."""
        topic = self._broker.image.topic(OFFSETS_TOPIC)
        return topic is not None and not self._loaded.issuperset(topic.partitions)

    def expire_offsets(self) -> int:
        """The periodic offset expiry (``offsets.retention.check.interval.ms``)."""
        if self.loading() or self._coordinator is None:
            return 0  # a group not replayed yet must not lose its offsets to a check
        expired = self._coordinator.expire_offsets(self.now_ms())
        self.poke()
        return expired

    def ensure_topic(self) -> None:
        """Create ``__consumer_offsets`` if it does not exist, as Kafka does on the first
        group lookup: compacted, with the configured partitions, segment size and
        replication factor. A new topic has nothing to load."""
        if self._broker.image.topic(OFFSETS_TOPIC) is not None:
            return
        from millpond.controller.replication_control import CreatableTopic  # noqa: PLC0415

        config = self._broker.config
        topic = CreatableTopic(
            OFFSETS_TOPIC,
            self.partitions,
            min(config.offsets_topic_replication_factor, 1),
            configs={
                "cleanup.policy": "compact",
                "compression.type": "producer",
                "segment.bytes": str(config.offsets_topic_segment_bytes),
            },
        )
        [result] = self._broker.controller.create_topics([topic]).response
        if result.error.code not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
            log.error("creating %s failed: %s", OFFSETS_TOPIC, result.error.message)
            return
        self._loaded = set(range(self.partitions))

    # -- storage ---------------------------------------------------------------------------

    def _append(self, partition: int, batch: Sequence[tuple[bytes, bytes | None]]) -> None:
        # The coordinator calls this, so its module is loaded.
        from millpond.broker.groups.coordinator import StorageError  # noqa: PLC0415

        topic = self._broker.image.topic(OFFSETS_TOPIC)
        if topic is None:
            raise StorageError(f"{OFFSETS_TOPIC} does not exist")
        now = self.now_ms()
        data = build_batch([NewRecord(key, value, timestamp=now) for key, value in batch])
        result = self._broker.replicas.append(topic, partition, memoryview(bytearray(data)))
        if result.error != ErrorCode.NONE:
            raise StorageError(
                f"append to {OFFSETS_TOPIC}-{partition}: error {result.error.name} "
                f"{result.message or ''}"
            )

    async def _load(self) -> None:
        """Replay every partition of the topic into the coordinator, in log order."""
        topic = self._broker.image.topic(OFFSETS_TOPIC)
        assert topic is not None
        started = self.now_ms()
        count = 0
        for partition in sorted(topic.partitions):
            log_ = self._broker.replicas.log(topic, partition)
            if log_ is not None:
                count += await self._load_partition(log_, partition)
            self._loaded.add(partition)
        log.info(
            "loaded %d records of %s in %d ms: %d groups",
            count, OFFSETS_TOPIC, self.now_ms() - started, len(self.coordinator.groups),
        )  # fmt: skip

    async def _load_partition(self, log_: Log, partition: int) -> int:
        from millpond.broker.groups import records  # noqa: PLC0415 (loaded when needed)

        offset, end, count = log_.log_start_offset, log_.log_end_offset, 0
        while offset < end:
            fetched = log_.read(offset, LOAD_CHUNK)
            data = fetched.records.read() if fetched is not None else b""
            if not data:
                break
            for batch in iter_batches(data, allow_truncated_tail=True):
                offset = batch.last_offset + 1
                if batch.is_control:
                    continue
                for record in batch.records():
                    if record.key is None:
                        continue
                    try:
                        decoded = records.decode(record.key, record.value)
                    except DecodeError as exc:
                        topic = f"{OFFSETS_TOPIC}-{partition}"
                        log.warning("%s: skipping a record at %d: %s", topic, record.offset, exc)
                        continue
                    if decoded is not None:
                        self.coordinator.replay(decoded)
                        count += 1
            await asyncio.sleep(0)
        return count

    # -- time ------------------------------------------------------------------------------

    async def _run_timers(self) -> None:
        while True:
            # Without a coordinator nothing has a deadline; the request that builds it
            # pokes this awake.
            coordinator = self._coordinator
            deadline = None if coordinator is None else coordinator.next_deadline()
            timeout = None if deadline is None else max(deadline - self.now_ms(), 0) / 1000
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)
            if self._coordinator is not None:
                self._coordinator.advance(self.now_ms())

"""The group coordinator in the running broker: a coordinator runtime over
``__consumer_offsets``, one :class:`~millpond.broker.groups.coordinator.GroupCoordinator`
shard per partition this broker leads, the event loop as its clock.

- The topic is created (50 compacted partitions by default, Kafka's configs) when a
  group is first looked up or used, as Kafka does. Leadership of a partition loads it
  (:meth:`GroupService.on_election`, what the metadata publisher's leadership
  listeners are told): its records are replayed into a fresh shard in a task that
  yields to the event loop, and a group whose partition is loading answers
  COORDINATOR_LOAD_IN_PROGRESS; losing it (:meth:`GroupService.on_resignation`)
  unloads the shard. Single node: this broker leads every partition, all loaded at
  start-up (or at once, empty, when the topic is created), so it coordinates every
  group.
- A request is an operation of its group's partition (:meth:`GroupService.write`,
  :meth:`GroupService.read`); records are appended as one batch through the replica
  manager, like any produce, and the answer goes out once the partition's high
  watermark covers them.
- One task sleeps until the shards' next deadline (sessions, join and sync phases) and
  fires it; every request wakes it, since a request may move a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from millpond.broker.coordinator.runtime import (
    AppendError,
    Completion,
    CoordinatorResult,
    CoordinatorRuntime,
    ShardContext,
)
from millpond.broker.groups.placement import OFFSETS_TOPIC, partition_for
from millpond.storage.log import Log
from millpond.storage.uuids import random_uuid4
from millpond.wire.errors import ErrorCode
from millpond.wire.exceptions import DecodeError
from millpond.wire.records import NewRecord, build_batch, iter_batches

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer
    from millpond.broker.groups.coordinator import GroupCoordinator, Record

log = logging.getLogger("millpond.groups")

#: Bytes read at a time while replaying a partition.
LOAD_CHUNK = 1 << 20

R = TypeVar("R")
A = TypeVar("A")
Runtime = CoordinatorRuntime["GroupCoordinator", "Record"]


class OffsetsPartitions:
    """``__consumer_offsets`` through the replica manager, as the runtime writes it."""

    def __init__(self, broker: BrokerServer) -> None:
        self._broker = broker

    def append(self, partition: int, records: Sequence[tuple[bytes, bytes | None]]) -> int:
        broker = self._broker
        topic = broker.image.topic(OFFSETS_TOPIC)
        if topic is None:
            raise AppendError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{OFFSETS_TOPIC} is gone")
        now = broker.clock.now_ms()
        data = build_batch([NewRecord(key, value, timestamp=now) for key, value in records])
        result = broker.replicas.append(topic, partition, memoryview(bytearray(data)))
        if result.error != ErrorCode.NONE or result.info is None:
            raise AppendError(
                result.error,
                f"append to {OFFSETS_TOPIC}-{partition}: error {result.error.name} "
                f"{result.message or ''}",
            )
        return result.info.last_offset + 1

    def committed_offset(self, partition: int) -> int:
        log_ = self.log(partition)
        return -1 if log_ is None else log_.high_watermark

    def log(self, partition: int) -> Log | None:
        topic = self._broker.image.topic(OFFSETS_TOPIC)
        return None if topic is None else self._broker.replicas.log(topic, partition)


class GroupService:
    def __init__(self, broker: BrokerServer) -> None:
        self._broker = broker
        self.partitions = broker.config.offsets_topic_num_partitions
        self._runtime: Runtime | None = None
        self._partitions = OffsetsPartitions(broker)
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._loads: dict[int, asyncio.Task[None]] = {}

    @property
    def runtime(self) -> Runtime:
        """Built with the first load or group request: a broker no group uses never
        imports the coordinator (about 5% of start-up)."""
        if self._runtime is None:
            from millpond.broker.groups import records  # noqa: PLC0415

            self._runtime = CoordinatorRuntime(self._new_shard, self._partitions, records.encode)
        return self._runtime

    def _new_shard(self, context: ShardContext[Record]) -> GroupCoordinator:
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
        # Random, as Kafka's: a group's members outlive its coordinator, and the broker
        # that loads the group next must not hand out an id a loaded member holds.
        shard = GroupCoordinator(
            group_config,
            context.append,
            new_id=lambda: random_uuid4().hex(),
            timers=context.timers,
        )
        shard.now_ms = self.now_ms()  # sessions of loaded members run from now
        return shard

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._tasks.append(loop.create_task(self._run_timers()))
        topic = self._broker.image.topic(OFFSETS_TOPIC)
        if topic is None:
            return  # created (empty, so nothing to load) when first needed
        self.partitions = len(topic.partitions)
        self._became_leader_of_all()

    async def stop(self) -> None:
        for task in [*self._tasks, *self._loads.values()]:
            task.cancel()
        for task in [*self._tasks, *self._loads.values()]:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        self._loads.clear()

    # -- leadership ------------------------------------------------------------------------

    def on_high_watermark(self, partition: int, high_watermark: int) -> None:
        """Followers caught up on ``partition``: answer what its high watermark covers."""
        if self._runtime is not None:
            self._runtime.on_committed(partition, high_watermark)
            self.poke()

    def on_election(self, partition: int, leader_epoch: int) -> None:
        """This broker now leads ``partition`` of ``__consumer_offsets``: load it (an
        empty log at once, else in a task), unless that epoch is no news."""
        if not self.runtime.load(partition, leader_epoch):
            return
        log_ = self._partitions.log(partition)
        if log_ is None or log_.log_start_offset >= log_.log_end_offset:
            self.runtime.complete_load(partition, leader_epoch)
            return
        previous = self._loads.pop(partition, None)
        if previous is not None:
            previous.cancel()
        task = asyncio.get_running_loop().create_task(
            self._load(partition, leader_epoch, log_), name=f"millpond-load-{partition}"
        )
        self._loads[partition] = task

    def on_resignation(self, partition: int, leader_epoch: int | None) -> None:
        """This broker no longer leads ``partition`` (``leader_epoch`` None: the topic
        was deleted): unload its shard; what waits on it answers NOT_COORDINATOR."""
        if self._runtime is not None and self._runtime.unload(partition, leader_epoch):
            loading = self._loads.pop(partition, None)
            if loading is not None:
                loading.cancel()
            self.poke()

    def _became_leader_of_all(self) -> None:
        topic = self._broker.image.topic(OFFSETS_TOPIC)
        assert topic is not None
        node = self._broker.node_id
        for partition, registration in sorted(topic.partitions.items()):
            if registration.leader == node:
                self.on_election(partition, registration.leader_epoch)

    # -- what handlers ask -----------------------------------------------------------------

    def now_ms(self) -> int:
        return self._broker.clock.now_ms()

    def poke(self) -> None:
        """After a request: its deadlines may be earlier than the one slept on."""
        self._wake.set()

    def partition(self, group_id: str) -> int:
        return partition_for(group_id, self.partitions)

    def availability(self, group_id: str) -> int:
        """NONE when the coordinator can serve ``group_id`` now; else the error to answer:
        NOT_COORDINATOR before ``__consumer_offsets`` exists (as Kafka: no partition, no
        coordinator; a client's FindCoordinator creates it first) or for a partition
        this broker does not lead, and COORDINATOR_LOAD_IN_PROGRESS while the group's
        partition is replayed."""
        if self._runtime is None:
            return ErrorCode.NOT_COORDINATOR
        return self._runtime.status(self.partition(group_id))

    def loading(self) -> bool:
        """Whether some partition of ``__consumer_offsets`` is still being replayed (what
        an answer about every group must wait for)."""
        return self._runtime is not None and self._runtime.loading()

    def shard(self, group_id: str) -> GroupCoordinator | None:
        """The loaded shard holding ``group_id`` (the control endpoint's view)."""
        return None if self._runtime is None else self._runtime.shard(self.partition(group_id))

    def shards(self) -> Iterator[GroupCoordinator]:
        return iter(()) if self._runtime is None else self._runtime.active_shards()

    def write(
        self, group_id: str, op: Callable[[GroupCoordinator], CoordinatorResult[R, Record]]
    ) -> Completion[R]:
        """An operation of ``group_id``'s partition; its answer once committed."""
        if self._runtime is None:
            return _failed(ErrorCode.NOT_COORDINATOR)
        done = self._runtime.write(self.partition(group_id), op)
        self.poke()
        return done

    def read(self, group_id: str, op: Callable[[GroupCoordinator], R]) -> Completion[R]:
        """A read of ``group_id``'s partition, answered behind the writes before it."""
        if self._runtime is None:
            return _failed(ErrorCode.NOT_COORDINATOR)
        return self._runtime.read(self.partition(group_id), op)

    def read_all(self, op: Callable[[GroupCoordinator], R]) -> list[Completion[R]]:
        """A read of every loaded partition (an answer about all groups)."""
        if self._runtime is None:
            return []
        runtime = self._runtime
        return [runtime.read(p, op) for p in runtime.active_partitions()]

    def deferred(self, group_id: str, reply: Callable[[A], None], failed: A) -> Callable[[A], None]:
        """``reply`` as a shard calls it for an answer given later (JoinGroup, SyncGroup):
        held until what the shard wrote before it is committed."""
        context = self._context(group_id)

        def send(answer: A) -> None:
            if context is None:
                reply(answer)
            else:
                context.defer(lambda: reply(answer), lambda _: reply(failed))

        return send

    def _context(self, group_id: str) -> ShardContext[Record] | None:
        return None if self._runtime is None else self._runtime.context(self.partition(group_id))

    def expire_offsets(self) -> int:
        """The periodic offset expiry (``offsets.retention.check.interval.ms``): each
        loaded partition's groups, as an operation of that partition. How many offsets
        expired (those whose tombstones are already committed)."""
        if self._runtime is None:
            return 0
        now = self.now_ms()
        expired = 0
        for partition in self._runtime.active_partitions():
            done = self._runtime.write(
                partition, lambda s: CoordinatorResult((), s.expire_offsets(now))
            )
            if done.done and done.error is None:
                expired += done.result()
        self.poke()
        return expired

    async def ensure_topic(self) -> None:
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
            config.offsets_topic_replication_factor,
            configs={
                "cleanup.policy": "compact",
                "compression.type": "producer",
                "segment.bytes": str(config.offsets_topic_segment_bytes),
            },
        )
        [result] = await self._broker.controller_channel.create_topics([topic])
        if result.error.code not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
            log.error(
                "creating %s failed: %s; groups have no coordinator until it can be created "
                "(offsets.topic.replication.factor is %d)",
                OFFSETS_TOPIC, result.error.message, config.offsets_topic_replication_factor,
            )  # fmt: skip
        # Its partitions are loaded as the metadata publisher reports their leadership.

    # -- loading ---------------------------------------------------------------------------

    async def _load(self, partition: int, epoch: int, log_: Log) -> None:
        """Replay the partition's records into its shard, in log order."""
        try:
            await self._replay(partition, epoch, log_)
        finally:
            if self._loads.get(partition) is asyncio.current_task():
                del self._loads[partition]

    async def _replay(self, partition: int, epoch: int, log_: Log) -> None:
        from millpond.broker.groups import records  # noqa: PLC0415 (loaded when needed)

        runtime = self.runtime
        started = self.now_ms()
        offset, end, count = log_.log_start_offset, log_.log_end_offset, 0
        name = f"{OFFSETS_TOPIC}-{partition}"
        try:
            while offset < end:
                fetched = log_.read(offset, LOAD_CHUNK)
                data = fetched.records.read() if fetched is not None else b""
                if not data:
                    break
                decoded: list[Record] = []
                for batch in iter_batches(data, allow_truncated_tail=True):
                    offset = batch.last_offset + 1
                    if batch.is_control:
                        continue
                    for record in batch.records():
                        if record.key is None:
                            continue
                        try:
                            found = records.decode(record.key, record.value)
                        except DecodeError as exc:
                            log.warning("%s: skipping a record at %d: %s", name, record.offset, exc)
                            continue
                        if found is not None:
                            decoded.append(found)
                if not runtime.replay(partition, epoch, decoded):
                    return  # unloaded, or loaded again, meanwhile
                count += len(decoded)
                await asyncio.sleep(0)
        except (OSError, DecodeError) as exc:
            log.error("%s: loading failed: %s", name, exc)
            runtime.complete_load(partition, epoch, failed=True)
            return
        # What a new leader replayed may reach past the high watermark; the runtime
        # answers nothing until that is committed too.
        if runtime.complete_load(partition, epoch, loaded_to=offset):
            log.info("loaded %d records of %s in %d ms", count, name, self.now_ms() - started)

    # -- time ------------------------------------------------------------------------------

    async def _run_timers(self) -> None:
        while True:
            # Without a runtime nothing has a deadline; the request that builds it pokes
            # this awake.
            runtime = self._runtime
            deadline = None if runtime is None else runtime.next_deadline()
            timeout = None if deadline is None else max(deadline - self.now_ms(), 0) / 1000
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)
            if self._runtime is not None:
                self._runtime.advance(self.now_ms())


def _failed(error: int) -> Completion[Any]:
    done: Completion[Any] = Completion()
    done.fail(error)
    return done


def when_done(pending: Sequence[Completion[Any]], build: Callable[[], A]) -> A | Awaitable[A]:
    """A handler's response, built once every operation it waits on is done: at once
    when they are (on one node, always), else an awaitable of it."""
    waiting = [done for done in pending if not done.done]
    if not waiting:  # the usual case: nothing was left to commit
        return build()
    future: asyncio.Future[A] = asyncio.get_running_loop().create_future()
    left = [len(waiting)]

    def settle(_: Completion[Any]) -> None:
        left[0] -= 1
        if left[0] == 0 and not future.done():
            future.set_result(build())

    for done in waiting:
        done.add_done_callback(settle)
    return future


def answer(
    done: Completion[R], ok: Callable[[R], A], failed: Callable[[int], A]
) -> A | Awaitable[A]:
    """A handler's response from one operation: ``ok`` of its response, or ``failed`` of
    its error."""
    return when_done(
        [done], lambda: failed(done.error) if done.error is not None else ok(done.result())
    )

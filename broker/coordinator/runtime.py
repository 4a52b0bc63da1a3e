"""The coordinator runtime: one state machine (a *shard*) per partition of a coordinator's
internal topic, fed operations in order and answered only with what is committed.

This is the shape of Kafka 4.4's ``CoordinatorRuntime``, sans I/O:

- **Load and unload.** :meth:`CoordinatorRuntime.load` is called when this broker
  becomes the partition's leader (at start-up on one node: every partition): it makes a
  fresh shard and its timers, and the loader replays the partition's records into it
  (:meth:`~CoordinatorRuntime.replay`, then :meth:`~CoordinatorRuntime.complete_load`).
  Until then the partition answers COORDINATOR_LOAD_IN_PROGRESS; a partition this
  runtime does not hold, or whose load failed, NOT_COORDINATOR. A load for an epoch not
  newer than the one held is ignored, as an unload for an older one is.
  :meth:`~CoordinatorRuntime.unload` (leadership moved, or the topic went) drops the
  shard and its timers, and fails every operation still waiting with NOT_COORDINATOR.
- **Write operations** run on the shard and return :class:`CoordinatorResult`: records
  and a response. The records are appended to the partition (a failed append fails the
  operation with the error Kafka maps storage errors to, and the shard never replays
  them); the response completes when the partition's committed offset (the high
  watermark) covers them. An operation that writes nothing still waits for the writes
  before it, so no answer reveals a state that could still be lost. A shard may also
  append inside an operation (:meth:`ShardContext.append`) when it must know the
  outcome before going on, and park a reply (:meth:`ShardContext.defer`) behind what it
  has written so far.
- **Read operations** run at once and answer once every write before them is committed:
  what Kafka does for OffsetFetch with ``require_stable`` (Kafka reads other answers at
  the committed snapshot of timeline structures; holding the answer instead shows the
  same states in the same order).
- **Commit.** The partition layer reports its high watermark through
  :meth:`~CoordinatorRuntime.on_committed`, and the runtime also asks
  :meth:`PartitionWriter.committed_offset` after each append: on one node the append
  commits at once; with replication the watermark arrives later, and answers wait.
- **Timers** of each shard fire through :meth:`~CoordinatorRuntime.advance` on the
  owner's clock, each as an operation of its partition.

Everything runs on the caller's thread in the order called, so the operations of a
partition are serial and their answers complete in the order of their records.
"""

from __future__ import annotations

import enum
import logging
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Generic, NamedTuple, Protocol, TypeVar, cast

from millpond.broker.coordinator.timers import Timers
from millpond.wire.errors import ErrorCode

log = logging.getLogger("millpond.coordinator")

R = TypeVar("R")
U = TypeVar("U")  # a record as the shard knows it
U_contra = TypeVar("U_contra", contravariant=True)
Bytes = tuple[bytes, bytes | None]


class AppendError(Exception):
    """An append to the coordinator's partition failed with Kafka error ``code``."""

    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(message or ErrorCode(code).name)
        self.code = code


#: How Kafka's coordinators answer a failed append (``CoordinatorOperationExceptionHelper``).
_APPEND_ERRORS: dict[int, int] = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.UNKNOWN_SERVER_ERROR,
}


def coordinator_error(code: int) -> int:
    """The error a coordinator answers for an append that failed with ``code``."""
    return _APPEND_ERRORS.get(code, code)


class PartitionWriter(Protocol):
    """The partition layer, as a coordinator sees it."""

    def append(self, partition: int, records: Sequence[Bytes]) -> int:
        """Append ``records`` as one batch; the log end offset after them. Raises
        :class:`AppendError`."""

    def committed_offset(self, partition: int) -> int:
        """The partition's high watermark: records below it are committed."""


class CoordinatorShard(Protocol[U_contra]):
    """A coordinator's state machine for one partition."""

    def replay(self, record: U_contra) -> None:
        """Apply one record: read back while loading, or just written by an operation
        whose result asks for it."""

    def advance(self, now_ms: int) -> None:
        """Fire the shard's timers due at ``now_ms``."""

    def on_unloaded(self) -> None:
        """Leadership moved: answer whatever the shard itself keeps waiting."""


S = TypeVar("S", bound="CoordinatorShard[Any]")


class CoordinatorResult(NamedTuple, Generic[R, U]):
    """What a write operation returns: the records to append and the response to give
    once they are committed; with ``replay`` the shard applies the records after the
    append succeeded (its state changes only with what was stored)."""

    records: Sequence[U]
    response: R
    replay: bool = True


class Completion(Generic[R]):
    """An operation's answer to come: a response, or a Kafka error code."""

    __slots__ = ("_callbacks", "done", "error", "value")

    def __init__(self) -> None:
        self.done = False
        self.value: R | None = None
        self.error: int | None = None
        self._callbacks: list[Callable[[Completion[R]], None]] | None = None

    def add_done_callback(self, callback: Callable[[Completion[R]], None]) -> None:
        if self.done:
            callback(self)
        elif self._callbacks is None:
            self._callbacks = [callback]
        else:
            self._callbacks.append(callback)

    def result(self) -> R:
        """The response of a completion done without an error."""
        assert self.done and self.error is None
        return cast("R", self.value)

    def complete(self, value: R) -> None:
        if not self.done:
            self.done, self.value = True, value
            self._finish()

    def fail(self, error: int) -> None:
        if not self.done:
            self.done, self.error = True, error
            self._finish()

    def _finish(self) -> None:
        callbacks, self._callbacks = self._callbacks, None
        for callback in callbacks or ():
            callback(self)


class PartitionState(enum.Enum):
    LOADING = "loading"
    ACTIVE = "active"
    FAILED = "failed"


class _Waiter(NamedTuple):
    offset: int
    complete: Callable[[], None]
    fail: Callable[[int], None]


def _ignore(_: int) -> None:
    pass


class ShardContext(Generic[U]):
    """What a shard gets from the runtime: its partition, its timers, and appends and
    parked replies that count towards the commit its operations wait for."""

    def __init__(
        self,
        runtime: CoordinatorRuntime[Any, U],
        partition: int,
        epoch: int,
    ) -> None:
        self._runtime = runtime
        self.partition = partition
        self.epoch = epoch  # the leader epoch held now
        self.load_epoch = epoch  # the one its load began at: what the loader names
        self.timers = Timers()
        self.state = PartitionState.LOADING
        self.last_written = -1  # the log end after this shard's last write (-1: none)
        self.last_committed = -1
        self.waiting: deque[_Waiter] = deque()

    def append(self, records: Sequence[U]) -> None:
        """Append now (raises :class:`AppendError`): for a shard that must know the
        outcome before it goes on. What it answers next waits for these records."""
        self._runtime._append(self, records)

    def defer(self, action: Callable[[], None], fail: Callable[[int], None] = _ignore) -> None:
        """Run ``action`` once everything written so far is committed (at once if it
        is); ``fail`` with NOT_COORDINATOR if the partition unloads first."""
        if self.state is PartitionState.ACTIVE and self.last_written > self.last_committed:
            self.waiting.append(_Waiter(self.last_written, action, fail))
        else:
            action()  # nothing to wait for, or unloaded: its answer goes out now


class CoordinatorRuntime(Generic[S, U]):
    """Shards by partition of one coordinator topic. ``new_shard`` builds a fresh shard
    for a partition being loaded; ``encode`` turns a shard's record into the key and
    value appended."""

    def __init__(
        self,
        new_shard: Callable[[ShardContext[U]], S],
        writer: PartitionWriter,
        encode: Callable[[U], Bytes],
    ) -> None:
        self._new_shard = new_shard
        self._writer = writer
        self._encode = encode
        self._contexts: dict[int, ShardContext[U]] = {}
        self._shards: dict[int, S] = {}
        self._epochs: dict[int, int] = {}

    # -- leadership ------------------------------------------------------------------------

    def load(self, partition: int, epoch: int) -> bool:
        """Begin loading ``partition`` as its leader at ``epoch``; False when this is
        no news (an epoch not newer, or the partition already loading or active)."""
        if epoch <= self._epochs.get(partition, -1):
            log.info("partition %d: ignored a load at epoch %d", partition, epoch)
            return False
        self._epochs[partition] = epoch
        current = self._contexts.get(partition)
        if current is not None and current.state is not PartitionState.FAILED:
            current.epoch = epoch
            return False
        context: ShardContext[U] = ShardContext(self, partition, epoch)
        self._contexts[partition] = context
        self._shards[partition] = self._new_shard(context)
        return True

    def replay(self, partition: int, epoch: int, records: Iterable[U]) -> bool:
        """Feed loaded records to the partition's shard; False (and nothing applied)
        when that load was superseded or dropped, so the loader can stop."""
        if self._loading(partition, epoch) is None:
            return False
        shard = self._shards[partition]
        for record in records:
            shard.replay(record)
        return True

    def _loading(self, partition: int, epoch: int) -> ShardContext[U] | None:
        """The partition's context if it is loading from ``epoch``'s load."""
        context = self._contexts.get(partition)
        if (
            context is None
            or context.load_epoch != epoch
            or context.state is not PartitionState.LOADING
        ):
            return None
        return context

    def complete_load(
        self, partition: int, epoch: int, *, failed: bool = False, loaded_to: int = -1
    ) -> bool:
        """The loader read the whole partition, up to offset ``loaded_to`` (or,
        ``failed``, could not): the shard serves requests from now on (or the partition
        answers NOT_COORDINATOR until a newer load). A new leader's log may hold records
        above the high watermark; what the shard answers waits until they are committed,
        as it waits for its own writes."""
        context = self._loading(partition, epoch)
        if context is None:
            return False
        if failed:
            self._drop(context, PartitionState.FAILED)
            return True
        context.state = PartitionState.ACTIVE
        context.last_committed = self._writer.committed_offset(partition)
        context.last_written = max(context.last_committed, loaded_to)
        return True

    def unload(self, partition: int, epoch: int | None = None) -> bool:
        """Leadership of ``partition`` moved (``epoch`` None: its topic was deleted):
        drop the shard and fail what waits on it."""
        context = self._contexts.get(partition)
        if context is None or (epoch is not None and epoch <= context.epoch):
            return False
        del self._contexts[partition]
        if epoch is not None:
            self._epochs[partition] = epoch
        self._drop(context, None)
        return True

    def _drop(self, context: ShardContext[U], state: PartitionState | None) -> None:
        shard = self._shards.pop(context.partition)
        context.timers.clear()
        waiting, context.waiting = context.waiting, deque()
        if state is not None:
            context.state = state
        else:
            context.state = PartitionState.FAILED
        for waiter in waiting:
            waiter.fail(ErrorCode.NOT_COORDINATOR)
        try:
            shard.on_unloaded()
        except Exception:
            log.exception("partition %d: unloading the shard failed", context.partition)

    # -- what requests see -----------------------------------------------------------------

    def status(self, partition: int) -> int:
        """NONE when ``partition``'s shard serves requests; else the error to answer."""
        context = self._contexts.get(partition)
        if context is None or context.state is PartitionState.FAILED:
            return ErrorCode.NOT_COORDINATOR
        if context.state is PartitionState.LOADING:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    def loading(self) -> bool:
        return any(c.state is PartitionState.LOADING for c in self._contexts.values())

    def shard(self, partition: int) -> S | None:
        """The active shard of ``partition`` (for answers that need no operation)."""
        context = self._contexts.get(partition)
        if context is None or context.state is not PartitionState.ACTIVE:
            return None
        return self._shards[partition]

    def context(self, partition: int) -> ShardContext[U] | None:
        """The active partition's context (to park a reply behind its writes)."""
        context = self._contexts.get(partition)
        return context if context is not None and context.state is PartitionState.ACTIVE else None

    def active_partitions(self) -> list[int]:
        return [p for p, c in self._contexts.items() if c.state is PartitionState.ACTIVE]

    def active_shards(self) -> Iterator[S]:
        for partition in self.active_partitions():
            yield self._shards[partition]

    # -- operations ------------------------------------------------------------------------

    def write(self, partition: int, op: Callable[[S], CoordinatorResult[R, U]]) -> Completion[R]:
        """Run ``op`` on the partition's shard, append its records, and complete with
        its response once they (and every write before) are committed."""
        done: Completion[R] = Completion()
        context = self._contexts.get(partition)
        if context is None or context.state is not PartitionState.ACTIVE:
            done.fail(self.status(partition))
            return done
        shard = self._shards[partition]
        try:
            result = op(shard)
            if result.records:
                self._append(context, result.records)
                if result.replay:
                    for record in result.records:
                        shard.replay(record)
        except AppendError as exc:
            done.fail(coordinator_error(exc.code))
            self._catch_up(context)  # what the operation wrote before failing still counts
            return done
        except Exception:
            log.exception("partition %d: a write operation failed", partition)
            done.fail(ErrorCode.UNKNOWN_SERVER_ERROR)
            self._catch_up(context)
            return done
        self._catch_up(context)
        response = result.response
        if context.last_written > context.last_committed:
            context.waiting.append(
                _Waiter(context.last_written, lambda: done.complete(response), done.fail)
            )
        else:
            done.complete(response)
        return done

    def read(self, partition: int, op: Callable[[S], R]) -> Completion[R]:
        """Run ``op`` on the partition's shard; answer once the writes before it are
        committed."""
        done: Completion[R] = Completion()
        error = self.status(partition)
        if error != ErrorCode.NONE:
            done.fail(error)
            return done
        try:
            response = op(self._shards[partition])
        except Exception:
            log.exception("partition %d: a read operation failed", partition)
            done.fail(ErrorCode.UNKNOWN_SERVER_ERROR)
            return done
        self._contexts[partition].defer(lambda: done.complete(response), done.fail)
        return done

    def on_committed(self, partition: int, offset: int) -> None:
        """The partition's high watermark moved to ``offset``: answer what it covers."""
        context = self._contexts.get(partition)
        if context is not None and context.state is PartitionState.ACTIVE:
            self._commit_up_to(context, offset)

    # -- time ------------------------------------------------------------------------------

    def advance(self, now_ms: int) -> None:
        """Fire every active shard's timers due at ``now_ms``, each partition's as one
        operation (what they append and answer waits for its commit, like any write)."""
        for partition, context in list(self._contexts.items()):
            if context.state is not PartitionState.ACTIVE:
                continue
            deadline = context.timers.next_deadline()
            if deadline is None or deadline > now_ms:
                continue
            try:
                self._shards[partition].advance(now_ms)
            except Exception:
                log.exception("partition %d: a timer failed", partition)
            self._catch_up(context)

    def next_deadline(self) -> int | None:
        deadlines = [
            d
            for c in self._contexts.values()
            if c.state is PartitionState.ACTIVE and (d := c.timers.next_deadline()) is not None
        ]
        return min(deadlines, default=None)

    # -- storage ---------------------------------------------------------------------------

    def _append(self, context: ShardContext[U], records: Sequence[U]) -> None:
        if context.state is not PartitionState.ACTIVE:
            raise AppendError(ErrorCode.NOT_LEADER_OR_FOLLOWER, "the partition is not loaded")
        encode = self._encode
        end = self._writer.append(context.partition, [encode(r) for r in records])
        context.last_written = max(context.last_written, end)

    def _catch_up(self, context: ShardContext[U]) -> None:
        if context.last_written > context.last_committed:
            self._commit_up_to(context, self._writer.committed_offset(context.partition))

    def _commit_up_to(self, context: ShardContext[U], offset: int) -> None:
        if offset <= context.last_committed:
            return
        context.last_committed = offset
        waiting = context.waiting
        while waiting and waiting[0].offset <= offset:
            waiting.popleft().complete()

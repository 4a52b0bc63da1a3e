"""The broker's periodic work on its logs, as Kafka's LogManager schedules it.

- Retention (``log.retention.check.interval.ms``): delete segments past
  ``retention.ms``/``retention.bytes`` and remove files whose ``file.delete.delay.ms`` has
  passed.
- Deleted partitions (Kafka's kafka-delete-logs): their directories go as soon as the
  broker's ``file.delete.delay.ms`` has passed, not minutes later with retention.
- Flush (``log.flush.scheduler.interval.ms``): fsync logs whose ``flush.ms`` has passed.
- Checkpoints (``log.flush.offset.checkpoint.interval.ms``,
  ``log.flush.start.offset.checkpoint.interval.ms``): recovery points and log starts.
- Compaction (``log.cleaner.enable``, every ``log.cleaner.backoff.ms``): the filthiest
  compacted log is planned on the event loop, cleaned in a worker thread (it only reads
  immutable segments and writes ``.cleaned`` files), and swapped in on the event loop.
- Producer expiry (``producer.id.expiration.check.interval.ms``).
- Committed offsets' expiry (``offsets.retention.check.interval.ms``; the group
  coordinator decides what expires).
- ISR expiry (every ``replica.lag.time.max.ms`` / 2): led partitions ask the controller
  to drop the followers that have not caught up.
- Moves between log directories (AlterReplicaLogDirs; Kafka's ReplicaAlterLogDirsThread):
  each future log is filled a step (1 MiB) at a time, the event loop free between steps,
  and swapped in once it has caught up. Started by the request, and at start-up for the
  moves a restart interrupted. A log being moved is not compacted (Kafka pauses its
  cleaning).

Every task runs on the event loop, which owns the logs, except the cleaning itself. A
failing task logs one line and runs again at its next interval.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer

log = logging.getLogger("millpond.broker")


#: How long the deletion task sleeps at least when nothing waits and the delay is 0.
IDLE_DELETION_CHECK_MS = 1000
#: ... and at least between two passes (a frozen test clock must not make it spin).
MIN_DELETION_WAIT_MS = 10

#: Intervals at or above this (Kafka's Long.MAX "never" defaults) schedule nothing.
NEVER_MS = 2**40


def _periodic(name: str, interval_ms: int, work: Callable[[], object]) -> asyncio.Task[None] | None:
    if interval_ms >= NEVER_MS:
        return None

    async def loop() -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                work()
            except Exception:  # noqa: BLE001 (one log line; the task runs again later)
                log.exception("periodic task %s failed", name)

    return asyncio.get_running_loop().create_task(loop(), name=f"millpond-{name}")


class Maintenance:
    def __init__(self, broker: BrokerServer) -> None:
        self._broker = broker
        self._tasks: list[asyncio.Task[None]] = []
        self._cleaner: asyncio.Task[None] | None = None
        self._moves_wanted = asyncio.Event()

    def start(self) -> None:
        broker = self._broker
        ms = broker.config.get_int
        logs = broker.log_manager
        tasks = [
            _periodic("retention", ms("log.retention.check.interval.ms", 300_000), self._retention),
            _periodic("flush", ms("log.flush.scheduler.interval.ms", NEVER_MS), logs.flush_dirty),
            _periodic(
                "recovery-checkpoint",
                ms("log.flush.offset.checkpoint.interval.ms", 60_000),
                logs.checkpoint_recovery_points,
            ),
            _periodic(
                "producer-expiry",
                ms("producer.id.expiration.check.interval.ms", 600_000),
                broker.replicas.remove_expired_producers,
            ),
            _periodic(
                "offsets-expiry",
                ms("offsets.retention.check.interval.ms", 600_000),
                broker.groups.expire_offsets,
            ),
            _periodic(
                "isr-expiration",
                broker.replicas.replica_lag_time_max_ms // 2,
                broker.replicas.shrink_isrs,
            ),
        ]
        self._tasks = [task for task in tasks if task is not None]
        self._tasks.append(
            asyncio.get_running_loop().create_task(
                self._delete_logs_forever(), name="millpond-delete-logs"
            )
        )
        self._tasks.append(
            asyncio.get_running_loop().create_task(self._move_forever(), name="millpond-moves")
        )
        if logs.moving():
            self.wake_moves()
        if bool(broker.config.get("log.cleaner.enable")):
            backoff_ms = ms("log.cleaner.backoff.ms", 15_000)
            self._cleaner = asyncio.get_running_loop().create_task(
                self._clean_forever(backoff_ms), name="millpond-cleaner"
            )

    def run_time_driven_tasks(self) -> None:
        """Run now the checks that act on elapsed time (retention, producer and offset
        expiry): after the control endpoint moved the clock, what expired goes at once
        instead of at the next interval."""
        self._retention()
        self._broker.replicas.remove_expired_producers()
        self._broker.groups.expire_offsets()

    def _retention(self) -> None:
        logs = self._broker.log_manager
        logs.retention_pass()  # removals of deleted partitions that are due included
        logs.checkpoint_log_start_offsets()

    async def _delete_logs_forever(self) -> None:
        broker = self._broker
        logs = broker.log_manager
        while True:
            wait_ms = logs.next_log_deletion_ms()
            if wait_ms is None:
                # A partition deleted while this sleeps is due a whole delay after its
                # deletion, so it is never late.
                delay_ms = broker.config.log_config().file_delete_delay_ms
                wait_ms = max(delay_ms, IDLE_DELETION_CHECK_MS)
            await asyncio.sleep(max(wait_ms, MIN_DELETION_WAIT_MS) / 1000)
            try:
                logs.delete_pending_logs()
            except Exception:  # noqa: BLE001 (one log line; the task tries again later)
                log.exception("removing deleted partitions failed")

    def wake_moves(self) -> None:
        """A future log waits to be filled (AlterReplicaLogDirs created one)."""
        self._moves_wanted.set()

    async def _move_forever(self) -> None:
        while True:
            await self._moves_wanted.wait()
            self._moves_wanted.clear()
            try:
                await self.move_logs()
            except Exception:  # noqa: BLE001 (one log line; the next request wakes it)
                log.exception("moving logs between log directories failed")

    async def move_logs(self) -> int:
        """Run every pending move to its end; returns how many logs were swapped in."""
        broker = self._broker
        logs = broker.log_manager
        moved = 0
        while pending := logs.moving():
            for topic, partition in pending:
                before = logs.get_log(topic, partition)
                if logs.advance_move(topic, partition):
                    after = logs.get_log(topic, partition)
                    if after is not None and after is not before:
                        broker.replicas.log_moved(topic, partition, after)
                        moved += 1
                await asyncio.sleep(0)  # requests run between steps
        return moved

    async def _clean_forever(self, backoff_ms: int) -> None:
        while True:
            await asyncio.sleep(backoff_ms / 1000)
            try:
                await self.clean_once()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 (one log line; the cleaner tries again later)
                log.exception("log cleaning failed")

    async def clean_once(self) -> int:
        """Clean every compacted log that needs it; returns how many were cleaned."""
        # Imported with the first pass, not at start-up (about 3% of it).
        from millpond.storage.cleaner.checkpoint import CleanerCheckpoint  # noqa: PLC0415
        from millpond.storage.cleaner.clean import (  # noqa: PLC0415
            apply_cleaning,
            plan_cleaning,
            run_cleaning,
        )

        broker = self._broker
        cleaned = 0
        moving = set(broker.log_manager.moving())
        for (topic, partition), partition_log in list(broker.log_manager.opened_logs()):
            if not partition_log.config.compact or (topic, partition) in moving:
                continue
            log_dir = broker.log_manager.log_dir_of(topic, partition)
            if log_dir is None:
                continue
            checkpoint = CleanerCheckpoint(broker.fs, log_dir)
            task = plan_cleaning(
                partition_log, checkpoint.get((topic, partition)), broker.clock.now_ms()
            )
            if task is None:
                continue
            result = await asyncio.to_thread(run_cleaning, task)
            end = apply_cleaning(result)
            if end is not None:
                checkpoint.update((topic, partition), end)
                cleaned += 1
        return cleaned

    async def stop(self) -> None:
        tasks = [*self._tasks, *([self._cleaner] if self._cleaner else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._tasks, self._cleaner = [], None

"""All the partition logs of a broker, across its ``log.dirs``.

Start-up (the constructor), per log directory (see :mod:`millpond.storage.log_dirs`):
check or write ``meta.properties``; take (read and durably delete) the clean-shutdown
marker; read the recovery-point and log-start-offset checkpoints; list the partition
directories. Then:

- after a **clean** shutdown nothing is opened: each partition is a small record of
  its directory and checkpointed offsets, and its :class:`~millpond.storage.log.Log`
  is opened on first use (:meth:`LogManager.get_log`). No segment is listed, no index
  or ``.log`` read, no file descriptor taken until then, so ten thousand partitions
  start in milliseconds. :meth:`LogManager.open_all` opens every log at once.
- after an **unclean** shutdown every log of the directory is opened (recovered from
  its checkpointed recovery point) before the constructor returns, as Kafka recovers
  before serving.

A lazily opened log is loaded with ``had_clean_shutdown=True``: nothing but its own
:class:`Log` ever touches its files, so they are as the clean shutdown left them. Until
it is opened, its checkpointed offsets are carried over into every checkpoint written,
so a crash afterwards recovers it from the same recovery point as before.

Moving a partition to another directory (AlterReplicaLogDirs), as Kafka does:
:meth:`LogManager.alter_log_dir` creates a ``-future`` log in the destination,
:meth:`LogManager.advance_move` copies the current log into it a step at a time
(:mod:`~millpond.storage.log_copy`) and, once it has caught up, renames it in and the
old log out for deletion. Future logs are reloaded at start-up, so a move resumes.
New logs go to the directory holding the fewest logs, future ones counted.

Running: :meth:`LogManager.flush_dirty` (flush.ms, and syncing rolled segments),
:meth:`LogManager.checkpoint_recovery_points` and
:meth:`LogManager.checkpoint_log_start_offsets` (Kafka runs them every minute),
:meth:`LogManager.retention_pass` (retention, file.delete.delay.ms removals) are the
broker's periodic tasks. Each may fsync; the broker runs them off its event loop while
no request touches the logs concerned (the logs are not thread-safe).

Shutdown (:meth:`LogManager.shutdown`): flush and close every open log, write both
checkpoints of each directory, and only then the clean-shutdown marker, so the marker
is never durable before what it vouches for.

Not thread-safe; one owner (the broker's storage task) serializes every call.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable, Iterable, Iterator

from millpond.storage.checkpoints import (
    read_partition_metadata,
    write_offset_checkpoint,
    write_partition_metadata,
)
from millpond.storage.clock import Clock
from millpond.storage.config import LogConfig
from millpond.storage.fs import FileSystem, join, parent
from millpond.storage.leader_epochs import LeaderEpochCache
from millpond.storage.log import Log
from millpond.storage.log_copy import COPY_STEP_BYTES, copy_step
from millpond.storage.log_dirs import (
    LogDirError,
    TopicPartition,
    ensure_meta_properties,
    log_start_offsets_path,
    read_offsets_lenient,
    recovery_points_path,
    scan_log_dir,
    take_clean_shutdown_marker,
    write_clean_shutdown_marker,
)
from millpond.storage.names import (
    LEADER_EPOCH_CHECKPOINT_FILE,
    marked_partition_dir_name,
    partition_dir_name,
)
from millpond.storage.uuids import random_uuid4

__all__ = ["InconsistentTopicIdError", "LogDirError", "LogManager", "TopicPartition"]

#: A future log's directory name part: Kafka's own (``-future``).
_FUTURE = "future"

_log = logging.getLogger(__name__)


class InconsistentTopicIdError(Exception):
    """INCONSISTENT_TOPIC_ID: the partition on disk belongs to another topic id."""


class _LogDir:
    __slots__ = (
        "clean_shutdown_broker_epoch",
        "directory_id",
        "had_clean_shutdown",
        "hosted",
        "path",
        "written_log_starts",
        "written_recovery_points",
    )

    def __init__(
        self,
        path: str,
        directory_id: bytes | None,
        had_clean_shutdown: bool,
        clean_shutdown_broker_epoch: int | None,
    ) -> None:
        self.path = path
        self.directory_id = directory_id
        self.had_clean_shutdown = had_clean_shutdown
        self.clean_shutdown_broker_epoch = clean_shutdown_broker_epoch
        #: How many partitions it holds (a new log goes to the directory holding the fewest).
        self.hosted = 0
        self.written_recovery_points: dict[TopicPartition, int] | None = None
        self.written_log_starts: dict[TopicPartition, int] | None = None


class _Slot:
    """A hosted partition: where it lives and, until its log is opened, the offsets the
    checkpoints had for it."""

    __slots__ = ("log", "log_dir", "log_start_offset", "path", "recovery_point", "topic_id")

    def __init__(
        self,
        log_dir: _LogDir,
        path: str,
        recovery_point: int,
        log_start_offset: int,
    ) -> None:
        self.log_dir = log_dir
        self.path = path
        self.recovery_point = recovery_point
        self.log_start_offset = log_start_offset
        self.log: Log | None = None
        self.topic_id: bytes | None = None


class LogManager:
    """The logs of every partition this broker hosts (see the module docstring).

    ``topic_config`` gives each topic's :class:`LogConfig` (the broker's defaults merged
    with the topic's overrides); without it every topic gets ``default_config``.
    """

    def __init__(
        self,
        fs: FileSystem,
        log_dirs: list[str],
        clock: Clock,
        *,
        cluster_id: str,
        node_id: int,
        default_config: LogConfig | None = None,
        topic_config: Callable[[str], LogConfig] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        if not log_dirs:
            raise ValueError("at least one log directory is needed")
        self._fs = fs
        self._clock = clock
        self.default_config = default_config or LogConfig()
        self._topic_config = topic_config
        self._overrides: dict[str, LogConfig] = {}
        self._rng = rng or random.Random()  # noqa: S311 (segment jitter, not security)
        self._slots: dict[TopicPartition, _Slot] = {}
        #: Replicas moving to another log directory: their future logs (Kafka's futureLogs).
        self._futures: dict[TopicPartition, _Slot] = {}
        #: Where a partition's log goes when it is created (AlterReplicaLogDirs before it
        #: existed; Kafka's preferredLogDirs).
        self._preferred: dict[TopicPartition, _LogDir] = {}
        self._dirs: list[_LogDir] = []
        # (due on the monotonic clock, directory) of removed partitions.
        self._doomed: list[tuple[int, str]] = []
        self.offline: dict[TopicPartition, OSError] = {}
        for path in dict.fromkeys(p.rstrip("/") or "/" for p in log_dirs):
            self._load_dir(path, cluster_id, node_id)
        for tp in [tp for tp in self._futures if tp not in self._slots]:
            # Only a hand-edited directory leaves a future log without its current one.
            _log.warning("future log %s has no current log; left alone", self._futures[tp].path)
            self._futures[tp].log_dir.hosted -= 1
            del self._futures[tp]

    # -- start-up ------------------------------------------------------------------------

    def _load_dir(self, path: str, cluster_id: str, node_id: int) -> None:
        fs = self._fs
        fs.makedirs(path)
        meta = ensure_meta_properties(fs, path, cluster_id, node_id, self._clock)
        clean, epoch = take_clean_shutdown_marker(fs, path)
        log_dir = _LogDir(path, meta.directory_id, clean, epoch)
        self._dirs.append(log_dir)
        recovery_points = read_offsets_lenient(fs, recovery_points_path(path))
        log_starts = read_offsets_lenient(fs, log_start_offsets_path(path))
        scan = scan_log_dir(fs, path)
        now = self._clock.monotonic_ms()
        self._doomed += [(now, doomed) for doomed in scan.to_delete]
        for tp, partition_path in sorted(scan.partitions.items()):
            other = self._slots.get(tp)
            if other is not None:
                raise LogDirError(
                    f"partition {tp[0]}-{tp[1]} is in both {other.path} and {partition_path}"
                )
            slot = _Slot(log_dir, partition_path, recovery_points.get(tp, 0), log_starts.get(tp, 0))
            self._slots[tp] = slot
            log_dir.hosted += 1
            if not clean:
                self._open(tp, slot)
        for tp, future_path in sorted(scan.futures.items()):
            if tp in self._futures:
                raise LogDirError(
                    f"partition {tp[0]}-{tp[1]} has future logs in both "
                    f"{self._futures[tp].path} and {future_path}"
                )
            future = _Slot(log_dir, future_path, recovery_points.get(tp, 0), log_starts.get(tp, 0))
            self._futures[tp] = future
            log_dir.hosted += 1
            self._open(tp, future)  # a move resumes from what the future log holds

    def _open(self, tp: TopicPartition, slot: _Slot) -> Log:
        if slot.log is None:
            epochs = LeaderEpochCache(self._fs, join(slot.path, LEADER_EPOCH_CHECKPOINT_FILE))
            slot.log = Log(
                self._fs,
                slot.path,
                self.config_for(tp[0]),
                self._clock,
                recovery_point=slot.recovery_point,
                log_start_offset=slot.log_start_offset,
                had_clean_shutdown=slot.log_dir.had_clean_shutdown,
                leader_epochs=epochs,
                rng=self._rng,
            )
        return slot.log

    # -- queries -------------------------------------------------------------------------

    @property
    def log_dirs(self) -> list[str]:
        return [d.path for d in self._dirs]

    def had_clean_shutdown(self, log_dir: str) -> bool:
        return self._dir(log_dir).had_clean_shutdown

    def directory_id(self, log_dir: str) -> bytes | None:
        return self._dir(log_dir).directory_id

    def partitions(self) -> list[TopicPartition]:
        """Every hosted partition, opened or not, sorted."""
        return sorted(self._slots)

    def __contains__(self, tp: object) -> bool:
        return tp in self._slots

    def __len__(self) -> int:
        return len(self._slots)

    def opened_logs(self) -> Iterator[tuple[TopicPartition, Log]]:
        """The logs opened so far (the others have not been touched since start-up)."""
        for tp, slot in self._slots.items():
            if slot.log is not None:
                yield tp, slot.log

    def config_for(self, topic: str) -> LogConfig:
        config = self._overrides.get(topic)
        if config is not None:
            return config
        return self._topic_config(topic) if self._topic_config else self.default_config

    def log_dir_of(self, topic: str, partition: int) -> str | None:
        slot = self._slots.get((topic, partition))
        return None if slot is None else slot.log_dir.path

    def get_log(self, topic: str, partition: int) -> Log | None:
        """The partition's log (opened now if this is its first use), or None."""
        tp = (topic, partition)
        slot = self._slots.get(tp)
        return None if slot is None else self._open(tp, slot)

    def open_all(self) -> int:
        """Open every log not opened yet; returns how many were opened."""
        opened = 0
        for tp, slot in self._slots.items():
            if slot.log is None:
                self._open(tp, slot)
                opened += 1
        return opened

    def topic_id(self, topic: str, partition: int) -> bytes | None:
        """The topic id in the partition's ``partition.metadata`` (read on first ask)."""
        slot = self._slots.get((topic, partition))
        if slot is None:
            return None
        if slot.topic_id is None:
            try:
                slot.topic_id = read_partition_metadata(self._fs, slot.path)
            except FileNotFoundError:
                return None
        return slot.topic_id

    # -- creation, configuration and removal ---------------------------------------------

    def get_or_create_log(
        self,
        topic: str,
        partition: int,
        topic_id: bytes | None = None,
        config: LogConfig | None = None,
    ) -> Log:
        """The partition's log, created empty in the log directory holding the fewest
        partitions if it does not exist. ``topic_id`` goes to ``partition.metadata`` (a
        different id already there raises :class:`InconsistentTopicIdError`);
        ``config``, if given, becomes the topic's configuration."""
        if config is not None:
            self.update_config(topic, config)
        tp = (topic, partition)
        slot = self._slots.get(tp)
        created = slot is None
        if slot is None:
            slot = self._create(tp)
        log = self._open(tp, slot)
        if topic_id is not None:
            known = None if created else self.topic_id(topic, partition)
            if known is None:
                write_partition_metadata(self._fs, slot.path, topic_id)
                slot.topic_id = topic_id
            elif known != topic_id:
                raise InconsistentTopicIdError(
                    f"{slot.path} holds topic id {known.hex()}, not {topic_id.hex()}"
                )
        return log

    def _next_log_dir(self, tp: TopicPartition) -> _LogDir:
        """Where a new log goes: the preferred directory if one was named for it, else
        the directory holding the fewest logs (current and future; the first of those
        in ``log.dirs`` order), as Kafka's LogManager places them."""
        preferred = self._preferred.get(tp)
        return preferred if preferred is not None else min(self._dirs, key=lambda d: d.hosted)

    def _create(self, tp: TopicPartition) -> _Slot:
        log_dir = self._next_log_dir(tp)
        path = join(log_dir.path, partition_dir_name(*tp))
        if self._fs.exists(path):
            raise LogDirError(f"{path} exists but was not there at start-up")
        self._fs.makedirs(path)
        self._fs.sync_dir(log_dir.path)
        # A new log has nothing to recover (Kafka creates it as after a clean shutdown).
        slot = _Slot(log_dir, path, 0, 0)
        epochs = LeaderEpochCache(self._fs, join(path, LEADER_EPOCH_CHECKPOINT_FILE))
        slot.log = Log(
            self._fs, path, self.config_for(tp[0]), self._clock,
            had_clean_shutdown=True, leader_epochs=epochs, rng=self._rng,
        )  # fmt: skip
        self._slots[tp] = slot
        log_dir.hosted += 1
        return slot

    def update_config(self, topic: str, config: LogConfig) -> None:
        """A topic's new configuration, applied to its open logs at once and to the
        others when they open."""
        self._overrides[topic] = config
        for (name, _), slot in self._slots.items():
            if name == topic and slot.log is not None:
                slot.log.config = config

    def delete_logs(
        self, topic: str, partitions: Iterable[int], delay_ms: int | None = None
    ) -> int:
        """Remove a topic's partitions: close each log, rename its directory to
        ``<topic>-<partition>.<id>-delete``, then make the renames durable and rewrite
        the checkpoints once per log directory (not once per partition: a topic of
        10,000 partitions would rewrite them 10,000 times). The files go ``delay_ms``
        later, by :meth:`delete_pending_logs` (or at the next start-up if the process
        stops first). Kafka waits the broker's file.delete.delay.ms, not the topic's (the
        topic is gone); without ``delay_ms``, ``default_config``'s. Returns how many of
        them were hosted."""
        touched: list[_LogDir] = []
        deleted = 0
        if delay_ms is None:
            delay_ms = self.default_config.file_delete_delay_ms
        due = self._clock.monotonic_ms() + delay_ms
        for partition in partitions:
            tp = (topic, partition)
            self._preferred.pop(tp, None)
            future = self._futures.pop(tp, None)
            if future is not None:
                self._doom(tp, future, due)
                if future.log_dir not in touched:
                    touched.append(future.log_dir)
            slot = self._slots.pop(tp, None)
            if slot is None:
                continue
            self.offline.pop(tp, None)
            self._doom(tp, slot, due)
            deleted += 1
            if slot.log_dir not in touched:
                touched.append(slot.log_dir)
        for log_dir in touched:
            self._fs.sync_dir(log_dir.path)
            self._checkpoint_dir(log_dir, recovery=True, log_start=True)
        return deleted

    def next_log_deletion_ms(self) -> int | None:
        """Milliseconds until the next deleted partition is due for removal (0: now), or
        None when none waits."""
        if not self._doomed:
            return None
        return max(0, min(due for due, _ in self._doomed) - self._clock.monotonic_ms())

    def delete_pending_logs(self) -> int:
        """Remove the directories of deleted partitions whose delay has passed."""
        now = self._clock.monotonic_ms()
        ready = [path for due, path in self._doomed if due <= now]
        self._doomed = [(due, path) for due, path in self._doomed if due > now]
        for path in ready:
            if self._fs.exists(path):
                self._fs.remove_tree(path)
        return len(ready)

    # -- moving between log directories (AlterReplicaLogDirs) ---------------------------

    def has_log_dir(self, log_dir: str) -> bool:
        return any(d.path == log_dir.rstrip("/") for d in self._dirs)

    def prefer_log_dir(self, topic: str, partition: int, log_dir: str) -> None:
        """Create the partition's log in ``log_dir`` when it is created (Kafka's
        preferred log dir: AlterReplicaLogDirs may name a partition before its log
        exists). Raises KeyError for a directory not in ``log.dirs``."""
        self._preferred[(topic, partition)] = self._dir(log_dir)

    def future_log(self, topic: str, partition: int) -> Log | None:
        future = self._futures.get((topic, partition))
        return None if future is None else future.log

    def future_log_dir_of(self, topic: str, partition: int) -> str | None:
        future = self._futures.get((topic, partition))
        return None if future is None else future.log_dir.path

    def moving(self) -> list[TopicPartition]:
        """The partitions with a future log, sorted."""
        return sorted(self._futures)

    def alter_log_dir(self, topic: str, partition: int, log_dir: str) -> bool:
        """Move the partition's log to ``log_dir`` (which must be in ``log.dirs``), as
        Kafka's AlterReplicaLogDirs does: a move to another directory than the one in
        progress drops its future log; then, unless the log is already there, a future
        log (``<topic>-<partition>.<id>-future``) is created in ``log_dir``, which
        :meth:`advance_move` fills and swaps in. True if a future log was created.
        Raises KeyError when the partition has no log or the directory is unknown."""
        tp = (topic, partition)
        target = self._dir(log_dir)
        self._preferred[tp] = target
        slot = self._slots[tp]
        future = self._futures.get(tp)
        if future is not None and future.log_dir is not target:
            del self._futures[tp]
            self._doom(tp, future, self._clock.monotonic_ms())
            self._fs.sync_dir(future.log_dir.path)
            future = None
        if slot.log_dir is target or future is not None:
            return False
        current = self._open(tp, slot)
        name = marked_partition_dir_name(topic, partition, _FUTURE, random_uuid4().hex())
        path = join(target.path, name)
        self._fs.makedirs(path)
        self._fs.sync_dir(target.path)
        future = _Slot(target, path, current.log_start_offset, current.log_start_offset)
        epochs = LeaderEpochCache(self._fs, join(path, LEADER_EPOCH_CHECKPOINT_FILE))
        future.log = Log(
            self._fs, path, current.config, self._clock, log_start_offset=0,
            had_clean_shutdown=True, leader_epochs=epochs, rng=self._rng,
        )  # fmt: skip
        topic_id = self.topic_id(topic, partition)
        if topic_id is not None:
            write_partition_metadata(self._fs, path, topic_id)
            future.topic_id = topic_id
        self._futures[tp] = future
        target.hosted += 1
        return True

    def advance_move(self, topic: str, partition: int, max_bytes: int = COPY_STEP_BYTES) -> bool:
        """One step of a move: copy up to ``max_bytes`` into the future log; once it has
        caught up, swap it in (:meth:`_replace_current_with_future`). True when the
        partition has no move left to make. A failure of the destination's file system
        drops the move (logged); the current log stays where it is."""
        tp = (topic, partition)
        future = self._futures.get(tp)
        slot = self._slots.get(tp)
        if future is None:
            return True
        if slot is None or tp in self.offline:
            del self._futures[tp]  # nothing to copy from any more
            self._doom(tp, future, self._clock.monotonic_ms())
            return True
        current = self._open(tp, slot)
        future_log = self._open(tp, future)
        try:
            if not copy_step(current, future_log, max_bytes):
                return False
            self._replace_current_with_future(tp, slot, future)
        except OSError as exc:
            _log.error("moving %s-%s to %s failed: %s", topic, partition, future.log_dir.path, exc)
            if self._futures.pop(tp, None) is not None:
                self._doom(tp, future, self._clock.monotonic_ms())
        return True

    def _replace_current_with_future(self, tp: TopicPartition, slot: _Slot, future: _Slot) -> None:
        """Kafka's replaceCurrentWithFutureLog: the future log becomes the partition's log
        (its directory renamed to ``<topic>-<partition>``), then the old one is renamed
        for deletion and goes after file.delete.delay.ms. The future log is flushed and
        reopened at its new path first. A crash between the two renames leaves the
        partition in both directories, which the next start refuses, as Kafka does."""
        future_log = future.log
        current = slot.log
        assert future_log is not None and current is not None
        high_watermark = current.high_watermark
        future_log.close()
        live = join(future.log_dir.path, partition_dir_name(*tp))
        self._fs.rename(future.path, live)
        self._fs.sync_dir(future.log_dir.path)
        epochs = LeaderEpochCache(self._fs, join(live, LEADER_EPOCH_CHECKPOINT_FILE))
        moved = Log(
            self._fs, live, self.config_for(tp[0]), self._clock,
            recovery_point=future_log.log_end_offset,
            log_start_offset=future_log.log_start_offset, had_clean_shutdown=True,
            leader_epochs=epochs, rng=self._rng,
        )  # fmt: skip
        moved.update_high_watermark(high_watermark)
        del self._futures[tp]
        old_dir = slot.log_dir
        old = _Slot(old_dir, slot.path, current.recovery_point, current.log_start_offset)
        old.log = current
        slot.log_dir, slot.path, slot.log = future.log_dir, live, moved
        slot.topic_id = future.topic_id or slot.topic_id
        self._doom(tp, old, self._clock.monotonic_ms() + self.default_config.file_delete_delay_ms)
        self._fs.sync_dir(old_dir.path)
        self._checkpoint_dir(old_dir, recovery=True, log_start=True)
        self._checkpoint_dir(slot.log_dir, recovery=True, log_start=True)

    def _doom(self, tp: TopicPartition, slot: _Slot, due: int) -> None:
        """Close a log that is being thrown away and rename its directory to
        ``-delete``; it is removed when ``due``. The caller syncs the directory."""
        if slot.log is not None:
            try:
                slot.log.close(flush=False)
            except OSError as exc:  # its data is being thrown away anyway
                _log.warning("closing deleted log %s: %s", slot.path, exc)
        doomed = join(
            parent(slot.path),
            marked_partition_dir_name(tp[0], tp[1], "delete", random_uuid4().hex()),
        )
        self._fs.rename(slot.path, doomed)
        self._doomed.append((due, doomed))
        slot.log_dir.hosted -= 1

    # -- periodic tasks ------------------------------------------------------------------

    def retention_pass(self) -> int:
        """Retention for every log not under compaction (the cleaner applies it to those,
        as in Kafka), then removals whose file.delete.delay.ms has passed. Opens the logs
        not opened yet: retention needs their segments' timestamps. Returns segments
        (and partition directories) removed. The time is the injected clock's."""
        removed = 0
        for tp, slot in list(self._slots.items()):
            if tp in self.offline:
                continue
            log = self._open(tp, slot)
            try:
                if log.config.compact:
                    removed += log.delete_pending_files()
                else:
                    removed += log.delete_old_segments()
            except OSError as exc:
                self._take_offline(tp, exc)
        return removed + self.delete_pending_logs()

    def flush_dirty(self) -> int:
        """The flush.ms task: flush every open log whose last flush is older than its
        flush.ms, and sync segments rolled since the last flush. Returns the number of
        logs whose recovery point moved. A log whose flush fails goes offline."""
        flushed = 0
        for future in list(self._futures.values()):
            if future.log is not None:
                try:
                    future.log.maybe_flush()
                except OSError as exc:
                    _log.error("flushing future log %s: %s", future.path, exc)
        for tp, log in list(self.opened_logs()):
            if tp in self.offline:
                continue
            before = log.recovery_point
            try:
                log.maybe_flush()
            except OSError as exc:
                self._take_offline(tp, exc)
                continue
            flushed += log.recovery_point != before
        return flushed

    def checkpoint_recovery_points(self) -> None:
        """Write each directory's ``recovery-point-offset-checkpoint`` (skipped when
        nothing changed since the last write)."""
        for log_dir in self._dirs:
            self._checkpoint_dir(log_dir, recovery=True, log_start=False)

    def checkpoint_log_start_offsets(self) -> None:
        """Write each directory's ``log-start-offset-checkpoint`` (skipped when nothing
        changed): the logs whose start is above their first segment's base offset."""
        for log_dir in self._dirs:
            self._checkpoint_dir(log_dir, recovery=False, log_start=True)

    def _checkpoint_dir(self, log_dir: _LogDir, *, recovery: bool, log_start: bool) -> None:
        points: dict[TopicPartition, int] = {}
        starts: dict[TopicPartition, int] = {}
        for tp, slot in [*self._slots.items(), *self._futures.items()]:
            if slot.log_dir is not log_dir:
                continue
            log = slot.log
            if log is None:
                points[tp] = slot.recovery_point
                if slot.log_start_offset > 0:
                    starts[tp] = slot.log_start_offset
            else:
                points[tp] = log.recovery_point
                if log.log_start_offset > log.segments[0].base_offset:
                    starts[tp] = log.log_start_offset
        if recovery and points != log_dir.written_recovery_points:
            write_offset_checkpoint(self._fs, recovery_points_path(log_dir.path), points)
            log_dir.written_recovery_points = points
        if log_start and starts != log_dir.written_log_starts:
            write_offset_checkpoint(self._fs, log_start_offsets_path(log_dir.path), starts)
            log_dir.written_log_starts = starts

    def _take_offline(self, tp: TopicPartition, exc: OSError) -> None:
        _log.error("log %s-%s is offline: %s", tp[0], tp[1], exc)
        self.offline[tp] = exc

    # -- shutdown ------------------------------------------------------------------------

    def previous_broker_epoch(self) -> int:
        """The broker epoch every log directory's clean-shutdown marker names; -1 when
        one had none (the broker crashed) or they disagree (Kafka's
        ``readBrokerEpochFromCleanShutdownFiles``)."""
        epochs = {d.clean_shutdown_broker_epoch for d in self._dirs}
        if len(epochs) != 1:
            return -1
        [epoch] = epochs
        return -1 if epoch is None else epoch

    def shutdown(self, broker_epoch: int = -1) -> None:
        """Flush and close every open log, write each directory's checkpoints, then its
        clean-shutdown marker. A directory where a log failed to close, or a checkpoint
        failed to write, gets no marker: its next start recovers from the recovery
        points. The manager is unusable afterwards."""
        failed_dirs: set[str] = set()
        for future in self._futures.values():
            try:
                if future.log is not None:
                    future.log.close()
            except OSError as exc:
                _log.error("closing future log %s: %s", future.path, exc)
                failed_dirs.add(future.log_dir.path)
        for tp, slot in self._slots.items():
            log = slot.log
            if log is None:
                continue
            try:
                log.close()
            except OSError as exc:
                self._take_offline(tp, exc)
            if tp in self.offline:
                failed_dirs.add(slot.log_dir.path)
        for log_dir in self._dirs:
            try:
                self._checkpoint_dir(log_dir, recovery=True, log_start=True)
            except OSError as exc:
                _log.error("writing the checkpoints of %s: %s", log_dir.path, exc)
                continue
            if log_dir.path not in failed_dirs:
                write_clean_shutdown_marker(self._fs, log_dir.path, broker_epoch)
        self._slots.clear()
        self._futures.clear()

    def _dir(self, path: str) -> _LogDir:
        for log_dir in self._dirs:
            if log_dir.path == path.rstrip("/"):
                return log_dir
        raise KeyError(path)

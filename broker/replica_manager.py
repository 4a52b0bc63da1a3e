"""Partitions as the broker serves them: logs found through the metadata image.

Single node for now: this broker leads every partition and is its whole ISR, so the
high watermark follows the log end after each append (``acks=all`` is satisfied by
the leader alone). The structure is the one a cluster needs: the image says which
partitions exist and at which leader epoch; the log manager owns their logs.

Not thread-safe: the broker's event loop makes every call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

from millpond.controller.image import MetadataImage, TopicImage
from millpond.storage.config import ConfigError, LogConfig
from millpond.storage.log import Log
from millpond.storage.log_manager import LogManager
from millpond.storage.log_types import CorruptRecordError, LogAppendInfo, RecordTooLargeError
from millpond.wire.errors import ErrorCode


class AppendResult(NamedTuple):
    error: ErrorCode
    message: str | None = None
    info: LogAppendInfo | None = None


class ReplicaManager:
    def __init__(
        self,
        log_manager: LogManager,
        image: Callable[[], MetadataImage],
        topic_defaults: Mapping[str, str],
        node_id: int,
    ) -> None:
        self._logs = log_manager
        self._image = image
        self._defaults = dict(topic_defaults)
        self.node_id = node_id
        self._on_append: list[Callable[[], None]] = []

    def on_append(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` after every successful append (wakes long-poll fetches)."""
        self._on_append.append(callback)

    def log_config(self, topic: str) -> LogConfig:
        """The topic's effective config: broker-level defaults overlaid by its own."""
        props = {**self._defaults, **self._image().topic_config(topic)}
        try:
            return LogConfig.from_properties(props)
        except ConfigError:
            return LogConfig.from_properties(self._defaults)

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
        return log

    def append(self, topic: TopicImage, partition: int, records: memoryview) -> AppendResult:
        log = self.log(topic, partition)
        if log is None:
            return AppendResult(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        epoch = topic.partitions[partition].leader_epoch
        try:
            info = log.append(records, assign_offsets=True, leader_epoch=epoch)
        except RecordTooLargeError as exc:
            return AppendResult(ErrorCode.MESSAGE_TOO_LARGE, str(exc))
        except CorruptRecordError as exc:
            return AppendResult(ErrorCode.CORRUPT_MESSAGE, str(exc))
        log.update_high_watermark(log.log_end_offset)
        for callback in self._on_append:
            callback()
        return AppendResult(ErrorCode.NONE, None, info)

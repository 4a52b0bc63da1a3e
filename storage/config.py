"""Per-topic log configuration, under Kafka's topic config names and with Kafka's defaults.

A :class:`LogConfig` is immutable: a config change (IncrementalAlterConfigs) builds a new
one and hands it to the log, so a roll or retention pass never sees half an update. Each
field is the topic config of the same name, and its default, type and range are that
config's row in :mod:`millpond.storage.topic_configs`. Validation happens in ``__new__``
and ``_replace`` (so every construction path is checked) and every error names the Kafka
key, because that name is what an operator typed.

Flush policy (what each setting guarantees; see :meth:`millpond.storage.log.Log.append`):

``flush.messages``
    After an append leaves at least this many offsets past the recovery point, the
    append fsyncs the log before it returns. ``1`` therefore means every append that
    returns is on disk (offsets, data and indexes); ``N`` bounds what an OS crash or power
    cut can lose to fewer than ``N`` offsets. The default (Long.MAX) never flushes from
    the append path: durability comes from replication, as in Kafka.
``flush.ms``
    A log whose last flush is at least this old is flushed by the next call of
    :meth:`~millpond.storage.log.Log.maybe_flush` (the log manager's periodic task), so
    an OS crash loses at most about ``flush.ms`` plus that task's period of
    acknowledged data. The default (Long.MAX) never flushes on time.

Neither setting covers a process crash: appended data is in the page cache as soon as
:meth:`~millpond.storage.log.Log.append` returns, and survives the process dying.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any, NamedTuple, cast

from millpond.storage.config_def import (
    LONG_MAX,
    ConfigError,
    Value,
    check_value,
    default_value,
)
from millpond.storage.topic_configs import TOPIC_CONFIGS, parse_topic_configs

__all__ = ["LONG_MAX", "ConfigError", "LogConfig"]


def _key(name: str) -> str:
    return name.replace("_", ".")


def _default(key: str) -> Any:
    """The typed default of topic config ``key`` (its row's default)."""
    return default_value(TOPIC_CONFIGS[key])


class _LogSettings(NamedTuple):
    """LogConfig's fields; LogConfig adds the defaults and validation."""

    segment_bytes: int
    segment_ms: int
    segment_jitter_ms: int
    segment_index_bytes: int
    index_interval_bytes: int
    retention_ms: int
    retention_bytes: int
    cleanup_policy: tuple[str, ...]
    delete_retention_ms: int
    min_cleanable_dirty_ratio: float
    min_compaction_lag_ms: int
    max_compaction_lag_ms: int
    file_delete_delay_ms: int
    flush_messages: int
    flush_ms: int
    max_message_bytes: int
    message_timestamp_type: str
    #: How far a CreateTime record may lie in the past / future (else INVALID_TIMESTAMP).
    message_timestamp_before_max_ms: int
    message_timestamp_after_max_ms: int


class LogConfig(_LogSettings):
    """The settings a partition log obeys. Field ``a_b`` is Kafka's ``a.b``; the defaults
    are Kafka's."""

    __slots__ = ()

    def __new__(
        cls,
        segment_bytes: int = _default("segment.bytes"),
        segment_ms: int = _default("segment.ms"),
        segment_jitter_ms: int = _default("segment.jitter.ms"),
        segment_index_bytes: int = _default("segment.index.bytes"),
        index_interval_bytes: int = _default("index.interval.bytes"),
        retention_ms: int = _default("retention.ms"),
        retention_bytes: int = _default("retention.bytes"),
        cleanup_policy: tuple[str, ...] = _default("cleanup.policy"),
        delete_retention_ms: int = _default("delete.retention.ms"),
        min_cleanable_dirty_ratio: float = _default("min.cleanable.dirty.ratio"),
        min_compaction_lag_ms: int = _default("min.compaction.lag.ms"),
        max_compaction_lag_ms: int = _default("max.compaction.lag.ms"),
        file_delete_delay_ms: int = _default("file.delete.delay.ms"),
        flush_messages: int = _default("flush.messages"),
        flush_ms: int = _default("flush.ms"),
        max_message_bytes: int = _default("max.message.bytes"),
        message_timestamp_type: str = _default("message.timestamp.type"),
        message_timestamp_before_max_ms: int = _default("message.timestamp.before.max.ms"),
        message_timestamp_after_max_ms: int = _default("message.timestamp.after.max.ms"),
    ) -> LogConfig:
        self = super().__new__(
            cls,
            segment_bytes,
            segment_ms,
            segment_jitter_ms,
            segment_index_bytes,
            index_interval_bytes,
            retention_ms,
            retention_bytes,
            cleanup_policy,
            delete_retention_ms,
            min_cleanable_dirty_ratio,
            min_compaction_lag_ms,
            max_compaction_lag_ms,
            file_delete_delay_ms,
            flush_messages,
            flush_ms,
            max_message_bytes,
            message_timestamp_type,
            message_timestamp_before_max_ms,
            message_timestamp_after_max_ms,
        )
        for definition, value in zip(_DEFINITIONS, cast("tuple[Value, ...]", self), strict=True):
            check_value(definition, value)
        return self

    def _replace(self, **changes: Any) -> LogConfig:
        """A copy with ``changes``, validated as a new config is."""
        return LogConfig(*super()._replace(**changes))

    # -- derived values ------------------------------------------------------------------

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @property
    def max_segment_ms(self) -> int:
        """The age that rolls a segment: a compacted topic rolls by max.compaction.lag.ms
        too, so that a dirty active segment becomes cleanable in time (as Kafka does)."""
        if self.compact and self.max_compaction_lag_ms > 0:
            return min(self.max_compaction_lag_ms, self.segment_ms)
        return self.segment_ms

    def random_segment_jitter(self, rng: random.Random) -> int:
        """Each segment's roll jitter: uniform in [0, min(segment.jitter.ms, segment.ms)),
        drawn once per segment, so partitions created together do not all roll at once."""
        if self.segment_jitter_ms == 0:
            return 0
        return rng.randrange(min(self.segment_jitter_ms, self.segment_ms))

    # -- parsing -------------------------------------------------------------------------

    @classmethod
    def from_properties(cls, props: Mapping[str, str], base: LogConfig | None = None) -> LogConfig:
        """Build from Kafka topic config strings over ``base`` (the broker defaults).

        Every key must be a topic config and every value valid for it
        (:func:`~millpond.storage.topic_configs.parse_topic_configs`); the topic configs
        the log itself does not use are checked, then left to the layers that read them.
        Raises :class:`ConfigError` naming the first bad key.
        """
        parsed = parse_topic_configs(props)
        values: dict[str, Value] = {}
        for key, value in parsed.items():
            name = key.replace(".", "_")
            if name in _FIELDS:
                values[name] = value
        start = base or cls()
        return start._replace(**values) if values else start

    def to_properties(self) -> dict[str, str]:
        """The settings as Kafka config strings (DescribeConfigs' values)."""
        out: dict[str, str] = {}
        for name, value in zip(self._fields, self, strict=True):
            out[_key(name)] = ",".join(value) if isinstance(value, tuple) else str(value)
        return out


_FIELDS = frozenset(LogConfig._fields)
_DEFINITIONS = tuple(TOPIC_CONFIGS[_key(name)] for name in LogConfig._fields)

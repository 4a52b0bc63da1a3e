"""Per-topic log configuration, under Kafka's topic config names and with Kafka's defaults.

A :class:`LogConfig` is immutable: a config change (IncrementalAlterConfigs) builds a new
one and hands it to the log, so a roll or retention pass never sees half an update.
Validation happens in ``__new__`` and ``_replace`` (so every construction path is checked) and every
error names the Kafka key, because that name is what an operator typed.

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
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)

DAY_MS = 24 * 60 * 60 * 1000

#: Kafka topic configs that millpond accepts (a client may send them) but that the log
#: itself does not use; the broker layers read them from the raw properties.
OTHER_TOPIC_CONFIGS = frozenset(
    {
        "compression.type",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
        "min.insync.replicas",
        "unclean.leader.election.enable",
        "preallocate",
        "message.format.version",
        "message.timestamp.difference.max.ms",
        "message.downconversion.enable",
        "max.decompressed.message.bytes",
        "leader.replication.throttled.replicas",
        "follower.replication.throttled.replicas",
        "remote.storage.enable",
        "local.retention.ms",
        "local.retention.bytes",
        "remote.log.copy.disable",
        "remote.log.delete.on.disable",
    }
)


class ConfigError(ValueError):
    """An invalid topic config value (Kafka's INVALID_CONFIG); ``key`` names the setting."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key


def _key(name: str) -> str:
    return name.replace("_", ".")


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
        segment_bytes: int = 1024 * 1024 * 1024,
        segment_ms: int = 7 * DAY_MS,
        segment_jitter_ms: int = 0,
        segment_index_bytes: int = 10 * 1024 * 1024,
        index_interval_bytes: int = 4096,
        retention_ms: int = 7 * DAY_MS,
        retention_bytes: int = -1,
        cleanup_policy: tuple[str, ...] = ("delete",),
        delete_retention_ms: int = DAY_MS,
        min_cleanable_dirty_ratio: float = 0.5,
        min_compaction_lag_ms: int = 0,
        max_compaction_lag_ms: int = LONG_MAX,
        file_delete_delay_ms: int = 60_000,
        flush_messages: int = LONG_MAX,
        flush_ms: int = LONG_MAX,
        max_message_bytes: int = 1024 * 1024 + 12,
        message_timestamp_type: str = "CreateTime",
        message_timestamp_before_max_ms: int = LONG_MAX,
        message_timestamp_after_max_ms: int = 3_600_000,
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
        self._validate()
        return self

    def _replace(self, **changes: Any) -> LogConfig:
        """A copy with ``changes``, validated as a new config is."""
        return LogConfig(*super()._replace(**changes))

    def _validate(self) -> None:
        for name, (low, high) in _RANGES.items():
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ConfigError(_key(name), f"expected an integer, got {value!r}")
            if not low <= value <= high:
                raise ConfigError(_key(name), f"value {value} is outside [{low}, {high}]")
        ratio = self.min_cleanable_dirty_ratio
        if not isinstance(ratio, int | float) or not 0.0 <= ratio <= 1.0:
            raise ConfigError("min.cleanable.dirty.ratio", f"value {ratio!r} is outside [0, 1]")
        for policy in self.cleanup_policy:
            if policy not in ("delete", "compact"):
                raise ConfigError("cleanup.policy", f"unknown policy {policy!r}")
        if self.message_timestamp_type not in ("CreateTime", "LogAppendTime"):
            raise ConfigError(
                "message.timestamp.type",
                f"{self.message_timestamp_type!r} is not CreateTime or LogAppendTime",
            )

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

        Values are parsed as Kafka's ConfigDef parses them (trimmed; ints and longs in
        Java's ranges; lists comma-separated). Known Kafka topic configs the log does not
        use are accepted and ignored; any other key raises :class:`ConfigError`.
        """
        values: dict[str, Any] = {}
        for key, raw in props.items():
            name = key.replace(".", "_")
            parser = _PARSERS.get(name)
            if parser is None:
                if key in OTHER_TOPIC_CONFIGS:
                    continue
                raise ConfigError(key, "unknown topic config")
            values[name] = parser(key, raw)
        start = base or cls()
        return start._replace(**values)

    def to_properties(self) -> dict[str, str]:
        """The settings as Kafka config strings (DescribeConfigs' values)."""
        out: dict[str, str] = {}
        for name, value in zip(self._fields, self, strict=True):
            out[_key(name)] = ",".join(value) if isinstance(value, tuple) else str(value)
        return out


def _parse_int(key: str, raw: str, low: int, high: int) -> int:
    text = raw.strip()
    try:
        value = int(text, 10)
    except ValueError:
        raise ConfigError(key, f"{raw!r} is not an integer") from None
    if not low <= value <= high:
        raise ConfigError(key, f"{raw!r} is out of range")
    return value


def _parse_double(key: str, raw: str) -> float:
    try:
        return float(raw.strip())
    except ValueError:
        raise ConfigError(key, f"{raw!r} is not a number") from None


def _parse_list(key: str, raw: str) -> tuple[str, ...]:
    del key
    text = raw.strip()
    return tuple(item.strip() for item in text.split(",")) if text else ()


# Kafka's ranges: (lowest valid value, type's highest value).
_RANGES: dict[str, tuple[int, int]] = {
    "segment_bytes": (14, INT_MAX),  # atLeast(LegacyRecord.RECORD_OVERHEAD_V0)
    "segment_ms": (1, LONG_MAX),
    "segment_jitter_ms": (0, LONG_MAX),
    "segment_index_bytes": (4, INT_MAX),
    "index_interval_bytes": (0, INT_MAX),
    "retention_ms": (-1, LONG_MAX),
    "retention_bytes": (LONG_MIN, LONG_MAX),  # any negative value means unlimited
    "delete_retention_ms": (0, LONG_MAX),
    "min_compaction_lag_ms": (0, LONG_MAX),
    "max_compaction_lag_ms": (1, LONG_MAX),
    "file_delete_delay_ms": (0, LONG_MAX),
    "flush_messages": (1, LONG_MAX),
    "flush_ms": (0, LONG_MAX),
    "max_message_bytes": (0, INT_MAX),
    "message_timestamp_before_max_ms": (0, LONG_MAX),
    "message_timestamp_after_max_ms": (0, LONG_MAX),
}

_INT_FIELDS = {"segment_bytes", "segment_index_bytes", "index_interval_bytes", "max_message_bytes"}


def _int_parser(name: str) -> Callable[[str, str], int]:
    type_low, type_high = (-(2**31), INT_MAX) if name in _INT_FIELDS else (LONG_MIN, LONG_MAX)
    return lambda key, raw: _parse_int(key, raw, type_low, type_high)


_PARSERS: dict[str, Callable[[str, str], Any]] = {
    **{name: _int_parser(name) for name in _RANGES},
    "min_cleanable_dirty_ratio": _parse_double,
    "cleanup_policy": _parse_list,
    "message_timestamp_type": lambda key, raw: raw.strip(),
}

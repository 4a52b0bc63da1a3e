from __future__ import annotations

import random

import pytest

from millpond.storage.config import LONG_MAX, ConfigError, LogConfig


def test_defaults_are_kafkas() -> None:
    c = LogConfig()
    assert c.segment_bytes == 1 << 30
    assert c.segment_ms == c.retention_ms == 7 * 24 * 3600 * 1000
    assert (c.segment_jitter_ms, c.segment_index_bytes, c.index_interval_bytes) == (
        0,
        10 << 20,
        4096,
    )
    assert (c.retention_bytes, c.cleanup_policy, c.delete_retention_ms) == (
        -1,
        ("delete",),
        86_400_000,
    )
    assert (c.min_cleanable_dirty_ratio, c.min_compaction_lag_ms) == (0.5, 0)
    assert c.max_compaction_lag_ms == c.flush_messages == c.flush_ms == LONG_MAX
    assert (c.file_delete_delay_ms, c.max_message_bytes) == (60_000, 1_048_588)
    assert c.message_timestamp_type == "CreateTime"
    assert c.delete and not c.compact and not c.log_append_time


def test_from_properties_parses_like_kafka() -> None:
    c = LogConfig.from_properties(
        {
            "segment.bytes": " 1048576 ",
            "retention.ms": "-1",
            "retention.bytes": "-5",
            "cleanup.policy": "compact, delete",
            "min.cleanable.dirty.ratio": "0.25",
            "message.timestamp.type": "LogAppendTime",
            "compression.type": "zstd",  # a Kafka topic config the log ignores
        }
    )
    assert c.segment_bytes == 1 << 20
    assert (c.retention_ms, c.retention_bytes) == (-1, -5)
    assert c.cleanup_policy == ("compact", "delete") and c.compact and c.delete
    assert c.min_cleanable_dirty_ratio == 0.25
    assert c.log_append_time
    assert LogConfig.from_properties({"cleanup.policy": ""}).cleanup_policy == ()


def test_from_properties_overlays_a_base() -> None:
    base = LogConfig(segment_ms=1000)
    c = LogConfig.from_properties({"retention.ms": "5"}, base)
    assert (c.segment_ms, c.retention_ms) == (1000, 5)


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"segment.bytes": "13"}, "segment.bytes"),
        ({"segment.bytes": "2147483648"}, "segment.bytes"),  # over Java's int
        ({"segment.ms": "0"}, "segment.ms"),
        ({"segment.ms": "abc"}, "segment.ms"),
        ({"retention.ms": "-2"}, "retention.ms"),
        ({"flush.messages": "0"}, "flush.messages"),
        ({"index.interval.bytes": "-1"}, "index.interval.bytes"),
        ({"min.cleanable.dirty.ratio": "1.5"}, "min.cleanable.dirty.ratio"),
        ({"min.cleanable.dirty.ratio": "x"}, "min.cleanable.dirty.ratio"),
        ({"cleanup.policy": "delete,forever"}, "cleanup.policy"),
        ({"message.timestamp.type": "NoTime"}, "message.timestamp.type"),
        ({"no.such.config": "1"}, "no.such.config"),
    ],
)
def test_errors_name_the_key(props: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        LogConfig.from_properties(props)
    assert info.value.key == key
    assert str(info.value).startswith(key)


def test_direct_construction_is_validated() -> None:
    with pytest.raises(ConfigError, match="segment.index.bytes"):
        LogConfig(segment_index_bytes=3)


def test_max_segment_ms_follows_compaction_lag() -> None:
    assert LogConfig(segment_ms=100, max_compaction_lag_ms=50).max_segment_ms == 100
    compact = LogConfig(segment_ms=100, max_compaction_lag_ms=50, cleanup_policy=("compact",))
    assert compact.max_segment_ms == 50


def test_jitter_is_below_min_of_jitter_and_segment_ms() -> None:
    rng = random.Random(1)
    assert LogConfig().random_segment_jitter(rng) == 0
    c = LogConfig(segment_ms=100, segment_jitter_ms=1000)
    draws = {c.random_segment_jitter(rng) for _ in range(500)}
    assert min(draws) >= 0 and max(draws) < 100 and len(draws) > 50


def test_to_properties_round_trips() -> None:
    c = LogConfig(retention_bytes=123, cleanup_policy=("compact",), flush_ms=7)
    assert LogConfig.from_properties(c.to_properties()) == c

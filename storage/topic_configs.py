"""Every topic config Kafka's LogConfig defines, with Kafka's type, default and range.

One row per config (:class:`~millpond.storage.config_def.ConfigDefinition`): the log reads
its settings through these rows (:class:`~millpond.storage.config.LogConfig`), the
controller validates CreateTopics and AlterConfigs with them, and the broker builds its
log configs' defaults and DescribeConfigs on them. A topic config set is valid when every
key is a topic config and every value parses and passes its row's validator
(:func:`parse_topic_configs`); otherwise the error names the first bad key, which Kafka
answers INVALID_CONFIG.

One range is wider than Kafka 4.4's: ``segment.bytes`` goes down to 14 bytes (Kafka's floor
before 4.0), where Kafka 4.4 answers INVALID_CONFIG below 1 MiB and keeps smaller segments
for its internal ``internal.segment.bytes``; tests of rolling and retention rely on it.
"""

from __future__ import annotations

from collections.abc import Mapping

from millpond.storage.config_def import (
    BOOL,
    DAY_MS,
    DOUBLE,
    HOUR_MS,
    INT,
    LIST,
    LONG,
    LONG_MAX,
    MEDIUM,
    STR,
    ConfigDefinition,
    ConfigError,
    Value,
    at_least,
    between,
    define,
    int_levels,
    list_of,
    one_of,
    parse_value,
    table,
)

__all__ = [
    "CLEANUP_POLICIES",
    "COMPRESSION_TYPES",
    "GZIP_LEVELS",
    "LZ4_LEVELS",
    "MAX_MESSAGE_BYTES_DEFAULT",
    "MIB",
    "TIMESTAMP_TYPES",
    "TOPIC_CONFIGS",
    "ZSTD_LEVELS",
    "parse_topic_configs",
]

#: The smallest segment.bytes: Kafka's floor before 4.0 (LegacyRecord.RECORD_OVERHEAD_V0).
SEGMENT_BYTES_MIN = 14
MIB = 1024 * 1024
MAX_MESSAGE_BYTES_DEFAULT = MIB + 12  # one MiB plus the record batch log overhead
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
CLEANUP_POLICIES = ("compact", "delete")

GZIP_LEVELS = int_levels(1, 9, -1)
LZ4_LEVELS = between(1, 17)
ZSTD_LEVELS = between(-131072, 22)

_TOPIC_ROWS: list[ConfigDefinition] = [
    define("segment.bytes", INT, 1024 * MIB, MEDIUM,
           "Size in bytes at which the active segment file is closed and a new one begun.",
           at_least(SEGMENT_BYTES_MIN), used=True),
    define("segment.ms", LONG, 7 * DAY_MS, MEDIUM,
           "Age in milliseconds after which the active segment is rolled even if it is not "
           "full, so that retention and compaction can act on it.", at_least(1), used=True),
    define("segment.jitter.ms", LONG, 0, MEDIUM,
           "Largest random amount subtracted from segment.ms per segment, so that many "
           "partitions do not roll at the same moment.", at_least(0), used=True),
    define("segment.index.bytes", INT, 10 * MIB, MEDIUM,
           "Size in bytes reserved for each segment's offset and time index files.",
           at_least(4), used=True),
    define("flush.messages", LONG, LONG_MAX, MEDIUM,
           "Number of appended messages after which the log is forced to disk; the default "
           "leaves durability to replication and the page cache.", at_least(1), used=True),
    define("flush.ms", LONG, LONG_MAX, MEDIUM,
           "Milliseconds after which unflushed appends are forced to disk.", at_least(0),
           used=True),
    define("retention.bytes", LONG, -1, MEDIUM,
           "Largest size a partition may reach before its oldest segments are deleted "
           "(delete policy); -1 means no size limit.", used=True),
    define("retention.ms", LONG, 7 * DAY_MS, MEDIUM,
           "How long a segment is kept after its newest record before it is deleted (delete "
           "policy); -1 keeps data forever.", at_least(-1), used=True),
    define("max.message.bytes", INT, MAX_MESSAGE_BYTES_DEFAULT, MEDIUM,
           "Largest record batch, in bytes, that the broker accepts for this topic.",
           at_least(0), used=True),
    define("max.decompressed.message.bytes", INT, 2147483639, MEDIUM,
           "Largest size, in bytes, of one record once decompressed (Kafka 4.4). "
           "millpond accepts this setting for compatibility and ignores it.",
           at_least(0)),
    define("index.interval.bytes", INT, 4096, MEDIUM,
           "Bytes of log written between two entries of the sparse offset index.",
           at_least(0), used=True),
    define("delete.retention.ms", LONG, DAY_MS, MEDIUM,
           "How long tombstones survive compaction, so that readers can observe deletions.",
           at_least(0), used=True),
    define("min.compaction.lag.ms", LONG, 0, MEDIUM,
           "Minimum age a record must reach before compaction may remove it.", at_least(0),
           used=True),
    define("max.compaction.lag.ms", LONG, LONG_MAX, MEDIUM,
           "Maximum time a record may stay uncompacted before the log becomes eligible for "
           "cleaning regardless of its dirty ratio.", at_least(1), used=True),
    define("file.delete.delay.ms", LONG, 60_000, MEDIUM,
           "Delay before a deleted segment's files are removed from disk.", at_least(0),
           used=True),
    define("min.cleanable.dirty.ratio", DOUBLE, 0.5, MEDIUM,
           "Share of a log that must be uncompacted before the cleaner compacts it.",
           between(0, 1), used=True),
    define("cleanup.policy", LIST, "delete", MEDIUM,
           "How old segments are discarded: delete by time and size, compact to the latest "
           "value per key, or both.", list_of(*CLEANUP_POLICIES), used=True),
    define("unclean.leader.election.enable", BOOL, False, MEDIUM,
           "Whether a replica outside the ISR may become leader, trading lost data for "
           "availability."),
    define("min.insync.replicas", INT, 1, MEDIUM,
           "Fewest in-sync replicas that must hold a write before an acks=all produce "
           "succeeds.", at_least(1), used=True),
    define("compression.type", STR, "producer", MEDIUM,
           "Codec the broker stores batches in; producer keeps the codec the producer used.",
           one_of(*COMPRESSION_TYPES)),
    define("compression.gzip.level", INT, -1, MEDIUM,
           "Level used when the broker compresses with gzip.", GZIP_LEVELS),
    define("compression.lz4.level", INT, 9, MEDIUM,
           "Level used when the broker compresses with lz4.", LZ4_LEVELS),
    define("compression.zstd.level", INT, 3, MEDIUM,
           "Level used when the broker compresses with zstd.", ZSTD_LEVELS),
    define("preallocate", BOOL, False, MEDIUM,
           "Whether a new segment file is allocated at full size when it is created."),
    define("message.timestamp.type", STR, "CreateTime", MEDIUM,
           "Whether record timestamps are the producer's (CreateTime) or the broker's append "
           "time (LogAppendTime).", one_of(*TIMESTAMP_TYPES), used=True),
    define("message.timestamp.before.max.ms", LONG, LONG_MAX, MEDIUM,
           "How far in the past a CreateTime timestamp may be before the batch is refused.",
           at_least(0)),
    define("message.timestamp.after.max.ms", LONG, HOUR_MS, MEDIUM,
           "How far in the future a CreateTime timestamp may be before the batch is refused.",
           at_least(0)),
    define("leader.replication.throttled.replicas", LIST, "", MEDIUM,
           "Replicas whose replication is throttled on the leader side."),
    define("follower.replication.throttled.replicas", LIST, "", MEDIUM,
           "Replicas whose replication is throttled on the follower side."),
    define("remote.storage.enable", BOOL, False, MEDIUM,
           "Whether the topic's older segments are tiered to remote storage."),
    define("local.retention.ms", LONG, -2, MEDIUM,
           "With tiered storage, how long segments stay on local disk; -2 follows "
           "retention.ms.", at_least(-2)),
    define("local.retention.bytes", LONG, -2, MEDIUM,
           "With tiered storage, how many bytes stay on local disk; -2 follows "
           "retention.bytes.", at_least(-2)),
    define("remote.log.copy.disable", BOOL, False, MEDIUM,
           "With tiered storage, stops copying new segments to remote storage."),
    define("remote.copy.lag.ms", LONG, 0, MEDIUM,
           "With tiered storage, the age a segment must reach before it is copied.",
           at_least(-1)),
    define("remote.copy.lag.bytes", LONG, -1, MEDIUM,
           "With tiered storage, the local bytes that must accumulate before copying.",
           at_least(-1)),
    define("remote.log.delete.on.disable", BOOL, False, MEDIUM,
           "With tiered storage, deletes the remote copy when tiering is turned off."),
    define("errors.deadletterqueue.group.enable", BOOL, False, MEDIUM,
           "Marks the topic as usable as a dead-letter queue by share groups."),
]  # fmt: skip

TOPIC_CONFIGS: dict[str, ConfigDefinition] = table(_TOPIC_ROWS)


def parse_topic_configs(props: Mapping[str, str]) -> dict[str, Value]:
    """Each topic config of ``props`` parsed and validated by its row; raises
    :class:`ConfigError` naming the first key that is not a topic config or whose value
    is refused."""
    out: dict[str, Value] = {}
    for key, raw in props.items():
        definition = TOPIC_CONFIGS.get(key)
        if definition is None:
            raise ConfigError(key, raw, "unknown topic config")
        out[key] = parse_value(definition, raw)
    return out

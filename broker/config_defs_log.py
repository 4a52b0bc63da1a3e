"""Topic configs and the broker's log configs (their broker-level defaults).

Every topic config Kafka's LogConfig defines is here, with Kafka's type, default and
range. :data:`TOPIC_SYNONYMS` maps a topic config to the broker configs that set its
default, in Kafka's order of precedence (ServerTopicConfigSynonyms): the first one that
is set wins, converted to the topic config's unit (``log.retention.hours`` times an hour
for ``retention.ms``); when none is set, the first one with a default gives it.
"""

from __future__ import annotations

from millpond.broker.config_defs_types import (
    BOOL,
    CLASS,
    DAY_MS,
    DOUBLE,
    DOUBLE_MAX,
    HIGH,
    HOUR_MS,
    INT,
    LIST,
    LONG,
    LONG_MAX,
    LOW,
    MEDIUM,
    MINUTE_MS,
    STR,
    ConfigDefinition,
    at_least,
    between,
    define,
    int_levels,
    list_of,
    one_of,
    table,
)

MIB = 1024 * 1024
#: Where millpond keeps its data unless log.dirs, log.dir or $MILLPOND_DATA_DIR say
#: otherwise (``~`` is the user's home directory).
DEFAULT_DATA_DIR = "~/.local/share/millpond/data"
MAX_MESSAGE_BYTES_DEFAULT = MIB + 12  # one MiB plus the record batch log overhead
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
CLEANUP_POLICIES = ("compact", "delete")

_GZIP = int_levels(1, 9, -1)
_LZ4 = between(1, 17)
_ZSTD = between(-131072, 22)

# -- topic configs (Kafka's LogConfig) -----------------------------------------------------

_TOPIC_ROWS: list[ConfigDefinition] = [
    define("segment.bytes", INT, 1024 * MIB, MEDIUM,
           "Size in bytes at which the active segment file is closed and a new one begun.",
           at_least(MIB), used=True),
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
           "Level used when the broker compresses with gzip.", _GZIP),
    define("compression.lz4.level", INT, 9, MEDIUM,
           "Level used when the broker compresses with lz4.", _LZ4),
    define("compression.zstd.level", INT, 3, MEDIUM,
           "Level used when the broker compresses with zstd.", _ZSTD),
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

#: Topic config -> its broker synonyms, highest precedence first, each with the factor
#: that converts the broker value into the topic config's unit.
TOPIC_SYNONYMS: dict[str, tuple[tuple[str, int], ...]] = {
    "segment.bytes": (("log.segment.bytes", 1),),
    "segment.ms": (("log.roll.ms", 1), ("log.roll.hours", HOUR_MS)),
    "segment.jitter.ms": (("log.roll.jitter.ms", 1), ("log.roll.jitter.hours", HOUR_MS)),
    "segment.index.bytes": (("log.index.size.max.bytes", 1),),
    "flush.messages": (("log.flush.interval.messages", 1),),
    "flush.ms": (("log.flush.interval.ms", 1), ("log.flush.scheduler.interval.ms", 1)),
    "retention.bytes": (("log.retention.bytes", 1),),
    "retention.ms": (
        ("log.retention.ms", 1),
        ("log.retention.minutes", MINUTE_MS),
        ("log.retention.hours", HOUR_MS),
    ),
    "max.message.bytes": (("message.max.bytes", 1),),
    "max.decompressed.message.bytes": (("max.decompressed.message.bytes", 1),),
    "index.interval.bytes": (("log.index.interval.bytes", 1),),
    "delete.retention.ms": (("log.cleaner.delete.retention.ms", 1),),
    "min.compaction.lag.ms": (("log.cleaner.min.compaction.lag.ms", 1),),
    "max.compaction.lag.ms": (("log.cleaner.max.compaction.lag.ms", 1),),
    "file.delete.delay.ms": (("log.segment.delete.delay.ms", 1),),
    "min.cleanable.dirty.ratio": (("log.cleaner.min.cleanable.ratio", 1),),
    "cleanup.policy": (("log.cleanup.policy", 1),),
    "unclean.leader.election.enable": (("unclean.leader.election.enable", 1),),
    "min.insync.replicas": (("min.insync.replicas", 1),),
    "compression.type": (("compression.type", 1),),
    "compression.gzip.level": (("compression.gzip.level", 1),),
    "compression.lz4.level": (("compression.lz4.level", 1),),
    "compression.zstd.level": (("compression.zstd.level", 1),),
    "preallocate": (("log.preallocate", 1),),
    "message.timestamp.type": (("log.message.timestamp.type", 1),),
    "message.timestamp.before.max.ms": (("log.message.timestamp.before.max.ms", 1),),
    "message.timestamp.after.max.ms": (("log.message.timestamp.after.max.ms", 1),),
    "local.retention.ms": (("log.local.retention.ms", 1),),
    "local.retention.bytes": (("log.local.retention.bytes", 1),),
    "remote.copy.lag.ms": (("log.remote.copy.lag.ms", 1),),
    "remote.copy.lag.bytes": (("log.remote.copy.lag.bytes", 1),),
}

#: The broker's log settings; ``dynamic`` marks what Kafka lets AlterConfigs change.
_LOG_ROWS: list[ConfigDefinition] = [
    define("num.partitions", INT, 1, MEDIUM,
           "Partition count of topics created without one (auto-created topics included).",
           at_least(1), used=True),
    define("log.dir", LIST, DEFAULT_DATA_DIR, HIGH,
           "Directory holding the partition logs, used when log.dirs is not set; millpond "
           "defaults to $MILLPOND_DATA_DIR when that is set.",
           list_of(allow_empty=False), used=True,
           kafka_default="/tmp/kafka-logs"),  # noqa: S108 (Kafka's default, for reference)
    define("log.dirs", LIST, None, HIGH,
           "Comma-separated directories holding the partition logs; overrides log.dir.",
           list_of(allow_empty=False), used=True),
    define("cordoned.log.dirs", LIST, "", MEDIUM,
           "Log directories where no new partition replicas are placed.", dynamic=True),
    define("log.segment.bytes", INT, 1024 * MIB, HIGH,
           "Default segment.bytes for topics.", at_least(MIB), used=True, dynamic=True),
    define("log.roll.ms", LONG, None, HIGH,
           "Default segment.ms for topics; takes precedence over log.roll.hours.",
           used=True, dynamic=True),
    define("log.roll.hours", INT, 7 * 24, HIGH,
           "Default segment.ms for topics, in hours.", at_least(1), used=True),
    define("log.roll.jitter.ms", LONG, None, HIGH,
           "Default segment.jitter.ms for topics; takes precedence over "
           "log.roll.jitter.hours.", used=True, dynamic=True),
    define("log.roll.jitter.hours", INT, 0, HIGH,
           "Default segment.jitter.ms for topics, in hours.", at_least(0), used=True),
    define("log.retention.ms", LONG, None, HIGH,
           "Default retention.ms for topics; takes precedence over log.retention.minutes "
           "and log.retention.hours. -1 keeps data forever.", used=True, dynamic=True),
    define("log.retention.minutes", INT, None, HIGH,
           "Default retention.ms for topics, in minutes; takes precedence over "
           "log.retention.hours.", used=True),
    define("log.retention.hours", INT, 7 * 24, HIGH,
           "Default retention.ms for topics, in hours.", used=True),
    define("log.retention.bytes", LONG, -1, HIGH,
           "Default retention.bytes for topics.", used=True, dynamic=True),
    define("log.retention.check.interval.ms", LONG, 300_000, MEDIUM,
           "How often the broker looks for segments that retention allows it to delete.",
           at_least(1), used=True),
    define("log.cleanup.policy", LIST, "delete", MEDIUM,
           "Default cleanup.policy for topics.", list_of(*CLEANUP_POLICIES), used=True,
           dynamic=True),
    define("log.index.size.max.bytes", INT, 10 * MIB, MEDIUM,
           "Default segment.index.bytes for topics.", at_least(4), used=True, dynamic=True),
    define("log.index.interval.bytes", INT, 4096, MEDIUM,
           "Default index.interval.bytes for topics.", at_least(0), used=True, dynamic=True),
    define("log.flush.interval.messages", LONG, LONG_MAX, HIGH,
           "Default flush.messages for topics.", at_least(1), used=True, dynamic=True),
    define("log.segment.delete.delay.ms", LONG, 60_000, HIGH,
           "Default file.delete.delay.ms for topics.", at_least(0), used=True, dynamic=True),
    define("log.flush.scheduler.interval.ms", LONG, LONG_MAX, HIGH,
           "Default flush.ms for topics when log.flush.interval.ms is not set.", used=True),
    define("log.flush.interval.ms", LONG, None, HIGH,
           "Default flush.ms for topics.", used=True, dynamic=True),
    define("log.flush.offset.checkpoint.interval.ms", INT, 60_000, HIGH,
           "How often each log directory's recovery-point checkpoint file is rewritten.",
           at_least(0), used=True),
    define("log.flush.start.offset.checkpoint.interval.ms", INT, 60_000, HIGH,
           "How often each log directory's log-start-offset checkpoint file is rewritten.",
           at_least(0), used=True),
    define("log.preallocate", BOOL, False, MEDIUM,
           "Default preallocate for topics.", dynamic=True),
    define("num.recovery.threads.per.data.dir", INT, 2, HIGH,
           "Threads per log directory for recovery at start-up and flushing at shutdown.",
           at_least(1), dynamic=True),
    define("auto.create.topics.enable", BOOL, True, HIGH,
           "Whether a Metadata request for an unknown topic creates it with num.partitions "
           "and default.replication.factor.", used=True),
    define("min.insync.replicas", INT, 1, HIGH,
           "Default min.insync.replicas for topics.", at_least(1), used=True, dynamic=True),
    define("log.message.timestamp.type", STR, "CreateTime", MEDIUM,
           "Default message.timestamp.type for topics.", one_of(*TIMESTAMP_TYPES), used=True,
           dynamic=True),
    define("log.message.timestamp.before.max.ms", LONG, LONG_MAX, MEDIUM,
           "Default message.timestamp.before.max.ms for topics.", at_least(0), dynamic=True),
    define("log.message.timestamp.after.max.ms", LONG, HOUR_MS, MEDIUM,
           "Default message.timestamp.after.max.ms for topics.", at_least(0), dynamic=True),
    define("create.topic.policy.class.name", CLASS, None, LOW,
           "Plug-in class that vets topic creation requests."),
    define("alter.config.policy.class.name", CLASS, None, LOW,
           "Plug-in class that vets configuration changes."),
    define("log.dir.failure.timeout.ms", LONG, 30_000, LOW,
           "How long a broker with a failed log directory waits before shutting down.",
           at_least(1)),
    define("max.decompressed.message.bytes", INT, 2147483639, MEDIUM,
           "Default max.decompressed.message.bytes for topics. millpond accepts this "
           "setting for compatibility and ignores it.", at_least(0), dynamic=True),
    define("message.max.bytes", INT, MAX_MESSAGE_BYTES_DEFAULT, HIGH,
           "Default max.message.bytes for topics: the largest record batch accepted.",
           at_least(0), used=True, dynamic=True),
    define("compression.type", STR, "producer", HIGH,
           "Default compression.type for topics.", one_of(*COMPRESSION_TYPES), dynamic=True),
    define("compression.gzip.level", INT, -1, MEDIUM,
           "Default compression.gzip.level for topics.", _GZIP, dynamic=True),
    define("compression.lz4.level", INT, 9, MEDIUM,
           "Default compression.lz4.level for topics.", _LZ4, dynamic=True),
    define("compression.zstd.level", INT, 3, MEDIUM,
           "Default compression.zstd.level for topics.", _ZSTD, dynamic=True),
    define("unclean.leader.election.enable", BOOL, False, HIGH,
           "Default unclean.leader.election.enable for topics.", dynamic=True),
    # the log cleaner (compaction)
    define("log.cleaner.enable", BOOL, True, MEDIUM,
           "Whether the cleaner runs; compacted topics need it.", used=True),
    define("log.cleaner.threads", INT, 1, MEDIUM,
           "Number of cleaner threads.", at_least(0), used=True, dynamic=True),
    define("log.cleaner.io.max.bytes.per.second", DOUBLE, DOUBLE_MAX, MEDIUM,
           "Cap on the cleaner's combined read and write rate.", dynamic=True),
    define("log.cleaner.dedupe.buffer.size", LONG, 128 * MIB, MEDIUM,
           "Memory for the key-to-offset map the cleaner builds, across all cleaner "
           "threads.", used=True, dynamic=True),
    define("log.cleaner.io.buffer.size", INT, 512 * 1024, MEDIUM,
           "Memory for the cleaner's read and write buffers, across all cleaner threads.",
           at_least(0), used=True, dynamic=True),
    define("log.cleaner.io.buffer.load.factor", DOUBLE, 0.9, MEDIUM,
           "How full the cleaner's key-to-offset map may get before a pass stops.",
           used=True, dynamic=True),
    define("log.cleaner.backoff.ms", LONG, 15_000, MEDIUM,
           "How long the cleaner sleeps when no log needs cleaning.", at_least(0),
           used=True, dynamic=True),
    define("log.cleaner.min.cleanable.ratio", DOUBLE, 0.5, MEDIUM,
           "Default min.cleanable.dirty.ratio for topics.", between(0, 1), used=True,
           dynamic=True),
    define("log.cleaner.delete.retention.ms", LONG, DAY_MS, MEDIUM,
           "Default delete.retention.ms for topics.", at_least(0), used=True, dynamic=True),
    define("log.cleaner.min.compaction.lag.ms", LONG, 0, MEDIUM,
           "Default min.compaction.lag.ms for topics.", at_least(0), used=True, dynamic=True),
    define("log.cleaner.max.compaction.lag.ms", LONG, LONG_MAX, MEDIUM,
           "Default max.compaction.lag.ms for topics.", at_least(1), used=True,
           dynamic=True),
    # tiered storage (not in millpond)
    define("remote.log.storage.system.enable", BOOL, False, MEDIUM,
           "Whether the broker supports tiering segments to remote storage."),
    define("log.local.retention.ms", LONG, -2, MEDIUM,
           "Default local.retention.ms for topics.", at_least(-2), dynamic=True),
    define("log.local.retention.bytes", LONG, -2, MEDIUM,
           "Default local.retention.bytes for topics.", at_least(-2), dynamic=True),
    define("log.remote.copy.lag.ms", LONG, 0, MEDIUM,
           "Default remote.copy.lag.ms for topics.", at_least(-1), dynamic=True),
    define("log.remote.copy.lag.bytes", LONG, -1, MEDIUM,
           "Default remote.copy.lag.bytes for topics.", at_least(-1), dynamic=True),
]  # fmt: skip

LOG_CONFIGS: dict[str, ConfigDefinition] = table(_LOG_ROWS)

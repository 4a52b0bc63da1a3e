"""The names Kafka gives to files and directories in a log directory.

A log directory (one of ``log.dirs``) holds ``meta.properties``, the four log-dir
checkpoints and one directory per partition, named ``<topic>-<partition>``. A partition
directory holds segments named by their base offset padded with zeros to 20 digits, so
that a plain listing sorts them numerically::

    00000000000000368769.log        records
    00000000000000368769.index      offset index
    00000000000000368769.timeindex  time index
    00000000000000368769.txnindex   aborted transactions
    00000000000000368769.snapshot   producer state as of that offset
    leader-epoch-checkpoint         epoch -> start offset
    partition.metadata              topic id

A file can carry one more suffix while it is in transit: ``.deleted`` (waiting for
asynchronous removal), ``.cleaned`` (being written by the cleaner) or ``.swap`` (about to
replace the segment it was cleaned from). A partition directory renamed for removal,
for a replica move between log dirs, or as a stray (a partition the broker no longer
hosts) is ``<topic>-<partition>.<32 hex uniqueId>`` followed by ``-delete``, ``-future``
or ``-stray``.

Addition to the plan: :func:`parse_partition_dir_name` keeps its ``(topic, partition) |
None`` result for live partition directories (None for anything else, marked directories
included); :func:`parse_partition_dir` returns the kind as well, and
:func:`marked_partition_dir_name` builds the marked names.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

LOG_SUFFIX: Final = ".log"
INDEX_SUFFIX: Final = ".index"
TIME_INDEX_SUFFIX: Final = ".timeindex"
TXN_INDEX_SUFFIX: Final = ".txnindex"
SNAPSHOT_SUFFIX: Final = ".snapshot"
SEGMENT_SUFFIXES: Final = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
FILE_SUFFIXES: Final = (*SEGMENT_SUFFIXES, SNAPSHOT_SUFFIX)

DELETED_SUFFIX: Final = ".deleted"
CLEANED_SUFFIX: Final = ".cleaned"
SWAP_SUFFIX: Final = ".swap"
EXTRA_SUFFIXES: Final = (DELETED_SUFFIX, CLEANED_SUFFIX, SWAP_SUFFIX)

# Partition directories renamed out of service (the kinds parse_partition_dir returns).
DELETE_DIR_SUFFIX: Final = "-delete"
FUTURE_DIR_SUFFIX: Final = "-future"
STRAY_DIR_SUFFIX: Final = "-stray"
MARKED_DIR_SUFFIXES: Final = (DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX, STRAY_DIR_SUFFIX)

# Files of a log directory.
META_PROPERTIES_FILE: Final = "meta.properties"
RECOVERY_POINT_CHECKPOINT_FILE: Final = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT_FILE: Final = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT_FILE: Final = "replication-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT_FILE: Final = "cleaner-offset-checkpoint"
OFFSET_CHECKPOINT_FILES: Final = (
    RECOVERY_POINT_CHECKPOINT_FILE,
    LOG_START_OFFSET_CHECKPOINT_FILE,
    REPLICATION_OFFSET_CHECKPOINT_FILE,
    CLEANER_OFFSET_CHECKPOINT_FILE,
)
CLEAN_SHUTDOWN_FILE: Final = ".kafka_cleanshutdown"

# Files of a partition directory.
LEADER_EPOCH_CHECKPOINT_FILE: Final = "leader-epoch-checkpoint"
PARTITION_METADATA_FILE: Final = "partition.metadata"

OFFSET_DIGITS: Final = 20
MAX_OFFSET: Final = (1 << 63) - 1
MAX_PARTITION: Final = (1 << 31) - 1
MAX_NAME_LENGTH: Final = 255
"""File-name limit of common file systems; Kafka shortens the topic of marked
directories to stay within it."""

_SEGMENT_NAME = re.compile(
    r"([0-9]{20})(\.log|\.index|\.timeindex|\.txnindex|\.snapshot)(\.deleted|\.cleaned|\.swap)?"
)
_MARKED_DIR = re.compile(r"(\S+)-([0-9]+)\.([^\s.]+)(-delete|-future|-stray)")
_LIVE_DIR = re.compile(r"(\S+)-([0-9]+)")


class SegmentFileName(NamedTuple):
    base_offset: int
    suffix: str
    """One of :data:`FILE_SUFFIXES`."""
    extra: str
    """"" or one of :data:`EXTRA_SUFFIXES`."""


class PartitionDir(NamedTuple):
    topic: str
    partition: int
    kind: str
    """"" for a live partition directory, else "delete", "future" or "stray"."""


def offset_prefix(offset: int) -> str:
    """The 20-digit zero-padded form of ``offset`` that starts every segment name."""
    if not 0 <= offset <= MAX_OFFSET:
        raise ValueError(f"offset {offset} is outside 0..{MAX_OFFSET}")
    return f"{offset:020d}"


def segment_file_name(base_offset: int, suffix: str, extra: str = "") -> str:
    """``00000000000000000042.log`` and friends (``extra`` adds ``.deleted`` etc.)."""
    if suffix not in FILE_SUFFIXES:
        raise ValueError(f"unknown segment file suffix {suffix!r}")
    if extra and extra not in EXTRA_SUFFIXES:
        raise ValueError(f"unknown extra suffix {extra!r}")
    return offset_prefix(base_offset) + suffix + extra


def parse_segment_file_name(name: str) -> SegmentFileName | None:
    """Split a segment or snapshot file name; None for any other name (checkpoints,
    ``.tmp`` leftovers, offsets not written with exactly 20 digits)."""
    match = _SEGMENT_NAME.fullmatch(name)
    if match is None:
        return None
    offset = int(match[1])
    if offset > MAX_OFFSET:
        return None
    return SegmentFileName(offset, match[2], match[3] or "")


def partition_dir_name(topic: str, partition: int) -> str:
    """``<topic>-<partition>``."""
    _check_topic_partition(topic, partition)
    return f"{topic}-{partition}"


def marked_partition_dir_name(topic: str, partition: int, kind: str, unique_id: str) -> str:
    """The name of a partition directory renamed for deletion, a log-dir move or as a
    stray: ``<topic>-<partition>.<unique_id>-<kind>``, ``unique_id`` being 32 lower-case
    hex digits (a random UUID without dashes). For "delete" and "stray" the topic is cut
    short when the whole name would pass :data:`MAX_NAME_LENGTH`, as Kafka does."""
    _check_topic_partition(topic, partition)
    if "-" + kind not in MARKED_DIR_SUFFIXES:
        raise ValueError(f"unknown partition directory kind {kind!r}")
    if re.fullmatch(r"[0-9a-f]{32}", unique_id) is None:
        raise ValueError(f"unique id {unique_id!r} is not 32 lower-case hex digits")
    tail = f"-{partition}.{unique_id}-{kind}"
    if kind != "future":
        topic = topic[: MAX_NAME_LENGTH - len(tail)]
    return topic + tail


def parse_partition_dir(name: str) -> PartitionDir | None:
    """Topic, partition and kind of a partition directory name; None for names that are
    not partition directories (``remote-log-index-cache``, dot-files, anything whose
    part after the last '-' is not a partition number). ``__cluster_metadata-0`` is one:
    telling the metadata log apart is the caller's business."""
    match = _MARKED_DIR.fullmatch(name)
    if match is not None:
        topic, partition, kind = match[1], int(match[2]), match[4][1:]
    else:
        match = _LIVE_DIR.fullmatch(name)
        if match is None:
            return None
        topic, partition, kind = match[1], int(match[2]), ""
    if partition > MAX_PARTITION:
        return None
    return PartitionDir(topic, partition, kind)


def parse_partition_dir_name(name: str) -> tuple[str, int] | None:
    """``(topic, partition)`` of a live partition directory; None for marked directories
    (``-delete``, ``-future``, ``-stray``: use :func:`parse_partition_dir` to tell them
    apart) and for anything that is not a partition directory."""
    parsed = parse_partition_dir(name)
    if parsed is None or parsed.kind:
        return None
    return parsed.topic, parsed.partition


def _check_topic_partition(topic: str, partition: int) -> None:
    if not topic or re.search(r"[\s/]", topic) or topic in (".", ".."):
        raise ValueError(f"topic {topic!r} cannot name a partition directory")
    if not 0 <= partition <= MAX_PARTITION:
        raise ValueError(f"partition {partition} is outside 0..{MAX_PARTITION}")

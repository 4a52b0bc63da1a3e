"""One log directory (an entry of ``log.dirs``): its identity, its clean-shutdown marker,
its checkpoints and the partition directories in it.

What Kafka's log manager does with a log directory at start-up, in the parts we keep:

- ``meta.properties`` names the cluster, the node and the directory. A directory of
  another cluster or node is refused; a directory without one is formatted here (Kafka
  asks for ``kafka-storage format`` first; an embedded broker has no such step), with a
  random ``directory.id``.
- ``.kafka_cleanshutdown`` exists only between a clean shutdown and the next start. It
  is read and *deleted before any log is opened* (and the deletion made durable), so a
  crash during loading or later counts as unclean at the next start. Its content is
  Kafka's JSON ``{"version":0,"brokerEpoch":N}`` (KIP-966); its existence is what
  decides, the broker epoch is informational.
- The recovery-point and log-start-offset checkpoints are read once; a malformed one is
  treated as empty (recovery then starts at offset 0, which is slow but safe), as Kafka
  does.
- Partition directories are ``<topic>-<partition>``; ``<topic>-<partition>.<id>-delete``
  directories are removals that were not finished and are removed again; ``-future``
  directories are replicas moving into this directory (AlterReplicaLogDirs), loaded as
  future logs; ``-stray`` directories (partitions the controller no longer assigns) are
  left alone; ``__cluster_metadata-0`` belongs to the Raft log.

Not thread-safe; owned by :class:`~millpond.storage.log_manager.LogManager`.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from millpond.storage.checkpoints import (
    CheckpointError,
    MetaProperties,
    read_meta_properties,
    read_offset_checkpoint,
    write_meta_properties,
)
from millpond.storage.clock import Clock
from millpond.storage.fs import FileSystem, join, write_atomic
from millpond.storage.names import (
    CLEAN_SHUTDOWN_FILE,
    DELETE_DIR_SUFFIX,
    FUTURE_DIR_SUFFIX,
    LOG_START_OFFSET_CHECKPOINT_FILE,
    META_PROPERTIES_FILE,
    RECOVERY_POINT_CHECKPOINT_FILE,
    parse_partition_dir,
)
from millpond.storage.uuids import random_uuid4

TopicPartition = tuple[str, int]

CLUSTER_METADATA_TOPIC = "__cluster_metadata"
CLEAN_SHUTDOWN_VERSION = 0


class LogDirError(Exception):
    """A log directory that cannot be used (another cluster's or node's, duplicated
    partitions): the broker must not start on it."""


class LogDirScan(NamedTuple):
    """What a log directory holds, from one listing."""

    partitions: dict[TopicPartition, str]  # live partition -> its directory
    to_delete: list[str]  # ``-delete`` directories left by an unfinished removal
    futures: dict[TopicPartition, str]  # ``-future``: a replica moving into this directory


# -- meta.properties -----------------------------------------------------------------------


def ensure_meta_properties(
    fs: FileSystem, log_dir: str, cluster_id: str, node_id: int, clock: Clock
) -> MetaProperties:
    """Read ``meta.properties`` and check it belongs to this cluster and node, or write
    a new one (with a fresh directory id) when the directory has none."""
    path = join(log_dir, META_PROPERTIES_FILE)
    if not fs.exists(path):
        meta = MetaProperties(1, cluster_id, node_id, random_uuid4())
        write_meta_properties(fs, path, meta, written_at_ms=clock.now_ms())
        return meta
    meta = read_meta_properties(fs, path)
    if meta.cluster_id is not None and meta.cluster_id != cluster_id:
        raise LogDirError(
            f"{path}: cluster.id {meta.cluster_id!r} does not match this cluster {cluster_id!r}"
        )
    if meta.node_id is not None and meta.node_id != node_id:
        raise LogDirError(f"{path}: node.id {meta.node_id} does not match this node {node_id}")
    if meta.version == 1 and meta.directory_id is None:
        # Kafka adds a directory id to a KRaft directory that lacks one.
        meta = MetaProperties(1, meta.cluster_id, meta.node_id, random_uuid4())
        write_meta_properties(fs, path, meta, written_at_ms=clock.now_ms())
    return meta


# -- the clean-shutdown marker -------------------------------------------------------------


def take_clean_shutdown_marker(fs: FileSystem, log_dir: str) -> tuple[bool, int | None]:
    """``(had_clean_shutdown, broker_epoch)``; removes the marker (durably) if present."""
    path = join(log_dir, CLEAN_SHUTDOWN_FILE)
    if not fs.exists(path):
        return False, None
    epoch: int | None = None
    try:
        handle = fs.open(path)
        try:
            content = json.loads(handle.read_at(0, handle.size()) or b"null")
        finally:
            handle.close()
        value = content.get("brokerEpoch") if isinstance(content, dict) else None
        epoch = value if isinstance(value, int) else None
    except (OSError, ValueError):
        epoch = None  # as Kafka: an unreadable marker still marks a clean shutdown
    fs.remove(path)
    fs.sync_dir(log_dir)
    return True, epoch


def write_clean_shutdown_marker(fs: FileSystem, log_dir: str, broker_epoch: int = -1) -> None:
    """Write the marker (synced, then the directory synced): the last step of a clean
    shutdown, after every log was flushed and closed and the checkpoints written."""
    content = {"version": CLEAN_SHUTDOWN_VERSION, "brokerEpoch": broker_epoch}
    data = json.dumps(content, separators=(",", ":")).encode()
    write_atomic(fs, join(log_dir, CLEAN_SHUTDOWN_FILE), data)


# -- checkpoints and partition directories -------------------------------------------------


def read_offsets_lenient(fs: FileSystem, path: str) -> dict[TopicPartition, int]:
    """An offset checkpoint, or nothing when it is missing or malformed (Kafka resets to
    0 / the first segment then: slower recovery, never wrong data)."""
    try:
        return read_offset_checkpoint(fs, path)
    except (CheckpointError, UnicodeDecodeError):
        return {}


def recovery_points_path(log_dir: str) -> str:
    return join(log_dir, RECOVERY_POINT_CHECKPOINT_FILE)


def log_start_offsets_path(log_dir: str) -> str:
    return join(log_dir, LOG_START_OFFSET_CHECKPOINT_FILE)


def scan_log_dir(fs: FileSystem, log_dir: str) -> LogDirScan:
    """The live partition directories and the unfinished removals, from one listing.

    Names are classified before anything is stat'ed, so a directory of ten thousand
    partitions costs one listing and one ``is_dir`` per partition."""
    partitions: dict[TopicPartition, str] = {}
    to_delete: list[str] = []
    futures: dict[TopicPartition, str] = {}
    for name in fs.listdir(log_dir):
        parsed = parse_partition_dir(name)
        if parsed is None or parsed.topic == CLUSTER_METADATA_TOPIC:
            continue
        path = join(log_dir, name)
        if not fs.is_dir(path):
            continue
        if parsed.kind == DELETE_DIR_SUFFIX[1:]:
            to_delete.append(path)
        elif parsed.kind == FUTURE_DIR_SUFFIX[1:]:
            futures[(parsed.topic, parsed.partition)] = path
        elif not parsed.kind:
            partitions[(parsed.topic, parsed.partition)] = path
    return LogDirScan(partitions, to_delete, futures)

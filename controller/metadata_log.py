"""``__cluster_metadata-0`` on disk, and its batches read back as metadata records.

The metadata log is an ordinary partition :class:`~millpond.storage.log.Log` in
``<metadata.log.dir or first log dir>/__cluster_metadata-0`` with a leader-epoch cache
and, beside it, the ``quorum-state`` file. The Raft layer
(:mod:`millpond.controller.raft`) writes it in Kafka's formats: data batches holding the
controller's records (each framed by :mod:`millpond.controller.record_serde`) and
control batches (LeaderChangeMessage, KRaftVersionRecord, VotersRecord).

:func:`open_raft_client` opens a replica over such a directory. The zero-config default
is a one-voter quorum with a static voter set (``kraft.version`` 0, as
``controller.quorum.voters`` names it): the node elects itself at once and each append
commits once it is fsynced. That is an fsync per controller operation, acceptable
because metadata changes are rare (topic creations, config changes, registrations),
never one per produce request.

Start-up always recovers the whole log (CRC checks, a torn tail cut): the metadata log is
kept small by its snapshots (``.checkpoint`` files beside the segments, Kafka's format)
and by the retention that deletes the log before them (:class:`MetadataLogConfig`).

:func:`read_image` is what a tool reading a data directory sees: the latest snapshot and
the log after it, replayed (:mod:`~millpond.controller.metadata_replay`).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from millpond.controller.image import MetadataDelta, MetadataImage
from millpond.controller.metadata_replay import MetadataReplayer
from millpond.controller.raft.client import RaftClient
from millpond.controller.raft.config import RaftConfig
from millpond.controller.raft.kafka_log import KafkaRaftLog, MetadataRetention, decode_voters
from millpond.controller.raft.keys import (
    STATIC_KRAFT_VERSIONS,
    OffsetAndEpoch,
    ReplicaKey,
    Voter,
    VoterSet,
)
from millpond.controller.raft.node import RaftNode
from millpond.controller.raft.quorum_state import FileElectionStore
from millpond.controller.raft.snapshots import MAX_BATCH_BYTES
from millpond.storage.clock import Clock
from millpond.storage.config import LogConfig
from millpond.storage.fs import FileSystem, join
from millpond.storage.leader_epochs import LeaderEpochCache
from millpond.storage.log import Log
from millpond.storage.names import LEADER_EPOCH_CHECKPOINT_FILE
from millpond.wire.records import RecordBatch

__all__ = [
    "METADATA_PARTITION_DIR",
    "METADATA_TOPIC",
    "MetadataLogConfig",
    "ReplayResult",
    "metadata_log_config",
    "open_metadata_log",
    "open_raft_client",
    "read_image",
    "replay_batches",
    "snapshot_image",
]

METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION_DIR = "__cluster_metadata-0"


class MetadataLogConfig(NamedTuple):
    """The metadata log's own settings, by Kafka's names and defaults."""

    #: metadata.log.segment.bytes
    segment_bytes: int = 1024 * 1024 * 1024
    #: metadata.log.segment.ms
    segment_ms: int = 7 * 24 * 60 * 60 * 1000
    #: metadata.max.retention.bytes and metadata.max.retention.ms
    retention: MetadataRetention = MetadataRetention()


def metadata_log_config(settings: MetadataLogConfig | None = None) -> LogConfig:
    """The partition settings of the metadata log: its segments, and the raft batch cap;
    no retention of its own (snapshots bound it, :meth:`KafkaRaftLog.clean`)."""
    settings = settings or MetadataLogConfig()
    return LogConfig(
        max_message_bytes=MAX_BATCH_BYTES + 1024,
        retention_ms=-1,
        segment_bytes=settings.segment_bytes,
        segment_ms=settings.segment_ms,
    )


def open_metadata_log(
    fs: FileSystem,
    log_dir: str,
    clock: Clock,
    settings: MetadataLogConfig | None = None,
) -> KafkaRaftLog:
    """``__cluster_metadata-0`` under ``log_dir`` (made if missing), recovered whole."""
    settings = settings or MetadataLogConfig()
    directory = join(log_dir, METADATA_PARTITION_DIR)
    fs.makedirs(directory)
    log = Log(
        fs,
        directory,
        metadata_log_config(settings),
        clock,
        recovery_point=0,
        had_clean_shutdown=False,
        leader_epochs=LeaderEpochCache(fs, join(directory, LEADER_EPOCH_CHECKPOINT_FILE)),
    )
    try:
        return KafkaRaftLog(log, clock, retention=settings.retention)
    except BaseException:
        log.close()
        raise


def open_raft_client(
    fs: FileSystem,
    log_dir: str,
    clock: Clock,
    rng: random.Random,
    *,
    node_id: int,
    directory_id: bytes | None = None,
    voters: VoterSet | None = None,
    bootstrap_servers: Sequence[int] = (),
    config: RaftConfig | None = None,
    can_become_voter: bool = True,
    log_config: MetadataLogConfig | None = None,
) -> RaftClient:
    """A replica of the metadata quorum over ``log_dir``.

    The voters are, in order: ``voters`` (static, ``controller.quorum.voters``); those of
    the bootstrap checkpoint ``format`` wrote (dynamic, ``kraft.version`` 1); none yet,
    when ``bootstrap_servers`` (peer ids the driver can reach) say the quorum is
    elsewhere (the voter set is then read from the log fetched from it); else this node
    alone, statically (the zero-config default, which elects itself before this
    returns). ``can_become_voter=False``: an observer that never votes (a broker)."""
    config = config or RaftConfig(kraft_version=0)
    log = open_metadata_log(fs, log_dir, clock, log_config)
    node: RaftNode | None = None
    try:
        if voters is None:
            voters, kraft_version = _dynamic_quorum(log, node_id, bootstrap_servers)
            config = config._replace(kraft_version=kraft_version)
        bootstrap = voters

        def voter_ids() -> list[int]:
            return sorted((node.voters if node is not None else bootstrap).ids)

        store = FileElectionStore(
            fs,
            log.log.directory,
            kraft_version=lambda: node.kraft_version if node is not None else config.kraft_version,
            voter_ids=voter_ids,
        )
        node = RaftNode(
            ReplicaKey(node_id, directory_id),
            config,
            log,
            store,
            rng,
            clock.monotonic_ms(),
            bootstrap_voters=voters,
            bootstrap_servers=bootstrap_servers,
            can_become_voter=can_become_voter,
        )
    except BaseException:
        log.log.close()
        raise
    return RaftClient(node, log)


def _dynamic_quorum(
    log: KafkaRaftLog, node_id: int, bootstrap_servers: Sequence[int]
) -> tuple[VoterSet, int]:
    """The bootstrap voter set and kraft.version of a quorum without static voters."""
    checkpoint = log.bootstrap_checkpoint()
    header = None if checkpoint is None else checkpoint.header
    if header is not None and header.voters_record is not None:
        return decode_voters(header.voters_record), max(1, header.kraft_version)
    latest = log.latest_snapshot()
    dynamic = latest is not None and log.snapshot_header(latest).kraft_version >= 1
    if bootstrap_servers or dynamic:
        # Formatted without initial controllers, a broker, or a checkpoint since
        # cleaned away: the log (and its snapshots) say who votes.
        return VoterSet(), 1
    return VoterSet([Voter(ReplicaKey(node_id), (), STATIC_KRAFT_VERSIONS)]), 0


class ReplayResult(NamedTuple):
    image: MetadataImage
    #: Records skipped with a warning (unknown or irrelevant types).
    skipped_records: int


def replay_batches(base: MetadataImage, batches: Iterable[RecordBatch]) -> ReplayResult:
    """``base`` with ``batches`` replayed; a transaction still open at the end is left
    out (as a reader of the log would see it)."""
    delta = MetadataDelta(base)
    replayer = MetadataReplayer()
    for batch in batches:
        replayer.replay(delta, batch)
    return ReplayResult(delta.apply(), delta.skipped)


def snapshot_image(
    cluster_id: str, snapshot_id: OffsetAndEpoch, batches: Iterable[RecordBatch]
) -> ReplayResult:
    """The image a snapshot's data batches describe, as of its last contained offset."""
    delta = MetadataDelta(MetadataImage.empty(cluster_id))
    replayer = MetadataReplayer()
    for batch in batches:
        replayer.replay(delta, batch)
    delta.set_offset(snapshot_id.offset - 1, snapshot_id.epoch)
    return ReplayResult(delta.apply(), delta.skipped)


def read_image(log: KafkaRaftLog, base: MetadataImage, end: int | None = None) -> ReplayResult:
    """``base`` (or the latest snapshot up to ``end``, if it is newer) with every batch of
    ``log`` after it replayed, up to ``end`` (the log end by default): what a tool reading
    a data directory sees."""
    skipped = 0
    usable = [s for s in log.snapshots() if end is None or s.offset <= end]
    latest = usable[-1] if usable else None
    if latest is not None and latest.offset - 1 > base.offset:
        base, skipped = snapshot_image(
            base.cluster_id, latest, log.snapshot_contents(latest).batches
        )
    image, more = replay_batches(base, log.batches(base.offset + 1, end))
    return ReplayResult(image, skipped + more)

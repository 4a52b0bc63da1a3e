"""The controller: operations in, records appended, the committed log replayed.

:class:`QuorumController` runs on every controller node, beside its
:class:`~millpond.controller.raft.client.RaftClient`, and listens to it. While another
node leads, it replays each committed batch into its
:class:`~millpond.controller.image.MetadataImage` (a standby keeps up). When its own node
is elected, the Raft client says so only after every earlier batch was delivered, and the
controller becomes *active*: if the log has no feature levels yet it writes the
bootstrap ones, then it takes operations.

Each operation runs as Kafka's controller runs one: a pure function of the current image
(``*_control`` modules) returns ``ControllerResult(records, response)``; the records are
replayed into the next image and appended. The replay is the very one a restart or a
standby performs, so the image in memory always equals the image rebuilt from the log.
Validate-only requests and refused requests append nothing; on a node that is not active
an operation raises :class:`~millpond.controller.results.NotControllerError`.

Appending is not committing. The active controller's image runs ahead (the next
operation sees the records before they commit), while what it hands out waits for the
commit: :meth:`QuorumController.when_committed` calls back once an offset is committed,
and every :class:`MetadataListener` (a broker's metadata loader) receives each committed
batch as ``(delta, image)``, in log order. A one-voter quorum commits on the fsync; a
larger one when a majority of voters has fetched the records. A controller that loses
its leadership drops what it had not committed: the waiting operations fail with
NotControllerError and its image falls back to the committed one (the records may still
commit under the next leader, and then arrive as any standby's would).

Each node snapshots its committed image (Kafka's ``.checkpoint`` files) when the
committed bytes or the time since its last snapshot call for one
(:mod:`~millpond.controller.snapshot_schedule`), and a snapshot loaded at start or
installed from the leader replaces the image, published to the listeners as one delta.

A failed append raises :class:`~millpond.controller.raft.client.RaftLogFailedError` and
leaves the controller unusable: every pending commit fails with it, and so does every
later operation. Whether the records survive is unknown until a restart recovers the
log. The node should stop.

Sans-I/O: time through the Clock, randomness (topic ids, incarnation ids, placement)
through the injected ``random.Random``, the log through the Raft client. Not
thread-safe: one owner calls it (Kafka's controller is single-threaded too).
"""

from __future__ import annotations

import logging
import random
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol, TypeVar

from millpond.controller import alter_partition, cluster_control, config_control, feature_control
from millpond.controller.cluster_control import (
    PRODUCER_ID_BLOCK_SIZE,
    BrokerHeartbeatRequest,
    BrokerHeartbeatResult,
    BrokerRegistrationRequest,
    BrokerRegistrationResult,
    ProducerIdsBlock,
)
from millpond.controller.config_control import AlterConfigsResource
from millpond.controller.feature_control import FeatureUpdate
from millpond.controller.image import (
    BrokerEndpoint,
    ConfigResource,
    MetadataDelta,
    MetadataImage,
)
from millpond.controller.image_records import image_records
from millpond.controller.metadata_log import snapshot_image
from millpond.controller.metadata_replay import MetadataReplayer
from millpond.controller.raft.client import (
    LeaderAndEpoch,
    LoadedSnapshot,
    RaftClient,
    RaftLogFailedError,
)
from millpond.controller.raft.keys import OffsetAndEpoch
from millpond.controller.raft.node import KRaftUpgradeError, NotLeaderError
from millpond.controller.record_serde import (
    ApiMessageAndVersion,
    encode_metadata_record,
    with_version,
)
from millpond.controller.results import NO_ERROR, ApiError, ControllerResult, NotControllerError
from millpond.controller.snapshot_schedule import SnapshotSchedule, SnapshotTriggers
from millpond.storage.clock import Clock
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.metadata.abort_transaction_record import AbortTransactionRecord
from millpond.wire.records import RecordBatch

if TYPE_CHECKING:
    from millpond.controller.leader_election import ElectionType, TopicElection
    from millpond.controller.reassignment import (
        OngoingReassignment,
        ReassignmentOutcomes,
        TopicReassignment,
    )
    from millpond.controller.replication_control import (
        CreatableTopic,
        CreatePartitionsResult,
        CreatePartitionsTopic,
        CreateTopicResult,
        DeleteTopicResult,
    )

_log = logging.getLogger("millpond.controller")

__all__ = ["CommitCallback", "ControllerConfig", "MetadataListener", "QuorumController"]

T = TypeVar("T")

#: Called once an offset is committed (None) or can no longer be (the error).
CommitCallback = Callable[[BaseException | None], None]


class MetadataListener(Protocol):
    """Receives the committed metadata, batch by batch, in log order (Kafka's
    ``RaftClient.Listener.handleCommit`` feeding a ``MetadataLoader``)."""

    def handle_commit(self, delta: MetadataDelta, image: MetadataImage) -> None: ...


class ControllerConfig(NamedTuple):
    """The controller's settings, under Kafka's names where there is one."""

    node_id: int  # node.id
    cluster_id: str  # from meta.properties
    num_partitions: int = 1  # num.partitions
    default_replication_factor: int = 1  # default.replication.factor
    #: min.insync.replicas: a fresh cluster's bootstrap writes it as the cluster-wide
    #: default, as Kafka's controller writes its own.
    min_insync_replicas: int = 1
    #: broker.session.timeout.ms: an unfenced broker silent this long is fenced (None:
    #: never, for a single node, whose only broker is the one beside it).
    broker_session_timeout_ms: int | None = None
    #: millpond.broker.disconnect.fence.ms: a broker whose heartbeat connection closed is
    #: fenced this long after, unless it heartbeat since (None: only the session lapses).
    broker_disconnect_fence_ms: int | None = None
    supported_features: Mapping[str, tuple[int, int]] = feature_control.SUPPORTED_FEATURES
    bootstrap_features: Mapping[str, int] = feature_control.BOOTSTRAP_FEATURES
    #: metadata.log.max.record.bytes.between.snapshots, metadata.log.max.snapshot.interval.ms
    snapshots: SnapshotTriggers = SnapshotTriggers()
    #: unclean.leader.election.enable, for topics and clusters that do not set it.
    unclean_leader_election_enable: bool = False
    #: leader.imbalance.check.interval.seconds (in ms) when auto.leader.rebalance.enable
    #: is on in a cluster; None: leadership is never moved back on its own.
    leader_imbalance_check_interval_ms: int | None = None


class QuorumController:
    """A controller node's state machine over the metadata log (see the module
    docstring)."""

    def __init__(
        self, raft: RaftClient, clock: Clock, rng: random.Random, config: ControllerConfig
    ) -> None:
        self.config = config
        self._raft = raft
        self._clock = clock
        self._rng = rng
        self._image = self._committed = MetadataImage.empty(config.cluster_id)
        #: The epoch this controller is active in; None while it is not.
        self._active: int | None = None
        #: Appended batches not committed yet: (last offset, delta, image), in log order.
        self._uncommitted: deque[tuple[int, MetadataDelta, MetadataImage]] = deque()
        #: (offset, callback) waiting for their commit, in offset order.
        self._waiting: deque[tuple[int, CommitCallback]] = deque()
        self._listeners: list[MetadataListener] = []
        self._failure: BaseException | None = None
        #: Records skipped (unknown or irrelevant types) while replaying the log.
        self.skipped_records = 0
        #: broker id -> when it last registered or heartbeat (monotonic ms), while active;
        #: a broker not heard from yet counts from the activation.
        self._contact: dict[int, int] = {}
        #: broker id -> when its heartbeat connection closed (monotonic ms), until it is
        #: heard from again, while active.
        self._disconnected: dict[int, int] = {}
        #: broker id -> the metadata offset it last reported applying, while active.
        self._applied: dict[int, int] = {}
        #: Brokers whose metadata loaders are this controller's listeners.
        self._local_brokers: set[int] = set()
        #: broker id -> the offset by which its controlled shutdown records are written.
        self._shutdown_offsets: dict[int, int] = {}
        self._active_since = 0
        self._snapshots = SnapshotSchedule(config.snapshots, clock.monotonic_ms())
        #: Holds a metadata transaction's records until it ends.
        self._replayer = MetadataReplayer()
        #: The append time of the last committed batch (a snapshot's header keeps it).
        self._last_timestamp = -1
        raft.register(self)

    # -- state -------------------------------------------------------------------------------

    @property
    def image(self) -> MetadataImage:
        """The controller's image: every record appended, committed or not (what the
        next operation is judged against)."""
        return self._image

    @property
    def committed_image(self) -> MetadataImage:
        """The image of the committed records only: what brokers may act on."""
        return self._committed

    @property
    def last_offset(self) -> int:
        """The offset of the last entry in the log (-1 for an empty log)."""
        return self._raft.end_offset - 1

    @property
    def epoch(self) -> int:
        """The quorum's current epoch."""
        return self._raft.leader.epoch

    @property
    def is_active(self) -> bool:
        return self._active is not None

    @property
    def raft(self) -> RaftClient:
        return self._raft

    # -- what the Raft client tells ----------------------------------------------------------

    def handle_commit(self, batches: Sequence[RecordBatch]) -> None:
        self._snapshots.committed(sum(b.size_in_bytes for b in batches))
        self._last_timestamp = batches[-1].max_timestamp
        if self._active is not None:
            # Only the leader appends in its epoch, and it was told only after every
            # earlier batch: these are its own, already in the image.
            self._publish_own(batches[-1].last_offset)
        else:
            delta = MetadataDelta(self._committed)
            for batch in batches:
                self._replayer.replay(delta, batch)
            self._publish_replayed(delta)
        self.maybe_snapshot()

    def _publish_replayed(self, delta: MetadataDelta) -> None:
        self.skipped_records += delta.skipped
        self._committed = self._image = delta.apply()
        for listener in self._listeners:
            listener.handle_commit(delta, self._committed)
        self._complete_waiting()

    def handle_load_snapshot(self, snapshot: LoadedSnapshot) -> None:
        """The snapshot's image replaces this node's (never the active controller's:
        a leader keeps its log)."""
        assert self._active is None, "the active controller loads no snapshot"
        image, skipped = snapshot_image(
            self.config.cluster_id, snapshot.snapshot_id, snapshot.batches
        )
        delta = MetadataDelta.replacing(self._committed, image)
        delta.skipped = skipped
        self._last_timestamp = snapshot.last_contained_timestamp
        self._snapshots.reset(self._clock.monotonic_ms())
        self._replayer.abandon()  # a snapshot ends before any transaction it is beside
        self._publish_replayed(delta)

    # -- snapshots ---------------------------------------------------------------------------

    def maybe_snapshot(self, *, force: bool = False) -> OffsetAndEpoch | None:
        """Snapshot the committed image if a trigger says so (or ``force``), then apply
        the metadata log's retention; returns the new snapshot's id. A snapshot that
        cannot be written is logged and tried again at the next trigger."""
        now = self._clock.monotonic_ms()
        image = self._committed
        if image.offset < 0 or not (force or self._snapshots.due(now)):
            return None
        payloads = (encode_metadata_record(r) for r in image_records(image))
        try:
            snapshot_id = self._raft.create_snapshot(
                image.offset, image.epoch, payloads, self._last_timestamp
            )
        except OSError as exc:
            _log.error("node %d: writing a metadata snapshot failed: %s", self.config.node_id, exc)
            return None
        finally:
            self._snapshots.reset(now)
        self._raft.clean()
        return snapshot_id

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        if self._raft.node.voters.ids != {self.config.node_id}:  # a single node says nothing
            _log.info(
                "node %d: the metadata quorum's leader is %s in epoch %d",
                self.config.node_id,
                leader.leader_id if leader.leader_id >= 0 else "unknown",
                leader.epoch,
            )
        if leader.leader_id != self.config.node_id:
            if self._active is not None:
                self._deactivate(leader)
            return
        self._active = leader.epoch
        self._image = self._committed
        self._forget_brokers()
        self._active_since = self._clock.monotonic_ms()
        if self._replayer.in_transaction:
            # The previous controller left a metadata transaction open: it never ends
            # now, so it is aborted, as Kafka's new active controller does.
            start = self._replayer.transaction_start
            self._replayer.abandon()
            abort = AbortTransactionRecord(reason="the active controller changed")
            self._commit(ControllerResult((with_version(abort),), None))
            _log.info("node %d: aborted the metadata transaction from offset %d",
                      self.config.node_id, start)  # fmt: skip
        if feature_control.METADATA_VERSION not in self._image.features:
            # A fresh log (or one whose bootstrap never committed): write the bootstrap.
            records = [
                *feature_control.bootstrap_records(self.config.bootstrap_features),
                *config_control.bootstrap_records(self.config.min_insync_replicas),
            ]
            self._commit(ControllerResult(tuple(records), None))

    def _forget_brokers(self) -> None:
        """What only an active controller knows of the brokers, kept in memory."""
        self._contact.clear()
        self._disconnected.clear()
        self._applied.clear()
        self._shutdown_offsets.clear()

    def _deactivate(self, leader: LeaderAndEpoch) -> None:
        self._active = None
        self._image = self._committed
        self._uncommitted.clear()
        self._forget_brokers()
        error = NotControllerError(
            f"node {self.config.node_id} is no longer the active controller (epoch"
            f" {leader.epoch}, leader {leader.leader_id}); ask the new one"
        )
        waiting, self._waiting = self._waiting, deque()
        for _, callback in waiting:
            callback(error)

    # -- appends and commits -----------------------------------------------------------------

    def _commit(self, result: ControllerResult[T]) -> ControllerResult[T]:
        if not result.records:
            return result
        self._check_active()
        # Into the image first: a one-voter quorum commits inside the append.
        first = self._raft.end_offset
        delta = MetadataDelta(self._image)
        for i, record in enumerate(result.records):
            delta.replay(record.message, first + i, self._active)
        before, self._image = self._image, delta.apply()
        last = first + len(result.records) - 1
        self._uncommitted.append((last, delta, self._image))
        payloads = [encode_metadata_record(r) for r in result.records]
        try:
            appended = self._raft.append(self._clock.monotonic_ms(), payloads)
        except RaftLogFailedError as exc:
            self._uncommitted.pop()
            self._image = before  # whether the records survive, only a restart tells
            self._fail(exc)
            raise
        except NotLeaderError:
            self._uncommitted.pop()
            self._image = before
            raise NotControllerError(
                f"node {self.config.node_id} is stepping down as the active controller;"
                " ask the next one"
            ) from None
        assert appended == last, f"records appended at {appended}, expected {last}"
        return result

    def _check_active(self) -> None:
        if self._failure is not None:
            raise self._failure
        if self._active is None:
            leader = self._raft.leader
            raise NotControllerError(
                f"node {self.config.node_id} is not the active controller (epoch"
                f" {leader.epoch}, leader {leader.leader_id}); ask the leader"
            )

    def register_listener(self, listener: MetadataListener, broker_id: int | None = None) -> None:
        """Feed ``listener`` every batch committed from now on (it starts from
        :attr:`committed_image`). ``broker_id``: the listener is that broker's metadata
        loader, in this process: it applies each commit as it is made, so it has always
        applied what is committed, heartbeat or not (a single node's broker sends none)."""
        self._listeners.append(listener)
        if broker_id is not None:
            self._local_brokers.add(broker_id)

    def when_committed(self, offset: int, callback: CommitCallback) -> None:
        """Call ``callback(None)`` once ``offset`` is committed (at once if it is), or
        ``callback(error)`` if the log fails or this controller steps down first."""
        if self._failure is not None:
            callback(self._failure)
        elif offset <= self._committed.offset:
            callback(None)
        else:
            self._waiting.append((offset, callback))

    def _publish_own(self, offset: int) -> None:
        """The quorum committed this controller's batches up to ``offset``: publish them
        to the listeners, then complete the operations waiting for them."""
        while self._uncommitted and self._uncommitted[0][0] <= offset:
            _, delta, image = self._uncommitted.popleft()
            self._committed = image
            for listener in self._listeners:
                listener.handle_commit(delta, image)
        self._complete_waiting()

    def _complete_waiting(self) -> None:
        while self._waiting and self._waiting[0][0] <= self._committed.offset:
            self._waiting.popleft()[1](None)

    def _fail(self, error: BaseException) -> None:
        self._failure = error
        waiting, self._waiting = self._waiting, deque()
        for _, callback in waiting:
            callback(error)

    # -- brokers -----------------------------------------------------------------------------

    def register_broker(
        self,
        broker_id: int,
        endpoints: Sequence[BrokerEndpoint],
        rack: str | None = None,
        *,
        incarnation_id: bytes | None = None,
        features: Sequence[tuple[str, int, int]] | None = None,
        cluster_id: str | None = None,
        log_dirs: Sequence[bytes] = (),
        previous_broker_epoch: int = -1,
    ) -> ControllerResult[BrokerRegistrationResult]:
        """BrokerRegistration: ``response.broker_epoch`` on success. The broker starts
        fenced; call :meth:`unfence_broker` once it has caught up.
        ``previous_broker_epoch``: the epoch it stopped cleanly in (-1: it did not)."""
        if incarnation_id is None:
            incarnation_id = self._rng.getrandbits(128).to_bytes(16, "big")
        if features is None:
            supported = feature_control.registered_features(self.config.supported_features)
            features = [(n, lo, hi) for n, (lo, hi) in supported.items()]
        request = BrokerRegistrationRequest(
            broker_id=broker_id,
            cluster_id=self.config.cluster_id if cluster_id is None else cluster_id,
            incarnation_id=incarnation_id,
            endpoints=endpoints,
            rack=rack,
            features=features,
            log_dirs=log_dirs,
            previous_broker_epoch=previous_broker_epoch,
        )
        self._check_active()
        result = cluster_control.register_broker(
            self._image,
            request,
            next_offset=self._raft.end_offset,
            live_session=self._has_session(broker_id),
            kraft_version=self._raft.kraft_version,
            unclean_default=self.config.unclean_leader_election_enable,
        )
        if result.response.error.is_success:
            self._heard_from(broker_id)
        self._check_active()
        return self._commit(result)

    def _heard_from(self, broker_id: int) -> None:
        self._contact[broker_id] = self._clock.monotonic_ms()
        self._disconnected.pop(broker_id, None)

    def broker_disconnected(self, broker_id: int) -> None:
        """The connection ``broker_id`` last heartbeat on closed: a broker killed, or one
        about to heartbeat on a new connection (see ``broker_disconnect_fence_ms``)."""
        if self.config.broker_disconnect_fence_ms is not None and self.is_active:
            self._disconnected[broker_id] = self._clock.monotonic_ms()

    def _has_session(self, broker_id: int) -> bool:
        """Heard from within ``broker.session.timeout.ms`` (ever, on a single node)."""
        heard = self._contact.get(broker_id)
        timeout = self.config.broker_session_timeout_ms
        if heard is None or timeout is None:
            return heard is not None
        return self._clock.monotonic_ms() - heard <= timeout

    def _applied_by(self, broker_id: int) -> int:
        """The metadata offset ``broker_id`` has applied, as far as this controller knows."""
        if broker_id in self._local_brokers:
            return self._committed.offset
        return self._applied.get(broker_id, -1)

    def broker_heartbeat(
        self, request: BrokerHeartbeatRequest
    ) -> ControllerResult[BrokerHeartbeatResult]:
        self._check_active()
        broker_id = request.broker_id
        broker = self._image.brokers.get(broker_id)
        if broker is not None and broker.in_controlled_shutdown:
            # It entered controlled shutdown under an earlier active controller: what
            # every broker must have applied is at most what this one's image holds.
            self._shutdown_offsets.setdefault(broker_id, self._image.offset)
        usable = self._image.usable_brokers()
        progress = cluster_control.ShutdownProgress(
            self._shutdown_offsets.get(broker_id),
            min((self._applied_by(b) for b in usable), default=2**63 - 1),
        )
        result = self._commit(
            cluster_control.broker_heartbeat(
                self._image,
                request,
                progress,
                unclean_default=self.config.unclean_leader_election_enable,
            )
        )
        if result.response.error.is_success:
            self._heard_from(broker_id)
            self._applied[broker_id] = request.current_metadata_offset
            if result.response.entered_controlled_shutdown:
                self._shutdown_offsets[broker_id] = self._raft.end_offset - 1
            elif result.response.is_fenced:
                self._shutdown_offsets.pop(broker_id, None)
        return result

    def register_controller(
        self, request: cluster_control.ControllerRegistrationRequest
    ) -> ControllerResult[ApiError]:
        self._check_active()
        kraft_version = self._raft.kraft_version
        return self._commit(
            cluster_control.register_controller(self._image, request, kraft_version)
        )

    def fence_stale_brokers(self) -> ControllerResult[tuple[int, ...]]:
        """Fence every unfenced broker not heard from for ``broker.session.timeout.ms``
        (Kafka's BrokerHeartbeatManager), or for ``broker_disconnect_fence_ms`` since its
        heartbeat connection closed; the answer names them."""
        self._check_active()
        timeout = self.config.broker_session_timeout_ms
        if timeout is None:
            return ControllerResult((), ())
        now = self._clock.monotonic_ms()
        grace = self.config.broker_disconnect_fence_ms
        stale: list[int] = []
        records: list[ApiMessageAndVersion] = []
        # One commit per broker, as Kafka fences one at a time: each fencing's ISR and
        # leader changes are made against the image the previous one left.
        for broker in sorted(self._image.brokers.values(), key=lambda b: b.broker_id):
            heard = self._contact.get(broker.broker_id, self._active_since)
            closed = self._disconnected.get(broker.broker_id)
            gone = grace is not None and closed is not None and now - closed >= grace
            if broker.fenced or (now - heard < timeout and not gone):
                continue
            change = self._set_fenced(broker.broker_id, broker.broker_epoch, fenced=True)
            records.extend(change.records)
            stale.append(broker.broker_id)
        return ControllerResult(tuple(records), tuple(stale))

    def unfence_broker(self, broker_id: int, broker_epoch: int) -> ControllerResult[ApiError]:
        self._check_active()
        return self._set_fenced(broker_id, broker_epoch, fenced=False)

    def fence_broker(self, broker_id: int, broker_epoch: int) -> ControllerResult[ApiError]:
        self._check_active()
        return self._set_fenced(broker_id, broker_epoch, fenced=True)

    def _set_fenced(
        self, broker_id: int, broker_epoch: int, *, fenced: bool
    ) -> ControllerResult[ApiError]:
        unclean = self.config.unclean_leader_election_enable
        return self._commit(
            cluster_control.set_fenced(
                self._image, broker_id, broker_epoch, fenced=fenced, unclean_default=unclean
            )
        )

    def unregister_broker(self, broker_id: int) -> ControllerResult[ApiError]:
        self._contact.pop(broker_id, None)
        self._disconnected.pop(broker_id, None)
        self._applied.pop(broker_id, None)
        self._shutdown_offsets.pop(broker_id, None)
        self._check_active()
        return self._commit(
            cluster_control.unregister_broker(
                self._image,
                broker_id,
                unclean_default=self.config.unclean_leader_election_enable,
            )
        )

    def alter_partition(
        self, request: alter_partition.AlterPartitionRequest
    ) -> ControllerResult[alter_partition.AlterPartitionAnswer]:
        self._check_active()
        return self._commit(alter_partition.alter_partition(self._image, request))

    def allocate_producer_ids(
        self, broker_id: int, broker_epoch: int, count: int = PRODUCER_ID_BLOCK_SIZE
    ) -> ControllerResult[ProducerIdsBlock]:
        self._check_active()
        return self._commit(
            cluster_control.allocate_producer_ids(self._image, broker_id, broker_epoch, count)
        )

    # -- topics ------------------------------------------------------------------------------

    def create_topics(
        self, topics: Sequence[CreatableTopic], *, validate_only: bool = False
    ) -> ControllerResult[list[CreateTopicResult]]:
        from millpond.controller import replication_control as replication  # noqa: PLC0415

        defaults = replication.TopicDefaults(
            self.config.num_partitions, self.config.default_replication_factor
        )
        self._check_active()
        return self._commit(
            replication.create_topics(
                self._image, topics, validate_only=validate_only, rng=self._rng, defaults=defaults
            )
        )

    def delete_topics(
        self, names: Sequence[str] = (), topic_ids: Sequence[bytes] = ()
    ) -> ControllerResult[list[DeleteTopicResult]]:
        from millpond.controller import replication_control as replication  # noqa: PLC0415

        self._check_active()

        return self._commit(replication.delete_topics(self._image, names, topic_ids))

    def create_partitions(
        self, topics: Sequence[CreatePartitionsTopic], *, validate_only: bool = False
    ) -> ControllerResult[list[CreatePartitionsResult]]:
        from millpond.controller import replication_control as replication  # noqa: PLC0415

        self._check_active()

        return self._commit(
            replication.create_partitions(
                self._image, topics, validate_only=validate_only, rng=self._rng
            )
        )

    def elect_leaders(
        self,
        election: ElectionType,
        requested: Sequence[tuple[str, Sequence[int]]] | None,
    ) -> ControllerResult[list[TopicElection]]:
        from millpond.controller import leader_election  # noqa: PLC0415

        self._check_active()
        return self._commit(leader_election.elect_leaders(self._image, election, requested))

    def alter_partition_reassignments(
        self, topics: Sequence[TopicReassignment], *, allow_rf_change: bool = True
    ) -> ControllerResult[ReassignmentOutcomes]:
        from millpond.controller import reassignment  # noqa: PLC0415

        self._check_active()
        return self._commit(
            reassignment.alter_partition_reassignments(
                self._image,
                topics,
                allow_rf_change=allow_rf_change,
                unclean_default=self.config.unclean_leader_election_enable,
            )
        )

    def list_partition_reassignments(
        self, topics: Sequence[tuple[str, Sequence[int]]] | None
    ) -> ControllerResult[list[OngoingReassignment]]:
        """The reassignments in progress as committed (what brokers act on)."""
        from millpond.controller import reassignment  # noqa: PLC0415

        self._check_active()
        return ControllerResult(
            (), reassignment.list_partition_reassignments(self._committed, topics)
        )

    def balance_partition_leaders(self) -> ControllerResult[bool]:
        """Preferred elections for partitions not led by their first replica
        (``auto.leader.rebalance.enable``); True: more remain, run again at once."""
        from millpond.controller import leader_election  # noqa: PLC0415

        self._check_active()
        return self._commit(leader_election.balance_leaders(self._image))

    # -- configs and features ----------------------------------------------------------------

    def incremental_alter_configs(
        self, resources: Sequence[AlterConfigsResource], *, validate_only: bool = False
    ) -> ControllerResult[dict[ConfigResource, ApiError]]:
        self._check_active()
        return self._commit(
            config_control.incremental_alter_configs(
                self._image, resources, validate_only=validate_only
            )
        )

    def alter_configs(
        self, resources: Sequence[AlterConfigsResource], *, validate_only: bool = False
    ) -> ControllerResult[dict[ConfigResource, ApiError]]:
        self._check_active()
        return self._commit(
            config_control.alter_configs(self._image, resources, validate_only=validate_only)
        )

    def update_features(
        self, updates: Sequence[FeatureUpdate], *, validate_only: bool = False
    ) -> ControllerResult[dict[str, ApiError]]:
        self._check_active()
        return self._commit(
            feature_control.update_features(
                self._image,
                updates,
                validate_only=validate_only,
                node_id=self.config.node_id,
                supported=self.config.supported_features,
                kraft=_QuorumKRaftVersion(self._raft, self._clock),
            )
        )

    def close(self) -> None:
        self._raft.close()


class _QuorumKRaftVersion:
    """The quorum's kraft.version, which UpdateFeatures upgrades through the Raft leader
    (its records are the quorum's own, not the controller's)."""

    def __init__(self, raft: RaftClient, clock: Clock) -> None:
        self._raft = raft
        self._clock = clock

    @property
    def version(self) -> int:
        return self._raft.kraft_version

    def upgrade(self, version: int, validate_only: bool) -> ApiError:
        try:
            self._raft.upgrade_kraft_version(
                self._clock.monotonic_ms(), version, validate_only=validate_only
            )
        except KRaftUpgradeError as exc:
            return ApiError(ErrorCode.INVALID_UPDATE_VERSION, str(exc))
        except NotLeaderError as exc:
            return ApiError(ErrorCode.NOT_CONTROLLER, str(exc))
        return NO_ERROR

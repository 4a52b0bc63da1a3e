"""The single-node controller: operations in, records appended, the image replayed.

:class:`QuorumController` is the active controller of a one-voter quorum. On start it
replays ``__cluster_metadata`` into a :class:`~millpond.controller.image.MetadataImage`,
begins a new epoch (quorum-state, then a LeaderChangeMessage), and, if the log was empty,
writes the bootstrap feature levels. Each operation then runs as Kafka's controller
runs one: a pure function of the current image (``*_control`` modules) returns
``ControllerResult(records, response)``; the records are appended and replayed into the
next image, the very replay a restart performs, so the image in memory always equals
the image rebuilt from the log. Validate-only requests and refused requests append
nothing.

Appending is not committing. As in Kafka, the controller's own image runs ahead (the
next operation sees the records before they commit), while what it hands out waits for
the commit: :meth:`QuorumController.when_committed` calls back once an offset is
committed, and every :class:`MetadataListener` (a broker's metadata loader) receives
each committed batch as ``(delta, image)``, in log order. A one-voter quorum commits
what it has made durable, so by default the commit follows the fsync; with
``commit_on_append=False`` commits wait for :meth:`QuorumController.commit`, the call a
quorum's high watermark will make when its voters acknowledge.

A failed append raises :class:`~millpond.controller.metadata_log.MetadataLogFailedError`
and leaves the controller unusable: every pending commit fails with it, and so does
every later operation. Whether the records survive is unknown until a restart recovers
the log. The broker should stop.

Sans-I/O: disk through the injected FileSystem, time through the Clock, randomness
(topic ids, incarnation ids, placement) through the injected ``random.Random``.
Not thread-safe: one owner calls it (Kafka's controller is single-threaded too).
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple, Protocol, TypeVar

from millpond.controller import cluster_control, config_control, feature_control
from millpond.controller.cluster_control import (
    PRODUCER_ID_BLOCK_SIZE,
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
from millpond.controller.metadata_log import MetadataLog, MetadataLogFailedError
from millpond.controller.results import ApiError, ControllerResult
from millpond.storage.clock import Clock
from millpond.storage.fs import FileSystem

if TYPE_CHECKING:
    from millpond.controller.replication_control import (
        CreatableTopic,
        CreatePartitionsResult,
        CreatePartitionsTopic,
        CreateTopicResult,
        DeleteTopicResult,
    )

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
    supported_features: Mapping[str, tuple[int, int]] = feature_control.SUPPORTED_FEATURES
    bootstrap_features: Mapping[str, int] = feature_control.BOOTSTRAP_FEATURES


class QuorumController:
    """The active controller of a one-voter metadata quorum (see the module docstring)."""

    def __init__(
        self,
        fs: FileSystem,
        metadata_log_dir: str,
        clock: Clock,
        rng: random.Random,
        config: ControllerConfig,
        *,
        commit_on_append: bool = True,
    ) -> None:
        self.config = config
        self._rng = rng
        self._commit_on_append = commit_on_append
        self._log = MetadataLog(fs, metadata_log_dir, clock, node_id=config.node_id)
        replayed = self._log.replay(MetadataImage.empty(config.cluster_id))
        self._image = replayed.image
        self._committed = replayed.image
        #: Appended batches not committed yet: (last offset, delta, image), in log order.
        self._uncommitted: deque[tuple[int, MetadataDelta, MetadataImage]] = deque()
        #: (offset, callback) waiting for their commit, in offset order.
        self._waiting: deque[tuple[int, CommitCallback]] = deque()
        self._listeners: list[MetadataListener] = []
        self._failure: BaseException | None = None
        #: Records skipped (unknown or irrelevant types) while loading the log.
        self.skipped_records = replayed.skipped_records
        #: broker id -> incarnation id registered with this controller instance.
        self._sessions: dict[int, bytes] = {}
        self._log.become_leader()
        self._catch_up()
        self._committed = self._image
        if feature_control.METADATA_VERSION not in self._image.features:
            # A fresh log (or one whose bootstrap never committed): write the bootstrap.
            records = [
                *feature_control.bootstrap_records(config.bootstrap_features),
                *config_control.bootstrap_records(),
            ]
            self._commit(ControllerResult(tuple(records), None))
            self.commit(self.last_offset)  # the bootstrap is there before anyone asks

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
        """The offset of the last record appended (-1 for an empty log)."""
        return self._log.log_end_offset - 1

    @property
    def epoch(self) -> int:
        """The controller (leader) epoch this node is in."""
        return self._log.epoch

    @property
    def metadata_log(self) -> MetadataLog:
        return self._log

    def _catch_up(self) -> None:
        replayed = self._log.replay(self._image)
        self._image = replayed.image
        self.skipped_records += replayed.skipped_records

    def _commit(self, result: ControllerResult[T]) -> ControllerResult[T]:
        if not result.records:
            return result
        try:
            first, last = self._log.append(result.records)
        except MetadataLogFailedError as exc:
            self._fail(exc)
            raise
        delta = MetadataDelta(self._image)
        for i, record in enumerate(result.records):
            delta.replay(record.message, first + i, self._log.epoch)
        self._image = delta.apply()
        self._uncommitted.append((last, delta, self._image))
        if self._commit_on_append:
            self.commit(last)
        return result

    # -- commits -----------------------------------------------------------------------------

    def register_listener(self, listener: MetadataListener) -> None:
        """Feed ``listener`` every batch committed from now on (it starts from
        :attr:`committed_image`)."""
        self._listeners.append(listener)

    def when_committed(self, offset: int, callback: CommitCallback) -> None:
        """Call ``callback(None)`` once ``offset`` is committed (at once if it is), or
        ``callback(error)`` if the log fails first."""
        if self._failure is not None:
            callback(self._failure)
        elif offset <= self._committed.offset:
            callback(None)
        else:
            self._waiting.append((offset, callback))

    def commit(self, offset: int) -> None:
        """The quorum has committed everything up to ``offset``: publish those batches
        to the listeners, then complete the operations waiting for them."""
        while self._uncommitted and self._uncommitted[0][0] <= offset:
            _, delta, image = self._uncommitted.popleft()
            self._committed = image
            for listener in self._listeners:
                listener.handle_commit(delta, image)
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
    ) -> ControllerResult[BrokerRegistrationResult]:
        """BrokerRegistration: ``response.broker_epoch`` on success. The broker starts
        fenced; call :meth:`unfence_broker` once it has caught up."""
        if incarnation_id is None:
            incarnation_id = self._rng.getrandbits(128).to_bytes(16, "big")
        if features is None:
            features = [(n, lo, hi) for n, (lo, hi) in self.config.supported_features.items()]
        request = BrokerRegistrationRequest(
            broker_id=broker_id,
            cluster_id=self.config.cluster_id if cluster_id is None else cluster_id,
            incarnation_id=incarnation_id,
            endpoints=endpoints,
            rack=rack,
            features=features,
            log_dirs=log_dirs,
        )
        result = cluster_control.register_broker(
            self._image, request, next_offset=self._log.log_end_offset, sessions=self._sessions
        )
        if result.response.error.is_success:
            self._sessions[broker_id] = incarnation_id
        return self._commit(result)

    def unfence_broker(self, broker_id: int, broker_epoch: int) -> ControllerResult[ApiError]:
        return self._commit(
            cluster_control.set_fenced(self._image, broker_id, broker_epoch, fenced=False)
        )

    def fence_broker(self, broker_id: int, broker_epoch: int) -> ControllerResult[ApiError]:
        return self._commit(
            cluster_control.set_fenced(self._image, broker_id, broker_epoch, fenced=True)
        )

    def unregister_broker(self, broker_id: int) -> ControllerResult[ApiError]:
        self._sessions.pop(broker_id, None)
        return self._commit(cluster_control.unregister_broker(self._image, broker_id))

    def allocate_producer_ids(
        self, broker_id: int, broker_epoch: int, count: int = PRODUCER_ID_BLOCK_SIZE
    ) -> ControllerResult[ProducerIdsBlock]:
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
        return self._commit(
            replication.create_topics(
                self._image, topics, validate_only=validate_only, rng=self._rng, defaults=defaults
            )
        )

    def delete_topics(
        self, names: Sequence[str] = (), topic_ids: Sequence[bytes] = ()
    ) -> ControllerResult[list[DeleteTopicResult]]:
        from millpond.controller import replication_control as replication  # noqa: PLC0415

        return self._commit(replication.delete_topics(self._image, names, topic_ids))

    def create_partitions(
        self, topics: Sequence[CreatePartitionsTopic], *, validate_only: bool = False
    ) -> ControllerResult[list[CreatePartitionsResult]]:
        from millpond.controller import replication_control as replication  # noqa: PLC0415

        return self._commit(
            replication.create_partitions(
                self._image, topics, validate_only=validate_only, rng=self._rng
            )
        )

    # -- configs and features ----------------------------------------------------------------

    def incremental_alter_configs(
        self, resources: Sequence[AlterConfigsResource], *, validate_only: bool = False
    ) -> ControllerResult[dict[ConfigResource, ApiError]]:
        return self._commit(
            config_control.incremental_alter_configs(
                self._image, resources, validate_only=validate_only
            )
        )

    def alter_configs(
        self, resources: Sequence[AlterConfigsResource], *, validate_only: bool = False
    ) -> ControllerResult[dict[ConfigResource, ApiError]]:
        return self._commit(
            config_control.alter_configs(self._image, resources, validate_only=validate_only)
        )

    def update_features(
        self, updates: Sequence[FeatureUpdate], *, validate_only: bool = False
    ) -> ControllerResult[dict[str, ApiError]]:
        return self._commit(
            feature_control.update_features(
                self._image,
                updates,
                validate_only=validate_only,
                node_id=self.config.node_id,
                supported=self.config.supported_features,
            )
        )

    def close(self) -> None:
        self._log.close()

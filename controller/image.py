"""The metadata image: what the cluster's metadata log says, as one immutable value.

Brokers act only on a :class:`MetadataImage`; nothing else describes topics, partitions,
brokers, configs or features. An image is never changed: :class:`MetadataDelta` replays
records over one image (copying each top-level map on its first write, so a batch of
records costs one copy, not one per record) and :meth:`MetadataDelta.apply` returns the
next image. ``apply(image, record)`` is the one-record shorthand.

The rules of replay are Kafka's (its ``MetadataDelta`` and ``*Image`` classes):

* TopicRecord adds a topic (name and 16-byte id); PartitionRecord adds or replaces one
  partition; PartitionChangeRecord merges into one (null fields and leader -2 mean "no
  change"; a new leader bumps the leader epoch; every change bumps the partition epoch);
  RemoveTopicRecord drops the topic, its partitions and its topic configs.
* ConfigRecord sets a config of one resource; a null value deletes it.
* FeatureLevelRecord finalizes a feature level; level 0 removes the feature.
* RegisterBrokerRecord replaces the broker's registration; UnregisterBrokerRecord drops
  it; Fence/UnfenceBrokerRecord and BrokerRegistrationChangeRecord flip its flags.
* RegisterControllerRecord replaces a controller's registration (its listeners and
  features); UnregisterControllerRecord drops it.
* ProducerIdsRecord moves the next producer id block; NoOpRecord changes nothing.

Record types that do not shape this image (ACLs, quotas, SCRAM, delegation tokens, ...)
and unknown types are skipped and *counted* (:attr:`MetadataDelta.skipped`) with a logged
warning, never an error: a newer writer must not stop an older reader.

Pure; safe to share images between threads (they are never mutated). The value classes
are NamedTuples, not frozen dataclasses: on Python 3.11 a frozen dataclass costs about
seven times as much to define, and these are defined with every broker start.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from enum import IntEnum
from types import MappingProxyType
from typing import Any, NamedTuple

from millpond.wire.generated.metadata.abort_transaction_record import AbortTransactionRecord
from millpond.wire.generated.metadata.broker_registration_change_record import (
    BrokerRegistrationChangeRecord,
)
from millpond.wire.generated.metadata.config_record import ConfigRecord
from millpond.wire.generated.metadata.feature_level_record import FeatureLevelRecord
from millpond.wire.generated.metadata.fence_broker_record import FenceBrokerRecord
from millpond.wire.generated.metadata.no_op_record import NoOpRecord
from millpond.wire.generated.metadata.partition_change_record import PartitionChangeRecord
from millpond.wire.generated.metadata.partition_record import PartitionRecord
from millpond.wire.generated.metadata.producer_ids_record import ProducerIdsRecord
from millpond.wire.generated.metadata.register_broker_record import RegisterBrokerRecord
from millpond.wire.generated.metadata.register_controller_record import RegisterControllerRecord
from millpond.wire.generated.metadata.remove_topic_record import RemoveTopicRecord
from millpond.wire.generated.metadata.topic_record import TopicRecord
from millpond.wire.generated.metadata.unfence_broker_record import UnfenceBrokerRecord
from millpond.wire.generated.metadata.unregister_broker_record import UnregisterBrokerRecord
from millpond.wire.generated.metadata.unregister_controller_record import (
    UnregisterControllerRecord,
)
from millpond.wire.message import Message

__all__ = [
    "BrokerEndpoint",
    "BrokerRegistration",
    "ConfigResource",
    "ConfigResourceType",
    "LeaderRecoveryState",
    "MetadataDelta",
    "MetadataImage",
    "PartitionRegistration",
    "TopicImage",
    "apply",
]

_log = logging.getLogger(__name__)

NO_LEADER = -1
NO_LEADER_CHANGE = -2


class LeaderRecoveryState(IntEnum):
    """A partition leader's LeaderRecoveryState: elected cleanly, or from outside the
    ISR (it may lack acknowledged records until its ISR grows again)."""

    RECOVERED = 0
    RECOVERING = 1


class ConfigResourceType(IntEnum):
    """Kafka's ConfigResource.Type codes (ConfigRecord.resource_type)."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


class ConfigResource(NamedTuple):
    """A config owner. A BROKER resource named "" holds the cluster-wide defaults."""

    type: int
    name: str


def _frozen(d: dict[Any, Any]) -> Mapping[Any, Any]:
    return MappingProxyType(d)


#: The default of every map field: read-only, so one instance serves every image.
_EMPTY: Mapping[Any, Any] = MappingProxyType({})


class BrokerEndpoint(NamedTuple):
    name: str
    host: str
    port: int
    security_protocol: int


class BrokerRegistration(NamedTuple):
    broker_id: int
    broker_epoch: int
    incarnation_id: bytes
    endpoints: tuple[BrokerEndpoint, ...]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool = False
    #: (feature name, min supported level, max supported level), by name
    supported_features: tuple[tuple[str, int, int], ...] = ()
    log_dirs: tuple[bytes, ...] = ()

    def endpoint(self, listener: str) -> BrokerEndpoint | None:
        """Where clients of ``listener`` reach this broker (Kafka answers each client with
        the endpoints of the listener it came in on); None if it has no such listener."""
        return next((e for e in self.endpoints if e.name == listener), None)


class ControllerRegistration(NamedTuple):
    controller_id: int
    incarnation_id: bytes
    endpoints: tuple[BrokerEndpoint, ...]
    #: (feature name, min supported level, max supported level), by name
    supported_features: tuple[tuple[str, int, int], ...] = ()


class PartitionRegistration(NamedTuple):
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader_recovery_state: int = 0

    def merge(self, r: PartitionChangeRecord) -> PartitionRegistration:
        """The partition after ``r``: its null fields (and leader -2) keep what is; a new
        leader, or the same one named again, starts a new leader epoch."""
        leader_changed = r.leader != NO_LEADER_CHANGE
        return PartitionRegistration(
            replicas=self.replicas if r.replicas is None else tuple(r.replicas),
            isr=self.isr if r.isr is None else tuple(r.isr),
            leader=r.leader if leader_changed else self.leader,
            leader_epoch=self.leader_epoch + 1 if leader_changed else self.leader_epoch,
            partition_epoch=self.partition_epoch + 1,
            removing_replicas=(
                self.removing_replicas
                if r.removing_replicas is None
                else tuple(r.removing_replicas)
            ),
            adding_replicas=(
                self.adding_replicas if r.adding_replicas is None else tuple(r.adding_replicas)
            ),
            leader_recovery_state=(
                self.leader_recovery_state
                if r.leader_recovery_state == -1
                else r.leader_recovery_state
            ),
        )

    @property
    def reassigning(self) -> bool:
        """Whether a reassignment is in progress (replicas being added or removed)."""
        return bool(self.removing_replicas or self.adding_replicas)


class TopicImage(NamedTuple):
    name: str
    topic_id: bytes
    partitions: Mapping[int, PartitionRegistration] = _EMPTY


class MetadataImage(NamedTuple):
    """The cluster's metadata as of log offset :attr:`offset` (-1: nothing applied)."""

    cluster_id: str
    offset: int = -1
    #: The leader epoch of the batch holding :attr:`offset` (-1 before any).
    epoch: int = -1
    #: Finalized feature levels (metadata.version among them).
    features: Mapping[str, int] = _EMPTY
    brokers: Mapping[int, BrokerRegistration] = _EMPTY
    #: The controllers that registered (ControllerRegistration), by node id.
    controllers: Mapping[int, ControllerRegistration] = _EMPTY
    topics_by_id: Mapping[bytes, TopicImage] = _EMPTY
    topic_ids_by_name: Mapping[str, bytes] = _EMPTY
    configs: Mapping[ConfigResource, Mapping[str, str]] = _EMPTY
    #: The first producer id of the next block ProducerIdsRecord hands out.
    next_producer_id: int = 0

    @classmethod
    def empty(cls, cluster_id: str) -> MetadataImage:
        return cls(cluster_id)

    def topic(self, name: str) -> TopicImage | None:
        topic_id = self.topic_ids_by_name.get(name)
        return None if topic_id is None else self.topics_by_id[topic_id]

    def topic_by_id(self, topic_id: bytes) -> TopicImage | None:
        return self.topics_by_id.get(topic_id)

    def config(self, resource: ConfigResource) -> Mapping[str, str]:
        return self.configs.get(resource, _EMPTY)

    def topic_config(self, name: str) -> Mapping[str, str]:
        return self.config(ConfigResource(ConfigResourceType.TOPIC, name))

    def usable_brokers(self) -> list[int]:
        """Brokers that may take new replicas: unfenced, not shutting down (sorted)."""
        return sorted(
            b.broker_id
            for b in self.brokers.values()
            if not b.fenced and not b.in_controlled_shutdown
        )


class MetadataDelta:
    """Records replayed over a base image; :meth:`apply` yields the next image.

    Each top-level map is copied on its first change; the base is never touched. The
    delta notes which topics and which config resources it touched, so what acts on it
    (a broker's publisher) looks at those, not at every topic.
    """

    def __init__(self, base: MetadataImage) -> None:
        self.base = base
        self.skipped = 0
        #: Ids of the topics added, changed or removed so far.
        self.changed_topics: set[bytes] = set()
        #: Config resources whose configs were set or deleted so far.
        self.changed_configs: set[ConfigResource] = set()
        self._offset = base.offset
        self._epoch = base.epoch
        self._features: dict[str, int] | None = None
        self._brokers: dict[int, BrokerRegistration] | None = None
        self._controllers: dict[int, ControllerRegistration] | None = None
        self._topics: dict[bytes, TopicImage] | None = None
        self._names: dict[str, bytes] | None = None
        self._configs: dict[ConfigResource, Mapping[str, str]] | None = None
        self._next_producer_id = base.next_producer_id
        #: Partition maps made by this delta and not yet handed out in an image: topic
        #: id -> the dict behind that topic's read-only ``partitions``.
        self._owned_partitions: dict[bytes, dict[int, PartitionRegistration]] = {}

    @classmethod
    def replacing(cls, base: MetadataImage, image: MetadataImage) -> MetadataDelta:
        """The delta from ``base`` to an ``image`` not replayed over it (a loaded
        snapshot): every topic and config resource of either counts as changed."""
        delta = cls(base)
        delta.changed_topics = {*base.topics_by_id, *image.topics_by_id}
        delta.changed_configs = {*base.configs, *image.configs}
        delta._features = dict(image.features)
        delta._brokers = dict(image.brokers)
        delta._controllers = dict(image.controllers)
        delta._topics = dict(image.topics_by_id)
        delta._names = dict(image.topic_ids_by_name)
        delta._configs = dict(image.configs)
        delta._next_producer_id = image.next_producer_id
        delta.set_offset(image.offset, image.epoch)
        return delta

    # -- copy on first write ---------------------------------------------------------------

    def _feature_map(self) -> dict[str, int]:
        if self._features is None:
            self._features = dict(self.base.features)
        return self._features

    def _broker_map(self) -> dict[int, BrokerRegistration]:
        if self._brokers is None:
            self._brokers = dict(self.base.brokers)
        return self._brokers

    def _controller_map(self) -> dict[int, ControllerRegistration]:
        if self._controllers is None:
            self._controllers = dict(self.base.controllers)
        return self._controllers

    def _topic_maps(self) -> tuple[dict[bytes, TopicImage], dict[str, bytes]]:
        if self._topics is None or self._names is None:
            self._topics = dict(self.base.topics_by_id)
            self._names = dict(self.base.topic_ids_by_name)
        return self._topics, self._names

    def _config_map(self) -> dict[ConfigResource, Mapping[str, str]]:
        if self._configs is None:
            self._configs = dict(self.base.configs)
        return self._configs

    def _topic(self, topic_id: bytes) -> TopicImage | None:
        source = self._topics if self._topics is not None else self.base.topics_by_id
        return source.get(topic_id)

    def _broker(self, broker_id: int) -> BrokerRegistration | None:
        source = self._brokers if self._brokers is not None else self.base.brokers
        return source.get(broker_id)

    # -- replay ----------------------------------------------------------------------------

    def set_offset(self, offset: int, epoch: int) -> None:
        """Note the log position the image will reflect (control records move it too)."""
        self._offset = offset
        self._epoch = epoch

    def replay(self, record: Message, offset: int | None = None, epoch: int | None = None) -> None:
        """Apply one record (at ``offset`` in epoch ``epoch`` when given)."""
        handler = _HANDLERS.get(type(record))
        if handler is None:
            self.skip(record.NAME)
        else:
            handler(self, record)
        if offset is not None:
            self.set_offset(offset, self._epoch if epoch is None else epoch)

    def skip(self, what: str) -> None:
        self.skipped += 1
        _log.warning("metadata replay skipped a record it does not apply: %s", what)

    def _topic_record(self, r: TopicRecord) -> None:
        topics, names = self._topic_maps()
        old = names.get(r.name)
        if old is not None and old != r.topic_id:
            topics.pop(old, None)
        topics[r.topic_id] = TopicImage(r.name, r.topic_id)
        names[r.name] = r.topic_id
        self.changed_topics.add(r.topic_id)
        if old is not None:
            self.changed_topics.add(old)

    def _partition_record(self, r: PartitionRecord) -> None:
        topic = self._topic(r.topic_id)
        if topic is None:
            self.skip(f"PartitionRecord of unknown topic id {r.topic_id.hex()}")
            return
        partition = PartitionRegistration(
            replicas=tuple(r.replicas),
            isr=tuple(r.isr),
            leader=r.leader,
            leader_epoch=r.leader_epoch,
            partition_epoch=r.partition_epoch,
            removing_replicas=tuple(r.removing_replicas),
            adding_replicas=tuple(r.adding_replicas),
            leader_recovery_state=r.leader_recovery_state,
        )
        self._put_partition(topic, r.partition_id, partition)

    def _put_partition(self, topic: TopicImage, index: int, p: PartitionRegistration) -> None:
        # A topic's partitions are copied once per delta, not once per partition: a
        # snapshot registers each topic's partitions one record at a time.
        topics, _ = self._topic_maps()
        owned = self._owned_partitions.get(topic.topic_id)
        if owned is None or topics.get(topic.topic_id) is not topic:
            owned = self._owned_partitions[topic.topic_id] = dict(topic.partitions)
            topics[topic.topic_id] = topic._replace(partitions=_frozen(owned))
        owned[index] = p
        self.changed_topics.add(topic.topic_id)

    def _partition_change(self, r: PartitionChangeRecord) -> None:
        topic = self._topic(r.topic_id)
        old = None if topic is None else topic.partitions.get(r.partition_id)
        if topic is None or old is None:
            self.skip(f"PartitionChangeRecord of unknown partition {r.partition_id}")
            return
        self._put_partition(topic, r.partition_id, old.merge(r))

    def _remove_topic(self, r: RemoveTopicRecord) -> None:
        topic = self._topic(r.topic_id)
        if topic is None:
            self.skip(f"RemoveTopicRecord of unknown topic id {r.topic_id.hex()}")
            return
        topics, names = self._topic_maps()
        del topics[r.topic_id]
        names.pop(topic.name, None)
        resource = ConfigResource(ConfigResourceType.TOPIC, topic.name)
        self._config_map().pop(resource, None)
        self.changed_topics.add(r.topic_id)
        self.changed_configs.add(resource)

    def _config(self, r: ConfigRecord) -> None:
        configs = self._config_map()
        resource = ConfigResource(r.resource_type, r.resource_name)
        self.changed_configs.add(resource)
        current = dict(configs.get(resource, _EMPTY))
        if r.value is None:
            current.pop(r.name, None)
        else:
            current[r.name] = r.value
        if current:
            configs[resource] = _frozen(current)
        else:
            configs.pop(resource, None)

    def _feature_level(self, r: FeatureLevelRecord) -> None:
        features = self._feature_map()
        if r.feature_level == 0:
            features.pop(r.name, None)
        else:
            features[r.name] = r.feature_level

    def _register_broker(self, r: RegisterBrokerRecord) -> None:
        self._broker_map()[r.broker_id] = BrokerRegistration(
            broker_id=r.broker_id,
            broker_epoch=r.broker_epoch,
            incarnation_id=r.incarnation_id,
            endpoints=tuple(
                BrokerEndpoint(e.name, e.host, e.port, e.security_protocol) for e in r.end_points
            ),
            rack=r.rack,
            fenced=r.fenced,
            in_controlled_shutdown=r.in_controlled_shutdown,
            supported_features=_features_of(r.features),
            log_dirs=tuple(r.log_dirs),
        )

    def _unregister_broker(self, r: UnregisterBrokerRecord) -> None:
        broker = self._broker(r.broker_id)
        if broker is None or broker.broker_epoch != r.broker_epoch:
            self.skip(f"UnregisterBrokerRecord of broker {r.broker_id} epoch {r.broker_epoch}")
            return
        del self._broker_map()[r.broker_id]

    def _change_broker(self, broker_id: int, epoch: int, what: str, **changes: Any) -> None:
        broker = self._broker(broker_id)
        if broker is None or broker.broker_epoch != epoch:
            self.skip(f"{what} of broker {broker_id} epoch {epoch}")
            return
        self._broker_map()[broker_id] = broker._replace(**changes)

    def _fence(self, r: FenceBrokerRecord) -> None:
        self._change_broker(r.id, r.epoch, "FenceBrokerRecord", fenced=True)

    def _unfence(self, r: UnfenceBrokerRecord) -> None:
        self._change_broker(r.id, r.epoch, "UnfenceBrokerRecord", fenced=False)

    def _registration_change(self, r: BrokerRegistrationChangeRecord) -> None:
        changes: dict[str, Any] = {}
        if r.fenced == 1:
            changes["fenced"] = True
        elif r.fenced == -1:
            changes["fenced"] = False
        if r.in_controlled_shutdown == 1:
            changes["in_controlled_shutdown"] = True
        if r.log_dirs:
            changes["log_dirs"] = tuple(r.log_dirs)
        self._change_broker(
            r.broker_id, r.broker_epoch, "BrokerRegistrationChangeRecord", **changes
        )

    def _register_controller(self, r: RegisterControllerRecord) -> None:
        self._controller_map()[r.controller_id] = ControllerRegistration(
            controller_id=r.controller_id,
            incarnation_id=r.incarnation_id,
            endpoints=tuple(
                BrokerEndpoint(e.name, e.host, e.port, e.security_protocol) for e in r.end_points
            ),
            supported_features=_features_of(r.features),
        )

    def _unregister_controller(self, r: UnregisterControllerRecord) -> None:
        self._controller_map().pop(r.controller_id, None)

    def _producer_ids(self, r: ProducerIdsRecord) -> None:
        self._next_producer_id = r.next_producer_id

    def _no_op(self, r: NoOpRecord | AbortTransactionRecord) -> None:
        del r

    # -- result ----------------------------------------------------------------------------

    def apply(self) -> MetadataImage:
        """The image the base becomes with every record replayed so far."""
        self._owned_partitions.clear()  # handed out: later records copy them again
        base = self.base
        return MetadataImage(
            cluster_id=base.cluster_id,
            offset=self._offset,
            epoch=self._epoch,
            features=base.features if self._features is None else _frozen(self._features),
            brokers=base.brokers if self._brokers is None else _frozen(self._brokers),
            controllers=(
                base.controllers if self._controllers is None else _frozen(self._controllers)
            ),
            topics_by_id=base.topics_by_id if self._topics is None else _frozen(self._topics),
            topic_ids_by_name=(
                base.topic_ids_by_name if self._names is None else _frozen(self._names)
            ),
            configs=base.configs if self._configs is None else _frozen(self._configs),
            next_producer_id=self._next_producer_id,
        )


def _features_of(features: list[Any]) -> tuple[tuple[str, int, int], ...]:
    """A node's supported feature ranges, by name: a set, whatever order a writer used
    (Kafka keeps them in a map, and its snapshots write them in the map's order)."""
    return tuple(
        sorted((f.name, f.min_supported_version, f.max_supported_version) for f in features)
    )


_HANDLERS: dict[type[Message], Any] = {
    TopicRecord: MetadataDelta._topic_record,
    PartitionRecord: MetadataDelta._partition_record,
    PartitionChangeRecord: MetadataDelta._partition_change,
    RemoveTopicRecord: MetadataDelta._remove_topic,
    ConfigRecord: MetadataDelta._config,
    FeatureLevelRecord: MetadataDelta._feature_level,
    RegisterBrokerRecord: MetadataDelta._register_broker,
    UnregisterBrokerRecord: MetadataDelta._unregister_broker,
    FenceBrokerRecord: MetadataDelta._fence,
    UnfenceBrokerRecord: MetadataDelta._unfence,
    BrokerRegistrationChangeRecord: MetadataDelta._registration_change,
    RegisterControllerRecord: MetadataDelta._register_controller,
    UnregisterControllerRecord: MetadataDelta._unregister_controller,
    ProducerIdsRecord: MetadataDelta._producer_ids,
    NoOpRecord: MetadataDelta._no_op,
    # Metadata transactions are the replayer's (metadata_replay); what reaches an image
    # is an active controller's own abort of one its predecessor left open.
    AbortTransactionRecord: MetadataDelta._no_op,
}


def apply(
    image: MetadataImage, record: Message, offset: int | None = None, epoch: int | None = None
) -> MetadataImage:
    """``image`` with one record replayed (at ``offset``/``epoch`` when given)."""
    delta = MetadataDelta(image)
    delta.replay(record, offset, epoch)
    return delta.apply()

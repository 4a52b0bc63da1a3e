"""The broker acts on metadata only here: each committed delta, applied to what it hosts.

Kafka's broker learns metadata from its ``MetadataLoader``, which hands every committed
batch, as the delta and the new image, to its publishers; ``BrokerMetadataPublisher``
then has the replica manager create, delete, lead or follow partitions
(``ReplicaManager.applyDelta``), the dynamic config publisher apply changed topic
configs, and the coordinators load or unload the partitions of their topics
(``onElection``/``onResignation``). :class:`BrokerMetadataPublisher` is that for
millpond, fed by :meth:`publish` after the image has become the broker's:

- a partition this broker now hosts (new topic, new partition): its log is created, so
  it shows in DescribeLogDirs at once;
- a topic removed, or a partition this broker no longer hosts: the replica manager
  stops it and its log is deleted (renamed ``-delete``, removed after the broker's
  ``file.delete.delay.ms``);
- a topic whose configs changed: the new config applies to its open logs;
- a partition whose leadership changed: one this broker no longer leads leaves the
  replica manager's table (what waited on it is answered NOT_LEADER_OR_FOLLOWER), and
  the listeners registered for its topic hear of it (``on_election`` when this
  broker becomes, or stays with a new epoch, the leader; ``on_resignation`` when it
  stops leading);
- a partition this broker follows, with a new leader or leader epoch: the replica
  fetchers fetch it from that leader; one it leads now, no longer hosts, or that has no
  leader, they stop fetching.

:func:`local_changes` is the pure part: what a delta means for one broker.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection
from typing import TYPE_CHECKING, NamedTuple, Protocol

from millpond.controller.image import ConfigResourceType, MetadataImage

if TYPE_CHECKING:
    from millpond.broker.replica_manager import ReplicaManager
    from millpond.broker.replication.fetchers import ReplicaFetchers
    from millpond.controller.image import ConfigResource, MetadataDelta, TopicImage
    from millpond.storage.log_manager import LogManager

__all__ = [
    "BrokerMetadataPublisher",
    "LeadershipListener",
    "LocalChanges",
    "local_changes",
]

_log = logging.getLogger("millpond.broker")


class LeadershipListener(Protocol):
    """A coordinator of a topic's partitions (the group coordinator of
    ``__consumer_offsets``): told when this broker starts and stops leading one."""

    def on_election(self, partition: int, leader_epoch: int) -> None: ...

    def on_resignation(self, partition: int, leader_epoch: int | None) -> None: ...


class LocalChanges(NamedTuple):
    """What a delta changes on one broker, each list in (topic, partition) order."""

    #: (topic name, partition indexes) this broker hosted and no longer does.
    removed: list[tuple[str, list[int]]]
    #: (topic, partition) this broker hosts now and did not before.
    added: list[tuple[TopicImage, int]]
    #: (topic name, partition, leader epoch) this broker leads with a new epoch.
    elected: list[tuple[str, int, int]]
    #: (topic name, partition, the leader epoch that ended its leadership, None if the
    #: partition is gone) it no longer leads.
    resigned: list[tuple[str, int, int | None]]
    #: Names of topics that still exist and whose configs changed.
    reconfigured: list[str]
    #: (topic, partition, leader, leader epoch) this broker follows with a new leader or
    #: leader epoch.
    followed: list[tuple[TopicImage, int, int, int]] = []
    #: (topic id, partition) this broker followed and no longer fetches: it leads it, or
    #: it has no leader.
    unfollowed: list[tuple[bytes, int]] = []


def _epoch_after(topic: TopicImage | None, index: int) -> int | None:
    partition = None if topic is None else topic.partitions.get(index)
    return None if partition is None else partition.leader_epoch


def local_changes(
    base: MetadataImage,
    image: MetadataImage,
    node_id: int,
    *,
    topic_ids: Collection[bytes] | None = None,
    configs: Collection[ConfigResource] | None = None,
) -> LocalChanges:
    """Compare two images as broker ``node_id`` sees them: only the topics ``topic_ids``
    and the config resources ``configs`` when given (what a delta touched), else all.
    Unchanged maps are the same objects, so an image that changed nothing about topics
    costs nothing here."""
    removed: list[tuple[str, list[int]]] = []
    added: list[tuple[TopicImage, int]] = []
    elected: list[tuple[str, int, int]] = []
    resigned: list[tuple[str, int, int | None]] = []
    followed: list[tuple[TopicImage, int, int, int]] = []
    unfollowed: list[tuple[bytes, int]] = []
    if base.topics_by_id is not image.topics_by_id:
        touched = {*base.topics_by_id, *image.topics_by_id} if topic_ids is None else topic_ids
        ids = sorted(
            (t for t in touched if t in base.topics_by_id or t in image.topics_by_id),
            key=lambda t: (image.topics_by_id.get(t) or base.topics_by_id[t]).name,
        )
        for topic_id in ids:
            old = base.topics_by_id.get(topic_id)
            new = image.topics_by_id.get(topic_id)
            if new is old or old is None:
                continue
            gone = [
                i
                for i, p in sorted(old.partitions.items())
                if node_id in p.replicas
                and (
                    new is None
                    or i not in new.partitions
                    or node_id not in new.partitions[i].replicas
                )
            ]
            # With the leader epoch that ended this broker's leadership (None: the
            # partition is gone), as Kafka's onResignation: a coordinator unloads what it
            # loaded in any earlier epoch.
            resigned.extend(
                (old.name, i, _epoch_after(new, i))
                for i, p in sorted(old.partitions.items())
                if p.leader == node_id
                and (new is None or i not in new.partitions or new.partitions[i].leader != node_id)
            )
            if gone:
                removed.append((old.name, gone))
        for topic_id in ids:
            old_topic = base.topics_by_id.get(topic_id)
            new = image.topics_by_id.get(topic_id)
            if new is old_topic or new is None:
                continue
            before = {} if old_topic is None else old_topic.partitions
            for i, p in sorted(new.partitions.items()):
                was = before.get(i)
                if node_id in p.replicas and (was is None or node_id not in was.replicas):
                    added.append((new, i))
                if p.leader == node_id and (
                    was is None or was.leader != node_id or was.leader_epoch != p.leader_epoch
                ):
                    elected.append((new.name, i, p.leader_epoch))
                if node_id not in p.replicas or p.leader == node_id:
                    continue
                followed_before = (
                    was is not None and node_id in was.replicas and was.leader not in (node_id, -1)
                )
                if p.leader < 0:
                    if followed_before:
                        unfollowed.append((new.topic_id, i))
                elif not followed_before or (
                    was is not None
                    and (was.leader != p.leader or was.leader_epoch != p.leader_epoch)
                ):
                    followed.append((new, i, p.leader, p.leader_epoch))
    reconfigured: list[str] = []
    if base.configs is not image.configs:
        changed = {
            resource.name
            for resource in ({*base.configs, *image.configs} if configs is None else configs)
            if resource.type == ConfigResourceType.TOPIC
            and base.configs.get(resource) != image.configs.get(resource)
        }
        reconfigured = sorted(
            name
            for name in changed
            if name in image.topic_ids_by_name
            and base.topic_ids_by_name.get(name) == image.topic_ids_by_name[name]
        )
    return LocalChanges(removed, added, elected, resigned, reconfigured, followed, unfollowed)


class BrokerMetadataPublisher:
    """Applies committed deltas to this broker's partitions, logs and coordinators."""

    def __init__(
        self,
        node_id: int,
        replicas: ReplicaManager,
        log_manager: LogManager,
        delete_delay_ms: Callable[[], int],
    ) -> None:
        self.node_id = node_id
        self._replicas = replicas
        self._logs = log_manager
        self._delete_delay_ms = delete_delay_ms
        self._listeners: dict[str, list[LeadershipListener]] = {}
        #: The follower fetchers, made on first need once the broker has registered
        #: (a broker that follows nothing never loads them).
        self.fetchers: ReplicaFetchers | None = None
        self._make_fetchers: Callable[[], ReplicaFetchers] | None = None

    def add_leadership_listener(self, topic: str, listener: LeadershipListener) -> None:
        """Tell ``listener`` of leadership changes of ``topic``'s partitions."""
        self._listeners.setdefault(topic, []).append(listener)

    def publish(self, delta: MetadataDelta, image: MetadataImage) -> None:
        """Act on ``delta`` (its base the previous image, ``image`` the current one)."""
        changes = local_changes(
            delta.base,
            image,
            self.node_id,
            topic_ids=delta.changed_topics,
            configs=delta.changed_configs,
        )
        for name, partition, epoch in changes.resigned:
            self._replicas.resign(name, partition)
            for listener in self._listeners.get(name, ()):
                listener.on_resignation(partition, epoch)
        if changes.removed:
            delay_ms = self._delete_delay_ms()
            for name, indexes in changes.removed:
                self._replicas.stop_partitions(name, indexes, delete=True, delay_ms=delay_ms)
        for name in changes.reconfigured:
            self._logs.update_config(name, self._replicas.log_config(name))
        for topic, partition in changes.added:
            self._replicas.log(topic, partition)
        for name, partition, epoch in changes.elected:
            for listener in self._listeners.get(name, ()):
                listener.on_election(partition, epoch)
        self._follow(changes, image)

    def start_following(
        self, make_fetchers: Callable[[], ReplicaFetchers], image: MetadataImage | None = None
    ) -> None:
        """The broker has registered: from now on it follows, with the fetchers
        ``make_fetchers`` makes, and it follows at once what ``image`` says it does."""
        self._make_fetchers = make_fetchers
        if image is not None:
            empty = MetadataImage.empty(image.cluster_id)
            self._follow(local_changes(empty, image, self.node_id), image)

    def _follow(self, changes: LocalChanges, image: MetadataImage) -> None:
        """Partitions this broker follows fetch from their leaders; those it leads now,
        no longer hosts or that have no leader, no longer do."""
        if self.fetchers is None and changes.followed and self._make_fetchers is not None:
            self.fetchers = self._make_fetchers()
        fetchers = self.fetchers
        if fetchers is None:
            return
        stopped = list(changes.unfollowed)
        for name, partition, _ in changes.elected:
            topic_id = image.topic_ids_by_name.get(name)
            if topic_id is not None:
                stopped.append((topic_id, partition))
        for name, indexes in changes.removed:
            topic_id = image.topic_ids_by_name.get(name)
            if topic_id is not None:
                stopped.extend((topic_id, i) for i in indexes)
        if stopped:
            fetchers.unfollow(stopped)
        for topic, partition, leader, epoch in changes.followed:
            self._replicas.follower_log(topic, partition)
            fetchers.follow(topic.name, topic.topic_id, partition, leader, epoch)

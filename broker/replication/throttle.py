"""Replication throttles (KIP-73), as a reassignment sets them: a rate in bytes per
second for the replication traffic of chosen partitions, on the leader's side (what it
sends followers) and on the follower's (what it fetches).

- ``leader.replication.throttled.rate`` and ``follower.replication.throttled.rate`` are
  dynamic broker configs: this broker's own (resource ``<node id>``), else the cluster
  default (resource ``""``); unset means unthrottled.
- ``leader.replication.throttled.replicas`` and ``follower.replication.throttled.replicas``
  are topic configs listing ``partition:broker`` pairs, or ``*`` for every replica; a
  partition is throttled on this broker when a pair names it with this broker's id.
- Only replicas outside the ISR are held back (a reassignment's new replicas, a replica
  catching up after a restart): the ISR's own traffic keeps acks=all fast. Once the
  measured rate of a side's throttled partitions is over its bound, the leader answers
  their fetches without records, and the follower leaves them out of its fetches, until
  the rate falls back under the bound.

The rate is Kafka's: the bytes recorded over ``samples`` windows of ``window_ms``
(``replication.quota.window.num`` 11 and ``replication.quota.window.size.seconds`` 1),
divided by the time they span, counted as at least ``samples - 1`` whole windows. Pure:
the caller passes the time and the metadata image.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from millpond.controller.image import ConfigResource, ConfigResourceType

if TYPE_CHECKING:
    from millpond.controller.image import MetadataImage

__all__ = [
    "ALL_PARTITIONS",
    "FOLLOWER",
    "LEADER",
    "Rate",
    "ReplicationThrottles",
    "throttled_partitions",
]

#: A throttled-replicas config of ``*``: every partition of the topic.
ALL_PARTITIONS: frozenset[int] = frozenset({-1})
LEADER, FOLLOWER = "leader", "follower"


def throttled_partitions(value: str, broker_id: int) -> frozenset[int]:
    """The partitions a throttled-replicas config throttles on ``broker_id``
    (:data:`ALL_PARTITIONS` for ``*``). The config was validated when it was set."""
    value = value.strip()
    if value == "*":
        return ALL_PARTITIONS
    chosen = set()
    for pair in value.split(","):
        partition, _, broker = pair.strip().partition(":")
        if partition and broker.strip() == str(broker_id):
            chosen.add(int(partition))
    return frozenset(chosen)


class Rate:
    """Bytes per second over a sliding set of sample windows."""

    def __init__(self, window_ms: int = 1000, samples: int = 11) -> None:
        self.window_ms = window_ms
        self.samples = samples
        #: (window start ms, bytes), oldest first.
        self._windows: deque[tuple[int, int]] = deque()

    def record(self, size: int, now_ms: int) -> None:
        self._expire(now_ms)
        if self._windows and now_ms - self._windows[-1][0] < self.window_ms:
            start, total = self._windows.pop()
            self._windows.append((start, total + size))
        else:
            self._windows.append((now_ms, size))

    def per_second(self, now_ms: int) -> float:
        self._expire(now_ms)
        if not self._windows:
            return 0.0
        elapsed = now_ms - self._windows[0][0]
        elapsed = max(elapsed, (self.samples - 1) * self.window_ms)
        return sum(size for _, size in self._windows) * 1000 / elapsed

    def _expire(self, now_ms: int) -> None:
        oldest = now_ms - self.samples * self.window_ms
        while self._windows and self._windows[0][0] <= oldest:
            self._windows.popleft()


class ReplicationThrottles:
    """This broker's two replication throttles, read from the metadata image."""

    def __init__(
        self,
        node_id: int,
        image: Callable[[], MetadataImage],
        now_ms: Callable[[], int],
        *,
        window_ms: int = 1000,
        samples: int = 11,
    ) -> None:
        self._node_id = node_id
        self._image = image
        self._now_ms = now_ms
        self._rates = {side: Rate(window_ms, samples) for side in (LEADER, FOLLOWER)}
        self._seen: MetadataImage | None = None
        self._bounds: dict[str, float | None] = {LEADER: None, FOLLOWER: None}
        #: side -> topic -> throttled partitions on this broker
        self._throttled: dict[str, Mapping[str, frozenset[int]]] = {LEADER: {}, FOLLOWER: {}}

    def throttled(self, side: str, topic: str, partition: int) -> bool:
        """Whether ``side``'s throttle covers this broker's replica of the partition."""
        self._refresh()
        if self._bounds[side] is None:
            return False
        chosen = self._throttled[side].get(topic)
        return chosen is not None and (chosen is ALL_PARTITIONS or partition in chosen)

    def exceeded(self, side: str) -> bool:
        """Whether ``side``'s throttled traffic is over its bound now."""
        self._refresh()
        bound = self._bounds[side]
        return bound is not None and self._rates[side].per_second(self._now_ms()) > bound

    def record(self, side: str, size: int) -> None:
        if size:
            self._rates[side].record(size, self._now_ms())

    def _refresh(self) -> None:
        image = self._image()
        if image is self._seen:
            return
        self._seen = image
        own = image.config(ConfigResource(ConfigResourceType.BROKER, str(self._node_id)))
        default = image.config(ConfigResource(ConfigResourceType.BROKER, ""))
        for side in (LEADER, FOLLOWER):
            key = f"{side}.replication.throttled.rate"
            value = own.get(key, default.get(key))
            self._bounds[side] = None if value is None else float(value)
            replicas_key = f"{side}.replication.throttled.replicas"
            throttled = {}
            for resource, configs in image.configs.items():
                value = configs.get(replicas_key)
                if resource.type == ConfigResourceType.TOPIC and value:
                    chosen = throttled_partitions(value, self._node_id)
                    if chosen:
                        throttled[resource.name] = chosen
            self._throttled[side] = throttled

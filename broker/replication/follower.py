"""What a follower fetches from one leader, and what it does with the answers, as
Kafka's ``AbstractFetcherThread`` decides it. Pure: the caller sends the requests,
applies the actions to its logs and keeps the time.

Each partition is fetched from its log end, with the leader epoch the metadata gave
and the epoch of the last batch the follower holds (KIP-595's divergence check, Fetch
v12+). An answer per partition becomes one :class:`Action`:

- records (or none) with the leader's high watermark and log start: *append* them as
  they are (offsets and epochs kept), then take the high watermark, clamped to the
  local log, and the log start;
- a diverging epoch (the follower holds records the leader never had in that epoch):
  *truncate* to where the two logs agree, then fetch from there;
- OFFSET_OUT_OF_RANGE: ask the leader where its log starts and ends (ListOffsets) and
  *reset* there;
- FENCED_LEADER_EPOCH: the follower's leader epoch is old; it *stops* fetching the
  partition until the metadata gives it a new one;
- UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER, unknown topics and every other error:
  *back off* for ``replica.fetch.backoff.ms`` and fetch again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.fetch_request import (
    FetchPartition,
    FetchRequest,
    FetchTopic,
    ReplicaState,
)
from millpond.wire.generated.api.fetch_response import FetchResponse, PartitionData

__all__ = [
    "Action",
    "FetcherConfig",
    "FollowerFetcher",
    "PartitionFetch",
    "truncation_offset",
]

#: (topic id, partition index)
Key = tuple[bytes, int]


class FetcherConfig(NamedTuple):
    """The ``replica.fetch.*`` settings."""

    max_wait_ms: int = 500  # replica.fetch.wait.max.ms
    min_bytes: int = 1  # replica.fetch.min.bytes
    response_max_bytes: int = 10 * 1024 * 1024  # replica.fetch.response.max.bytes
    partition_max_bytes: int = 1024 * 1024  # replica.fetch.max.bytes
    backoff_ms: int = 1000  # replica.fetch.backoff.ms


class PartitionFetch(NamedTuple):
    topic: str
    topic_id: bytes
    partition: int
    #: The leader epoch the metadata gave this follower.
    leader_epoch: int
    fetch_offset: int
    #: The epoch of the last batch the follower holds (-1: none).
    last_fetched_epoch: int = -1
    #: Not fetched before this time (monotonic ms): backing off after an error.
    delayed_until_ms: int = 0


class Action(NamedTuple):
    """What to do to one partition's log after an answer."""

    #: "append", "truncate", "reset" (to the leader's log start/end: ask ListOffsets),
    #: "stop" or "back_off".
    kind: str
    key: Key
    data: PartitionData | None = None
    #: For "truncate": where to.
    offset: int = -1


def truncation_offset(
    leader_epoch: int, leader_end: int, local: tuple[int, int], log_end: int
) -> tuple[int, bool]:
    """Where to truncate given the leader's diverging epoch (epoch, end offset) and the
    follower's own end for that epoch (``local``); and whether the logs then agree
    (False: ask again from there)."""
    if leader_end < 0:
        return log_end, True
    local_epoch, local_end = local
    if leader_epoch < 0 or local_epoch < 0:
        return min(leader_end, log_end), True
    if local_epoch != leader_epoch:
        return min(local_end, log_end), False
    return min(local_end, leader_end, log_end), True


def _NONE_HELD(fetch: PartitionFetch) -> bool:  # noqa: N802 (a constant predicate)
    return False


class FollowerFetcher:
    """The partitions this follower fetches from one leader."""

    def __init__(self, node_id: int, leader_id: int, config: FetcherConfig) -> None:
        self.node_id = node_id
        self.leader_id = leader_id
        self.config = config
        self.partitions: dict[Key, PartitionFetch] = {}

    def add(self, fetch: PartitionFetch) -> None:
        """Fetch ``fetch``'s partition (again, with a new leader epoch, if it was)."""
        key = (fetch.topic_id, fetch.partition)
        known = self.partitions.get(key)
        if known is not None and known.leader_epoch == fetch.leader_epoch:
            return
        self.partitions[key] = fetch

    def remove(self, keys: Iterable[Key]) -> None:
        for key in keys:
            self.partitions.pop(key, None)

    def next_wake_ms(
        self, now_ms: int, held: Callable[[PartitionFetch], bool] = _NONE_HELD
    ) -> int | None:
        """When the earliest backed-off partition may be fetched again, or a held one
        looked at again after ``replica.fetch.backoff.ms`` (None: none)."""
        waiting = [
            p.delayed_until_ms for p in self.partitions.values() if p.delayed_until_ms > now_ms
        ]
        if any(held(p) for p in self.partitions.values() if p.delayed_until_ms <= now_ms):
            waiting.append(now_ms + self.config.backoff_ms)
        return min(waiting) if waiting else None

    def request(
        self,
        now_ms: int,
        broker_epoch: int,
        log_start: Callable[[Key], int],
        held: Callable[[PartitionFetch], bool] = _NONE_HELD,
    ) -> tuple[FetchRequest, list[PartitionFetch]] | None:
        """A full (sessionless) fetch of every partition ready now and not ``held``
        back (a replication throttle), and what it asked; None when none is."""
        ready = [
            p for p in self.partitions.values() if p.delayed_until_ms <= now_ms and not held(p)
        ]
        if not ready:
            return None
        topics: list[FetchTopic] = []
        for p in sorted(ready, key=lambda p: (p.topic, p.partition)):
            if not topics or topics[-1].topic_id != p.topic_id:
                topics.append(FetchTopic(topic=p.topic, topic_id=p.topic_id))
            topics[-1].partitions.append(
                FetchPartition(
                    partition=p.partition,
                    current_leader_epoch=p.leader_epoch,
                    fetch_offset=p.fetch_offset,
                    last_fetched_epoch=p.last_fetched_epoch,
                    log_start_offset=log_start((p.topic_id, p.partition)),
                    partition_max_bytes=self.config.partition_max_bytes,
                )
            )
        request = FetchRequest(
            replica_state=ReplicaState(replica_id=self.node_id, replica_epoch=broker_epoch),
            max_wait_ms=self.config.max_wait_ms,
            min_bytes=self.config.min_bytes,
            max_bytes=self.config.response_max_bytes,
            session_id=0,
            session_epoch=-1,  # sessionless: every fetch names every partition
            topics=topics,
        )
        return request, ready

    def handle(
        self, asked: list[PartitionFetch], response: FetchResponse | None, now_ms: int
    ) -> list[Action]:
        """The actions an answer calls for (None: no answer; everything asked backs
        off). Partitions whose state changed since they were asked are left alone."""
        current = {(p.topic_id, p.partition): p for p in asked}
        if response is None or response.error_code != ErrorCode.NONE:
            for p in asked:
                self.back_off((p.topic_id, p.partition), now_ms)
            return [Action("back_off", (p.topic_id, p.partition)) for p in asked]
        actions = []
        for topic in response.responses:
            for data in topic.partitions:
                key = (bytes(topic.topic_id), data.partition_index)
                sent = current.get(key)
                if sent is None or self.partitions.get(key) != sent:
                    continue
                actions.append(self._action(key, data, now_ms))
        return actions

    def _action(self, key: Key, data: PartitionData, now_ms: int) -> Action:
        code = data.error_code
        if code == ErrorCode.NONE:
            if data.diverging_epoch.end_offset >= 0 or data.diverging_epoch.epoch >= 0:
                return Action("truncate", key, data)
            return Action("append", key, data)
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            return Action("reset", key, data)
        if code == ErrorCode.FENCED_LEADER_EPOCH:
            self.partitions.pop(key, None)
            return Action("stop", key, data)
        self.back_off(key, now_ms)
        return Action("back_off", key, data)

    def back_off(self, key: Key, now_ms: int) -> None:
        """Fetch the partition again after ``replica.fetch.backoff.ms`` (an error, from
        the leader or applying its answer)."""
        known = self.partitions.get(key)
        if known is not None and known.delayed_until_ms <= now_ms:
            self.partitions[key] = known._replace(delayed_until_ms=now_ms + self.config.backoff_ms)

    def advanced(self, key: Key, fetch_offset: int, last_fetched_epoch: int) -> None:
        """The partition's log now ends at ``fetch_offset`` (appended to, truncated or
        reset), its last batch in ``last_fetched_epoch``: fetch from there."""
        known = self.partitions.get(key)
        if known is not None:
            self.partitions[key] = known._replace(
                fetch_offset=fetch_offset, last_fetched_epoch=last_fetched_epoch
            )

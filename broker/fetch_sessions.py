"""Incremental fetch sessions (KIP-227): the broker remembers what a fetcher asked for, so
later requests name only what changed and responses carry only what changed.

A request's ``(session_id, session_epoch)`` chooses one of four contexts, as Kafka 4.4
does (its FetchManager, FetchSession and FetchSessionCache):

* epoch 0 (full, new session): a session named by ``session_id`` is closed; the response
  lists every requested partition and opens a session (id > 0, next epoch 1) when the
  cache has or can make room, else says session 0.
* epoch -1 (full, sessionless; every request below v7): a session named by
  ``session_id`` is closed; no session is made.
* epoch > 0 (incremental): the session must exist (else FETCH_SESSION_ID_NOT_FOUND),
  expect this epoch (else INVALID_FETCH_SESSION_EPOCH) and use topic ids exactly when the
  request version is 13+ (else FETCH_SESSION_TOPIC_ID_ERROR). Requested partitions are
  added or have their parameters replaced, forgotten ones leave; a session left empty
  is closed and the request served sessionless. Otherwise the epoch advances (after
  2**31-1 comes 1) and every cached partition is fetched, but the response lists only
  partitions with records, a changed high watermark or log start offset, an error, a
  diverging epoch or a preferred read replica. Partitions that returned records move to
  the end of the session's order, so a size-limited response serves the others next.
  If the session's epoch moved while the request waited (a duplicate request), the
  response is INVALID_FETCH_SESSION_EPOCH.
* Session errors answer with the error, session 0 and no partitions.

The cache holds ``max.incremental.fetch.session.cache.slots`` sessions (1000). A new
session may evict the least recently used one when that was idle for more than two
minutes; failing that, the smallest "evictable" session (fewer partitions, unprivileged
before privileged, lower id first), where a session becomes evictable by anyone once it
is older than two minutes at a use, and evictable by followers' (privileged) sessions
when it is a consumer's, if the newcomer is at least as large. Kafka splits the cache
into 8 shards and applies these rules per shard; this one-loop broker uses one shard.

Pure: time comes in as ``now_ms`` and ids from an injected :class:`random.Random`.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.fetch_response import PartitionData
from millpond.wire.splice import records_size

INVALID_SESSION_ID: Final = 0
INITIAL_EPOCH: Final = 0
FINAL_EPOCH: Final = -1
DEFAULT_MAX_SESSIONS: Final = 1000
DEFAULT_EVICTION_MS: Final = 120_000
_MAX_INT32: Final = 2**31 - 1
ZERO_UUID: Final = bytes(16)

#: A partition's identity in a session: (topic id, partition) when the session uses topic
#: ids (v13+), (topic name, partition) otherwise.
PartitionKey = tuple[bytes | str, int]


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch``: -1 stays -1, and after 2**31-1 comes 1."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == _MAX_INT32 else epoch + 1


class PartitionRequest(NamedTuple):
    """One partition of a fetch as requested (or as a session remembers it). ``topic`` is
    None when a v13+ topic id names no known topic."""

    topic: str | None
    topic_id: bytes
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1
    last_fetched_epoch: int = -1

    @property
    def key(self) -> PartitionKey:
        return partition_key(self.topic, self.topic_id, self.partition)


def partition_key(topic: str | None, topic_id: bytes, partition: int) -> PartitionKey:
    if topic_id != ZERO_UUID:
        return (topic_id, partition)
    return (topic or "", partition)


@dataclass(slots=True)
class CachedPartition:
    """A session's memory of one partition: the last request parameters, and the high
    watermark and log start offset last sent (-1: never sent, or sent with an error)."""

    request: PartitionRequest
    high_watermark: int = -1
    log_start_offset: int = -1

    def must_respond(self, data: PartitionData, update: bool) -> bool:
        """Whether an incremental response must list this partition; with ``update``,
        remember what it says."""
        respond = records_size(data.records) > 0
        if self.high_watermark != data.high_watermark:
            respond = True
            if update:
                self.high_watermark = data.high_watermark
        if self.log_start_offset != data.log_start_offset:
            respond = True
            if update:
                self.log_start_offset = data.log_start_offset
        if data.preferred_read_replica >= 0:
            respond = True
        if data.error_code != ErrorCode.NONE:
            respond = True
            if update:
                self.high_watermark = -1  # so the partition is sent again once it heals
        if data.diverging_epoch.epoch >= 0 or data.diverging_epoch.end_offset >= 0:
            respond = True
        return respond


@dataclass(slots=True)
class FetchSession:
    id: int
    privileged: bool
    uses_topic_ids: bool
    creation_ms: int
    last_used_ms: int
    epoch: int
    partitions: dict[PartitionKey, CachedPartition] = field(default_factory=dict)
    #: Partition count when last touched (-1: not in a cache).
    cached_size: int = -1
    evictable_by_all: bool = False
    evictable_by_privileged: bool = False

    def evictable_key(self) -> tuple[bool, int, int]:
        return (self.privileged, self.cached_size, self.id)

    def update(
        self, requested: Mapping[PartitionKey, PartitionRequest], forgotten: Sequence[PartitionKey]
    ) -> None:
        """Add or refresh the requested partitions, then drop the forgotten ones."""
        for key, request in requested.items():
            cached = self.partitions.get(key)
            if cached is None:
                self.partitions[key] = CachedPartition(request)
            else:
                # A name resolved since the session began stays resolved.
                topic = request.topic if request.topic is not None else cached.request.topic
                cached.request = request._replace(topic=topic)
        for key in forgotten:
            self.partitions.pop(key, None)

    def resolve_names(self, names: Mapping[bytes, str]) -> None:
        """Give a name to partitions whose topic id was unknown when they were cached."""
        for cached in self.partitions.values():
            if cached.request.topic is None and cached.request.topic_id in names:
                cached.request = cached.request._replace(topic=names[cached.request.topic_id])


class FetchSessionCache:
    def __init__(
        self,
        rng: random.Random,
        max_sessions: int = DEFAULT_MAX_SESSIONS,
        eviction_ms: int = DEFAULT_EVICTION_MS,
    ) -> None:
        self._rng = rng
        self.max_sessions = max_sessions
        self.eviction_ms = eviction_ms
        self._sessions: dict[int, FetchSession] = {}
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def sessions(self) -> list[FetchSession]:
        """Every cached session, oldest id first (for the control endpoint's state)."""
        return [self._sessions[i] for i in sorted(self._sessions)]

    @property
    def total_partitions(self) -> int:
        return sum(s.cached_size for s in self._sessions.values())

    def remove(self, session_id: int) -> FetchSession | None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            session.cached_size = -1
        return session

    def touch(self, session: FetchSession, now_ms: int) -> None:
        """Note a use: the session's recency, size and evictability."""
        session.last_used_ms = now_ms
        session.cached_size = len(session.partitions)
        old = now_ms - session.creation_ms > self.eviction_ms
        session.evictable_by_all = old
        session.evictable_by_privileged = old or not session.privileged

    def create(
        self,
        now_ms: int,
        privileged: bool,
        uses_topic_ids: bool,
        partitions: dict[PartitionKey, CachedPartition],
    ) -> int:
        """A new session holding ``partitions``; its id, or 0 when there is no room."""
        if len(self._sessions) >= self.max_sessions and not self._evict_for(
            privileged, len(partitions), now_ms
        ):
            return INVALID_SESSION_ID
        session = FetchSession(
            id=self._new_id(),
            privileged=privileged,
            uses_topic_ids=uses_topic_ids,
            creation_ms=now_ms,
            last_used_ms=now_ms,
            epoch=next_epoch(INITIAL_EPOCH),
            partitions=partitions,
        )
        self._sessions[session.id] = session
        self.touch(session, now_ms)
        return session.id

    def _new_id(self) -> int:
        while True:
            session_id = self._rng.randint(1, _MAX_INT32 - 1)
            if session_id not in self._sessions:
                return session_id

    def _evict_for(self, privileged: bool, size: int, now_ms: int) -> bool:
        if not self._sessions:
            return False
        stalest = min(self._sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - stalest.last_used_ms > self.eviction_ms:
            self._evict(stalest)
            return True
        candidates = [
            s
            for s in self._sessions.values()
            if (s.evictable_by_privileged if privileged else s.evictable_by_all)
        ]
        if not candidates:
            return False
        weakest = min(candidates, key=FetchSession.evictable_key)
        if (privileged, size, 0) < weakest.evictable_key():
            return False
        self._evict(weakest)
        return True

    def _evict(self, session: FetchSession) -> None:
        self.remove(session.id)
        self.evictions += 1


# -- contexts ------------------------------------------------------------------------------


class FetchContext:
    """What one fetch request reads and how its response is shaped."""

    def partitions(self) -> Iterator[PartitionRequest]:
        """The partitions to read, in order."""
        return iter(())

    def respond(
        self, results: Sequence[tuple[PartitionKey, PartitionData]], now_ms: int
    ) -> tuple[ErrorCode, int, list[tuple[PartitionKey, PartitionData]]]:
        """(top-level error, session id, partitions to send) for the read results."""
        raise NotImplementedError


class SessionErrorContext(FetchContext):
    def __init__(self, error: ErrorCode) -> None:
        self.error = error

    def respond(
        self, results: Sequence[tuple[PartitionKey, PartitionData]], now_ms: int
    ) -> tuple[ErrorCode, int, list[tuple[PartitionKey, PartitionData]]]:
        return self.error, INVALID_SESSION_ID, []


class SessionlessContext(FetchContext):
    def __init__(self, requested: Mapping[PartitionKey, PartitionRequest]) -> None:
        self.requested = requested

    def partitions(self) -> Iterator[PartitionRequest]:
        return iter(self.requested.values())

    def respond(
        self, results: Sequence[tuple[PartitionKey, PartitionData]], now_ms: int
    ) -> tuple[ErrorCode, int, list[tuple[PartitionKey, PartitionData]]]:
        return ErrorCode.NONE, INVALID_SESSION_ID, list(results)


class FullContext(SessionlessContext):
    def __init__(
        self,
        cache: FetchSessionCache,
        requested: Mapping[PartitionKey, PartitionRequest],
        uses_topic_ids: bool,
        privileged: bool,
    ) -> None:
        super().__init__(requested)
        self.cache = cache
        self.uses_topic_ids = uses_topic_ids
        self.privileged = privileged

    def respond(
        self, results: Sequence[tuple[PartitionKey, PartitionData]], now_ms: int
    ) -> tuple[ErrorCode, int, list[tuple[PartitionKey, PartitionData]]]:
        cached = {
            key: CachedPartition(self.requested[key], data.high_watermark, data.log_start_offset)
            for key, data in results
        }
        session_id = self.cache.create(now_ms, self.privileged, self.uses_topic_ids, cached)
        return ErrorCode.NONE, session_id, list(results)


class IncrementalContext(FetchContext):
    def __init__(self, session: FetchSession, request_epoch: int) -> None:
        self.session = session
        self.request_epoch = request_epoch

    def partitions(self) -> Iterator[PartitionRequest]:
        return iter([cached.request for cached in self.session.partitions.values()])

    def respond(
        self, results: Sequence[tuple[PartitionKey, PartitionData]], now_ms: int
    ) -> tuple[ErrorCode, int, list[tuple[PartitionKey, PartitionData]]]:
        session = self.session
        if session.epoch != next_epoch(self.request_epoch):
            return ErrorCode.INVALID_FETCH_SESSION_EPOCH, session.id, []
        sent = []
        for key, data in results:
            cached = session.partitions.get(key)
            if cached is None or not cached.must_respond(data, update=True):
                continue
            sent.append((key, data))
            if records_size(data.records):
                session.partitions[key] = session.partitions.pop(key)
        return ErrorCode.NONE, session.id, sent


def new_context(
    cache: FetchSessionCache,
    now_ms: int,
    *,
    version: int,
    session_id: int,
    epoch: int,
    privileged: bool,
    requested: Mapping[PartitionKey, PartitionRequest],
    forgotten: Sequence[PartitionKey],
    names: Mapping[bytes, str],
) -> FetchContext:
    """The context of one fetch request (the rules in the module docstring)."""
    if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
        if session_id != INVALID_SESSION_ID:
            cache.remove(session_id)
        if epoch == FINAL_EPOCH:
            return SessionlessContext(requested)
        return FullContext(cache, requested, version >= 13, privileged)
    session = cache.get(session_id)
    if session is None:
        return SessionErrorContext(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
    if session.epoch != epoch:
        return SessionErrorContext(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
    if session.uses_topic_ids != (version >= 13):
        return SessionErrorContext(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
    session.update(requested, forgotten)
    if not session.partitions:
        cache.remove(session.id)
        return SessionlessContext(requested)
    if session.uses_topic_ids:
        session.resolve_names(names)
    cache.touch(session, now_ms)
    session.epoch = next_epoch(session.epoch)
    return IncrementalContext(session, epoch)

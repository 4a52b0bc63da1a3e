"""Fetch (key 1), v4-18: records straight from the segment files, with long polling and
incremental fetch sessions.

Behaviour, as Apache Kafka 4.4:
- Sessions (KIP-227; v7+, older requests are sessionless): see
  :mod:`millpond.broker.fetch_sessions`. Partitions are read in the context's order;
  those failing the lookup (UNKNOWN_TOPIC_ID for v13+ ids naming no topic,
  UNKNOWN_TOPIC_OR_PARTITION) are listed after the others.
- Per partition: FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH when current_leader_epoch
  (if >= 0) is older / newer than the image's; NOT_LEADER_OR_FOLLOWER when another
  broker leads; OFFSET_OUT_OF_RANGE when the offset is below the log start or past the
  log end; KAFKA_STORAGE_ERROR (NOT_LEADER_OR_FOLLOWER up to v5) when the segment
  files cannot be read. Errors carry high watermark, last stable offset and log
  start -1.
- Records are whole batches from the one holding fetch_offset, never decoded nor read
  here: the response holds their file regions, spliced into the frame as it is sent
  (:mod:`millpond.broker.frame_sender`). Consumers read below the high watermark;
  read_committed (isolation 1) below the last stable offset, equal to it until
  transactions exist. aborted_transactions is [] for read_committed, null otherwise.
- Sizes: the response holds at most min(max_bytes, fetch.max.bytes = 55 MiB) of records
  and each partition at most its partition_max_bytes, except that the first batch of
  the first partition with data comes whole however large (KIP-74); a batch cut by the
  limits is left out whole.
- Long poll: with fewer than min_bytes gathered and no partition read with an error or
  a diverging epoch (partitions unknown to the image do not count), the fetch waits in
  the purgatory, watching only the partitions it reads: an append to one of them
  re-reads it, until min_bytes is reached or max_wait_ms passes (then it answers with
  what there is). A deleted partition ends the wait (its error is answered at once).
- v12+: last_fetched_epoch checked against the leader epoch cache: diverging_epoch
  (epoch, end offset) when the fetcher's log diverged. v16+: current_leader and
  node_endpoints for NOT_LEADER_OR_FOLLOWER and FENCED_LEADER_EPOCH.
- Followers (replica_id >= 0, and a broker epoch, from replica_state at v15+) read up
  to the log end, not the high watermark. One the leader does not count among the
  partition's replicas gets UNKNOWN_LEADER_EPOCH (with a leader epoch) or
  NOT_LEADER_OR_FOLLOWER; one fetching with an older incarnation's broker epoch gets
  NOT_LEADER_OR_FOLLOWER. The first read of a follower's fetch (not a long poll's later
  reads, nor a read answered with a diverging epoch) tells the leader how far the
  follower's log reaches: it may join the ISR and move the high watermark. A follower
  outside the ISR reading a partition under this leader's replication throttle
  (:mod:`~millpond.broker.replication.throttle`) gets no records while the throttled
  traffic is over ``leader.replication.throttled.rate``.
  preferred_read_replica is always -1; throttle_time_ms 0.

Version notes: v4 isolation level and last stable offset; v5 log start offset; v7
sessions (KIP-227); v9 current leader epoch (KIP-320); v11 rack id; v12 flexible, last
fetched epoch, diverging epoch; v13 topic ids; v15 replica_state (KIP-903); v16
current leader and node endpoints (KIP-951); v17 replica directory id; v18 high
watermark in the request (KIP-1166).
"""

from __future__ import annotations

import weakref
from collections.abc import Awaitable, Iterator, Mapping
from typing import TYPE_CHECKING, NamedTuple

from millpond.broker import purgatory_timer
from millpond.broker.context import RequestContext
from millpond.broker.fetch_sessions import (
    ZERO_UUID,
    FetchContext,
    FetchSessionCache,
    PartitionKey,
    PartitionRequest,
    new_context,
    partition_key,
)
from millpond.broker.purgatory import DelayedOperation
from millpond.broker.replication.throttle import LEADER
from millpond.storage.log_types import OffsetOutOfRangeError
from millpond.storage.segment_read import FileRegion
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.fetch_request import FetchRequest
from millpond.wire.generated.api.fetch_response import (
    EpochEndOffset,
    FetchableTopicResponse,
    FetchResponse,
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionData,
)
from millpond.wire.splice import Spliced

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer
    from millpond.controller.image import MetadataImage, TopicImage

FETCH_MAX_BYTES = 55 * 1024 * 1024  # fetch.max.bytes
READ_COMMITTED = 1
_NOT_LEADER = ErrorCode.NOT_LEADER_OR_FOLLOWER
_LEADER_ERRORS = (_NOT_LEADER, ErrorCode.FENCED_LEADER_EPOCH)

_caches: weakref.WeakKeyDictionary[BrokerServer, FetchSessionCache] = weakref.WeakKeyDictionary()


def session_cache(broker: BrokerServer) -> FetchSessionCache:
    """The broker's fetch session cache (made on first use)."""
    cache = _caches.get(broker)
    if cache is None:
        cache = _caches[broker] = FetchSessionCache(broker.rng)
    return cache


class _Names(Mapping[bytes, str]):
    """Topic id -> name, as the image knows them (looked up, never copied)."""

    def __init__(self, image: MetadataImage) -> None:
        self._topics = image.topics_by_id

    def __getitem__(self, topic_id: bytes) -> str:
        return self._topics[topic_id].name

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._topics)

    def __len__(self) -> int:
        return len(self._topics)


class _Read(NamedTuple):
    request: PartitionRequest
    data: PartitionData
    region: FileRegion | None = None
    #: A follower's read of a partition under the leader's replication throttle.
    throttled: bool = False


def handle(
    broker: BrokerServer, ctx: RequestContext, request: FetchRequest
) -> FetchResponse | Awaitable[FetchResponse]:
    version = ctx.api_version
    names = _Names(broker.image)
    requested: dict[PartitionKey, PartitionRequest] = {}
    for topic in request.topics:
        name = names.get(topic.topic_id) if version >= 13 else topic.topic
        topic_id = topic.topic_id if version >= 13 else ZERO_UUID
        for p in topic.partitions:
            wanted = PartitionRequest(
                name,
                topic_id,
                p.partition,
                p.fetch_offset,
                p.partition_max_bytes,
                p.current_leader_epoch,
                p.log_start_offset,
                p.last_fetched_epoch,
            )
            requested[wanted.key] = wanted
    forgotten: list[PartitionKey] = []
    for gone in request.forgotten_topics_data:
        name = names.get(gone.topic_id) if version >= 13 else gone.topic
        topic_id = gone.topic_id if version >= 13 else ZERO_UUID
        forgotten.extend(partition_key(name, topic_id, index) for index in gone.partitions)
    replica_id = request.replica_state.replica_id if version >= 15 else request.replica_id
    session, epoch = (request.session_id, request.session_epoch) if version >= 7 else (0, -1)
    context = new_context(
        session_cache(broker),
        broker.clock.monotonic_ms(),
        version=version,
        session_id=session,
        epoch=epoch,
        privileged=replica_id >= 0,
        requested=requested,
        forgotten=forgotten,
        names=names,
    )
    max_bytes = min(request.max_bytes, FETCH_MAX_BYTES)
    replica_epoch = request.replica_state.replica_epoch if version >= 15 else -1
    fetch = _Fetch(
        broker, version, context, request.isolation_level, max_bytes, ctx.listener.name,
        replica_id, replica_epoch,
    )  # fmt: skip
    reads, failed = fetch.read()
    min_bytes = min(request.min_bytes, max_bytes)
    if request.max_wait_ms <= 0 or not reads or fetch.complete(reads, min_bytes):
        return fetch.respond(reads + failed)
    return _long_poll(DelayedFetch(fetch, min_bytes, request.max_wait_ms, len(reads)), reads)


class DelayedFetch(DelayedOperation):
    """A fetch waiting for ``min_bytes`` (Kafka's ``DelayedFetch``): each try re-reads
    its partitions; at its deadline it answers with what there is."""

    __slots__ = ("fetch", "known", "min_bytes", "response")

    def __init__(self, fetch: _Fetch, min_bytes: int, max_wait_ms: int, known: int) -> None:
        super().__init__(max_wait_ms)
        self.fetch = fetch
        self.min_bytes = min_bytes
        #: How many of its partitions the image knew when it began to wait.
        self.known = known
        self.response: FetchResponse | None = None

    def try_complete(self) -> bool:
        reads, failed = self.fetch.read()
        # A partition deleted meanwhile ends the wait, as Kafka's DelayedFetch does.
        if len(reads) == self.known and not self.fetch.complete(reads, self.min_bytes):
            return False
        self.response = self.fetch.respond(reads + failed)
        return True

    def on_complete(self, expired: bool) -> None:
        if self.response is None:
            reads, failed = self.fetch.read()
            self.response = self.fetch.respond(reads + failed)


async def _long_poll(delayed: DelayedFetch, reads: list[_Read]) -> FetchResponse:
    keys = [
        (read.request.topic, read.request.partition)
        for read in reads
        if read.request.topic is not None
    ]
    await purgatory_timer.wait(delayed.fetch.broker.replicas.delayed_fetches, delayed, keys)
    assert delayed.response is not None
    return delayed.response


class _Fetch:
    def __init__(
        self,
        broker: BrokerServer,
        version: int,
        context: FetchContext,
        isolation_level: int,
        max_bytes: int,
        listener: str,
        replica_id: int = -1,
        replica_epoch: int = -1,
    ) -> None:
        self.broker = broker
        #: The request's listener: leaders are named by their endpoints on it.
        self.listener = listener
        self.version = version
        self.context = context
        self.partitions = list(context.partitions())
        #: A follower's fetch (replica id >= 0), and the broker epoch it fetches with.
        self.replica_id = replica_id
        self.replica_epoch = replica_epoch
        self.follower = replica_id >= 0
        self.committed = isolation_level == READ_COMMITTED and not self.follower
        self.max_bytes = max_bytes
        #: A follower's position is recorded from the first read only, not when a
        #: long poll reads again (as Kafka's leader does).
        self._first_read = True

    def read(self) -> tuple[list[_Read], list[_Read]]:
        """Every partition: those the image knows (read, with or without an error), and
        those it does not. No record bytes are copied yet."""
        image = self.broker.image
        reads: list[_Read] = []
        failed: list[_Read] = []
        limit, min_one = self.max_bytes, True
        for wanted in self.partitions:
            if wanted.topic is None:
                failed.append(_failure(wanted, ErrorCode.UNKNOWN_TOPIC_ID, lookup=True))
                continue
            topic = (
                image.topic_by_id(wanted.topic_id)
                if self.version >= 13
                else image.topic(wanted.topic)
            )
            if topic is None or wanted.partition not in topic.partitions:
                failed.append(_failure(wanted, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, lookup=True))
                continue
            result = self._read_partition(topic, wanted, limit, min_one)
            size = result.region.size if result.region is not None else 0
            if size:
                min_one = False
                limit = max(0, limit - size)
            reads.append(result)
        self._first_read = False
        return reads, failed

    def _read_partition(
        self, topic: TopicImage, wanted: PartitionRequest, limit: int, min_one: bool
    ) -> _Read:
        registration = topic.partitions[wanted.partition]
        current = wanted.current_leader_epoch
        if current >= 0 and current != registration.leader_epoch:
            fenced = current < registration.leader_epoch
            code = ErrorCode.FENCED_LEADER_EPOCH if fenced else ErrorCode.UNKNOWN_LEADER_EPOCH
            return _failure(wanted, code)
        partition = self.broker.replicas.partition(topic, wanted.partition)
        if partition is None:
            return _failure(wanted, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        if self.follower and self.replica_id not in partition.replicas:
            # Not (yet) a replica of the partition as this leader knows it.
            code = (
                ErrorCode.UNKNOWN_LEADER_EPOCH if current >= 0 else ErrorCode.NOT_LEADER_OR_FOLLOWER
            )
            return _failure(wanted, code)
        throttled = self.follower and self.broker.throttles.throttled(
            LEADER, topic.name, wanted.partition
        )
        high_watermark, log_start = partition.high_watermark, partition.log_start_offset
        leader_end = partition.log_end_offset
        data = PartitionData(
            partition_index=wanted.partition,
            high_watermark=high_watermark,
            last_stable_offset=partition.last_stable_offset,
            log_start_offset=log_start,
            aborted_transactions=[] if self.committed else None,
            records=b"",
        )
        offset = wanted.fetch_offset
        if wanted.last_fetched_epoch >= 0:
            epoch, end = partition.end_offset_for_epoch(wanted.last_fetched_epoch)
            if end < 0 or epoch < 0 or offset < log_start:
                return _failure(wanted, ErrorCode.OFFSET_OUT_OF_RANGE)
            if epoch < wanted.last_fetched_epoch or end < offset:
                data.diverging_epoch = EpochEndOffset(epoch=epoch, end_offset=end)
                return _Read(wanted, data)
        if (
            throttled
            and self.replica_id not in partition.isr
            and self.broker.throttles.exceeded(LEADER)
        ):
            return _Read(wanted, data, throttled=True)  # no records until the rate falls
        try:
            fetched = partition.read(
                offset,
                max(0, min(wanted.max_bytes, limit)),
                committed=self.committed,
                min_one_message=min_one,
                follower=self.follower,
            )
        except OffsetOutOfRangeError:
            return _failure(wanted, ErrorCode.OFFSET_OUT_OF_RANGE)
        except OSError:  # the log dir failed: clients up to v5 only know to retry this
            storage = ErrorCode.KAFKA_STORAGE_ERROR if self.version > 5 else _NOT_LEADER
            return _failure(wanted, storage)
        if self.follower and self._first_read:
            recorded = self.broker.replicas.follower_fetched(
                partition, self.replica_id, offset, wanted.log_start_offset, leader_end,
                self.replica_epoch,
            )  # fmt: skip
            if not recorded:  # an older incarnation of the follower's broker
                return _failure(wanted, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        region = None if fetched.first_entry_incomplete else fetched.records
        return _Read(wanted, data, region, throttled)

    @staticmethod
    def complete(reads: list[_Read], min_bytes: int) -> bool:
        """Answer now: enough bytes, or a read the fetcher must hear about at once
        (partitions unknown to the image do not count: Kafka waits for the others)."""
        gathered = 0
        for read in reads:
            if read.data.error_code or read.data.diverging_epoch.end_offset >= 0:
                return True
            gathered += read.region.size if read.region is not None else 0
        return gathered >= min_bytes

    def respond(self, reads: list[_Read]) -> FetchResponse:
        results: list[tuple[PartitionKey, PartitionData]] = []
        throttled_bytes = 0
        for read in reads:
            if read.region is not None and read.region.size:
                read.data.records = Spliced(read.region)
                if read.throttled:
                    throttled_bytes += read.region.size
            results.append((read.request.key, read.data))
        self.broker.throttles.record(LEADER, throttled_bytes)
        now = self.broker.clock.monotonic_ms()
        error, session_id, sent = self.context.respond(results, now)
        endpoints = self._leaders(reads) if self.version >= 16 else []
        topics: list[FetchableTopicResponse] = []
        by_key = {read.request.key: read.request for read in reads}
        for key, data in sent:
            wanted = by_key[key]
            if topics and _same_topic(topics[-1], wanted):
                topics[-1].partitions.append(data)
            else:
                topics.append(
                    FetchableTopicResponse(
                        topic=wanted.topic or "", topic_id=wanted.topic_id, partitions=[data]
                    )
                )
        return FetchResponse(
            error_code=error,
            session_id=session_id if self.version >= 7 else 0,
            responses=topics,
            node_endpoints=endpoints,
        )

    def _leaders(self, reads: list[_Read]) -> list[NodeEndpoint]:
        """v16+: the current leader of partitions that named the wrong one (KIP-951)."""
        image = self.broker.image
        nodes: dict[int, NodeEndpoint] = {}
        for read in reads:
            if read.data.error_code not in _LEADER_ERRORS or read.request.topic is None:
                continue
            topic = image.topic(read.request.topic)
            registration = topic.partitions.get(read.request.partition) if topic else None
            if registration is None:
                continue
            read.data.current_leader = LeaderIdAndEpoch(
                leader_id=registration.leader, leader_epoch=registration.leader_epoch
            )
            broker = image.brokers.get(registration.leader)
            endpoint = broker.endpoint(self.listener) if broker is not None else None
            if broker is not None and endpoint is not None:
                nodes[broker.broker_id] = NodeEndpoint(
                    node_id=broker.broker_id,
                    host=endpoint.host,
                    port=endpoint.port,
                    rack=broker.rack,
                )
        return list(nodes.values())


def _failure(wanted: PartitionRequest, code: ErrorCode, *, lookup: bool = False) -> _Read:
    """A partition that cannot be read. Kafka answers partitions failing the topic lookup
    with an empty aborted_transactions list and those failing the read with null (checked
    against the real broker by compat_tests/test_differential.py)."""
    data = PartitionData(
        partition_index=wanted.partition,
        error_code=code,
        high_watermark=-1,
        last_stable_offset=-1,
        log_start_offset=-1,
        aborted_transactions=[] if lookup else None,
        records=b"",
    )
    return _Read(wanted, data)


def _same_topic(topic: FetchableTopicResponse, wanted: PartitionRequest) -> bool:
    if wanted.topic_id != ZERO_UUID:
        return topic.topic_id == wanted.topic_id
    return topic.topic == (wanted.topic or "")

"""The follower side's I/O: one fetcher task per leader this broker follows, sending
:class:`~millpond.broker.replication.follower.FollowerFetcher`'s requests to the
leader's inter-broker listener and applying the actions to the local logs, on the
broker's event loop (which owns the logs).

Appends keep the leader's offsets and epochs; a trailing batch cut short by the
leader's size limit is left for the next fetch. After an append the follower's high
watermark is the leader's, clamped to the local log, and its log start follows the
leader's. A diverging epoch truncates to where the logs agree; OFFSET_OUT_OF_RANGE asks
the leader (ListOffsets) where its log ends and starts: a follower ahead of the leader's
end truncates to it, one behind the leader's start starts over there.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from collections.abc import Callable
from typing import TYPE_CHECKING

from millpond.broker.replication.follower import (
    Action,
    FetcherConfig,
    FollowerFetcher,
    PartitionFetch,
    truncation_offset,
)
from millpond.broker.replication.throttle import FOLLOWER
from millpond.controller.peer_channel import PeerChannel, PeerUnreachableError
from millpond.storage.clock import Clock
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api import list_offsets_request as lo
from millpond.wire.generated.api import list_offsets_response as lo_resp
from millpond.wire.generated.api.fetch_request import FetchRequest, ReplicaState
from millpond.wire.generated.api.fetch_response import FetchResponse, PartitionData

if TYPE_CHECKING:
    from millpond.broker.replication.throttle import ReplicationThrottles
    from millpond.controller.image import MetadataImage
    from millpond.storage.log import Log

__all__ = ["ReplicaFetchers"]

_log = logging.getLogger("millpond.broker")
_LENGTH = struct.Struct(">qi")  # a batch's base offset and length
LATEST, EARLIEST = -1, -2

#: (topic id, partition index)
Key = tuple[bytes, int]

#: Fetch and ListOffsets at the versions a follower sends (Kafka 4.4's leaders serve
#: Fetch 4-18; 15+ carries the broker epoch).
VERSIONS = {1: (12, 17), 2: (1, 10), 18: (0, 4)}


def _name(fetcher: FollowerFetcher, key: Key) -> str:
    fetch = fetcher.partitions.get(key)
    return "?" if fetch is None else fetch.topic


def _latest_epoch(log: Log) -> int:
    """The epoch of the log's last batch, as its epoch cache has it (-1: none)."""
    epochs = log.leader_epochs
    latest = None if epochs is None else epochs.latest_epoch
    return -1 if latest is None else latest


def whole_batches(records: memoryview) -> memoryview:
    """The prefix of ``records`` that holds whole batches only."""
    end, size = 0, len(records)
    while end + _LENGTH.size <= size:
        _, length = _LENGTH.unpack_from(records, end)
        if length <= 0 or end + _LENGTH.size + length > size:
            break
        end += _LENGTH.size + length
    return records[:end]


def _versioned(request: FetchRequest) -> Callable[[int], FetchRequest]:
    """The request at the version both sides speak: the follower names itself in
    ReplicaState, with its broker epoch, from v15, and in ReplicaId before."""
    replica = request.replica_state

    def build(version: int) -> FetchRequest:
        if version >= 15:
            request.replica_id, request.replica_state = -1, replica
        else:
            request.replica_id, request.replica_state = replica.replica_id, ReplicaState()
        return request

    return build


class ReplicaFetchers:
    """This broker's fetchers, one per leader it follows."""

    def __init__(
        self,
        node_id: int,
        image: Callable[[], MetadataImage],
        log_of: Callable[[str, int], Log | None],
        listener: str,
        clock: Clock,
        broker_epoch: Callable[[], int],
        config: FetcherConfig,
        *,
        request_timeout_ms: int,
        on_high_watermark: Callable[[str, int], None] = lambda topic, index: None,
        throttles: ReplicationThrottles | None = None,
    ) -> None:
        self.node_id = node_id
        self._throttles = throttles
        self._image = image
        self._log_of = log_of
        self._clock = clock
        self._broker_epoch = broker_epoch
        self._config = config
        self._on_high_watermark = on_high_watermark
        self._fetchers: dict[int, FollowerFetcher] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._wakes: dict[int, asyncio.Event] = {}
        self._peers = PeerChannel(
            lambda n: self._address(n, listener),
            VERSIONS,
            client_id=f"replica-fetcher-{node_id}",
            request_timeout_ms=request_timeout_ms,
        )

    def _address(self, node_id: int, listener: str) -> tuple[str, int] | None:
        broker = self._image().brokers.get(node_id)
        endpoint = None if broker is None else broker.endpoint(listener)
        return None if endpoint is None else (endpoint.host, endpoint.port)

    # -- what to follow ----------------------------------------------------------------

    def follow(self, topic: str, topic_id: bytes, index: int, leader: int, epoch: int) -> None:
        """Fetch the partition from ``leader`` in leader epoch ``epoch`` (Kafka's
        ``makeFollower``: from the log end, with the last batch's epoch)."""
        key = (topic_id, index)
        self.unfollow([key], keep=leader)
        log = self._log_of(topic, index)
        if log is None:
            return
        fetcher = self._fetchers.get(leader)
        if fetcher is None:
            fetcher = self._fetchers[leader] = FollowerFetcher(self.node_id, leader, self._config)
            self._wakes[leader] = asyncio.Event()
            self._tasks[leader] = asyncio.get_running_loop().create_task(
                self._run(fetcher), name=f"millpond-replica-fetcher-{leader}"
            )
        fetcher.add(
            PartitionFetch(topic, topic_id, index, epoch, log.log_end_offset, _latest_epoch(log))
        )
        self._wakes[leader].set()

    def unfollow(self, keys: list[Key], *, keep: int | None = None) -> None:
        """Stop fetching these partitions (from whichever leader but ``keep``)."""
        for leader, fetcher in self._fetchers.items():
            if leader != keep:
                fetcher.remove(keys)

    def close_connections(self) -> None:
        """Cut the connections to the leaders at once (a node killed mid-fetch)."""
        self._peers.close()

    async def close(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        for task in self._tasks.values():
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        self._fetchers.clear()
        self._peers.close()

    # -- the loop ----------------------------------------------------------------------

    async def _run(self, fetcher: FollowerFetcher) -> None:
        wake = self._wakes[fetcher.leader_id]
        while True:
            now = self._clock.monotonic_ms()
            held = self._held
            built = fetcher.request(now, self._broker_epoch(), self._log_starts(fetcher), held)
            if built is None:
                due = fetcher.next_wake_ms(now, held)
                wake.clear()
                timeout = None if due is None else max(0.0, (due - now) / 1000)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), timeout)
                continue
            request, asked = built
            response: FetchResponse | None
            try:
                answer, _ = await self._peers.send(fetcher.leader_id, 1, _versioned(request))
                assert isinstance(answer, FetchResponse)
                response = answer
            except PeerUnreachableError as exc:
                _log.info("replica fetch from broker %d: %s", fetcher.leader_id, exc)
                response = None
            except Exception:  # noqa: BLE001 (a bug must not stop replication for good)
                _log.exception("replica fetch from broker %d failed", fetcher.leader_id)
                response = None
            now = self._clock.monotonic_ms()
            for action in fetcher.handle(asked, response, now):
                try:
                    await self._apply(fetcher, action)
                except Exception as exc:  # noqa: BLE001 (one partition's trouble, not all)
                    name = _name(fetcher, action.key)
                    _log.warning(
                        "replica fetch of %s-%d from broker %d: %s; fetching again after "
                        "replica.fetch.backoff.ms", name, action.key[1], fetcher.leader_id, exc,
                    )  # fmt: skip
                    fetcher.back_off(action.key, now)

    def _held(self, fetch: PartitionFetch) -> bool:
        """Whether the follower throttle holds back ``fetch``'s partition now: it is
        throttled here, this broker is not in its ISR, and the throttled rate is over."""
        throttles = self._throttles
        if throttles is None or not throttles.throttled(FOLLOWER, fetch.topic, fetch.partition):
            return False
        topic = self._image().topic(fetch.topic)
        registration = None if topic is None else topic.partitions.get(fetch.partition)
        in_sync = registration is not None and self.node_id in registration.isr
        return not in_sync and throttles.exceeded(FOLLOWER)

    def _log_starts(self, fetcher: FollowerFetcher) -> Callable[[Key], int]:
        def log_start(key: Key) -> int:
            log = self._log(fetcher, key)
            return -1 if log is None else log.log_start_offset

        return log_start

    def _log(self, fetcher: FollowerFetcher, key: Key) -> Log | None:
        """The log of a partition ``fetcher`` fetches (None: it no longer does)."""
        fetch = fetcher.partitions.get(key)
        return None if fetch is None else self._log_of(fetch.topic, fetch.partition)

    async def _apply(self, fetcher: FollowerFetcher, action: Action) -> None:
        key = action.key
        log = self._log(fetcher, key)
        data = action.data
        if log is None or data is None or action.kind in ("stop", "back_off"):
            return
        if action.kind == "append":
            self._append(fetcher, key, log, data)
        elif action.kind == "truncate":
            self._truncate(fetcher, key, log, data)
        elif action.kind == "reset":
            await self._reset(fetcher, key, log)

    def _append(self, fetcher: FollowerFetcher, key: Key, log: Log, data: PartitionData) -> None:
        records = data.records
        view = whole_batches(memoryview(records if records is not None else b"").cast("B"))
        if len(view):
            info = log.append(view, assign_offsets=False)
            fetcher.advanced(key, info.last_offset + 1, _latest_epoch(log))
            throttles, name = self._throttles, _name(fetcher, key)
            if throttles is not None and throttles.throttled(FOLLOWER, name, key[1]):
                throttles.record(FOLLOWER, len(view))
        high_watermark = max(log.log_start_offset, min(data.high_watermark, log.log_end_offset))
        if high_watermark != log.high_watermark and high_watermark >= 0:
            log.update_high_watermark(high_watermark)
            self._on_high_watermark(_name(fetcher, key), key[1])
        # The leader's log start (retention, DeleteRecords), never past what is committed.
        if data.log_start_offset > log.log_start_offset:
            log.delete_records(min(data.log_start_offset, log.high_watermark))

    def _truncate(self, fetcher: FollowerFetcher, key: Key, log: Log, data: PartitionData) -> None:
        diverging = data.diverging_epoch
        epochs = log.leader_epochs
        local = (
            (-1, -1)
            if epochs is None or diverging.epoch < 0
            else epochs.end_offset_for(diverging.epoch, log.log_end_offset)
        )
        offset, _ = truncation_offset(
            diverging.epoch, diverging.end_offset, local, log.log_end_offset
        )
        self._truncate_to(fetcher, key, log, offset)

    def _truncate_to(self, fetcher: FollowerFetcher, key: Key, log: Log, offset: int) -> None:
        if offset < log.log_end_offset:
            _log.info(
                "truncating %s-%d from %d to %d (the leader's log diverges)",
                _name(fetcher, key), key[1], log.log_end_offset, offset,
            )  # fmt: skip
        # Even at the log end: an epoch this replica led without appending to it starts
        # there, and must go, or the next fetch names it and diverges again, forever.
        log.truncate_to(offset)
        fetcher.advanced(key, log.log_end_offset, _latest_epoch(log))

    async def _reset(self, fetcher: FollowerFetcher, key: Key, log: Log) -> None:
        fetch = fetcher.partitions.get(key)
        if fetch is None:
            return
        leader_end = await self._leader_offset(fetcher.leader_id, fetch, LATEST)
        if leader_end < log.log_end_offset:
            self._truncate_to(fetcher, key, log, leader_end)
            return
        leader_start = await self._leader_offset(fetcher.leader_id, fetch, EARLIEST)
        if leader_start > log.log_end_offset:
            log.truncate_fully_and_start_at(leader_start)
        self._truncate_to(fetcher, key, log, log.log_end_offset)

    async def _leader_offset(self, leader: int, fetch: PartitionFetch, timestamp: int) -> int:
        def build(version: int) -> lo.ListOffsetsRequest:
            return lo.ListOffsetsRequest(
                replica_id=self.node_id,
                topics=[
                    lo.ListOffsetsTopic(
                        name=fetch.topic,
                        partitions=[
                            lo.ListOffsetsPartition(
                                partition_index=fetch.partition,
                                current_leader_epoch=fetch.leader_epoch,
                                timestamp=timestamp,
                            )
                        ],
                    )
                ],
            )

        answer, _ = await self._peers.send(leader, 2, build)
        assert isinstance(answer, lo_resp.ListOffsetsResponse)
        [topic] = answer.topics
        [partition] = topic.partitions
        if partition.error_code != ErrorCode.NONE:
            raise OSError(f"ListOffsets: {ErrorCode(partition.error_code).name}")
        return int(partition.offset)

"""The fetch session cache and contexts (KIP-227), pure: explicit times, seeded ids."""

from __future__ import annotations

import random

import pytest

from millpond.broker.fetch_sessions import (
    DEFAULT_EVICTION_MS,
    FINAL_EPOCH,
    INVALID_SESSION_ID,
    CachedPartition,
    FetchContext,
    FetchSessionCache,
    FullContext,
    IncrementalContext,
    PartitionKey,
    PartitionRequest,
    SessionErrorContext,
    SessionlessContext,
    new_context,
    next_epoch,
)
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.fetch_response import EpochEndOffset, PartitionData

TOPIC_ID = bytes(range(16))


def wanted(partition: int, offset: int = 0, topic: str = "t") -> PartitionRequest:
    return PartitionRequest(topic, bytes(16), partition, offset, 1 << 20)


def by_id(partition: int, offset: int = 0, topic: str | None = "t") -> PartitionRequest:
    return PartitionRequest(topic, TOPIC_ID, partition, offset, 1 << 20)


def requested(*parts: PartitionRequest) -> dict[PartitionKey, PartitionRequest]:
    return {p.key: p for p in parts}


def data(partition: int, hwm: int = 10, records: bytes = b"", error: int = 0) -> PartitionData:
    return PartitionData(
        partition_index=partition,
        error_code=error,
        high_watermark=hwm,
        last_stable_offset=hwm,
        log_start_offset=0,
        records=records,
    )


def context(
    cache: FetchSessionCache,
    session_id: int,
    epoch: int,
    *parts: PartitionRequest,
    forgotten: tuple[PartitionKey, ...] = (),
    version: int = 12,
    now: int = 0,
    privileged: bool = False,
) -> FetchContext:
    return new_context(
        cache,
        now,
        version=version,
        session_id=session_id,
        epoch=epoch,
        privileged=privileged,
        requested=requested(*parts),
        forgotten=list(forgotten),
        names={TOPIC_ID: "t"},
    )


def open_session(cache: FetchSessionCache, *parts: PartitionRequest, now: int = 0) -> int:
    ctx = context(cache, 0, 0, *parts, now=now)
    assert isinstance(ctx, FullContext)
    error, session_id, sent = ctx.respond([(p.key, data(p.partition)) for p in parts], now)
    assert error == ErrorCode.NONE
    assert len(sent) == len(parts)
    return session_id


def test_next_epoch_wraps_to_one_and_final_stays_final() -> None:
    assert next_epoch(0) == 1
    assert next_epoch(41) == 42
    assert next_epoch(2**31 - 1) == 1
    assert next_epoch(FINAL_EPOCH) == FINAL_EPOCH


def test_epoch_zero_opens_a_session_and_minus_one_does_not() -> None:
    cache = FetchSessionCache(random.Random(1))
    session_id = open_session(cache, wanted(0), wanted(1))
    assert session_id > 0
    session = cache.get(session_id)
    assert session is not None
    assert session.epoch == 1
    assert list(session.partitions) == [("t", 0), ("t", 1)]
    sessionless = context(cache, 0, FINAL_EPOCH, wanted(0))
    assert isinstance(sessionless, SessionlessContext)
    assert not isinstance(sessionless, FullContext)
    assert sessionless.respond([(("t", 0), data(0))], 0)[1] == INVALID_SESSION_ID
    assert len(cache) == 1


@pytest.mark.parametrize("epoch", [0, FINAL_EPOCH])
def test_a_full_request_closes_the_session_it_names(epoch: int) -> None:
    cache = FetchSessionCache(random.Random(2))
    session_id = open_session(cache, wanted(0))
    context(cache, session_id, epoch, wanted(0))
    assert cache.get(session_id) is None


def test_incremental_errors() -> None:
    cache = FetchSessionCache(random.Random(3))
    session_id = open_session(cache, wanted(0))
    missing = context(cache, session_id + 1, 1)
    assert isinstance(missing, SessionErrorContext)
    assert missing.respond([], 0) == (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0, [])
    stale = context(cache, session_id, 2)
    assert isinstance(stale, SessionErrorContext)
    assert stale.error == ErrorCode.INVALID_FETCH_SESSION_EPOCH
    switched = context(cache, session_id, 1, version=13)
    assert isinstance(switched, SessionErrorContext)
    assert switched.error == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR
    # None of the errors moved the session on.
    session = cache.get(session_id)
    assert session is not None and session.epoch == 1


def test_incremental_requests_update_add_and_forget_partitions() -> None:
    cache = FetchSessionCache(random.Random(4))
    session_id = open_session(cache, wanted(0), wanted(1))
    ctx = context(cache, session_id, 1, wanted(1, offset=7), wanted(2), forgotten=(("t", 0),))
    assert isinstance(ctx, IncrementalContext)
    assert [(p.partition, p.fetch_offset) for p in ctx.partitions()] == [(1, 7), (2, 0)]
    session = cache.get(session_id)
    assert session is not None and session.epoch == 2 and session.cached_size == 2


def test_incremental_responses_list_only_partitions_that_changed() -> None:
    cache = FetchSessionCache(random.Random(5))
    session_id = open_session(cache, wanted(0), wanted(1), wanted(2))
    ctx = context(cache, session_id, 1)
    results = [
        (("t", 0), data(0)),  # nothing new
        (("t", 1), data(1, hwm=11)),  # the high watermark moved
        (("t", 2), data(2, records=b"batch")),  # records
    ]
    assert ctx.respond(results, 0) == (ErrorCode.NONE, session_id, results[1:])
    session = cache.get(session_id)
    assert session is not None
    # A partition that returned records goes to the back of the session's order.
    assert list(session.partitions) == [("t", 0), ("t", 1), ("t", 2)]
    ctx = context(cache, session_id, 2)
    results = [
        (("t", 0), data(0, records=b"x")),
        (("t", 1), data(1, hwm=11)),
        (("t", 2), data(2, error=ErrorCode.NOT_LEADER_OR_FOLLOWER)),
    ]
    assert ctx.respond(results, 0)[2] == [results[0], results[2]]
    assert list(session.partitions) == [("t", 1), ("t", 2), ("t", 0)]
    # After an error the partition is sent again even with the old high watermark.
    ctx = context(cache, session_id, 3)
    assert ctx.respond([(("t", 2), data(2))], 0)[2] == [(("t", 2), data(2))]


def test_diverging_epoch_is_always_listed() -> None:
    cached = CachedPartition(wanted(0), high_watermark=10, log_start_offset=0)
    diverged = data(0)
    assert not cached.must_respond(diverged, update=False)
    diverged.diverging_epoch = EpochEndOffset(epoch=1, end_offset=5)
    assert cached.must_respond(diverged, update=False)


def test_a_duplicate_incremental_request_gets_invalid_epoch_at_response_time() -> None:
    cache = FetchSessionCache(random.Random(6))
    session_id = open_session(cache, wanted(0))
    first = context(cache, session_id, 1)
    second = context(cache, session_id, 2)  # the next request came while the first waited
    assert first.respond([(("t", 0), data(0))], 0) == (
        ErrorCode.INVALID_FETCH_SESSION_EPOCH,
        session_id,
        [],
    )
    assert second.respond([(("t", 0), data(0, hwm=12))], 0)[0] == ErrorCode.NONE


def test_forgetting_every_partition_closes_the_session() -> None:
    cache = FetchSessionCache(random.Random(7))
    session_id = open_session(cache, wanted(0))
    ctx = context(cache, session_id, 1, forgotten=(("t", 0),))
    assert isinstance(ctx, SessionlessContext)
    assert cache.get(session_id) is None


def test_sessions_by_topic_id_resolve_names_later() -> None:
    cache = FetchSessionCache(random.Random(8))
    full = context(cache, 0, 0, by_id(0, topic=None), version=13)
    assert isinstance(full, FullContext)
    err = data(0, error=ErrorCode.UNKNOWN_TOPIC_ID)
    _, session_id, _ = full.respond([((TOPIC_ID, 0), err)], 0)
    ctx = context(cache, session_id, 1, version=13)
    assert [p.topic for p in ctx.partitions()] == ["t"]
    # A version below 13 may not continue a session by topic ids.
    assert isinstance(context(cache, session_id, 2, version=12), SessionErrorContext)


def test_a_full_cache_refuses_new_sessions_until_one_is_stale() -> None:
    cache = FetchSessionCache(random.Random(9), max_sessions=2)
    first = open_session(cache, wanted(0), now=0)
    open_session(cache, wanted(0), now=10)
    ctx = context(cache, 0, 0, wanted(0), wanted(1), now=20)
    assert ctx.respond([], 20)[1] == INVALID_SESSION_ID
    later = DEFAULT_EVICTION_MS + 1
    third = open_session(cache, wanted(0), now=later)
    assert third > 0 and cache.get(first) is None
    assert len(cache) == 2 and cache.evictions == 1


def test_old_small_sessions_make_room_for_larger_ones() -> None:
    cache = FetchSessionCache(random.Random(10), max_sessions=2, eviction_ms=100)
    small = open_session(cache, wanted(0), now=0)
    big = open_session(cache, wanted(0), wanted(1), wanted(2), now=0)
    # Both used recently, but both were created long ago at that use: evictable.
    for session_id, epoch in ((small, 1), (big, 1)):
        assert isinstance(context(cache, session_id, epoch, now=150), IncrementalContext)
    # A newcomer smaller than every evictable session evicts nothing...
    ctx = context(cache, 0, 0, now=200)
    assert ctx.respond([], 200)[1] == INVALID_SESSION_ID
    # ...one at least as large as the smallest evicts it.
    two = open_session(cache, wanted(0), wanted(1), now=200)
    assert two > 0 and cache.get(small) is None and cache.get(big) is not None


def test_followers_may_evict_young_consumer_sessions() -> None:
    cache = FetchSessionCache(random.Random(11), max_sessions=1)
    consumer = open_session(cache, wanted(0), now=0)
    ctx = context(cache, 0, 0, wanted(0), now=1)
    assert ctx.respond([(("t", 0), data(0))], 1)[1] == INVALID_SESSION_ID
    follower = context(cache, 0, 0, wanted(0), now=1, privileged=True)
    session_id = follower.respond([(("t", 0), data(0))], 1)[1]
    assert session_id > 0 and cache.get(consumer) is None
    session = cache.get(session_id)
    assert session is not None and session.privileged
    # A young privileged session can be evicted by nobody.
    again = context(cache, 0, 0, wanted(0), wanted(1), now=2, privileged=True)
    assert again.respond([], 2)[1] == INVALID_SESSION_ID


def test_session_ids_are_positive_and_unique() -> None:
    cache = FetchSessionCache(random.Random(12), max_sessions=200)
    ids = {open_session(cache, wanted(0)) for _ in range(200)}
    assert len(ids) == 200 and min(ids) > 0 and max(ids) < 2**31 - 1
    assert cache.total_partitions == 200

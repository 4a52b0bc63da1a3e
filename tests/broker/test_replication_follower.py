"""The follower's fetch state (pure): requests from the log end with the last fetched
epoch, one action per answered partition, back-off after errors, and Kafka's
truncation offsets for a diverging epoch."""

from __future__ import annotations

import pytest

from millpond.broker.replication.follower import (
    FetcherConfig,
    FollowerFetcher,
    PartitionFetch,
    truncation_offset,
)
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.fetch_response import (
    EpochEndOffset,
    FetchableTopicResponse,
    FetchResponse,
    PartitionData,
)

TOPIC_ID = b"\x07" * 16
CONFIG = FetcherConfig(backoff_ms=1000)


def fetcher() -> FollowerFetcher:
    f = FollowerFetcher(2, 1, CONFIG)
    f.add(PartitionFetch("t", TOPIC_ID, 0, 4, 10, 3))
    f.add(PartitionFetch("t", TOPIC_ID, 1, 4, 0, -1))
    return f


def answer(*partitions: PartitionData, error: int = 0) -> FetchResponse:
    return FetchResponse(
        error_code=error,
        responses=[FetchableTopicResponse(topic_id=TOPIC_ID, partitions=list(partitions))],
    )


def test_a_request_names_every_ready_partition_from_its_log_end() -> None:
    f = fetcher()
    built = f.request(0, 77, lambda key: 5)
    assert built is not None
    request, asked = built
    assert (request.replica_state.replica_id, request.replica_state.replica_epoch) == (2, 77)
    assert (request.session_id, request.session_epoch) == (0, -1)
    [topic] = request.topics
    first = topic.partitions[0]
    assert (first.fetch_offset, first.current_leader_epoch, first.last_fetched_epoch) == (10, 4, 3)
    assert first.log_start_offset == 5
    assert len(asked) == 2


def test_each_answer_becomes_one_action() -> None:
    f = fetcher()
    _, asked = f.request(0, 77, lambda key: 0) or (None, [])
    diverged = PartitionData(
        partition_index=1, diverging_epoch=EpochEndOffset(epoch=2, end_offset=8)
    )
    actions = f.handle(asked, answer(PartitionData(partition_index=0), diverged), 0)
    assert [(a.kind, a.key[1]) for a in actions] == [("append", 0), ("truncate", 1)]


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        (ErrorCode.OFFSET_OUT_OF_RANGE, "reset"),
        (ErrorCode.FENCED_LEADER_EPOCH, "stop"),
        (ErrorCode.UNKNOWN_LEADER_EPOCH, "back_off"),
        (ErrorCode.NOT_LEADER_OR_FOLLOWER, "back_off"),
        (ErrorCode.KAFKA_STORAGE_ERROR, "back_off"),
    ],
)
def test_errors(code: ErrorCode, kind: str) -> None:
    f = fetcher()
    _, asked = f.request(0, 77, lambda key: 0) or (None, [])
    [action] = f.handle(asked, answer(PartitionData(partition_index=0, error_code=code)), 100)
    assert action.kind == kind
    if kind == "stop":
        assert (TOPIC_ID, 0) not in f.partitions  # until the metadata gives a new epoch
    if kind == "back_off":
        built = f.request(500, 77, lambda key: 0)
        assert built is not None and [p.partition for p in built[1]] == [1]
        assert f.next_wake_ms(500) == 1100


def test_no_answer_backs_off_everything_asked() -> None:
    f = fetcher()
    _, asked = f.request(0, 77, lambda key: 0) or (None, [])
    assert {a.kind for a in f.handle(asked, None, 0)} == {"back_off"}
    assert f.request(999, 77, lambda key: 0) is None
    assert f.request(1000, 77, lambda key: 0) is not None


def test_a_partition_changed_since_it_was_asked_is_left_alone() -> None:
    f = fetcher()
    _, asked = f.request(0, 77, lambda key: 0) or (None, [])
    f.add(PartitionFetch("t", TOPIC_ID, 0, 5, 10, 3))  # a new leader epoch meanwhile
    actions = f.handle(asked, answer(PartitionData(partition_index=0)), 0)
    assert actions == []
    f.advanced((TOPIC_ID, 0), 20, 5)
    assert f.partitions[(TOPIC_ID, 0)].fetch_offset == 20


def test_truncation_offsets_as_kafka_computes_them() -> None:
    # The leader's epoch 3 ended at 8; the follower's epoch 3 ends at 10: cut at 8.
    assert truncation_offset(3, 8, (3, 10), 12) == (8, True)
    # The follower's largest epoch at most 3 is 2, ending at 6: cut there, ask again.
    assert truncation_offset(3, 8, (2, 6), 12) == (6, False)
    # The follower knows no such epoch: the leader's end offset, within the log.
    assert truncation_offset(3, 8, (-1, -1), 5) == (5, True)
    # No end offset from the leader: keep the log.
    assert truncation_offset(3, -1, (3, 10), 12) == (12, True)

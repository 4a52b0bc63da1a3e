"""Metadata transactions (Begin/End/AbortTransactionRecord, as Kafka's controller writes
around large operations): nothing acts on half of one, an abort drops it, and a new
active controller aborts the one its predecessor left open."""

from __future__ import annotations

import random

from millpond.controller.image import MetadataDelta, MetadataImage
from millpond.controller.metadata_log import open_raft_client
from millpond.controller.metadata_replay import MetadataReplayer
from millpond.controller.record_serde import (
    decode_metadata_record,
    encode_metadata_record,
    with_version,
)
from millpond.storage.clock import ManualClock
from millpond.wire.generated.metadata.abort_transaction_record import AbortTransactionRecord
from millpond.wire.generated.metadata.begin_transaction_record import BeginTransactionRecord
from millpond.wire.generated.metadata.end_transaction_record import EndTransactionRecord
from millpond.wire.generated.metadata.topic_record import TopicRecord
from millpond.wire.message import Message
from millpond.wire.records import NewRecord, RecordBatch, build_batch

from .helpers import CLUSTER_ID, LOG_DIR, NODE_ID, mem_fs, open_controller, replayed

TOPIC_A = TopicRecord(name="a", topic_id=b"\x01" * 16)
TOPIC_B = TopicRecord(name="b", topic_id=b"\x02" * 16)


def batch(base: int, *records: Message, epoch: int = 1) -> RecordBatch:
    values = [encode_metadata_record(with_version(r)) for r in records]
    built = build_batch(
        [NewRecord(value=v, timestamp=0) for v in values],
        base_offset=base,
        partition_leader_epoch=epoch,
    )
    return RecordBatch(built)


def replay(
    replayer: MetadataReplayer, image: MetadataImage, *batches: RecordBatch
) -> MetadataImage:
    delta = MetadataDelta(image)
    for b in batches:
        replayer.replay(delta, b)
    return delta.apply()


def test_a_transaction_is_applied_whole_at_its_end() -> None:
    replayer = MetadataReplayer()
    empty = MetadataImage.empty(CLUSTER_ID)
    # A topic before the transaction, then the transaction's first half.
    first = replay(replayer, empty, batch(0, TOPIC_A, BeginTransactionRecord(name="big"), TOPIC_B))
    assert first.topic("a") is not None and first.topic("b") is None
    assert first.offset == 0  # the image stops before the BeginTransactionRecord
    assert replayer.in_transaction and replayer.transaction_start == 1
    second = replay(replayer, first, batch(3, EndTransactionRecord()))
    assert second.topic("b") is not None
    assert second.offset == 3 and not replayer.in_transaction


def test_an_aborted_transaction_leaves_nothing() -> None:
    replayer = MetadataReplayer()
    image = replay(
        replayer,
        MetadataImage.empty(CLUSTER_ID),
        batch(0, BeginTransactionRecord(name="big"), TOPIC_A),
        batch(2, AbortTransactionRecord(reason="gone")),
        batch(3, TOPIC_B),
    )
    assert image.topic("a") is None and image.topic("b") is not None
    assert image.offset == 3


def test_a_new_active_controller_aborts_the_transaction_left_open() -> None:
    fs = mem_fs()
    clock = ManualClock()
    controller = open_controller(fs, clock=clock)  # bootstraps the log, then stops
    controller.close()
    # Another writer (say, a Kafka controller) began a transaction and stopped.
    raft = open_raft_client(fs, LOG_DIR, clock, random.Random(1), node_id=NODE_ID)
    records = [BeginTransactionRecord(name="CreateTopics"), TOPIC_A]
    raft.append(clock.monotonic_ms(), [encode_metadata_record(with_version(r)) for r in records])
    raft.close()

    restarted = open_controller(fs, clock=clock)
    assert restarted.is_active
    assert restarted.committed_image.topic("a") is None
    assert replayed(fs).topic("a") is None
    # The abort is in the log, after the transaction's records.
    log = restarted.raft.log
    last = [
        decode_metadata_record(r.value).message
        for b in log.batches(0)
        if not b.is_control
        for r in b.records()
    ]
    assert isinstance(last[-1], AbortTransactionRecord) and TOPIC_A in last
    restarted.close()

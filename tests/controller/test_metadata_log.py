"""The metadata log's on-disk shape (Kafka's raft batches), epochs, replay and crashes."""

from __future__ import annotations

import pytest

from millpond.controller.image import MetadataImage
from millpond.controller.metadata_log import (
    METADATA_PARTITION_DIR,
    MetadataLog,
    MetadataLogFailedError,
)
from millpond.controller.record_serde import encode_metadata_record, with_version
from millpond.storage.clock import ManualClock
from millpond.storage.fs import MemFileSystem, join
from millpond.wire.generated.metadata.access_control_entry_record import (
    AccessControlEntryRecord,
)
from millpond.wire.generated.metadata.topic_record import TopicRecord
from millpond.wire.records import ControlRecordType, parse_control_key

from .helpers import CLUSTER_ID, LOG_DIR, mem_fs

TID = bytes(range(16))


def open_log(fs: MemFileSystem, clock: ManualClock | None = None) -> MetadataLog:
    return MetadataLog(fs, LOG_DIR, clock or ManualClock(), node_id=1)


def test_directory_and_leader_change_control_batch() -> None:
    fs = mem_fs()
    clock = ManualClock(1_700_000_000_123)
    log = open_log(fs, clock)
    assert log.become_leader() == 0
    assert fs.is_dir(join(LOG_DIR, METADATA_PARTITION_DIR))
    [batch] = list(log.batches())
    assert batch.is_control and not batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)
    assert batch.partition_leader_epoch == 0 and batch.base_timestamp == 1_700_000_000_123
    [record] = list(batch.records())
    assert parse_control_key(record.key).type == ControlRecordType.LEADER_CHANGE
    assert record.key == b"\x00\x00\x00\x02"
    # LeaderChangeMessage v0: version int16, leader id int32, voters and granting voters
    # (compact arrays of {voter id int32, tagged fields}), tagged fields.
    voters = b"\x02" + b"\x00\x00\x00\x01" + b"\x00"
    assert record.value == b"\x00\x00" + b"\x00\x00\x00\x01" + voters + voters + b"\x00"


def test_data_batches_are_kafkas_raft_batches() -> None:
    clock = ManualClock(1_700_000_000_000)
    log = open_log(mem_fs(), clock)
    log.become_leader()
    records = [with_version(TopicRecord(name=f"t{i}", topic_id=TID)) for i in range(3)]
    assert log.append(records) == (1, 3)
    assert log.high_watermark == log.log_end_offset == 4
    batch = list(log.batches(1))[-1]
    assert not batch.is_control and batch.compression == 0
    assert (batch.producer_id, batch.partition_leader_epoch) == (-1, 0)
    assert batch.base_timestamp == batch.max_timestamp == 1_700_000_000_000
    for i, record in enumerate(batch.records()):
        assert record.key is None and record.headers == [] and record.timestamp_delta == 0
        assert record.value == encode_metadata_record(records[i])


def test_epochs_grow_across_restarts_and_are_kept_in_quorum_state() -> None:
    fs = mem_fs()
    first = open_log(fs)
    assert first.become_leader() == 0
    first.close()
    second = open_log(fs)
    assert second.become_leader() == 1
    text = fs.open(join(LOG_DIR, METADATA_PARTITION_DIR, "quorum-state")).read_at(0, 1000)
    assert b'"leaderEpoch": 1' in text and b'"leaderId": 1' in text
    second.close()
    # Even if the log lost everything, quorum-state keeps epochs from being reused.
    directory = join(LOG_DIR, METADATA_PARTITION_DIR)
    for name in fs.listdir(directory):
        if name != "quorum-state":
            fs.remove(join(directory, name))
    log = open_log(fs)
    assert log.log_end_offset == 0
    assert log.become_leader() == 2


def test_append_needs_leadership() -> None:
    log = open_log(mem_fs())
    with pytest.raises(RuntimeError):
        log.append([with_version(TopicRecord(name="t", topic_id=TID))])


def test_replay_counts_unknown_records() -> None:
    fs = mem_fs()
    log = open_log(fs)
    log.become_leader()
    log.append(
        [
            with_version(TopicRecord(name="t", topic_id=TID)),
            with_version(AccessControlEntryRecord()),
        ]
    )
    result = open_log(fs).replay(MetadataImage.empty(CLUSTER_ID))
    assert result.skipped_records == 1 and result.last_epoch == 0
    assert result.image.topic("t") is not None and result.image.offset == 2


def test_failed_fsync_fails_the_log_and_the_append_is_lost_in_a_crash() -> None:
    fs = mem_fs()
    log = open_log(fs)
    log.become_leader()
    log.append([with_version(TopicRecord(name="kept", topic_id=TID))])
    fs.fail_next("sync", ".log")
    with pytest.raises(MetadataLogFailedError):
        log.append([with_version(TopicRecord(name="lost", topic_id=bytes(16 * [7])))])
    with pytest.raises(MetadataLogFailedError):
        log.append([with_version(TopicRecord(name="later", topic_id=bytes(16 * [8])))])
    fs.crash()
    image = open_log(fs).replay(MetadataImage.empty(CLUSTER_ID)).image
    assert image.topic("kept") is not None
    assert image.topic("lost") is None and image.offset == 1

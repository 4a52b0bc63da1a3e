"""The metadata log's on-disk shape (Kafka's raft batches), epochs, replay and crashes,
through the one-voter quorum every single node runs."""

from __future__ import annotations

import json

import pytest

from millpond.controller.controller import QuorumController
from millpond.controller.image import MetadataImage
from millpond.controller.metadata_log import METADATA_PARTITION_DIR, open_metadata_log, read_image
from millpond.controller.raft.client import RaftLogFailedError
from millpond.controller.raft.kafka_log import KafkaRaftLog
from millpond.controller.record_serde import (
    decode_metadata_record,
    encode_metadata_record,
    with_version,
)
from millpond.controller.replication_control import CreatableTopic
from millpond.storage.clock import ManualClock
from millpond.storage.fs import join
from millpond.wire.generated.metadata.access_control_entry_record import (
    AccessControlEntryRecord,
)
from millpond.wire.generated.metadata.topic_record import TopicRecord
from millpond.wire.records import ControlRecordType, parse_control_key

from .helpers import CLUSTER_ID, LOG_DIR, mem_fs, open_controller, replayed, running_node

TID = bytes(range(16))


def log_of(controller: QuorumController) -> KafkaRaftLog:
    return controller.raft.log


def test_directory_and_leader_change_control_batch() -> None:
    fs = mem_fs()
    clock = ManualClock(1_700_000_000_123)
    controller = open_controller(fs, clock=clock)
    assert controller.epoch == 1  # a new quorum's first election, as Kafka's
    assert fs.is_dir(join(LOG_DIR, METADATA_PARTITION_DIR))
    batch = next(log_of(controller).batches(0))
    assert batch.is_control and not batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (-1, -1, -1)
    assert batch.partition_leader_epoch == 1 and batch.base_timestamp == 1_700_000_000_123
    [record] = list(batch.records())
    assert parse_control_key(record.key).type == ControlRecordType.LEADER_CHANGE
    assert record.key == b"\x00\x00\x00\x02"
    # LeaderChangeMessage v0: version int16, leader id int32, voters and granting voters
    # (compact arrays of {voter id int32, tagged fields}), tagged fields.
    voters = b"\x02" + b"\x00\x00\x00\x01" + b"\x00"
    assert record.value == b"\x00\x00" + b"\x00\x00\x00\x01" + voters + voters + b"\x00"


def test_data_batches_are_kafkas_raft_batches() -> None:
    clock = ManualClock(1_700_000_000_000)
    controller = running_node(clock=clock)
    controller.create_topics([CreatableTopic("t", 3)])
    log = log_of(controller)
    assert controller.raft.high_watermark == log.end_offset
    batch = list(log.batches(0))[-1]
    assert not batch.is_control and batch.compression == 0
    assert (batch.producer_id, batch.partition_leader_epoch) == (-1, 1)
    assert batch.base_timestamp == batch.max_timestamp == 1_700_000_000_000
    records = list(batch.records())
    assert len(records) == 4  # a TopicRecord and three PartitionRecords, one batch
    for record in records:
        assert record.key is None and record.headers == [] and record.timestamp_delta == 0
    assert decode_metadata_record(records[0].value).message == TopicRecord(
        name="t", topic_id=controller.image.topic_ids_by_name["t"]
    )


def test_epochs_grow_across_restarts_and_are_kept_in_quorum_state() -> None:
    fs = mem_fs()
    open_controller(fs).close()
    second = open_controller(fs)
    assert second.epoch == 2
    text = fs.open(join(LOG_DIR, METADATA_PARTITION_DIR, "quorum-state")).read_at(0, 1000)
    state = json.loads(bytes(text))
    assert state["leaderEpoch"] == 2 and state["leaderId"] == 1
    assert state["data_version"] == 0 and state["currentVoters"] == [{"voterId": 1}]
    second.close()
    # Even if the log lost everything, quorum-state keeps epochs from being reused.
    directory = join(LOG_DIR, METADATA_PARTITION_DIR)
    for name in fs.listdir(directory):
        if name != "quorum-state":
            fs.remove(join(directory, name))
    third = open_controller(fs)
    assert third.epoch == 3 and third.image.offset == third.raft.end_offset - 1


def test_replay_counts_unknown_records() -> None:
    fs = mem_fs()
    controller = open_controller(fs)
    raft = controller.raft
    raft.append(
        0,
        [
            encode_metadata_record(with_version(TopicRecord(name="t", topic_id=TID))),
            encode_metadata_record(with_version(AccessControlEntryRecord())),
        ],
    )
    controller.close()
    result = read_image(
        open_metadata_log(fs, LOG_DIR, ManualClock()), MetadataImage.empty(CLUSTER_ID)
    )
    assert result.skipped_records == 1
    assert result.image.topic("t") is not None and result.image.offset == raft.end_offset - 1
    restarted = open_controller(fs)
    assert restarted.skipped_records == 1 and restarted.image.topic("t") is not None


def test_failed_fsync_fails_the_log_and_the_append_is_lost_in_a_crash() -> None:
    fs = mem_fs()
    controller = running_node(fs)
    controller.create_topics([CreatableTopic("kept", 1)])
    kept_end = controller.raft.end_offset
    fs.fail_next("sync", ".log")
    with pytest.raises(RaftLogFailedError, match="failed"):
        controller.create_topics([CreatableTopic("lost", 1)])
    with pytest.raises(RaftLogFailedError):
        controller.raft.append(0, [b"later"])
    fs.crash()
    image = replayed(fs)
    assert image.topic("kept") is not None
    assert image.topic("lost") is None and image.offset == kept_end - 1

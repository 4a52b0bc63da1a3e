"""Metadata snapshots: Kafka's ``.checkpoint`` bytes, written by size and by time, loaded at
start, installed from a leader, and the log before them deleted."""

from __future__ import annotations

import random

import pytest

from millpond.controller.controller import ControllerConfig, QuorumController
from millpond.controller.image import MetadataImage
from millpond.controller.image_records import image_records
from millpond.controller.metadata_log import (
    METADATA_PARTITION_DIR,
    MetadataLogConfig,
    open_metadata_log,
    read_image,
    snapshot_image,
)
from millpond.controller.raft.kafka_log import MetadataRetention
from millpond.controller.raft.keys import OffsetAndEpoch
from millpond.controller.raft.snapshots import (
    SnapshotFormatError,
    encode_snapshot,
    parse_snapshot_name,
    read_snapshot,
    snapshot_name,
)
from millpond.controller.record_serde import decode_metadata_record, encode_metadata_record
from millpond.controller.replication_control import CreatableTopic
from millpond.controller.snapshot_schedule import SnapshotSchedule, SnapshotTriggers
from millpond.storage.clock import ManualClock
from millpond.storage.fs import MemFileSystem, join
from millpond.wire.records import ControlRecordType, iter_batches, parse_control_key

from .helpers import CLUSTER_ID, ENDPOINT, LOG_DIR, mem_fs, open_controller, replayed, running_node
from .quorum_peer import TwoVoters
from .test_restart import busy_node

NEVER = SnapshotTriggers(max_bytes=1 << 62, max_interval_ms=0)
#: Small segments and a retention that keeps only the latest snapshot's log.
TIGHT = MetadataLogConfig(segment_bytes=2048, retention=MetadataRetention(max_bytes=1))


def snapshot_files(fs: MemFileSystem, log_dir: str = LOG_DIR) -> list[str]:
    directory = join(log_dir, METADATA_PARTITION_DIR)
    return [n for n in fs.listdir(directory) if parse_snapshot_name(n) is not None]


def create(controller: QuorumController, *names: str, partitions: int = 2) -> None:
    result = controller.create_topics([CreatableTopic(n, partitions) for n in names])
    assert all(r.error.is_success for r in result.response)


# -- the file format ---------------------------------------------------------------------


def test_snapshot_names_are_kafkas() -> None:
    snapshot_id = OffsetAndEpoch(epoch=7, offset=1234)
    assert snapshot_name(snapshot_id) == "00000000000000001234-0000000007.checkpoint"
    assert parse_snapshot_name("00000000000000001234-0000000007.checkpoint.part") == (
        snapshot_id,
        ".checkpoint.part",
    )
    assert parse_snapshot_name("00000000000000001234.log") is None


def test_a_snapshot_is_header_data_footer_numbered_from_zero() -> None:
    payloads = [b"r%d" % i for i in range(5)]
    data = b"".join(
        encode_snapshot(
            OffsetAndEpoch(3, 100), payloads, last_contained_timestamp=42, now=50, kraft_version=0
        )
    )
    batches = list(iter_batches(data))
    assert [b.is_control for b in batches] == [True, False, True]
    assert [b.base_offset for b in batches] == [0, 1, 6]
    assert {b.partition_leader_epoch for b in batches} == {3}
    header = [parse_control_key(r.key).type for r in batches[0].records()]
    footer = [parse_control_key(r.key).type for r in batches[-1].records()]
    assert header == [ControlRecordType.SNAPSHOT_HEADER]
    assert footer == [ControlRecordType.SNAPSHOT_FOOTER]
    contents = read_snapshot(data)
    assert contents.header.last_contained_timestamp == 42
    assert [bytes(r.value or b"") for b in contents.batches for r in b.records()] == payloads


def test_torn_or_corrupt_snapshots_are_refused() -> None:
    data = bytearray(
        b"".join(encode_snapshot(OffsetAndEpoch(1, 10), [b"x"], last_contained_timestamp=0, now=0))
    )
    with pytest.raises(SnapshotFormatError, match="torn"):
        read_snapshot(bytes(data[:-3]))
    data[-1] ^= 0xFF
    with pytest.raises(SnapshotFormatError, match="CRC"):
        read_snapshot(bytes(data))


def test_image_records_rebuild_the_image() -> None:
    controller = busy_node(mem_fs())
    image = controller.committed_image
    batches = encode_snapshot(
        OffsetAndEpoch(image.epoch, image.offset + 1),
        (encode_metadata_record(r) for r in image_records(image)),
        last_contained_timestamp=0,
        now=0,
    )
    contents = read_snapshot(b"".join(batches))
    rebuilt, skipped = snapshot_image(
        CLUSTER_ID, OffsetAndEpoch(image.epoch, image.offset + 1), contents.batches
    )
    assert skipped == 0
    assert rebuilt == image
    assert rebuilt.topics_by_id and rebuilt.configs and rebuilt.next_producer_id > 0
    # Kafka's order: metadata.version first.
    first = decode_metadata_record(next(contents.batches[0].records()).value).message
    assert getattr(first, "name", None) == "metadata.version"


# -- when snapshots are taken ---------------------------------------------------------------


def test_the_schedule_follows_both_triggers() -> None:
    schedule = SnapshotSchedule(SnapshotTriggers(max_bytes=100, max_interval_ms=1000), now=0)
    assert not schedule.due(5000)  # nothing committed: no snapshot, however long
    schedule.committed(60)
    assert not schedule.due(999)
    assert schedule.due(1000)
    schedule.reset(1000)
    schedule.committed(100)
    assert schedule.due(1001)
    off = SnapshotSchedule(SnapshotTriggers(max_bytes=100, max_interval_ms=0), now=0)
    off.committed(1)
    assert not off.due(10**9)


def test_a_controller_snapshots_after_enough_committed_bytes() -> None:
    fs = mem_fs()
    controller = running_node(fs, snapshots=SnapshotTriggers(max_bytes=2000, max_interval_ms=0))
    assert snapshot_files(fs) == []
    for i in range(10):
        create(controller, f"t{i}")
    names = snapshot_files(fs)
    assert names, "no snapshot after 10 topic creations over a 2000-byte trigger"
    latest = max(parse_snapshot_name(n)[0] for n in names)  # type: ignore[index]
    assert latest.offset <= controller.committed_image.offset + 1


def test_a_controller_snapshots_after_the_interval() -> None:
    fs = mem_fs()
    clock = ManualClock()
    triggers = SnapshotTriggers(max_bytes=1 << 40, max_interval_ms=60_000)
    controller = running_node(fs, clock=clock, snapshots=triggers)
    create(controller, "a")
    assert controller.maybe_snapshot() is None
    clock.advance(60_000)
    snapshot_id = controller.maybe_snapshot()
    assert snapshot_id == OffsetAndEpoch(
        controller.committed_image.epoch, controller.committed_image.offset + 1
    )
    assert snapshot_files(fs) == [snapshot_name(snapshot_id)]
    clock.advance(120_000)
    assert controller.maybe_snapshot() is None  # nothing new committed since


# -- loading and retention ------------------------------------------------------------------


def test_a_restart_loads_the_snapshot_after_the_log_before_it_is_gone() -> None:
    fs = mem_fs()
    controller = running_node(fs, log_config=TIGHT, snapshots=NEVER)
    for i in range(20):
        create(controller, f"early{i}")
    first = controller.maybe_snapshot(force=True)
    for i in range(20):
        create(controller, f"late{i}")
    second = controller.maybe_snapshot(force=True)
    assert first is not None and second is not None
    log = controller.raft.log
    # Retention kept only the latest snapshot, and the log starts at it.
    assert log.snapshots() == [second]
    assert log.start_offset > first.offset
    before = controller.committed_image
    controller.close()

    restarted = open_controller(fs, seed=3, log_config=TIGHT, snapshots=NEVER)
    after = restarted.image
    assert after._replace(offset=before.offset, epoch=before.epoch) == before
    assert replayed(fs)._replace(offset=before.offset, epoch=before.epoch) == before
    restarted.close()


def test_an_observer_joining_late_installs_the_leaders_snapshot() -> None:
    fs = mem_fs()
    clock = ManualClock()
    quorum = TwoVoters(fs, LOG_DIR, clock, log_config=TIGHT)
    leader = QuorumController(
        quorum.client, clock, random.Random(7), ControllerConfig(1, CLUSTER_ID, snapshots=NEVER)
    )
    quorum.elect()
    quorum.replicate()
    registered = leader.register_broker(1, [ENDPOINT])
    leader.unfence_broker(1, registered.response.broker_epoch)
    quorum.replicate()
    for i in range(30):
        create(leader, f"t{i}")
        quorum.replicate()
    first = leader.maybe_snapshot(force=True)
    create(leader, "after-first")
    quorum.replicate()
    second = leader.maybe_snapshot(force=True)
    assert first is not None and second is not None
    assert quorum.client.log.start_offset == second.offset  # the log before it is gone
    create(leader, "after-second")
    quorum.replicate()

    observer_raft = quorum.add_observer(3, "/observer")
    observer = QuorumController(
        observer_raft, clock, random.Random(9), ControllerConfig(3, CLUSTER_ID, snapshots=NEVER)
    )
    for _ in range(20):  # past the back-off of its first fetches (an epoch it did not know)
        if observer.committed_image.offset == leader.committed_image.offset:
            break
        clock.advance(100)
        quorum.replicate()
    assert observer_raft.log.snapshots() == [second]
    assert observer_raft.log.start_offset == second.offset
    assert observer.committed_image == leader.committed_image
    assert observer.committed_image.topic("after-second") is not None


def test_reading_up_to_an_offset_uses_no_snapshot_past_it() -> None:
    fs = mem_fs()
    controller = running_node(fs, snapshots=NEVER)
    create(controller, "first")
    at_first = controller.committed_image
    first = controller.maybe_snapshot(force=True)
    create(controller, "second")
    assert controller.maybe_snapshot(force=True) is not None
    assert first is not None
    log = controller.raft.log
    image = read_image(log, MetadataImage.empty(CLUSTER_ID), end=first.offset).image
    assert image == at_first and image.topic("second") is None


def test_a_log_cut_before_its_missing_snapshot_is_refused() -> None:
    fs = mem_fs()
    controller = running_node(fs, log_config=TIGHT, snapshots=NEVER)
    for i in range(20):
        create(controller, f"t{i}")
    controller.maybe_snapshot(force=True)
    create(controller, "more")
    assert controller.maybe_snapshot(force=True) is not None
    assert controller.raft.log.start_offset > 0
    controller.close()
    directory = join(LOG_DIR, METADATA_PARTITION_DIR)
    for name in snapshot_files(fs):
        fs.remove(join(directory, name))
    with pytest.raises(SnapshotFormatError, match="no snapshot reaches"):
        open_metadata_log(fs, LOG_DIR, ManualClock())


def _three_snapshots() -> QuorumController:
    log_config = MetadataLogConfig(segment_bytes=2048, retention=MetadataRetention(-1, -1))
    controller = running_node(mem_fs(), clock=ManualClock(), log_config=log_config, snapshots=NEVER)
    for round_ in range(3):
        for i in range(10):
            create(controller, f"r{round_}-{i}")
        assert controller.maybe_snapshot(force=True) is not None
    return controller


def test_size_retention_drops_only_the_snapshots_it_must() -> None:
    # What the log and the snapshots weigh once the oldest snapshot (and the log before
    # the next) is gone, measured on one node; an identical node held to that size keeps
    # the other two snapshots.
    measured = _three_snapshots()
    log = measured.raft.log
    oldest, middle, latest = log.snapshots()
    log._delete_before(middle, measured.raft.high_watermark)
    fits = log.log.size + sum(log.snapshot_size(s) or 0 for s in log.snapshots())
    kept = _three_snapshots().raft
    assert kept.log.snapshots() == [oldest, middle, latest]
    kept.log.retention = MetadataRetention(max_bytes=fits, max_ms=-1)
    assert kept.log.clean(kept.high_watermark)
    assert kept.log.snapshots() == [middle, latest]

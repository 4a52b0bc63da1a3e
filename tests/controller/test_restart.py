"""Restarts replay the log into an equal image; crashes keep exactly what was flushed."""

from __future__ import annotations

import random

import pytest

from millpond.controller.config_control import AlterableConfig, AlterConfigsResource
from millpond.controller.controller import QuorumController
from millpond.controller.image import ConfigResourceType
from millpond.controller.raft.client import RaftLogFailedError
from millpond.controller.replication_control import CreatableTopic, CreatePartitionsTopic
from millpond.storage.fs import MemFileSystem

from .helpers import NODE_ID, mem_fs, open_controller, replayed, running_node


def busy_node(fs: MemFileSystem) -> QuorumController:
    controller = running_node(fs)
    controller.create_topics(
        [CreatableTopic("a", 3, configs={"retention.ms": "1000"}), CreatableTopic("b.c", 1)]
    )
    controller.create_partitions([CreatePartitionsTopic("b.c", 2)])
    controller.incremental_alter_configs(
        [
            AlterConfigsResource(
                ConfigResourceType.TOPIC, "a", [AlterableConfig("segment.ms", 0, "5000")]
            ),
            AlterConfigsResource(
                ConfigResourceType.BROKER, "", [AlterableConfig("num.io.threads", 0, "4")]
            ),
        ]
    )
    controller.delete_topics(names=["b.c"])
    epoch = controller.image.brokers[NODE_ID].broker_epoch
    controller.allocate_producer_ids(NODE_ID, epoch)
    return controller


def test_replay_rebuilds_an_equal_image() -> None:
    fs = mem_fs()
    controller = busy_node(fs)
    assert replayed(fs) == controller.image
    controller.close()
    assert replayed(fs) == controller.image


def test_a_restarted_controller_continues_from_the_log() -> None:
    fs = mem_fs()
    before = busy_node(fs).image
    restarted = open_controller(fs, seed=99)
    after = restarted.image
    assert restarted.epoch == 2 and after.epoch == 2
    assert after.offset == before.offset + 1  # the new epoch's LeaderChangeMessage
    assert after._replace(offset=before.offset, epoch=before.epoch) == before
    assert restarted.skipped_records == 0
    # The restarted node registers again (a new incarnation) and keeps working.
    registered = restarted.register_broker(NODE_ID, [])
    assert registered.response.error.is_success
    assert registered.response.broker_epoch > before.brokers[NODE_ID].broker_epoch
    [created] = restarted.create_topics([CreatableTopic("a", 1)]).response
    assert created.error.code == 36  # still exists after the restart
    assert replayed(fs) == restarted.image


def test_bootstrap_is_written_once() -> None:
    fs = mem_fs()
    first = open_controller(fs)
    end = first.raft.end_offset
    second = open_controller(fs)
    assert second.raft.end_offset == end + 1  # only a LeaderChangeMessage
    assert dict(second.image.features) == {"metadata.version": 27}


def test_crash_keeps_flushed_appends() -> None:
    fs = mem_fs()
    controller = busy_node(fs)
    fs.crash()
    assert replayed(fs) == controller.image


@pytest.mark.parametrize("seed", [None, *range(8)])
def test_crash_after_an_unflushed_append_loses_it_consistently(seed: int | None) -> None:
    fs = mem_fs()
    controller = busy_node(fs)
    committed = controller.image
    fs.fail_next("sync", ".log")
    with pytest.raises(RaftLogFailedError):
        controller.create_topics([CreatableTopic("lost", 1)])
    assert controller.image == committed  # never applied
    with pytest.raises(RaftLogFailedError):
        controller.create_topics([CreatableTopic("after", 1)])
    if seed is None:
        fs.crash()  # a clean power cut: every unsynced byte is gone
    else:
        fs.crash(random.Random(seed), torn=True)  # a random prefix may have reached disk
    image = replayed(fs)
    assert image.topic("after") is None  # never written: the log had failed
    if seed is None or image.topic("lost") is None:
        assert image == committed
    else:  # the whole batch happened to reach the disk: then it is there in full
        assert len(image.topic("lost").partitions) == 1  # type: ignore[union-attr]
    restarted = open_controller(fs)
    assert restarted.image._replace(offset=image.offset, epoch=image.epoch) == image


def test_deterministic_under_a_seed() -> None:
    first, second = busy_node(mem_fs()).image, busy_node(mem_fs()).image
    assert first == second

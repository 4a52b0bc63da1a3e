"""Appending is not committing: the controller's image runs ahead, what it hands out
(listeners' batches, the channel's answers) waits for the commit, and a failed append
fails every operation waiting and every later one."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Coroutine
from typing import Any, NamedTuple, TypeVar

import pytest

from millpond.controller.channel import LocalControllerChannel
from millpond.controller.config_control import AlterableConfig, AlterConfigsResource
from millpond.controller.controller import ControllerConfig, QuorumController
from millpond.controller.image import (
    ConfigResource,
    ConfigResourceType,
    MetadataDelta,
    MetadataImage,
)
from millpond.controller.raft.client import RaftLogFailedError
from millpond.controller.replication_control import CreatableTopic
from millpond.controller.results import NotControllerError
from millpond.storage.clock import ManualClock
from millpond.storage.fs import MemFileSystem
from millpond.wire.errors import ErrorCode

from .helpers import CLUSTER_ID, ENDPOINT, LOG_DIR, NODE_ID, mem_fs, open_controller
from .quorum_peer import TwoVoters

T = TypeVar("T")


class Delayed(NamedTuple):
    controller: QuorumController
    quorum: TwoVoters


def delayed(fs: MemFileSystem) -> Delayed:
    """A controller whose commits wait for its quorum's second voter to fetch; its
    broker registered, unfenced and committed."""
    clock = ManualClock()
    quorum = TwoVoters(fs, LOG_DIR, clock)
    controller = QuorumController(
        quorum.client, clock, random.Random(7), ControllerConfig(NODE_ID, CLUSTER_ID)
    )
    quorum.elect()
    quorum.replicate()
    assert controller.is_active
    epoch = controller.register_broker(NODE_ID, [ENDPOINT]).response.broker_epoch
    assert controller.unfence_broker(NODE_ID, epoch).response.is_success
    quorum.replicate()
    return Delayed(controller, quorum)


class Recorder:
    def __init__(self) -> None:
        self.batches: list[tuple[MetadataDelta, MetadataImage]] = []

    def handle_commit(self, delta: MetadataDelta, image: MetadataImage) -> None:
        self.batches.append((delta, image))


def test_the_controller_image_runs_ahead_of_the_committed_one() -> None:
    controller, quorum = delayed(mem_fs())
    listener = Recorder()
    controller.register_listener(listener)
    bootstrap = controller.committed_image
    assert bootstrap.features and not bootstrap.brokers[NODE_ID].fenced
    controller.create_topics([CreatableTopic("a", 2)])
    first = controller.last_offset
    assert controller.image.topic("a") is not None
    assert controller.committed_image is bootstrap and listener.batches == []

    quorum.replicate()
    [(delta, image)] = listener.batches
    assert delta.base is bootstrap and image is controller.committed_image
    assert image.topic("a") is not None and image.offset == first

    controller.create_topics([CreatableTopic("b", 1)])
    assert len(listener.batches) == 1 and controller.image.topic("b") is not None
    quorum.replicate()
    assert [i.topic("b") is not None for _, i in listener.batches] == [False, True]
    assert listener.batches[1][0].base is listener.batches[0][1]  # in log order
    assert controller.committed_image == controller.image


def test_a_controller_takes_operations_once_it_leads_and_has_replayed_the_log() -> None:
    clock = ManualClock()
    quorum = TwoVoters(mem_fs(), LOG_DIR, clock)
    controller = QuorumController(
        quorum.client, clock, random.Random(7), ControllerConfig(NODE_ID, CLUSTER_ID)
    )
    with pytest.raises(NotControllerError, match="not the active controller"):
        controller.create_topics([CreatableTopic("early", 1)])
    quorum.elect()  # an empty log has nothing to replay: active, and the bootstrap goes in
    assert controller.is_active and "metadata.version" in controller.image.features
    assert "metadata.version" not in controller.committed_image.features
    quorum.replicate()
    assert controller.committed_image == controller.image


def test_a_standby_replays_what_the_leader_commits() -> None:
    fs = mem_fs()
    clock = ManualClock()
    quorum = TwoVoters(fs, LOG_DIR, clock)
    active = QuorumController(
        quorum.client, clock, random.Random(7), ControllerConfig(NODE_ID, CLUSTER_ID)
    )
    standby = QuorumController(
        quorum.peer, clock, random.Random(8), ControllerConfig(2, CLUSTER_ID)
    )
    listener = Recorder()
    standby.register_listener(listener)
    quorum.elect()
    quorum.replicate()
    active.create_topics([CreatableTopic("a", 2)])
    quorum.replicate()
    assert not standby.is_active
    # The follower learns the high watermark on its next fetch.
    quorum.replicate()
    assert standby.committed_image.topic("a") == active.committed_image.topic("a")
    assert listener.batches and listener.batches[-1][1] is standby.committed_image
    with pytest.raises(NotControllerError, match="leader 1"):
        standby.create_topics([CreatableTopic("b", 1)])


def test_when_committed_calls_back_on_the_commit_not_on_the_append() -> None:
    controller, quorum = delayed(mem_fs())
    seen: list[BaseException | None] = []
    controller.create_topics([CreatableTopic("a", 1)])
    offset = controller.last_offset
    controller.when_committed(offset, seen.append)
    assert seen == []
    quorum.replicate()
    assert seen == [None]
    controller.when_committed(offset, seen.append)  # already committed: at once
    assert seen == [None, None]


def test_a_controller_that_steps_down_fails_what_waits() -> None:
    controller, quorum = delayed(mem_fs())
    seen: list[BaseException | None] = []
    controller.create_topics([CreatableTopic("a", 1)])
    controller.when_committed(controller.last_offset, seen.append)
    committed = controller.committed_image
    quorum.client.resign(quorum.clock.monotonic_ms())
    [error] = seen
    assert isinstance(error, NotControllerError) and "no longer" in str(error)
    assert not controller.is_active and controller.image is committed
    with pytest.raises(NotControllerError):
        controller.create_topics([CreatableTopic("b", 1)])


def test_a_failed_append_fails_what_waits_and_what_comes_later() -> None:
    fs = mem_fs()
    controller, _ = delayed(fs)
    seen: list[BaseException | None] = []
    controller.create_topics([CreatableTopic("a", 1)])
    controller.when_committed(controller.last_offset, seen.append)
    fs.fail_next("sync", ".log")
    with pytest.raises(RaftLogFailedError):
        controller.create_topics([CreatableTopic("b", 1)])
    assert len(seen) == 1 and isinstance(seen[0], RaftLogFailedError)
    controller.when_committed(controller.last_offset + 10, seen.append)
    assert len(seen) == 2 and seen[1] is seen[0]


# -- the in-process channel -------------------------------------------------------------------


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


async def settle() -> None:
    """Let every ready callback run (a bounded number of loop turns)."""
    for _ in range(10):
        await asyncio.sleep(0)


def test_the_channel_answers_once_the_records_are_committed() -> None:
    async def scenario() -> None:
        controller, quorum = delayed(mem_fs())
        channel = LocalControllerChannel(controller)
        task = asyncio.ensure_future(channel.create_topics([CreatableTopic("a", 3)]))
        await settle()
        assert not task.done()  # appended, durable, not committed: no answer yet
        assert controller.image.topic("a") is not None
        quorum.replicate()
        await settle()
        [result] = task.result()
        assert result.error.is_success and result.num_partitions == 3

    run(scenario())


def test_validate_only_and_refused_operations_complete_without_a_commit() -> None:
    async def scenario() -> None:
        controller, quorum = delayed(mem_fs())
        channel = LocalControllerChannel(controller)
        end = controller.last_offset
        [checked] = await channel.create_topics([CreatableTopic("a", 1)], validate_only=True)
        assert checked.error.is_success
        resource = AlterConfigsResource(
            ConfigResourceType.TOPIC, "missing", [AlterableConfig("retention.ms", 0, "1")]
        )
        refused = await channel.alter_configs([resource])
        key = ConfigResource(ConfigResourceType.TOPIC, "missing")
        assert refused[key].code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert controller.last_offset == end  # nothing appended

    run(scenario())


def test_a_failed_append_fails_the_pending_and_the_later_operations() -> None:
    async def scenario() -> None:
        fs = mem_fs()
        controller, _ = delayed(fs)
        channel = LocalControllerChannel(controller)
        pending = asyncio.ensure_future(channel.create_topics([CreatableTopic("a", 1)]))
        await settle()
        fs.fail_next("sync", ".log")
        with pytest.raises(RaftLogFailedError):
            await channel.create_topics([CreatableTopic("b", 1)])
        await settle()
        assert isinstance(pending.exception(), RaftLogFailedError)
        with pytest.raises(RaftLogFailedError):
            await channel.create_topics([CreatableTopic("c", 1)])

    run(scenario())


def test_a_one_voter_controller_commits_on_the_append() -> None:
    async def scenario() -> None:
        controller = open_controller(mem_fs())
        listener = Recorder()
        controller.register_listener(listener)
        channel = LocalControllerChannel(controller)
        registration = await channel.register_broker(NODE_ID, [ENDPOINT])
        assert registration.error.is_success
        [(_, image)] = listener.batches
        assert image.brokers[NODE_ID].fenced
        assert controller.committed_image is image

    run(scenario())

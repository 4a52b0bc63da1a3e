"""Appending is not committing: the controller's image runs ahead, what it hands out
(listeners' batches, the channel's answers) waits for the commit, and a failed append
fails every operation waiting and every later one."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Coroutine
from typing import Any, TypeVar

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
from millpond.controller.metadata_log import MetadataLogFailedError
from millpond.controller.replication_control import CreatableTopic
from millpond.storage.clock import ManualClock
from millpond.storage.fs import MemFileSystem
from millpond.wire.errors import ErrorCode

from .helpers import CLUSTER_ID, ENDPOINT, LOG_DIR, NODE_ID, mem_fs

T = TypeVar("T")


def delayed(fs: MemFileSystem) -> QuorumController:
    """A controller whose commits wait for :meth:`QuorumController.commit`, as a quorum's
    high watermark makes them wait for the voters; its broker registered, unfenced and
    committed."""
    controller = QuorumController(
        fs,
        LOG_DIR,
        ManualClock(),
        random.Random(7),
        ControllerConfig(NODE_ID, CLUSTER_ID),
        commit_on_append=False,
    )
    epoch = controller.register_broker(NODE_ID, [ENDPOINT]).response.broker_epoch
    assert controller.unfence_broker(NODE_ID, epoch).response.is_success
    controller.commit(controller.last_offset)
    return controller


class Recorder:
    def __init__(self) -> None:
        self.batches: list[tuple[MetadataDelta, MetadataImage]] = []

    def handle_commit(self, delta: MetadataDelta, image: MetadataImage) -> None:
        self.batches.append((delta, image))


def test_the_controller_image_runs_ahead_of_the_committed_one() -> None:
    controller = delayed(mem_fs())
    listener = Recorder()
    controller.register_listener(listener)
    bootstrap = controller.committed_image
    assert bootstrap.features and not bootstrap.brokers[NODE_ID].fenced
    controller.create_topics([CreatableTopic("a", 2)])
    first = controller.last_offset
    controller.create_topics([CreatableTopic("b", 1)])
    assert {"a", "b"} <= set(controller.image.topic_ids_by_name)
    assert controller.committed_image is bootstrap and listener.batches == []

    controller.commit(first)
    [(delta, image)] = listener.batches
    assert delta.base is bootstrap and image is controller.committed_image
    assert image.topic("a") is not None and image.topic("b") is None
    assert image.offset == first

    controller.commit(controller.last_offset)
    assert [i.topic("b") is not None for _, i in listener.batches] == [False, True]
    assert listener.batches[1][0].base is listener.batches[0][1]  # in log order
    assert controller.committed_image == controller.image


def test_the_bootstrap_is_committed_at_once_even_when_commits_wait() -> None:
    controller = QuorumController(
        mem_fs(),
        LOG_DIR,
        ManualClock(),
        random.Random(7),
        ControllerConfig(NODE_ID, CLUSTER_ID),
        commit_on_append=False,
    )
    assert controller.committed_image == controller.image
    assert "metadata.version" in controller.committed_image.features


def test_when_committed_calls_back_on_the_commit_not_on_the_append() -> None:
    controller = delayed(mem_fs())
    seen: list[BaseException | None] = []
    controller.create_topics([CreatableTopic("a", 1)])
    offset = controller.last_offset
    controller.when_committed(offset, seen.append)
    assert seen == []
    controller.commit(offset - 1)
    assert seen == []
    controller.commit(offset)
    assert seen == [None]
    controller.when_committed(offset, seen.append)  # already committed: at once
    assert seen == [None, None]


def test_a_failed_append_fails_what_waits_and_what_comes_later() -> None:
    fs = mem_fs()
    controller = delayed(fs)
    seen: list[BaseException | None] = []
    controller.create_topics([CreatableTopic("a", 1)])
    controller.when_committed(controller.last_offset, seen.append)
    fs.fail_next("sync", ".log")
    with pytest.raises(MetadataLogFailedError):
        controller.create_topics([CreatableTopic("b", 1)])
    assert len(seen) == 1 and isinstance(seen[0], MetadataLogFailedError)
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
        controller = delayed(mem_fs())
        channel = LocalControllerChannel(controller)
        task = asyncio.ensure_future(channel.create_topics([CreatableTopic("a", 3)]))
        await settle()
        assert not task.done()  # appended, durable, not committed: no answer yet
        assert controller.image.topic("a") is not None
        controller.commit(controller.last_offset)
        await settle()
        [result] = task.result()
        assert result.error.is_success and result.num_partitions == 3

    run(scenario())


def test_validate_only_and_refused_operations_complete_without_a_commit() -> None:
    async def scenario() -> None:
        controller = delayed(mem_fs())
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
        controller = delayed(fs)
        channel = LocalControllerChannel(controller)
        pending = asyncio.ensure_future(channel.create_topics([CreatableTopic("a", 1)]))
        await settle()
        fs.fail_next("sync", ".log")
        with pytest.raises(MetadataLogFailedError):
            await channel.create_topics([CreatableTopic("b", 1)])
        await settle()
        assert isinstance(pending.exception(), MetadataLogFailedError)
        with pytest.raises(MetadataLogFailedError):
            await channel.create_topics([CreatableTopic("c", 1)])

    run(scenario())


def test_a_one_voter_controller_commits_on_the_append() -> None:
    async def scenario() -> None:
        controller = QuorumController(
            mem_fs(), LOG_DIR, ManualClock(), random.Random(7), ControllerConfig(1, CLUSTER_ID)
        )
        listener = Recorder()
        controller.register_listener(listener)
        channel = LocalControllerChannel(controller)
        registration = await channel.register_broker(NODE_ID, [ENDPOINT])
        assert registration.error.is_success
        [(_, image)] = listener.batches
        assert image.brokers[NODE_ID].fenced
        assert controller.committed_image is image

    run(scenario())

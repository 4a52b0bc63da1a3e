"""The broker acts on committed metadata only: the publisher reacts to each delta, and
handlers that change metadata answer once the change is committed. No sockets: a node
on an in-memory disk, never started, its broker registered directly."""

from __future__ import annotations

import asyncio
import pathlib
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import pytest

from millpond.broker.context import RequestContext
from millpond.broker.handlers import alter_configs, create_topics, delete_topics
from millpond.broker.metadata_publisher import local_changes
from millpond.broker.node import Broker
from millpond.controller.config_control import AlterableConfig, AlterConfigsResource
from millpond.controller.controller import QuorumController
from millpond.controller.image import BrokerEndpoint, MetadataImage
from millpond.controller.raft.client import RaftLogFailedError
from millpond.controller.record_serde import ApiMessageAndVersion
from millpond.controller.replication_control import CreatableTopic, CreatePartitionsTopic
from millpond.controller.results import ControllerResult
from millpond.storage.clock import ManualClock
from millpond.storage.fs import MemFileSystem
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api import alter_configs_request as ac
from millpond.wire.generated.api import create_topics_request as ct
from millpond.wire.generated.api import delete_topics_request as dt
from millpond.wire.generated.metadata.partition_change_record import PartitionChangeRecord
from tests.controller.quorum_peer import TwoVoters

T = TypeVar("T")
DATA = "/data"
TOPIC = 2  # ConfigResource type


def node() -> tuple[Broker, MemFileSystem]:
    """A combined node, the one voter of its quorum: commits follow the appends."""
    fs = MemFileSystem()
    broker = Broker(data_dir=DATA, port=0, fs=fs, clock=ManualClock())
    register(broker)
    return broker, fs


def register(broker: Broker) -> None:
    controller = broker.controller
    endpoint = BrokerEndpoint("PLAINTEXT", "localhost", 9092, 0)
    epoch = controller.register_broker(broker.node_id, [endpoint]).response.broker_epoch
    controller.unfence_broker(broker.node_id, epoch)


def delayed_node() -> tuple[Broker, MemFileSystem, TwoVoters]:
    """A combined node in a quorum of two voters: nothing commits until the test lets
    the other voter fetch (``quorum.replicate()``)."""
    fs, clock = MemFileSystem(), ManualClock()
    fs.makedirs(DATA)
    quorum = TwoVoters(fs, DATA, clock)
    quorum.elect()
    broker = Broker(data_dir=DATA, port=0, fs=fs, clock=clock, raft=quorum.client)
    quorum.replicate()
    register(broker)
    quorum.replicate()
    return broker, fs, quorum


def hosted(broker: Broker) -> list[tuple[str, int]]:
    return broker.log_manager.partitions()


def ctx(version: int) -> RequestContext:
    context = RequestContext(1, "test")
    context.api_version = version
    return context


def on_loop(scenario: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return asyncio.run(scenario())


async def settle() -> None:
    """Let every ready callback and task step run (a bounded number of loop turns)."""
    for _ in range(10):
        await asyncio.sleep(0)


def images_around(
    controller: QuorumController, change: Callable[[], object]
) -> tuple[MetadataImage, MetadataImage]:
    before = controller.committed_image
    change()
    return before, controller.committed_image


# -- what a delta means for one broker (pure) ------------------------------------------------


def test_local_changes_of_a_created_topic_a_new_partition_and_a_deleted_topic() -> None:
    async def scenario() -> None:
        broker, _ = node()
        c = broker.controller
        base, image = images_around(c, lambda: c.create_topics([CreatableTopic("t", 2)]))
        changes = local_changes(base, image, broker.node_id)
        assert [(t.name, i) for t, i in changes.added] == [("t", 0), ("t", 1)]
        assert [(n, i) for n, i, _ in changes.elected] == [("t", 0), ("t", 1)]
        assert (changes.removed, changes.resigned, changes.reconfigured) == ([], [], [])
        # Another broker's view of the same delta: nothing of its own changed.
        assert local_changes(base, image, broker.node_id + 1).added == []

        base, image = images_around(c, lambda: c.create_partitions([CreatePartitionsTopic("t", 3)]))
        changes = local_changes(base, image, broker.node_id)
        assert [(t.name, i) for t, i in changes.added] == [("t", 2)]

        base, image = images_around(c, lambda: c.delete_topics(["t"]))
        changes = local_changes(base, image, broker.node_id)
        assert changes.removed == [("t", [0, 1, 2])]
        assert [(n, i) for n, i, _ in changes.resigned] == [("t", 0), ("t", 1), ("t", 2)]
        assert (changes.added, changes.elected) == ([], [])

    on_loop(scenario)


def test_local_changes_of_configs_and_of_an_unrelated_delta() -> None:
    async def scenario() -> None:
        broker, _ = node()
        c = broker.controller
        c.create_topics([CreatableTopic("t", 1), CreatableTopic("u", 1)])
        resource = AlterConfigsResource(TOPIC, "t", [AlterableConfig("retention.ms", 0, "5")])
        base, image = images_around(c, lambda: c.incremental_alter_configs([resource]))
        assert local_changes(base, image, broker.node_id).reconfigured == ["t"]
        # A broker record changes no topic: the maps are the same objects, nothing to do.
        other = BrokerEndpoint("PLAINTEXT", "localhost", 9093, 0)
        base, image = images_around(c, lambda: c.register_broker(broker.node_id + 1, [other]))
        assert base.brokers is not image.brokers
        assert local_changes(base, image, broker.node_id) == ([], [], [], [], [], [], [])

    on_loop(scenario)


# -- the publisher on a node -------------------------------------------------------------------


def test_the_publisher_creates_and_deletes_logs_and_drops_partition_state() -> None:
    async def scenario() -> None:
        broker, fs = node()
        c = broker.controller
        c.create_topics([CreatableTopic("t", 2)])
        assert hosted(broker) == [("t", 0), ("t", 1)]
        c.create_partitions([CreatePartitionsTopic("t", 3)])
        assert hosted(broker) == [("t", 0), ("t", 1), ("t", 2)]
        topic = broker.image.topic("t")
        assert topic is not None
        assert broker.replicas.producer_state(topic, 0) is not None
        # A hosted partition is served at once, its producer state loaded with its log.
        assert [(t, p) for t, p, _ in broker.replicas.producer_states()] == [
            ("t", 0),
            ("t", 1),
            ("t", 2),
        ]
        c.delete_topics(["t"])
        assert hosted(broker) == []
        assert list(broker.replicas.producer_states()) == []  # no leak of its state
        assert any(name.endswith("-delete") for name in fs.listdir(DATA))

    on_loop(scenario)


def test_the_publisher_applies_a_changed_topic_config_to_open_logs() -> None:
    async def scenario() -> None:
        broker, _ = node()
        c = broker.controller
        c.create_topics([CreatableTopic("t", 1)])
        log = broker.log_manager.get_log("t", 0)
        assert log is not None and log.config.retention_ms != 5
        resource = AlterConfigsResource(TOPIC, "t", [AlterableConfig("retention.ms", 0, "5")])
        c.incremental_alter_configs([resource])
        assert log.config.retention_ms == 5
        # Deleted and created again without it: the old topic's config does not stay.
        c.delete_topics(["t"])
        c.create_topics([CreatableTopic("t", 1)])
        again = broker.log_manager.get_log("t", 0)
        assert again is not None and again is not log and again.config.retention_ms != 5

    on_loop(scenario)


class Leadership:
    def __init__(self) -> None:
        self.events: list[tuple[str, int, int | None]] = []

    def on_election(self, partition: int, leader_epoch: int) -> None:
        self.events.append(("elected", partition, leader_epoch))

    def on_resignation(self, partition: int, leader_epoch: int | None) -> None:
        self.events.append(("resigned", partition, leader_epoch))


def test_the_publisher_tells_leadership_listeners_of_their_topic() -> None:
    async def scenario() -> None:
        broker, _ = node()
        c = broker.controller
        listener = Leadership()
        broker.publisher.add_leadership_listener("t", listener)
        c.create_topics([CreatableTopic("t", 2), CreatableTopic("other", 1)])
        assert listener.events == [("elected", 0, 0), ("elected", 1, 0)]
        topic = broker.image.topic("t")
        assert topic is not None
        change = PartitionChangeRecord(
            topic_id=topic.topic_id, partition_id=1, leader=broker.node_id
        )
        c._commit(ControllerResult((ApiMessageAndVersion(change, 0),), None))
        assert listener.events[-1] == ("elected", 1, 1)  # a new epoch, same leader
        # Leadership moving away ends in the new leader's epoch: what a coordinator
        # loaded in an earlier one unloads.
        moved = PartitionChangeRecord(topic_id=topic.topic_id, partition_id=1, leader=7)
        c._commit(ControllerResult((ApiMessageAndVersion(moved, 0),), None))
        assert listener.events[-1] == ("resigned", 1, 2)
        c.delete_topics(["t"])
        assert listener.events[-1:] == [("resigned", 0, None)]

    on_loop(scenario)


# -- handlers wait for the commit --------------------------------------------------------------


def create_request(name: str) -> ct.CreateTopicsRequest:
    return ct.CreateTopicsRequest(
        topics=[ct.CreatableTopic(name=name, num_partitions=2, replication_factor=1)]
    )


async def pending(handler_result: Awaitable[T]) -> asyncio.Task[T]:
    task: asyncio.Task[T] = asyncio.ensure_future(handler_result)
    await settle()
    return task


def test_create_topics_answers_only_after_the_commit() -> None:
    async def scenario() -> None:
        broker, _, quorum = delayed_node()
        task = await pending(create_topics.handle(broker, ctx(7), create_request("t")))
        assert not task.done()
        # The controller has the topic; the broker does not act on it before the commit.
        assert broker.controller.image.topic("t") is not None
        assert broker.image.topic("t") is None and hosted(broker) == []
        quorum.replicate()
        await settle()
        [result] = task.result().topics
        assert result.error_code == ErrorCode.NONE and result.num_partitions == 2
        assert hosted(broker) == [("t", 0), ("t", 1)]

    on_loop(scenario)


def test_delete_topics_and_alter_configs_wait_for_the_commit() -> None:
    async def scenario() -> None:
        broker, _, quorum = delayed_node()
        created = await pending(create_topics.handle(broker, ctx(7), create_request("t")))
        quorum.replicate()
        await settle()
        assert created.done()
        log = broker.log_manager.get_log("t", 0)
        assert log is not None

        request = ac.AlterConfigsRequest(
            resources=[
                ac.AlterConfigsResource(
                    resource_type=TOPIC,
                    resource_name="t",
                    configs=[ac.AlterableConfig(name="retention.ms", value="7")],
                )
            ]
        )
        altered = await pending(alter_configs.handle(broker, ctx(2), request))
        assert not altered.done() and log.config.retention_ms != 7
        quorum.replicate()
        await settle()
        assert altered.result().responses[0].error_code == ErrorCode.NONE
        assert log.config.retention_ms == 7

        deleted = await pending(
            delete_topics.handle(broker, ctx(5), dt.DeleteTopicsRequest(topic_names=["t"]))
        )
        assert not deleted.done() and hosted(broker) == [("t", 0), ("t", 1)]
        quorum.replicate()
        await settle()
        assert deleted.result().responses[0].error_code == ErrorCode.NONE
        assert hosted(broker) == []

    on_loop(scenario)


def test_validate_only_answers_without_waiting() -> None:
    async def scenario() -> None:
        broker, _, quorum = delayed_node()
        request = create_request("t")
        request.validate_only = True
        task = await pending(create_topics.handle(broker, ctx(7), request))
        assert task.done() and task.result().topics[0].error_code == ErrorCode.NONE

    on_loop(scenario)


def test_a_failed_metadata_append_fails_the_waiting_handlers() -> None:
    async def scenario() -> None:
        broker, fs, quorum = delayed_node()
        first = await pending(create_topics.handle(broker, ctx(7), create_request("a")))
        fs.fail_next("sync", ".log")
        second = await pending(create_topics.handle(broker, ctx(7), create_request("b")))
        assert isinstance(second.exception(), RaftLogFailedError)
        assert isinstance(first.exception(), RaftLogFailedError)
        later = await pending(create_topics.handle(broker, ctx(7), create_request("c")))
        assert isinstance(later.exception(), RaftLogFailedError)
        assert broker.image.topic("a") is None  # never committed, never acted on

    on_loop(scenario)


# -- the roles ---------------------------------------------------------------------------------


def test_one_node_composes_a_broker_role_and_a_controller_role() -> None:
    async def scenario() -> None:
        broker, _, quorum = delayed_node()
        assert broker.controller_channel is broker.controller_server.channel
        broker.controller.create_topics([CreatableTopic("t", 1)])
        # The broker's image is the committed one, not the controller's own.
        assert broker.image is broker.controller.committed_image
        assert broker.image is not broker.controller.image

    on_loop(scenario)


ROOT = pathlib.Path(__file__).parents[2]
ROLE_SOURCES = [
    "broker/broker_server.py",
    "broker/metadata_publisher.py",
    "broker/producer_id_blocks.py",
    "broker/groups/service.py",
    *(f"broker/handlers/{p.name}" for p in sorted((ROOT / "broker/handlers").glob("*.py"))),
]


@pytest.mark.parametrize("path", ROLE_SOURCES)
def test_the_broker_role_reaches_the_controller_only_through_its_channel(path: str) -> None:
    source = (ROOT / path).read_text()
    for internal in (
        "broker.controller.",
        "_broker.controller.",
        "QuorumController",
        "metadata_log",
    ):
        assert internal not in source, f"{path} uses {internal}"

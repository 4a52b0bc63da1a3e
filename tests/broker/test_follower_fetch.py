"""A leader serving a follower's fetches, over the wire, with the follower's broker (2)
registered in the metadata: the follower reads past the high watermark, its fetches move
the high watermark and complete acks=all produces, a caught-up follower is added to the
ISR through AlterPartition, and one that stops fetching is dropped from it after
replica.lag.time.max.ms."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from millpond.broker.config import build_config
from millpond.broker.node import Broker
from millpond.controller.image import BrokerEndpoint, PartitionRegistration
from millpond.controller.record_serde import ApiMessageAndVersion
from millpond.controller.results import ControllerResult
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.fetch_request import ReplicaState
from millpond.wire.generated.api.fetch_response import PartitionData
from millpond.wire.generated.metadata.partition_change_record import PartitionChangeRecord

from .harness import Client, running_broker
from .test_acks_all import _create, _ends, _produce, _set_replicas
from .test_fetch import fetch, fetch_request, on_loop, partitions, records

FOLLOWER = 2


def _register_follower(broker: Broker) -> int:
    def run() -> int:
        c = broker.controller
        endpoint = BrokerEndpoint("PLAINTEXT", "127.0.0.1", 1, 0)
        epoch = c.register_broker(FOLLOWER, [endpoint]).response.broker_epoch
        assert c.unfence_broker(FOLLOWER, epoch).response.is_success
        return epoch

    return on_loop(broker, run)


def _registration(broker: Broker) -> PartitionRegistration:
    def run() -> PartitionRegistration:
        topic = broker.image.topic("t")
        assert topic is not None
        return topic.partitions[0]

    return on_loop(broker, run)


def _follower_fetch(
    broker: Broker, client: Client, offset: int, epoch: int, *, current_epoch: int = -1
) -> PartitionData:
    topic = broker.image.topic("t")
    assert topic is not None
    request = fetch_request(
        [("t", topic.topic_id, 0, offset)],
        replica_state=ReplicaState(replica_id=FOLLOWER, replica_epoch=epoch),
    )
    request.topics[0].partitions[0].current_leader_epoch = current_epoch
    [data] = partitions(fetch(client, request, 15))
    return data


def _until(condition: object, what: str) -> None:
    deadline = time.monotonic() + 10
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.01)  # polls a real condition, bounded


def test_follower_fetches_commit_acks_all_produces() -> None:
    with running_broker() as broker:
        _create(broker, "t")  # before the follower's broker exists: led here
        epoch = _register_follower(broker)
        _set_replicas(broker, "t", [broker.node_id, FOLLOWER], [broker.node_id, FOLLOWER])
        client, follower = Client(broker.port), Client(broker.port)
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(_produce, client, "t", timeout_ms=10_000)
            _until(lambda: _ends(broker, "t")[0] == 1, "the produce was written")
            first = _follower_fetch(broker, follower, 0, epoch)
            # The follower reads what is not committed yet.
            assert first.error_code == ErrorCode.NONE and records(first) != b""
            assert first.high_watermark == 0
            # Fetching at the leader's end says it has everything: committed.
            caught_up = _follower_fetch(broker, follower, 1, epoch)
            assert caught_up.error_code == ErrorCode.NONE and records(caught_up) == b""
            answer = pending.result(10)
        assert (answer.error_code, answer.base_offset) == (ErrorCode.NONE, 0)
        assert _ends(broker, "t") == (1, 1)
        assert _follower_fetch(broker, follower, 1, epoch).high_watermark == 1


def test_a_caught_up_follower_joins_the_isr() -> None:
    with running_broker() as broker:
        _create(broker, "t")  # before the follower's broker exists: led here
        epoch = _register_follower(broker)
        _set_replicas(broker, "t", [broker.node_id, FOLLOWER], [broker.node_id])
        follower = Client(broker.port)
        assert _produce(Client(broker.port), "t", acks=1).error_code == ErrorCode.NONE
        before = _registration(broker)
        _follower_fetch(broker, follower, 0, epoch)  # behind the high watermark (1)
        assert _registration(broker).isr == (broker.node_id,)
        _follower_fetch(broker, follower, 1, epoch)
        _until(lambda: _registration(broker).isr == (broker.node_id, FOLLOWER), "joined")
        after = _registration(broker)
        assert after.partition_epoch == before.partition_epoch + 1
        assert after.leader_epoch == before.leader_epoch


def test_a_stale_or_unknown_follower_is_refused() -> None:
    with running_broker() as broker:
        _create(broker, "t")  # before the follower's broker exists: led here
        epoch = _register_follower(broker)
        follower = Client(broker.port)
        # Not a replica yet: refused, and UNKNOWN_LEADER_EPOCH when it names an epoch.
        assert _follower_fetch(broker, follower, 0, epoch).error_code == (
            ErrorCode.NOT_LEADER_OR_FOLLOWER
        )
        current = _registration(broker).leader_epoch
        assert _follower_fetch(broker, follower, 0, epoch, current_epoch=current).error_code == (
            ErrorCode.UNKNOWN_LEADER_EPOCH
        )
        _set_replicas(broker, "t", [broker.node_id, FOLLOWER], [broker.node_id])
        # An older incarnation of the follower's broker.
        assert _follower_fetch(broker, follower, 0, epoch - 1).error_code == (
            ErrorCode.NOT_LEADER_OR_FOLLOWER
        )
        assert _follower_fetch(broker, follower, 0, epoch).error_code == ErrorCode.NONE


def test_a_silent_follower_leaves_the_isr() -> None:
    config, _ = build_config({"replica.lag.time.max.ms": "300", "replica.fetch.wait.max.ms": "100"})
    with running_broker(config=config) as broker:
        _create(broker, "t")  # before the follower's broker exists: led here
        epoch = _register_follower(broker)
        _set_replicas(broker, "t", [broker.node_id, FOLLOWER], [broker.node_id, FOLLOWER])
        _follower_fetch(broker, Client(broker.port), 0, epoch)  # caught up: at the end (0)
        assert _produce(Client(broker.port), "t", acks=1).error_code == ErrorCode.NONE
        started = time.monotonic()
        _until(lambda: _registration(broker).isr == (broker.node_id,), "the follower dropped")
        # Between the lag time and one and a half times it, at the task's period.
        assert time.monotonic() - started < 5
        assert _ends(broker, "t") == (1, 1)  # the ISR of the leader alone commits it


def test_a_produce_waiting_on_a_leader_that_resigns_is_not_acknowledged() -> None:
    """Once another broker leads, the old leader's high watermark counts the new
    leader's records: a produce still waiting there is answered NOT_LEADER_OR_FOLLOWER."""
    with running_broker() as broker:
        _create(broker, "t")
        _register_follower(broker)
        _set_replicas(broker, "t", [broker.node_id, FOLLOWER], [broker.node_id, FOLLOWER])
        client = Client(broker.port)
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(_produce, client, "t", timeout_ms=10_000)
            _until(lambda: _ends(broker, "t")[0] == 1, "the produce was written")

            def hand_over() -> None:
                topic = broker.image.topic("t")
                assert topic is not None
                change = PartitionChangeRecord(topic_id=topic.topic_id, partition_id=0, leader=2)
                broker.controller._commit(
                    ControllerResult((ApiMessageAndVersion(change, 0),), None)
                )

            on_loop(broker, hand_over)
            answer = pending.result(10)
        assert answer.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER

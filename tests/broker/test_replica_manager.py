"""ReplicaManager without sockets: one walk over a produce request's batches, the log's
one-batch append for one-batch requests, and stopping partitions."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from millpond.broker import replica_manager
from millpond.broker.node import Broker
from millpond.controller.image import BrokerEndpoint, TopicImage
from millpond.controller.replication_control import CreatableTopic
from millpond.storage.log import Log
from millpond.wire.errors import ErrorCode
from millpond.wire.records import NewRecord, build_batch, iter_batches


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    """A broker that is never started: its controller and replica manager, no sockets."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    made = Broker(data_dir=str(tmp_path), port=0)
    endpoint = BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9092, 0)
    registration = made.controller.register_broker(made.node_id, [endpoint]).response
    made.controller.unfence_broker(made.node_id, registration.broker_epoch)
    [created] = made.controller.create_topics([CreatableTopic("t", 2, 1)]).response
    assert created.error.code == ErrorCode.NONE
    yield made
    made.replicas.shutdown()
    made.log_manager.shutdown()
    made.controller.close()
    asyncio.set_event_loop(None)
    loop.close()


def _topic(broker: Broker) -> TopicImage:
    topic = broker.image.topic("t")
    assert topic is not None
    return topic


def _batch(n: int = 2) -> bytes:
    return bytes(build_batch([NewRecord(key=b"k", value=b"v") for _ in range(n)]))


class _Calls:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.walks = 0
        self.one_batch = 0
        self.general = 0
        walk, one, general = iter_batches, Log._append_one, Log._walk

        def counted_walk(*args: Any, **kwargs: Any) -> Any:
            self.walks += 1
            return walk(*args, **kwargs)

        def counted_one(log: Log, *args: Any) -> Any:
            self.one_batch += 1
            return one(log, *args)

        def counted_general(*args: Any) -> Any:
            self.general += 1
            return general(*args)

        monkeypatch.setattr(replica_manager, "iter_batches", counted_walk)
        monkeypatch.setattr(Log, "_append_one", counted_one)
        monkeypatch.setattr(Log, "_walk", staticmethod(counted_general))


def test_a_one_batch_request_is_walked_once_and_takes_the_one_batch_append(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _Calls(monkeypatch)
    result = broker.replicas.append(_topic(broker), 0, memoryview(_batch(3)))
    assert result.error == ErrorCode.NONE and result.info is not None
    assert (result.info.first_offset, result.info.last_offset) == (0, 2)
    assert (calls.walks, calls.one_batch, calls.general) == (1, 1, 0)


def test_a_request_of_several_batches_is_walked_once(
    broker: Broker, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = _Calls(monkeypatch)
    result = broker.replicas.append(_topic(broker), 0, memoryview(_batch(2) + _batch(3)))
    assert result.error == ErrorCode.NONE and result.info is not None
    assert (result.info.first_offset, result.info.last_offset) == (0, 4)
    assert (calls.walks, calls.one_batch, calls.general) == (1, 0, 0)


def test_a_read_only_buffer_is_copied_before_it_is_stamped(broker: Broker) -> None:
    data = _batch()
    before = bytes(bytearray(data))
    result = broker.replicas.append(_topic(broker), 1, memoryview(data))
    assert result.error == ErrorCode.NONE
    assert data == before  # the request's bytes are untouched
    broker.replicas.append(_topic(broker), 1, memoryview(data))
    assert data == before


@pytest.mark.parametrize(
    "records",
    [b"", b"\x00" * 5, _batch()[:-3], bytes(build_batch([NewRecord(value=b"v")], base_offset=7))],
)
def test_what_is_not_magic_2_batches_from_offset_0_is_an_invalid_record(
    broker: Broker, records: bytes
) -> None:
    result = broker.replicas.append(_topic(broker), 0, memoryview(records))
    assert (result.error, result.message, result.info) == (ErrorCode.INVALID_RECORD, None, None)


def test_the_high_watermark_moves_by_the_isr_rule_with_each_append(broker: Broker) -> None:
    topic = _topic(broker)
    broker.replicas.append(topic, 0, memoryview(_batch(2)))
    partition = broker.replicas.partition(topic, 0)
    assert partition is not None
    assert partition.isr == {broker.node_id}
    assert (partition.log_end_offset, partition.high_watermark) == (2, 2)


def test_stopping_partitions_drops_them_and_keeps_or_deletes_their_logs(broker: Broker) -> None:
    topic = _topic(broker)
    for index in (0, 1):
        assert broker.replicas.append(topic, index, memoryview(_batch())).error == ErrorCode.NONE
    assert broker.replicas.stop_partitions("t", [0], delete=False) == 1
    assert broker.replicas.open_partitions() == [("t", 1)]
    assert broker.log_manager.get_log("t", 0) is not None  # kept
    assert broker.replicas.stop_partitions("t", [1], delete=True) == 1
    assert broker.replicas.open_partitions() == []
    assert ("t", 1) not in broker.log_manager
    assert broker.replicas.stop_partitions("t", [0, 1], delete=False) == 0

"""A broker on several log.dirs, and AlterReplicaLogDirs moving partitions between them,
through the real server."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from millpond.broker.config import build_config
from millpond.broker.node import Broker
from millpond.storage.names import META_PROPERTIES_FILE
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api import alter_replica_log_dirs_request as ar
from millpond.wire.generated.api import create_topics_request as ct
from millpond.wire.generated.api import describe_log_dirs_request as dld
from millpond.wire.records import NewRecord, build_batch

from .harness import Client, run_on_loop, running_broker


@contextmanager
def jbod_broker(count: int = 2) -> Iterator[tuple[Broker, list[str]]]:
    with tempfile.TemporaryDirectory(prefix="millpond-jbod-") as root:
        dirs = [os.path.join(root, f"d{i}") for i in range(count)]
        config = build_config({"node.id": "1", "log.dirs": ",".join(dirs)}, env={})[0]
        with running_broker(data_dir=dirs[0], log_dirs=dirs, config=config) as broker:
            yield broker, dirs


def _make_topic(client: Client, name: str, partitions: int) -> None:
    topic = ct.CreatableTopic(name=name, num_partitions=partitions, replication_factor=1)
    [result] = client.request(ct.CreateTopicsRequest(topics=[topic]), 7)[1].topics
    assert result.error_code == ErrorCode.NONE


def _fill(broker: Broker, name: str, partition: int, count: int) -> None:
    topic = broker.image.topic(name)
    assert topic is not None
    for i in range(count):
        batch = build_batch([NewRecord(key=b"k", value=b"v%d" % i, timestamp=1_000 + i)])
        assert broker.replicas.append(topic, partition, memoryview(batch)).error == 0


def _where(client: Client) -> dict[str, list[tuple[str, int, bool, int]]]:
    answer = client.request(dld.DescribeLogDirsRequest(topics=None), 4)[1]
    return {
        r.log_dir: sorted(
            (t.name, p.partition_index, p.is_future_key, p.offset_lag)
            for t in r.topics
            for p in t.partitions
        )
        for r in answer.results
    }


def _alter(client: Client, moves: list[tuple[str, str, list[int]]], version: int = 2) -> Any:
    dirs: dict[str, list[ar.AlterReplicaLogDirTopic]] = {}
    for path, topic, partitions in moves:
        dirs.setdefault(path, []).append(
            ar.AlterReplicaLogDirTopic(name=topic, partitions=partitions)
        )
    request = ar.AlterReplicaLogDirsRequest(
        dirs=[ar.AlterReplicaLogDir(path=p, topics=t) for p, t in dirs.items()]
    )
    answer = client.request(request, version)[1]
    return {
        (t.topic_name, p.partition_index): p.error_code
        for t in answer.results
        for p in t.partitions
    }


def test_every_log_dir_is_served() -> None:
    with jbod_broker() as (broker, (d0, d1)):
        assert broker.log_manager.log_dirs == [d0, d1]
        assert all(os.path.exists(os.path.join(d, META_PROPERTIES_FILE)) for d in (d0, d1))
        client = Client(broker.port)
        _make_topic(client, "t", 4)
        for p in range(4):
            _fill(broker, "t", p, 1)
        where = _where(client)
        assert list(where) == [d0, d1]
        assert where[d0] == [("t", 0, False, 0), ("t", 2, False, 0)]
        assert where[d1] == [("t", 1, False, 0), ("t", 3, False, 0)]


def test_a_partition_moves_and_keeps_its_records() -> None:
    with jbod_broker() as (broker, (d0, d1)):
        client = Client(broker.port)
        _make_topic(client, "t", 1)
        _fill(broker, "t", 0, 5)
        assert broker.log_manager.log_dir_of("t", 0) == d0
        assert _alter(client, [(d1, "t", [0])]) == {("t", 0): ErrorCode.NONE}
        run_on_loop(broker, broker.maintenance.move_logs())
        assert _where(client) == {d0: [], d1: [("t", 0, False, 0)]}
        _fill(broker, "t", 0, 2)  # appends go to the moved log, after the copied ones
        log = broker.log_manager.get_log("t", 0)
        assert log is not None and (log.log_start_offset, log.log_end_offset) == (0, 7)
        assert "t-0" not in os.listdir(d0) and "t-0" in os.listdir(d1)
        # Where it already is: nothing to do.
        assert _alter(client, [(d1, "t", [0])], version=1) == {("t", 0): ErrorCode.NONE}
        assert broker.log_manager.moving() == []


def test_a_moving_partition_shows_its_future_replica() -> None:
    with jbod_broker() as (broker, (d0, d1)):
        client = Client(broker.port)
        _make_topic(client, "t", 1)
        _fill(broker, "t", 0, 4)

        async def start_only() -> None:  # the move created, not run
            broker.log_manager.alter_log_dir("t", 0, d1)

        run_on_loop(broker, start_only())
        assert _where(client) == {d0: [("t", 0, False, 0)], d1: [("t", 0, True, 4)]}
        run_on_loop(broker, broker.maintenance.move_logs())
        assert _where(client) == {d0: [], d1: [("t", 0, False, 0)]}


def test_errors_are_kafkas() -> None:
    with jbod_broker() as (broker, (d0, d1)):
        client = Client(broker.port)
        _make_topic(client, "t", 1)
        long_name = "x" * 220  # its future log's name would pass 255 characters
        _make_topic(client, long_name, 1)
        answer = _alter(
            client,
            [
                (d1 + "/", "t", [0]),
                ("relative/dir", "t", [0]),
                (d1, "nope", [0]),
                (d1, "t", [7]),
                (d1, long_name, [0]),
            ],
        )
        assert answer == {
            ("t", 0): ErrorCode.LOG_DIR_NOT_FOUND,  # the last one named wins
            ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            ("t", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            (long_name, 0): ErrorCode.INVALID_TOPIC_EXCEPTION,
        }
        # A partition named before it exists is created where it was sent.
        _make_topic(client, "nope", 1)
        _fill(broker, "nope", 0, 1)
        assert broker.log_manager.log_dir_of("nope", 0) == d1


def _idempotent(pid: int, seq: int) -> memoryview:
    records = [NewRecord(key=b"k", value=b"v%d" % seq, timestamp=1_000)]
    return memoryview(build_batch(records, producer_id=pid, producer_epoch=0, base_sequence=seq))


def test_producer_state_carries_over_a_move() -> None:
    """A retried batch of an idempotent producer is still a duplicate after its partition
    moved, and the next sequence number is still the one expected."""
    with jbod_broker() as (broker, (d0, d1)):
        client = Client(broker.port)
        _make_topic(client, "t", 1)
        topic = broker.image.topic("t")
        assert topic is not None
        first = broker.replicas.append(topic, 0, _idempotent(7, 0))
        assert first.error == ErrorCode.NONE
        assert _alter(client, [(d1, "t", [0])]) == {("t", 0): ErrorCode.NONE}
        run_on_loop(broker, broker.maintenance.move_logs())
        assert broker.log_manager.log_dir_of("t", 0) == d1
        again = broker.replicas.append(topic, 0, _idempotent(7, 0))
        assert again.duplicate and again.info is not None and first.info is not None
        assert again.info.first_offset == first.info.first_offset
        skipped = broker.replicas.append(topic, 0, _idempotent(7, 2))
        assert skipped.error == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert broker.replicas.append(topic, 0, _idempotent(7, 1)).error == ErrorCode.NONE


def test_a_move_interrupted_by_a_restart_resumes() -> None:
    with tempfile.TemporaryDirectory(prefix="millpond-jbod-") as root:
        dirs = [os.path.join(root, f"d{i}") for i in range(2)]
        config = build_config({"node.id": "1", "log.dirs": ",".join(dirs)}, env={})[0]
        with running_broker(data_dir=dirs[0], log_dirs=dirs, config=config) as broker:
            client = Client(broker.port)
            _make_topic(client, "t", 1)
            _fill(broker, "t", 0, 6)

            async def start_only() -> None:  # the move created, not run
                broker.log_manager.alter_log_dir("t", 0, dirs[1])

            run_on_loop(broker, start_only())
        future = [n for n in os.listdir(dirs[1]) if n.endswith("-future")]
        assert len(future) == 1 and "t-0" in os.listdir(dirs[0])
        with running_broker(data_dir=dirs[0], log_dirs=dirs, config=config) as broker:
            run_on_loop(broker, broker.maintenance.move_logs())  # done, if not done yet
            assert broker.log_manager.moving() == []
            assert broker.log_manager.log_dir_of("t", 0) == dirs[1]
            log = broker.log_manager.get_log("t", 0)
            assert log is not None and log.log_end_offset == 6
            assert "t-0" not in os.listdir(dirs[0]) and "t-0" in os.listdir(dirs[1])

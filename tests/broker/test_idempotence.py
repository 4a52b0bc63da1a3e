"""Idempotent producing end to end: InitProducerId, Kafka's sequence and epoch rules on
the produce path, deduplication across clean and unclean restarts, and real clients in
their default idempotent configuration."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import pytest
from kafka import KafkaProducer

from millpond.broker.node import Broker
from millpond.controller.replication_control import CreatableTopic
from millpond.storage.fs import OsFileSystem
from millpond.storage.names import CLEAN_SHUTDOWN_FILE
from millpond.storage.producer_snapshots import (
    ProducerEntry,
    list_snapshots,
    read_snapshot,
    snapshot_path,
)
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.api_versions_request import ApiVersionsRequest
from millpond.wire.generated.api.init_producer_id_request import InitProducerIdRequest
from millpond.wire.generated.api.produce_request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from millpond.wire.generated.api.produce_response import PartitionProduceResponse
from millpond.wire.records import (
    ControlRecordType,
    NewRecord,
    Record,
    RecordBatch,
    build_batch,
    build_control_batch,
    iter_batches,
)

from .harness import Client, running_broker

T = TypeVar("T")
TOPIC = "orders"
#: Record timestamps: recent, since a snapshot's producers whose last record is older
#: than ``producer.id.expiration.ms`` (a day) are dropped at load, as Kafka does.
T0 = time.time_ns() // 1_000_000


# -- helpers ------------------------------------------------------------------------------


def on_loop(broker: Broker, fn: Callable[[], T]) -> T:
    """Run ``fn`` on the broker's event loop (which owns all its state) and wait."""
    server = broker.server._server
    assert server is not None

    async def call() -> T:
        return fn()

    return asyncio.run_coroutine_threadsafe(call(), server.get_loop()).result(10)


def create_topic(
    broker: Broker, name: str = TOPIC, partitions: int = 1, configs: dict[str, str] | None = None
) -> None:
    def create() -> None:
        topic = CreatableTopic(name, partitions, 1, configs=configs or {})
        [result] = broker.controller.create_topics([topic]).response
        assert result.error.code == ErrorCode.NONE

    on_loop(broker, create)


def batch(pid: int, epoch: int, seq: int, values: list[bytes]) -> bytes:
    records = [NewRecord(value=v, timestamp=T0 + seq + i) for i, v in enumerate(values)]
    return build_batch(records, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def produce(client: Client, records: bytes, version: int = 9) -> PartitionProduceResponse:
    request = ProduceRequest(
        acks=-1,
        timeout_ms=10_000,
        topic_data=[
            TopicProduceData(
                name=TOPIC, partition_data=[PartitionProduceData(index=0, records=records)]
            )
        ],
    )
    _, response = client.request(request, version)
    [topic] = response.responses
    [partition] = topic.partition_responses
    assert isinstance(partition, PartitionProduceResponse)
    return partition


def init_producer_id(
    client: Client,
    version: int = 4,
    transactional_id: str | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    timeout_ms: int = 60_000,
) -> tuple[int, int, int]:
    request = InitProducerIdRequest(
        transactional_id=transactional_id,
        transaction_timeout_ms=timeout_ms,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
    )
    _, response = client.request(request, version)
    return response.error_code, response.producer_id, response.producer_epoch


class LoggedBatch(NamedTuple):
    base_offset: int
    producer_id: int
    epoch: int
    base_sequence: int
    values: list[bytes | None]
    keys: list[bytes | None]


def log_batches(broker: Broker, topic: str = TOPIC, partition: int = 0) -> list[LoggedBatch]:
    def read() -> bytes:
        """Every segment's bytes (a read stops at the end of a segment)."""
        image = broker.image.topic(topic)
        assert image is not None
        log = broker.replicas.log(image, partition)
        assert log is not None
        data, offset = b"", log.log_start_offset
        while offset < log.log_end_offset:
            chunk = log.read(offset, 1 << 30).records.read()
            data += chunk
            offset = list(iter_batches(chunk))[-1].next_offset
        return data

    return [
        LoggedBatch(
            b.base_offset,
            b.producer_id,
            b.producer_epoch,
            b.base_sequence,
            [r.value for r in b.records()],
            [r.key for r in b.records()],
        )
        for b in iter_batches(on_loop(broker, read))
    ]


def partition_dir(data_dir: Path, topic: str = TOPIC, partition: int = 0) -> str:
    return str(data_dir / f"{topic}-{partition}")


# -- InitProducerId -----------------------------------------------------------------------


def test_init_producer_id_is_advertised_v0_to_v5() -> None:
    with running_broker() as broker:
        _, response = Client(broker.port).request(ApiVersionsRequest(), 0)
        ranges = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
        assert ranges[22] == (0, 5)


@pytest.mark.parametrize("version", range(6))
def test_init_producer_id_gives_fresh_ids_at_every_version(version: int) -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        first = init_producer_id(client, version)
        second = init_producer_id(client, version)
        assert first[0] == second[0] == ErrorCode.NONE
        assert first[1] >= 0 and second[1] > first[1]
        assert first[2] == second[2] == 0


@pytest.mark.parametrize("version", [3, 4, 5])
def test_an_idempotent_producer_asking_again_gets_a_new_id(version: int) -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        _, pid, _ = init_producer_id(client, version)
        # KIP-360: after bumping its epoch locally a producer may come back with its id.
        error, new_pid, epoch = init_producer_id(client, version, None, pid, 3)
        assert (error, epoch) == (ErrorCode.NONE, 0)
        assert new_pid > pid
        # an id without an epoch (or the reverse) is refused
        assert init_producer_id(client, version, None, pid, -1) == (
            ErrorCode.INVALID_REQUEST, -1, -1,
        )  # fmt: skip


@pytest.mark.parametrize("version", range(6))
def test_transactional_ids_wait_for_the_transaction_coordinator(version: int) -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        assert init_producer_id(client, version, "txn-1") == (
            ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, -1,
        )  # fmt: skip
        assert init_producer_id(client, version, "")[0] == ErrorCode.INVALID_REQUEST
        assert init_producer_id(client, version, "txn-1", timeout_ms=0)[0] == (
            ErrorCode.INVALID_TRANSACTION_TIMEOUT
        )


def test_producer_ids_stay_unique_across_restarts(tmp_path: Path) -> None:
    with running_broker(data_dir=str(tmp_path)) as broker:
        _, before, _ = init_producer_id(Client(broker.port))
    with running_broker(data_dir=str(tmp_path)) as broker:
        _, after, _ = init_producer_id(Client(broker.port))
    assert after > before  # the first run's block is persisted: a new block is claimed


# -- the produce path ---------------------------------------------------------------------


@pytest.mark.parametrize("version", [3, 7, 9, 12])
def test_sequences_in_order_and_a_retry_is_answered_with_the_original_offset(
    version: int,
) -> None:
    with running_broker() as broker:
        create_topic(broker)
        client = Client(broker.port)
        _, pid, epoch = init_producer_id(client)
        sent = [batch(pid, epoch, 3 * i, [b"a%d" % i, b"b%d" % i, b"c%d" % i]) for i in range(6)]
        offsets = []
        for records in sent:
            answer = produce(client, records, version)
            assert answer.error_code == ErrorCode.NONE
            offsets.append(answer.base_offset)
        assert offsets == [0, 3, 6, 9, 12, 15]
        # a retry of each of the last 5 batches appends nothing and gets its offset back
        for i in range(1, 6):
            retry = produce(client, sent[i], version)
            assert (retry.error_code, retry.base_offset) == (ErrorCode.NONE, offsets[i])
            # Kafka reports the original batch's timestamp as the log append time
            assert retry.log_append_time_ms == T0 + 3 * i + 2
        # the 6th batch back is no longer remembered: its sequence is out of order
        assert produce(client, sent[0], version).error_code == (
            ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        )
        logged = log_batches(broker)
        assert [b.base_offset for b in logged] == offsets
        assert all((b.producer_id, b.epoch) == (pid, epoch) for b in logged)
        assert [b.base_sequence for b in logged] == [0, 3, 6, 9, 12, 15]
        # and the producer carries on where it was
        assert produce(client, batch(pid, epoch, 18, [b"next"])).base_offset == 18


def test_a_sequence_gap_is_out_of_order_and_appends_nothing() -> None:
    with running_broker() as broker:
        create_topic(broker)
        client = Client(broker.port)
        _, pid, _ = init_producer_id(client)
        assert produce(client, batch(pid, 0, 0, [b"x", b"y"])).error_code == ErrorCode.NONE
        gap = produce(client, batch(pid, 0, 3, [b"z"]))
        assert (gap.error_code, gap.base_offset) == (ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, -1)
        assert gap.error_message and "Out of order sequence number" in gap.error_message
        assert produce(client, batch(pid, 0, 2, [b"z"])).base_offset == 2
        assert [b.base_sequence for b in log_batches(broker)] == [0, 2]


def test_epochs_are_fenced_and_a_new_epoch_starts_at_sequence_zero() -> None:
    with running_broker() as broker:
        create_topic(broker)
        client = Client(broker.port)
        _, pid, _ = init_producer_id(client)
        assert produce(client, batch(pid, 1, 0, [b"a"])).error_code == ErrorCode.NONE
        fenced = produce(client, batch(pid, 0, 1, [b"b"]))
        assert fenced.error_code == ErrorCode.INVALID_PRODUCER_EPOCH
        bumped = produce(client, batch(pid, 2, 5, [b"c"]))
        assert bumped.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert produce(client, batch(pid, 2, 0, [b"d"])).base_offset == 1
        assert [(b.epoch, b.values) for b in log_batches(broker)] == [(1, [b"a"]), (2, [b"d"])]


def test_an_unknown_producer_may_start_at_any_sequence() -> None:
    # KIP-360: Kafka 4 never answers UNKNOWN_PRODUCER_ID on produce.
    with running_broker() as broker:
        create_topic(broker)
        client = Client(broker.port)
        _, pid, _ = init_producer_id(client)
        assert produce(client, batch(pid, 0, 42, [b"a"])).error_code == ErrorCode.NONE
        assert produce(client, batch(pid, 0, 43, [b"b"])).error_code == ErrorCode.NONE


def test_a_producer_id_without_a_sequence_is_an_invalid_record() -> None:
    with running_broker() as broker:
        create_topic(broker)
        client = Client(broker.port)
        no_seq = build_batch([NewRecord(value=b"v", timestamp=T0)], producer_id=7, producer_epoch=0)
        answer = produce(client, no_seq)
        assert answer.error_code == ErrorCode.INVALID_RECORD
        assert log_batches(broker) == []


def test_producers_are_judged_per_partition() -> None:
    with running_broker() as broker:
        create_topic(broker, "two", partitions=2)
        client = Client(broker.port)
        _, pid, _ = init_producer_id(client)
        for partition in (0, 1):
            request = ProduceRequest(
                acks=1,
                timeout_ms=1000,
                topic_data=[
                    TopicProduceData(
                        name="two",
                        partition_data=[
                            PartitionProduceData(
                                index=partition, records=batch(pid, 0, 0, [b"p%d" % partition])
                            )
                        ],
                    )
                ],
            )
            _, response = client.request(request, 9)
            [answer] = response.responses[0].partition_responses
            assert (answer.error_code, answer.base_offset) == (ErrorCode.NONE, 0)


# -- restarts -----------------------------------------------------------------------------


def _produce_three(broker: Broker) -> tuple[int, list[bytes], list[int]]:
    client = Client(broker.port)
    _, pid, epoch = init_producer_id(client)
    sent = [batch(pid, epoch, 2 * i, [b"k%d" % i, b"l%d" % i]) for i in range(3)]
    offsets = [produce(client, records).base_offset for records in sent]
    assert offsets == [0, 2, 4]
    return pid, sent, offsets


def test_a_retry_after_a_clean_restart_is_deduplicated(tmp_path: Path) -> None:
    with running_broker(data_dir=str(tmp_path)) as broker:
        create_topic(broker)
        pid, sent, offsets = _produce_three(broker)
    # the clean shutdown wrote a snapshot at the log end
    assert list_snapshots_of(tmp_path) == [6]
    [entry] = snapshot_entries(tmp_path, 6)
    assert (entry.producer_id, entry.last_sequence, entry.last_offset) == (pid, 5, 5)
    with running_broker(data_dir=str(tmp_path)) as broker:
        client = Client(broker.port)
        retry = produce(client, sent[-1])
        assert (retry.error_code, retry.base_offset) == (ErrorCode.NONE, offsets[-1])
        assert len(log_batches(broker)) == 3
        assert produce(client, batch(pid, 0, 6, [b"after"])).base_offset == 6
        assert produce(client, batch(pid, 0, 9, [b"gap"])).error_code == (
            ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        )


def list_snapshots_of(data_dir: Path) -> list[int]:
    return list_snapshots(OsFileSystem(), partition_dir(data_dir))


def snapshot_entries(data_dir: Path, offset: int) -> list[ProducerEntry]:
    return read_snapshot(OsFileSystem(), snapshot_path(partition_dir(data_dir), offset))


def _no_decoding(self: RecordBatch, **_: object) -> Iterator[Record]:
    raise AssertionError("records were decoded")


def _as_if_killed(data_dir: Path, keep_snapshots: int) -> None:
    """Undo what only a clean shutdown leaves: the clean-shutdown marker, and the
    snapshot at the log end (all snapshots but the oldest ``keep_snapshots``)."""
    os.remove(data_dir / CLEAN_SHUTDOWN_FILE)
    for offset in list_snapshots_of(data_dir)[keep_snapshots:]:
        os.remove(snapshot_path(partition_dir(data_dir), offset))


def test_a_retry_after_a_kill_is_deduplicated_by_the_log_replay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with running_broker(data_dir=str(tmp_path)) as broker:
        create_topic(broker)
        pid, sent, offsets = _produce_three(broker)
    _as_if_killed(tmp_path, keep_snapshots=0)
    assert list_snapshots_of(tmp_path) == []
    with running_broker(data_dir=str(tmp_path)) as broker:
        client = Client(broker.port)
        with monkeypatch.context() as patched:
            # the replay walks batch headers only: decoding a data record would fail here
            patched.setattr(RecordBatch, "records", _no_decoding)
            for i in (2, 1, 0):  # all three are among the last 5, replayed from the log
                retry = produce(client, sent[i])
                assert (retry.error_code, retry.base_offset) == (ErrorCode.NONE, offsets[i])
        assert len(log_batches(broker)) == 3
        assert produce(client, batch(pid, 0, 6, [b"after"])).base_offset == 6
    # the replay's result was snapshotted at load, and again at shutdown
    assert list_snapshots_of(tmp_path) == [6, 7]


def test_the_replay_reads_transaction_markers(tmp_path: Path) -> None:
    """Batches written by a coordinator (no produce path yet): an open transaction, then
    its commit marker; the replay must close the transaction, which needs the marker."""
    pid = 900
    txn = build_batch(
        [NewRecord(value=b"t", timestamp=T0)],
        producer_id=pid,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )
    marker = build_control_batch(
        ControlRecordType.COMMIT, producer_id=pid, producer_epoch=0, coordinator_epoch=3,
        timestamp=T0 + 1,
    )  # fmt: skip
    with running_broker(data_dir=str(tmp_path)) as broker:
        create_topic(broker)

        def write() -> None:
            image = broker.image.topic(TOPIC)
            assert image is not None
            log = broker.replicas.log(image, 0)
            assert log is not None
            log.append(bytearray(txn), assign_offsets=True)
            log.append(bytearray(marker), assign_offsets=True)

        on_loop(broker, write)
    _as_if_killed(tmp_path, keep_snapshots=0)
    with running_broker(data_dir=str(tmp_path)) as broker:

        def state() -> tuple[int, int, int | None, int]:
            image = broker.image.topic(TOPIC)
            assert image is not None
            producers = broker.replicas.producer_state(image, 0)
            assert producers is not None
            entry = producers.last_entry(pid)
            assert entry is not None
            return (
                entry.last_seq,
                entry.coordinator_epoch,
                entry.current_txn_first_offset,
                producers.map_end_offset,
            )

        assert on_loop(broker, state) == (0, 3, None, 2)


@pytest.mark.parametrize("keep_snapshots", [0, 1, 3])
def test_rolled_segments_snapshot_the_state_and_a_kill_replays_from_the_last_one(
    tmp_path: Path, keep_snapshots: int
) -> None:
    # small segments: two of these batches (about 80 bytes each) fill one
    configs = {"segment.bytes": "200"}
    with running_broker(data_dir=str(tmp_path)) as broker:
        create_topic(broker, configs=configs)
        client = Client(broker.port)
        _, pid, _ = init_producer_id(client)
        sent = [batch(pid, 0, i, [b"v%d" % i]) for i in range(8)]
        offsets = [produce(client, records).base_offset for records in sent]
        assert offsets == list(range(8))
        bases = on_loop(broker, lambda: _segment_bases(broker))
        assert bases == [0, 2, 4, 6]
        # one snapshot at each roll, holding the state up to that segment's start
        assert list_snapshots_of(tmp_path) == [2, 4, 6]
        for base in (2, 4, 6):
            [entry] = snapshot_entries(tmp_path, base)
            assert (entry.last_sequence, entry.last_offset) == (base - 1, base - 1)
    assert list_snapshots_of(tmp_path) == [2, 4, 6, 8]
    _as_if_killed(tmp_path, keep_snapshots)
    # The load starts from the newest snapshot left, which (as in Kafka) keeps only each
    # producer's last batch, and replays the batches after it: those are remembered.
    loaded_from = [0, 2, 4, 6][keep_snapshots]
    remembered = range(max(loaded_from - 1, 0), 8)
    with running_broker(data_dir=str(tmp_path)) as broker:
        client = Client(broker.port)
        for i in range(3, 8):  # the last 5 batches
            retry = produce(client, sent[i])
            if i in remembered:
                assert (retry.error_code, retry.base_offset) == (ErrorCode.NONE, offsets[i])
            else:
                assert retry.error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert produce(client, sent[2]).error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert len(log_batches(broker)) == 8
        assert produce(client, batch(pid, 0, 8, [b"after"])).base_offset == 8


def _segment_bases(broker: Broker) -> list[int]:
    image = broker.image.topic(TOPIC)
    assert image is not None
    log = broker.replicas.log(image, 0)
    assert log is not None
    return [s.base_offset for s in log.segments]


# -- real clients -------------------------------------------------------------------------


def _landed(broker: Broker, topic: str, partitions: int) -> list[tuple[bytes | None, bytes | None]]:
    """Every (key, value) in the topic's logs, sorted; each batch must carry a producer
    id and a sequence (the client really produced idempotently)."""
    landed: list[tuple[bytes | None, bytes | None]] = []
    producer_ids = set()
    for partition in range(partitions):
        for logged in log_batches(broker, topic, partition):
            assert logged.producer_id >= 0 and logged.base_sequence >= 0, logged
            producer_ids.add((logged.producer_id, logged.epoch))
            landed += zip(logged.keys, logged.values, strict=True)
    assert len(producer_ids) == 1
    return sorted(landed, key=lambda kv: kv[1] or b"")


EXPECTED = [(b"key-%d" % (i % 7), b"value-%03d" % i) for i in range(100)]


def test_kafka_python_default_producer_is_idempotent_and_lands_exactly_once() -> None:
    with running_broker() as broker:
        create_topic(broker, "kp", partitions=3)
        producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{broker.port}", linger_ms=5)
        try:
            futures = [producer.send("kp", key=key, value=value) for key, value in EXPECTED]
            producer.flush(timeout=30)
            for future in futures:
                future.get(timeout=30)
        finally:
            producer.close(timeout=10)
        assert _landed(broker, "kp", 3) == EXPECTED


def test_confluent_kafka_idempotent_producer_lands_exactly_once() -> None:
    from confluent_kafka import Producer

    with running_broker() as broker:
        create_topic(broker, "ck", partitions=3)
        producer = Producer(
            {
                "bootstrap.servers": f"127.0.0.1:{broker.port}",
                "enable.idempotence": True,
                "linger.ms": 5,
            }
        )
        errors: list[Any] = []
        delivered: list[bytes] = []

        def report(err: Any, msg: Any) -> None:
            if err is not None:
                errors.append(err)
            else:
                delivered.append(msg.value())

        for key, value in EXPECTED:
            producer.produce("ck", key=key, value=value, on_delivery=report)
        assert producer.flush(30) == 0
        assert errors == []
        assert len(delivered) == 100
        assert _landed(broker, "ck", 3) == EXPECTED

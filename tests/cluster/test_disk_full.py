"""T14, disk full (../shared/FAULTS.md): a broker whose log directory is a small tmpfs
runs out of space under acks=all produces. Each refused append answers
KAFKA_STORAGE_ERROR and acknowledges nothing; the broker keeps serving; once the
filesystem grows, appends go on at the next offset; and after a restart the log holds
exactly the acknowledged records, byte for byte. Needs root (it mounts the tmpfs)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from millpond.testing import broker
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.fetch_request import FetchPartition, FetchRequest, FetchTopic
from millpond.wire.generated.api.produce_request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from millpond.wire.records import NewRecord, build_batch, iter_batches
from tests.broker.harness import Client

RECORD = 16 * 1024
PER_BATCH = 4
#: Enough batches to fill the 6 MiB tmpfs several times over.
MAX_BATCHES = 400


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def _values(batch: int) -> list[bytes]:
    return [bytes([batch % 251, i]) * (RECORD // 2) for i in range(PER_BATCH)]


def _produce(client: Client, batch: int) -> tuple[int, int]:
    records = build_batch([NewRecord(value=v) for v in _values(batch)])
    request = ProduceRequest(
        acks=-1,
        timeout_ms=10_000,
        topic_data=[
            TopicProduceData(
                name="t", partition_data=[PartitionProduceData(index=0, records=records)]
            )
        ],
    )
    _, response = client.request(request, 9)
    [part] = response.responses[0].partition_responses
    return part.error_code, part.base_offset


def _read_all(client: Client) -> list[bytes]:
    values: list[bytes] = []
    while True:
        request = FetchRequest(
            replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=8 << 20, session_id=0,
            session_epoch=-1,
            topics=[FetchTopic(topic="t", partitions=[
                FetchPartition(partition=0, fetch_offset=len(values), partition_max_bytes=8 << 20)
            ])],
        )  # fmt: skip
        _, response = client.request(request, 12)
        [part] = response.responses[0].partitions
        assert part.error_code == 0, part
        if not part.records:
            return values
        for batch in iter_batches(memoryview(part.records)):
            values += [r.value or b"" for r in batch.records() if r.offset >= len(values)]


def test_a_full_disk_refuses_appends_acknowledges_nothing_and_loses_nothing(
    small_disk: Path,
) -> None:
    data = small_disk / "data"
    configs = {"log.segment.bytes": 1 << 20}
    acked: list[int] = []  # batch numbers, in offset order
    refusals: list[int] = []
    with broker(data_dir=str(data), configs=configs) as running:
        running.create_topic("t")
        client = Client(int(running.bootstrap_servers.rsplit(":", 1)[1]))
        try:
            for batch in range(MAX_BATCHES):
                code, offset = _produce(client, batch)
                if code == ErrorCode.NONE:
                    assert offset == len(acked) * PER_BATCH, "an offset skipped or reused"
                    acked.append(batch)
                else:
                    assert code == ErrorCode.KAFKA_STORAGE_ERROR, code
                    refusals.append(batch)
                    if len(refusals) == 3:
                        break
            assert len(refusals) == 3, "the disk never filled"
            assert _read_all(client) == [v for b in acked for v in _values(b)]
            # More room: the same log takes appends again, at the next offset.
            subprocess.run(["mount", "-o", "remount,size=24m", str(small_disk)], check=True)
            for batch in range(MAX_BATCHES, MAX_BATCHES + 5):
                code, offset = _produce(client, batch)
                assert (code, offset) == (ErrorCode.NONE, len(acked) * PER_BATCH)
                acked.append(batch)
        finally:
            client.close()
    with broker(data_dir=str(data), configs=configs) as restarted:
        client = Client(int(restarted.bootstrap_servers.rsplit(":", 1)[1]))
        try:
            assert _read_all(client) == [v for b in acked for v in _values(b)]
        finally:
            client.close()

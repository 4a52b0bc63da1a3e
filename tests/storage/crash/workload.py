"""The crash harness's workload, shared by the writer process and the checks: which
partitions, which configuration, and the exact bytes of every batch, so the checker
knows what a log must hold without being told by the writer."""

from __future__ import annotations

import hashlib
import random

from millpond.storage.clock import Clock
from millpond.storage.config import LogConfig
from millpond.storage.fs import FileSystem, join
from millpond.storage.log_manager import LogManager
from millpond.wire.records import NewRecord, build_batch

T0 = 1_700_000_000_000
EPOCH = 5
CLUSTER_ID = "crash-harness"
NODE_ID = 1
TOPIC_ID = bytes(range(1, 17))
LOG_DIRS = ("d1", "d2")
PARTITIONS: tuple[tuple[str, int], ...] = (("a", 0), ("a", 1), ("b", 0))
#: Tiny segments and dense index entries, so rolls and index appends happen all the time.
CONFIG = LogConfig(segment_bytes=2048, index_interval_bytes=256)
STEPS = 160


def open_manager(fs: FileSystem, data: str, clock: Clock, seed: int = 0) -> LogManager:
    """The harness's log manager over the data directory ``data`` (the writer's, and the
    checker's when it reopens what the writer left)."""
    return LogManager(
        fs, [join(data, d) for d in LOG_DIRS], clock, cluster_id=CLUSTER_ID, node_id=NODE_ID,
        default_config=CONFIG, rng=random.Random(seed),  # noqa: S311
    )  # fmt: skip


def records(partition: int, seq: int) -> list[NewRecord]:
    """The records of batch ``seq`` of partition index ``partition`` (deterministic)."""
    digest = hashlib.blake2b(f"{partition}/{seq}".encode(), digest_size=16).digest()
    count = 1 + digest[0] % 4
    out = []
    for i in range(count):
        size = 10 + (digest[1 + i] * 7 + i) % 290
        value = (digest * (size // 16 + 1))[:size]
        out.append(NewRecord(key=bytes([i]), value=value, timestamp=T0 + seq * 10 + i))
    return out


def batch_bytes(partition: int, seq: int, base_offset: int = 0, epoch: int = -1) -> bytearray:
    """Batch ``seq`` as the writer appends it (``base_offset`` 0, no epoch) or, with the
    offset and epoch the log stamps into it, exactly as the log must hold it."""
    return bytearray(
        build_batch(records(partition, seq), base_offset=base_offset, partition_leader_epoch=epoch)
    )


def record_count(partition: int, seq: int) -> int:
    return len(records(partition, seq))

"""What the embedded broker's helpers do to a running broker: create a topic, read what
a topic holds. Plain functions that touch the broker's state, so they must run on the
event loop that owns it (the embedded wrappers see to that)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from millpond.controller.replication_control import CreatableTopic
from millpond.wire.errors import ErrorCode
from millpond.wire.records import iter_batches

if TYPE_CHECKING:
    from millpond.broker.node import Broker

#: Bytes read from a log at a time.
_READ_CHUNK = 1 << 20


class TopicError(Exception):
    """A helper's request the broker refused; the message says what and why."""


@dataclass(frozen=True)
class StoredRecord:
    """One record as the topic holds it (below the high watermark)."""

    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


def create_topic(
    broker: Broker,
    name: str,
    partitions: int = 1,
    configs: Mapping[str, str] | None = None,
) -> None:
    topic = CreatableTopic(name, partitions, 1, configs=dict(configs or {}))
    [result] = broker.controller.create_topics([topic]).response
    if result.error.code != ErrorCode.NONE:
        reason = result.error.message or ErrorCode(result.error.code).name
        raise TopicError(f"cannot create topic {name!r}: {reason}")


def read_records(broker: Broker, topic: str, partition: int | None = None) -> list[StoredRecord]:
    """Every data record of ``topic`` (or of one partition), partition by partition in
    offset order; control records (transaction markers) are left out."""
    image = broker.image.topic(topic)
    if image is None:
        raise TopicError(f"topic {topic!r} does not exist; create it first")
    if partition is not None and partition not in image.partitions:
        count = len(image.partitions)
        raise TopicError(f"topic {topic!r} has no partition {partition} (it has {count})")
    chosen = sorted(image.partitions) if partition is None else [partition]
    out: list[StoredRecord] = []
    for index in chosen:
        log = broker.replicas.log(image, index)
        if log is None:
            continue
        offset, end = log.log_start_offset, log.high_watermark
        while offset < end:
            data = log.read(offset, _READ_CHUNK, max_offset=end).records.read()
            if not data:
                break
            for batch in iter_batches(data):
                offset = batch.last_offset + 1
                if batch.is_control:
                    continue
                out.extend(
                    StoredRecord(index, r.offset, r.timestamp, r.key, r.value, list(r.headers))
                    for r in batch.records()
                    if r.offset >= log.log_start_offset
                )
    return out

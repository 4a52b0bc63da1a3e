"""Produce (key 0), advertised v0-13, served v3-13 (KAFKA-18659: Kafka 4 advertises
v0-2 for old librdkafka, which stops compressing otherwise, and refuses them).

Behaviour, as Apache Kafka 4.4:
- ``acks`` must be -1, 0 or 1 (else INVALID_REQUIRED_ACKS for every partition);
  ``acks=0`` gets no response at all. A single node is its partitions' whole ISR, so
  ``acks=all`` is satisfied when the leader has appended.
- Topics by name (v3-12) or by id (v13+); unknown ones get UNKNOWN_TOPIC_OR_PARTITION or
  UNKNOWN_TOPIC_ID, unknown partitions UNKNOWN_TOPIC_OR_PARTITION.
- Records: magic 2 batches only (v3+), base offset 0 in every batch, CRC-32C checked,
  each batch within ``max.message.bytes``; the broker rewrites the base offset and
  leader epoch (and timestamps for LogAppendTime topics) without decoding records.
  Errors: INVALID_RECORD, CORRUPT_MESSAGE, MESSAGE_TOO_LARGE.
- Idempotence (per producer and partition, :mod:`millpond.broker.producer_state`):
  epochs are fenced (INVALID_PRODUCER_EPOCH), sequences must follow on
  (OUT_OF_ORDER_SEQUENCE_NUMBER; a producer the partition does not know may start
  anywhere), and a retry of one of the producer's last 5 batches appends nothing and is
  answered NONE with the original base offset (and, as Kafka does, the original batch's
  timestamp as the log append time). Control batches and producer-id batches without a
  sequence: INVALID_RECORD; a non-transactional batch inside an open transaction:
  INVALID_TXN_STATE. The state survives restarts (snapshots and a log replay).
- The answer carries the base offset, the log append time (-1 for CreateTime topics)
  and the log start offset.
- Not yet: transactions (the coordinator, AddPartitionsToTxn verification, markers),
  producer-state expiry on a timer, INVALID_TIMESTAMP checks, keyless records on
  compacted topics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.controller.image import TopicImage
from millpond.wire import DecodeError
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.produce_request import PartitionProduceData, ProduceRequest
from millpond.wire.generated.api.produce_response import (
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)
from millpond.wire.records import RecordBatch, iter_batches

if TYPE_CHECKING:
    from millpond.broker.node import Broker


def handle(broker: Broker, ctx: RequestContext, request: ProduceRequest) -> ProduceResponse | None:
    acks_valid = request.acks in (-1, 0, 1)
    by_id = ctx.api_version >= 13
    responses = []
    for topic_data in request.topic_data:
        image = broker.image
        topic = image.topic_by_id(topic_data.topic_id) if by_id else image.topic(topic_data.name)
        missing = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        partitions = [
            _produce_partition(broker, topic, p, missing)
            if acks_valid
            else _failed(p.index, ErrorCode.INVALID_REQUIRED_ACKS)
            for p in topic_data.partition_data
        ]
        responses.append(
            TopicProduceResponse(
                name=topic_data.name, topic_id=topic_data.topic_id, partition_responses=partitions
            )
        )
    if request.acks == 0:
        return None
    return ProduceResponse(responses=responses)


def _failed(index: int, code: ErrorCode, message: str | None = None) -> PartitionProduceResponse:
    return PartitionProduceResponse(
        index=index, error_code=code, base_offset=-1, log_start_offset=-1, error_message=message
    )


def _produce_partition(
    broker: Broker, topic: TopicImage | None, data: PartitionProduceData, missing: ErrorCode
) -> PartitionProduceResponse:
    if topic is None:
        return _failed(data.index, missing)
    if data.index not in topic.partitions:
        return _failed(data.index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if data.records is None:
        return _failed(data.index, ErrorCode.INVALID_RECORD, "no records in the partition data")
    records = memoryview(data.records)
    batches = _magic_2_batches(records)
    if batches is None:
        # Kafka sends no error_message for these, nor for oversized or corrupt batches
        # (checked against the real broker by compat_tests/test_differential.py).
        return _failed(data.index, ErrorCode.INVALID_RECORD)
    if any(batch.base_offset != 0 for batch in batches):
        # Refused when the log validates the batch: the answer carries its log start.
        log = broker.replicas.log(topic, data.index)
        failed = _failed(data.index, ErrorCode.INVALID_RECORD)
        failed.log_start_offset = -1 if log is None else log.log_start_offset
        return failed
    result = broker.replicas.append(topic, data.index, records)
    if result.info is None:
        quiet = result.error in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.CORRUPT_MESSAGE)
        return _failed(data.index, result.error, None if quiet else result.message)
    info = result.info
    return PartitionProduceResponse(
        index=data.index,
        error_code=ErrorCode.NONE,
        base_offset=info.first_offset,
        log_append_time_ms=info.log_append_time,
        log_start_offset=info.log_start_offset,
    )


def _magic_2_batches(records: memoryview) -> list[RecordBatch] | None:
    """The batches, or None for what Kafka's produce request validation refuses with
    INVALID_RECORD: anything but magic 2 batches, or no batch at all."""
    try:
        return list(iter_batches(records)) or None
    except DecodeError:
        return None

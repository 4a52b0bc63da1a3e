"""Produce (key 0), advertised v0-13, served v3-13 (KAFKA-18659: Kafka 4 advertises
v0-2 for old librdkafka, which stops compressing otherwise, and refuses them).

Behaviour, as Apache Kafka 4.4:
- ``acks`` must be -1, 0 or 1 (else INVALID_REQUIRED_ACKS for every partition);
  ``acks=0`` gets no response at all. ``acks=all`` first needs an ISR of at least the
  partition's effective ``min.insync.replicas`` (capped at its replica count, so a
  single-replica partition always has it; else NOT_ENOUGH_REPLICAS, nothing written),
  then waits in the purgatory until the high watermark covers every appended
  partition, at most ``timeout_ms`` (then REQUEST_TIMED_OUT for those still waiting,
  their base offsets kept; NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank below
  the minimum meanwhile). A single node is its partitions' whole ISR: the high
  watermark covers an append as soon as it is written, and nothing waits.
- Topics by name (v3-12) or by id (v13+); unknown ones get UNKNOWN_TOPIC_OR_PARTITION or
  UNKNOWN_TOPIC_ID, unknown partitions UNKNOWN_TOPIC_OR_PARTITION.
- Records: magic 2 batches only (v3+), base offset 0 in every batch, CRC-32C checked,
  each batch within ``max.message.bytes``; the broker rewrites the base offset and
  leader epoch (and timestamps for LogAppendTime topics) without decoding records.
  Errors: INVALID_RECORD, CORRUPT_MESSAGE, MESSAGE_TOO_LARGE. A write the disk refuses
  (full, failing) is undone and answered KAFKA_STORAGE_ERROR, nothing acknowledged (the
  log goes offline only if even the undo fails); appends go on once there is room.
  Kafka instead takes the whole log directory offline.
- Idempotence (per producer and partition, :mod:`millpond.storage.producer_state`):
  epochs are fenced (INVALID_PRODUCER_EPOCH), sequences must follow on
  (OUT_OF_ORDER_SEQUENCE_NUMBER; a producer the partition does not know may start
  anywhere), and a retry of one of the producer's last 5 batches appends nothing and is
  answered NONE with the original base offset (and, as Kafka does, the original batch's
  timestamp as the log append time). Control batches and producer-id batches without a
  sequence: INVALID_RECORD; a non-transactional batch inside an open transaction:
  INVALID_TXN_STATE. The state survives restarts (snapshots and a log replay).
- The answer carries the base offset, the log append time (-1 for CreateTime topics)
  and the log start offset.
- Not yet: transactions (the coordinator, AddPartitionsToTxn verification, markers).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import TYPE_CHECKING

from millpond.broker import purgatory_timer
from millpond.broker.context import RequestContext
from millpond.broker.partition import ACKS_ALL, Partition
from millpond.broker.purgatory import DelayedOperation
from millpond.controller.image import TopicImage
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.produce_request import PartitionProduceData, ProduceRequest
from millpond.wire.generated.api.produce_response import (
    PartitionProduceResponse,
    ProduceResponse,
    TopicProduceResponse,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer
    from millpond.broker.replica_manager import ReplicaManager


class _Pending:
    """One appended partition of an ``acks=all`` produce, until the high watermark
    covers ``required_offset``."""

    __slots__ = ("min_isr", "partition", "required_offset", "response")

    def __init__(
        self, partition: Partition, required: int, min_isr: int, response: PartitionProduceResponse
    ) -> None:
        self.partition = partition
        self.required_offset = required
        self.min_isr = min_isr
        self.response = response


class DelayedProduce(DelayedOperation):
    """An ``acks=all`` produce waiting for its partitions' high watermarks (Kafka's
    ``DelayedProduce``): it completes when every one covers its append, or at
    ``timeout_ms`` with REQUEST_TIMED_OUT for those still short."""

    __slots__ = ("_replicas", "pending")

    def __init__(self, timeout_ms: int, pending: list[_Pending], replicas: ReplicaManager) -> None:
        super().__init__(timeout_ms)
        self.pending = pending
        self._replicas = replicas

    def try_complete(self) -> bool:
        still: list[_Pending] = []
        for wait in self.pending:
            partition = wait.partition
            if not self._replicas.is_open(partition.topic, partition.index):
                wait.response.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
                continue
            reached, code = partition.acks_all_reached(wait.required_offset, wait.min_isr)
            if not reached:
                still.append(wait)
            elif code != ErrorCode.NONE:
                wait.response.error_code = code
        self.pending = still
        return not still

    def on_complete(self, expired: bool) -> None:
        if expired:
            for wait in self.pending:
                wait.response.error_code = ErrorCode.REQUEST_TIMED_OUT


def handle(
    broker: BrokerServer, ctx: RequestContext, request: ProduceRequest
) -> ProduceResponse | Awaitable[ProduceResponse] | None:
    acks = request.acks
    acks_valid = acks in (-1, 0, 1)
    by_id = ctx.api_version >= 13
    responses = []
    pending: list[_Pending] = []
    for topic_data in request.topic_data:
        image = broker.image
        topic = image.topic_by_id(topic_data.topic_id) if by_id else image.topic(topic_data.name)
        missing = ErrorCode.UNKNOWN_TOPIC_ID if by_id else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        partitions = [
            _produce_partition(broker, topic, p, missing, acks, pending)
            if acks_valid
            else _failed(p.index, ErrorCode.INVALID_REQUIRED_ACKS)
            for p in topic_data.partition_data
        ]
        responses.append(
            TopicProduceResponse(
                name=topic_data.name, topic_id=topic_data.topic_id, partition_responses=partitions
            )
        )
    if acks == 0:
        return None
    response = ProduceResponse(responses=responses)
    if not pending:
        return response
    delayed = DelayedProduce(request.timeout_ms, pending, broker.replicas)
    if delayed.try_complete():  # the usual case: the high watermark already covers it
        return response
    return _wait(broker.replicas, delayed, response)


async def _wait(
    replicas: ReplicaManager, delayed: DelayedProduce, response: ProduceResponse
) -> ProduceResponse:
    keys = [(w.partition.topic, w.partition.index) for w in delayed.pending]
    await purgatory_timer.wait(replicas.delayed_produces, delayed, keys)
    return response


def _failed(index: int, code: ErrorCode, message: str | None = None) -> PartitionProduceResponse:
    return PartitionProduceResponse(
        index=index, error_code=code, base_offset=-1, log_start_offset=-1, error_message=message
    )


def _produce_partition(
    broker: BrokerServer,
    topic: TopicImage | None,
    data: PartitionProduceData,
    missing: ErrorCode,
    acks: int,
    pending: list[_Pending],
) -> PartitionProduceResponse:
    if topic is None:
        return _failed(data.index, missing)
    if data.index not in topic.partitions:
        return _failed(data.index, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if data.records is None:
        return _failed(data.index, ErrorCode.INVALID_RECORD, "no records in the partition data")
    replicas = broker.replicas
    result = replicas.append(topic, data.index, memoryview(data.records), acks=acks)
    info = result.info
    if info is None:
        quiet = result.error in (ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.CORRUPT_MESSAGE)
        failed = _failed(data.index, result.error, None if quiet else result.message)
        failed.log_start_offset = result.log_start_offset
        return failed
    response = PartitionProduceResponse(
        index=data.index,
        error_code=ErrorCode.NONE,
        base_offset=info.first_offset,
        log_append_time_ms=info.log_append_time,
        log_start_offset=info.log_start_offset,
    )
    partition = result.partition
    if acks == ACKS_ALL and partition is not None:
        required = info.last_offset + 1
        # Committed with the whole ISR of replicas: nothing to wait for, nothing to check.
        if partition.high_watermark < required or len(partition.isr) < len(partition.replicas):
            min_isr = replicas.min_insync_replicas(topic.name)
            pending.append(_Pending(partition, required, min_isr, response))
    return response

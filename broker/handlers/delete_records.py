"""DeleteRecords (key 21), v0-2: move partitions' log start offsets forward.

Behaviour, as Apache Kafka 4.4:
- Per partition: the requested offset becomes the log start offset (records below it
  are no longer served; segments wholly below it go at the next retention pass). -1
  means the high watermark. The answer's low watermark is the new log start offset
  (one replica: no wait for followers).
- Errors (low watermark -1): a missing topic or partition UNKNOWN_TOPIC_OR_PARTITION;
  an internal topic INVALID_TOPIC_EXCEPTION; a compact-only topic POLICY_VIOLATION;
  an offset past the high watermark (or negative other than -1) OFFSET_OUT_OF_RANGE;
  a partition led elsewhere NOT_LEADER_OR_FOLLOWER; an offline log KAFKA_STORAGE_ERROR.
- An offset at or below the current log start changes nothing and answers it.

Version notes: v1 changes only throttling; v2 is flexible. Not implemented:
authorization. Results are grouped per topic in request order (Kafka's order is a
hash map's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.broker.handlers.metadata import INTERNAL_TOPICS
from millpond.storage.log_types import OffsetOutOfRangeError
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.delete_records_request import DeleteRecordsRequest
from millpond.wire.generated.api.delete_records_response import (
    DeleteRecordsPartitionResult,
    DeleteRecordsResponse,
    DeleteRecordsTopicResult,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer

HIGH_WATERMARK = -1
INVALID_LOW_WATERMARK = -1


def handle(
    broker: BrokerServer, ctx: RequestContext, request: DeleteRecordsRequest
) -> DeleteRecordsResponse:
    by_topic: dict[str, list[DeleteRecordsPartitionResult]] = {}
    for t in request.topics:
        results = by_topic.setdefault(t.name, [])
        for p in t.partitions:
            code, low = _delete(broker, t.name, p.partition_index, p.offset)
            results.append(
                DeleteRecordsPartitionResult(
                    partition_index=p.partition_index, low_watermark=low, error_code=code
                )
            )
    return DeleteRecordsResponse(
        topics=[
            DeleteRecordsTopicResult(name=name, partitions=parts)
            for name, parts in by_topic.items()
        ]
    )


def _delete(broker: BrokerServer, name: str, partition: int, offset: int) -> tuple[ErrorCode, int]:
    topic = broker.image.topic(name)
    if topic is None or partition not in topic.partitions:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, INVALID_LOW_WATERMARK
    if name in INTERNAL_TOPICS:
        return ErrorCode.INVALID_TOPIC_EXCEPTION, INVALID_LOW_WATERMARK
    try:
        led = broker.replicas.partition(topic, partition)
        if led is None:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER, INVALID_LOW_WATERMARK
        if led.compacted_only:
            return ErrorCode.POLICY_VIOLATION, INVALID_LOW_WATERMARK
        target = led.high_watermark if offset == HIGH_WATERMARK else offset
        if target < 0:
            return ErrorCode.OFFSET_OUT_OF_RANGE, INVALID_LOW_WATERMARK
        return ErrorCode.NONE, led.delete_records_before(target)
    except OffsetOutOfRangeError:
        return ErrorCode.OFFSET_OUT_OF_RANGE, INVALID_LOW_WATERMARK
    except OSError:
        return ErrorCode.KAFKA_STORAGE_ERROR, INVALID_LOW_WATERMARK

"""DescribeProducers (key 61), v0: the active idempotent/transactional producers of
partitions.

Behaviour, as Apache Kafka 4.4:
- Per partition asked for: every producer in the partition's producer state (id,
  epoch, last sequence, last timestamp, coordinator epoch, and the first offset of its
  open transaction or -1), from the partition's producer state.
- An illegal topic name is INVALID_TOPIC_EXCEPTION and a missing topic
  UNKNOWN_TOPIC_OR_PARTITION for each of its partitions; a missing partition is
  UNKNOWN_TOPIC_OR_PARTITION; a partition led elsewhere NOT_LEADER_OR_FOLLOWER.

Not implemented: authorization.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.controller.replication_control import validate_topic_name
from millpond.controller.results import ApiError
from millpond.storage.producer_state import ProducerStateManager
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.describe_producers_request import DescribeProducersRequest
from millpond.wire.generated.api.describe_producers_response import (
    DescribeProducersResponse,
    PartitionResponse,
    ProducerState,
    TopicResponse,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer


def handle(
    broker: BrokerServer, ctx: RequestContext, request: DescribeProducersRequest
) -> DescribeProducersResponse:
    topics = []
    for t in request.topics:
        topic = broker.image.topic(t.name)
        error = validate_topic_name(t.name)
        if error.is_success and topic is None:
            # Kafka explains a missing topic (not a missing partition of a topic it has).
            code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            error = ApiError(code, code.message)
        partitions = []
        for index in t.partition_indexes:
            answer = PartitionResponse(
                partition_index=index, error_code=error.code, error_message=error.message
            )
            if topic is not None and error.is_success:
                if index not in topic.partitions:
                    answer.error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    partition = broker.replicas.partition(topic, index)
                    if partition is None:
                        answer.error_code = ErrorCode.NOT_LEADER_OR_FOLLOWER
                    else:
                        answer.active_producers = _active(partition.producers)
            partitions.append(answer)
        topics.append(TopicResponse(name=t.name, partitions=partitions))
    return DescribeProducersResponse(topics=topics)


def _active(state: ProducerStateManager) -> list[ProducerState]:
    return [
        ProducerState(
            producer_id=pid,
            producer_epoch=e.producer_epoch,
            last_sequence=e.last_seq,
            last_timestamp=e.last_timestamp,
            coordinator_epoch=e.coordinator_epoch,
            current_txn_start_offset=-1
            if e.current_txn_first_offset is None
            else e.current_txn_first_offset,
        )
        for pid, e in sorted(state.active_producers.items())
    ]

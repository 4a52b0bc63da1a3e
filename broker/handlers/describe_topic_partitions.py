"""DescribeTopicPartitions (key 75), v0: topics and partitions, paged.

Behaviour, as Apache Kafka 4.4:
- Topics: those asked for, or every topic for an empty list; sorted by name, starting
  at the cursor's topic (and, in that topic, at the cursor's partition). Asking for
  topics without the cursor's topic among them, or a negative cursor partition, fails
  the whole request with INVALID_REQUEST (each asked topic gets the error).
- At most ``response_partition_limit`` partitions (capped by
  ``max.request.partition.size.limit``, at least 1) are listed; when a topic does not
  fit, ``next_cursor`` names where to go on (a topic that fits no partition at all
  starts there at partition 0).
- A topic asked for by name that does not exist: UNKNOWN_TOPIC_OR_PARTITION, or
  INVALID_TOPIC_EXCEPTION for an illegal name (left out when listing all).
- Partitions: leader, leader epoch, replicas, ISR, empty ELR lists, offline replicas.
- ``topic_authorized_operations``: with no authorizer Kafka grants every TOPIC
  operation, and the bitfield says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.broker.handlers.describe_configs import broker_config
from millpond.broker.handlers.metadata import INTERNAL_TOPICS
from millpond.controller.replication_control import validate_topic_name
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.describe_topic_partitions_request import (
    DescribeTopicPartitionsRequest,
)
from millpond.wire.generated.api.describe_topic_partitions_response import (
    Cursor,
    DescribeTopicPartitionsResponse,
    DescribeTopicPartitionsResponsePartition,
    DescribeTopicPartitionsResponseTopic,
)
from millpond.wire.primitives import ZERO_UUID

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer

# Kafka's AclOperation codes a TOPIC supports: READ, WRITE, CREATE, DELETE, ALTER,
# DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS.
TOPIC_OPERATIONS = sum(1 << op for op in (3, 4, 5, 6, 7, 8, 10, 11))


def handle(
    broker: BrokerServer, ctx: RequestContext, request: DescribeTopicPartitionsRequest
) -> DescribeTopicPartitionsResponse:
    image = broker.image
    cursor = request.cursor
    start_topic = cursor.topic_name if cursor is not None else ""
    every = not request.topics
    names = image.topic_ids_by_name if every else {t.name for t in request.topics}
    chosen = sorted(n for n in names if n >= start_topic)
    if (cursor is not None and not every and cursor.topic_name not in chosen) or (
        cursor is not None and cursor.partition_index < 0
    ):
        return DescribeTopicPartitionsResponse(
            topics=[
                DescribeTopicPartitionsResponseTopic(
                    error_code=ErrorCode.INVALID_REQUEST, name=t.name, partitions=[]
                )
                for t in request.topics
            ]
        )
    limit = broker_config(broker).get("max.request.partition.size.limit")
    assert isinstance(limit, int)
    remaining = max(min(limit, request.response_partition_limit), 1)
    response = DescribeTopicPartitionsResponse()
    for name in chosen:
        if remaining == 0:
            response.next_cursor = Cursor(topic_name=name, partition_index=0)
            break
        topic = image.topic(name)
        if topic is None:
            if not every:
                error = validate_topic_name(name)
                code = error.code if error.is_failure else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                response.topics.append(
                    DescribeTopicPartitionsResponseTopic(
                        error_code=code,
                        name=name,
                        topic_id=ZERO_UUID,
                        is_internal=name in INTERNAL_TOPICS,
                        topic_authorized_operations=TOPIC_OPERATIONS,
                    )
                )
            continue
        first = cursor.partition_index if cursor is not None and name == start_topic else 0
        upper = min(len(topic.partitions), first + remaining)
        partitions = [
            DescribeTopicPartitionsResponsePartition(
                error_code=ErrorCode.NONE,
                partition_index=i,
                leader_id=p.leader,
                leader_epoch=p.leader_epoch,
                replica_nodes=list(p.replicas),
                isr_nodes=list(p.isr),
                eligible_leader_replicas=[],
                last_known_elr=[],
                offline_replicas=[],
            )
            for i in range(first, upper)
            if (p := topic.partitions.get(i)) is not None
        ]
        response.topics.append(
            DescribeTopicPartitionsResponseTopic(
                error_code=ErrorCode.NONE,
                name=name,
                topic_id=topic.topic_id,
                is_internal=name in INTERNAL_TOPICS,
                partitions=partitions,
                topic_authorized_operations=TOPIC_OPERATIONS,
            )
        )
        if upper < len(topic.partitions):
            response.next_cursor = Cursor(topic_name=name, partition_index=upper)
            break
        remaining -= len(partitions)
    return response

"""CreatePartitions (key 37), v0-3: more partitions for existing topics.

Behaviour, as Apache Kafka 4.4 (its controller path):
- One result per topic, always (tansu found clients that need the results array).
- A topic named twice is INVALID_REQUEST "Duplicate topic name." (one result).
- A missing topic is UNKNOWN_TOPIC_OR_PARTITION; a count that does not grow the topic
  is INVALID_PARTITIONS; manual assignments must cover exactly the new partitions, with
  the topic's replication factor and registered brokers (INVALID_REPLICA_ASSIGNMENT);
  too few brokers for the replication factor is INVALID_REPLICATION_FACTOR.
- ``validate_only`` checks and creates nothing. New partitions' logs are created at
  once (Kafka's broker creates them when it sees the new partition records).

Version notes: v1 changes only throttling; v2 is flexible; v3 changes only quota
errors (KIP-599). Not implemented: authorization, the controller mutation quota.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.controller.replication_control import CreatePartitionsTopic
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.create_partitions_request import CreatePartitionsRequest
from millpond.wire.generated.api.create_partitions_response import (
    CreatePartitionsResponse,
    CreatePartitionsTopicResult,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer


async def handle(
    broker: BrokerServer, ctx: RequestContext, request: CreatePartitionsRequest
) -> CreatePartitionsResponse:
    counts: dict[str, int] = {}
    for t in request.topics:
        counts[t.name] = counts.get(t.name, 0) + 1
    results = [
        CreatePartitionsTopicResult(
            name=name, error_code=ErrorCode.INVALID_REQUEST, error_message="Duplicate topic name."
        )
        for name, n in counts.items()
        if n > 1
    ]
    topics = [
        CreatePartitionsTopic(
            name=t.name,
            count=t.count,
            assignments=None
            if t.assignments is None
            else [tuple(a.broker_ids) for a in t.assignments],
        )
        for t in request.topics
        if counts[t.name] == 1
    ]
    outcome = await broker.admin_channel.create_partitions(
        topics, validate_only=request.validate_only
    )
    for r in outcome:
        results.append(
            CreatePartitionsTopicResult(
                name=r.name, error_code=r.error.code, error_message=r.error.message
            )
        )
    return CreatePartitionsResponse(results=results)

"""CreateTopics (key 19), v2-7: new topics through the controller.

Behaviour, as Apache Kafka 4.4 (its controller path):
- Each topic: the name is checked (INVALID_TOPIC_EXCEPTION), then existence
  (TOPIC_ALREADY_EXISTS), then a '.'/'_' clash, then the shape: partition count and
  replication factor (-1 means ``num.partitions`` / ``default.replication.factor``), or
  an explicit assignment (which needs both set to -1). A replication factor above the
  number of usable brokers is INVALID_REPLICATION_FACTOR, as Kafka's placer says it.
  Configs last: unknown keys and bad values are INVALID_CONFIG.
- A name given more than once is INVALID_REQUEST "Duplicate topic name." for that name
  (one result), and creating ``__cluster_metadata`` is refused with INVALID_REQUEST.
- ``validate_only`` checks everything and creates nothing.
- v5+: a created (or validated) topic reports its partition count, replication factor
  and every topic config with its effective value and source, sorted by name; v7 adds
  the topic id.

Version notes: v2-4 are the classic layout; v5 is flexible and adds the counts and
configs (KIP-525); v6 only changes quota errors (KIP-599); v7 adds topic ids (KIP-516).
Not implemented: authorization (everything is allowed), the controller mutation quota,
CreateTopicPolicy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.broker.config import ConfigError
from millpond.broker.context import RequestContext
from millpond.broker.handlers.describe_configs import topic_entries
from millpond.controller.replication_control import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreateTopicResult,
)
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.create_topics_request import CreateTopicsRequest
from millpond.wire.generated.api.create_topics_response import (
    CreatableTopicConfigs,
    CreatableTopicResult,
    CreateTopicsResponse,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer

METADATA_TOPIC = "__cluster_metadata"


async def handle(
    broker: BrokerServer, ctx: RequestContext, request: CreateTopicsRequest
) -> CreateTopicsResponse:
    topics: list[CreatableTopic] = []
    refused: list[CreatableTopicResult] = []
    for t in request.topics:
        if t.name == METADATA_TOPIC:
            if not any(r.name == METADATA_TOPIC for r in refused):
                refused.append(
                    CreatableTopicResult(
                        name=t.name,
                        error_code=ErrorCode.INVALID_REQUEST,
                        error_message=f"Creation of internal topic {METADATA_TOPIC} is prohibited.",
                    )
                )
            continue
        topics.append(
            CreatableTopic(
                name=t.name,
                num_partitions=t.num_partitions,
                replication_factor=t.replication_factor,
                assignments=[
                    CreatableReplicaAssignment(a.partition_index, tuple(a.broker_ids))
                    for a in t.assignments
                ],
                configs={c.name: c.value for c in t.configs},
            )
        )
    results = await broker.admin_channel.create_topics(topics, validate_only=request.validate_only)
    answers = [_result(broker, ctx.api_version, r) for r in results]
    return CreateTopicsResponse(topics=answers + refused)


def _result(broker: BrokerServer, version: int, result: CreateTopicResult) -> CreatableTopicResult:
    answer = CreatableTopicResult(
        name=result.name,
        error_code=result.error.code,
        error_message=result.error.message,
    )
    if result.error.is_failure:
        return answer
    answer.topic_id = result.topic_id
    if version >= 5:
        answer.num_partitions = result.num_partitions
        answer.replication_factor = result.replication_factor
        try:
            entries = topic_entries(broker, result.configs, None, False, False)
        except ConfigError:  # accepted by the controller, unknown to the describer
            entries = []
        answer.configs = [
            CreatableTopicConfigs(
                name=e.name,
                value=e.value,
                read_only=e.read_only,
                config_source=int(e.source),
                is_sensitive=e.is_sensitive,
            )
            for e in sorted(entries, key=lambda e: e.name)
        ]
    return answer

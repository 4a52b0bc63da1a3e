"""Metadata (key 3), v0-13: brokers, controller, topics and their partitions.

Behaviour, as Apache Kafka 4.4:
- Brokers: every unfenced broker of the image with its endpoint on the request's listener; the
  controller id is this node (combined mode), so kafkajs finds it among the brokers.
- Topics: v0 sends all topics for an empty list; v1+ all for null, none for empty.
  v10+ carry topic ids; v12+ may ask by id (unknown id: UNKNOWN_TOPIC_ID, name null).
- Auto-creation: a missing topic asked for by name is created when the request allows
  it (v4+ ``allow_auto_topic_creation``, always before) and ``auto.create.topics.enable``
  is on; like Kafka 4.4 (KRaft), that answer says UNKNOWN_TOPIC_OR_PARTITION with no
  partitions and the client asks again. An illegal name gets INVALID_TOPIC_EXCEPTION;
  creation off gets UNKNOWN_TOPIC_OR_PARTITION.
- Partitions: leader, leader epoch (v7+), replicas, ISR, offline replicas (v5+).
- Not implemented: authorized-operations bitfields (no authorizer yet: left at their
  "not requested" default); rack ids.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from millpond.broker.context import RequestContext
from millpond.controller.image import MetadataImage, TopicImage
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.metadata_request import MetadataRequest
from millpond.wire.generated.api.metadata_response import (
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from millpond.wire.primitives import ZERO_UUID

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


def handle(
    broker: BrokerServer, ctx: RequestContext, request: MetadataRequest
) -> MetadataResponse | Coroutine[Any, Any, MetadataResponse]:
    image = broker.image
    version = ctx.api_version
    missing: list[tuple[int, str]] = []
    if request.topics is None or (version == 0 and not request.topics):
        topics = [describe_topic(t) for t in _all_topics(image)]
    else:
        allow_create = request.allow_auto_topic_creation if version >= 4 else True
        topics = []
        for wanted in request.topics:
            # A topic id, when given, wins over the name (Kafka looks such topics up by id
            # even when a client also sends a name; found by test_differential.py).
            if version >= 12 and (wanted.name is None or wanted.topic_id != ZERO_UUID):
                found = image.topic_by_id(wanted.topic_id)
                topics.append(
                    describe_topic(found)
                    if found is not None
                    else MetadataResponseTopic(
                        error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=wanted.topic_id
                    )
                )
                continue
            name = wanted.name or ""
            topic = image.topic(name)
            if topic is not None:
                topics.append(describe_topic(topic))
            elif allow_create and broker.auto_create_topics:
                missing.append((len(topics), name))
                topics.append(_unknown(name))
            else:
                topics.append(_unknown(name))
    if missing:
        return _created(broker, ctx, topics, missing)
    return _response(broker, ctx, image, topics)


def _response(
    broker: BrokerServer,
    ctx: RequestContext,
    image: MetadataImage,
    topics: list[MetadataResponseTopic],
) -> MetadataResponse:
    host, port = broker.advertised_on(ctx.listener)
    brokers = [
        MetadataResponseBroker(node_id=b.broker_id, host=e.host, port=e.port, rack=b.rack)
        for b in image.brokers.values()
        if not b.fenced
        if (e := b.endpoint(ctx.listener.name)) is not None
    ] or [MetadataResponseBroker(node_id=broker.node_id, host=host, port=port)]
    return MetadataResponse(
        brokers=brokers,
        cluster_id=image.cluster_id,
        controller_id=broker.node_id,
        topics=topics,
    )


def _unknown(name: str) -> MetadataResponseTopic:
    return MetadataResponseTopic(
        error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name, topic_id=ZERO_UUID
    )


async def _created(
    broker: BrokerServer,
    ctx: RequestContext,
    topics: list[MetadataResponseTopic],
    missing: list[tuple[int, str]],
) -> MetadataResponse:
    """Auto-creation: the missing topics go to the controller together; the answer waits
    for its result. Kafka 4.4 (KRaft) answers a topic whose creation it has just
    requested UNKNOWN_TOPIC_OR_PARTITION, as for any failure (checked against the real
    broker by compat_tests/test_differential.py), and the client asks again; only an
    illegal name is INVALID_TOPIC_EXCEPTION."""
    from millpond.controller.replication_control import CreatableTopic  # noqa: PLC0415

    names = list(dict.fromkeys(name for _, name in missing))
    results = await broker.controller_channel.create_topics([CreatableTopic(n) for n in names])
    invalid = {r.name for r in results if r.error.code == ErrorCode.INVALID_TOPIC_EXCEPTION}
    for index, name in missing:
        if name in invalid:
            topics[index].error_code = ErrorCode.INVALID_TOPIC_EXCEPTION
    return _response(broker, ctx, broker.image, topics)


def _all_topics(image: MetadataImage) -> list[TopicImage]:
    return sorted(image.topics_by_id.values(), key=lambda t: t.name)


def describe_topic(topic: TopicImage) -> MetadataResponseTopic:
    partitions = [
        MetadataResponsePartition(
            error_code=ErrorCode.NONE,
            partition_index=index,
            leader_id=p.leader,
            leader_epoch=p.leader_epoch,
            replica_nodes=list(p.replicas),
            isr_nodes=list(p.isr),
            offline_replicas=[],
        )
        for index, p in sorted(topic.partitions.items())
    ]
    return MetadataResponseTopic(
        error_code=ErrorCode.NONE,
        name=topic.name,
        topic_id=topic.topic_id,
        is_internal=topic.name in INTERNAL_TOPICS,
        partitions=partitions,
    )

"""FindCoordinator (key 10), v0-6: which broker coordinates a group or a transaction.

Behaviour, as Apache Kafka 4.4:
- v0-3 ask for one key (``key_type`` from v1), v4+ for many (``coordinator_keys``), each
  answered in ``coordinators``.
- Key type 0 (group): the leader of the group's ``__consumer_offsets`` partition, on the
  listener the request came in on; a group lookup creates the topic first, as Kafka's
  does. COORDINATOR_NOT_AVAILABLE (retriable) while the topic is not in this broker's
  metadata yet or the partition has no leader reachable on that listener.
- Key type 1 (transaction): this node. The transaction coordinator arrives later (until
  then InitProducerId answers transactional ids COORDINATOR_NOT_AVAILABLE); serving the
  lookup already matters: librdkafka enables features such as LZ4 only when
  FindCoordinator is advertised.
- Key type 2 (share group): COORDINATOR_NOT_AVAILABLE, retriable, until share groups
  exist.
- Any other key type: INVALID_REQUEST.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.broker.groups.placement import OFFSETS_TOPIC
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.find_coordinator_request import FindCoordinatorRequest
from millpond.wire.generated.api.find_coordinator_response import (
    Coordinator,
    FindCoordinatorResponse,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer

GROUP, TRANSACTION, SHARE = 0, 1, 2
BATCHED_VERSION = 4


async def _lookup(
    broker: BrokerServer, ctx: RequestContext, key: str, key_type: int
) -> Coordinator:
    if key_type == GROUP:
        await broker.groups.ensure_topic()
        return _group_coordinator(broker, ctx, key)
    if key_type == TRANSACTION:
        host, port = broker.advertised_on(ctx.listener)
        return Coordinator(key=key, node_id=broker.node_id, host=host, port=port)
    if key_type == SHARE:
        code, message = ErrorCode.COORDINATOR_NOT_AVAILABLE, "no coordinator of this type yet"
    else:
        code, message = ErrorCode.INVALID_REQUEST, f"Unknown coordinator type: {key_type}"
    return Coordinator(
        key=key, node_id=-1, host="", port=-1, error_code=code, error_message=message
    )


def _group_coordinator(broker: BrokerServer, ctx: RequestContext, key: str) -> Coordinator:
    topic = broker.image.topic(OFFSETS_TOPIC)
    registration = None if topic is None else topic.partitions.get(broker.groups.partition(key))
    leader = -1 if registration is None else registration.leader
    if leader == broker.node_id:
        host, port = broker.advertised_on(ctx.listener)
        return Coordinator(key=key, node_id=leader, host=host, port=port)
    registered = broker.image.brokers.get(leader)
    endpoint = None if registered is None else registered.endpoint(ctx.listener.name)
    if endpoint is not None:
        return Coordinator(key=key, node_id=leader, host=endpoint.host, port=endpoint.port)
    return Coordinator(
        key=key, node_id=-1, host="", port=-1,
        error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
        error_message=f"{OFFSETS_TOPIC} has no leader for this group yet: retry",
    )  # fmt: skip


async def handle(
    broker: BrokerServer, ctx: RequestContext, request: FindCoordinatorRequest
) -> FindCoordinatorResponse:
    key_type = request.key_type if ctx.api_version >= 1 else GROUP
    if ctx.api_version >= BATCHED_VERSION:
        return FindCoordinatorResponse(
            coordinators=[
                await _lookup(broker, ctx, key, key_type) for key in request.coordinator_keys
            ]
        )
    found = await _lookup(broker, ctx, request.key, key_type)
    return FindCoordinatorResponse(
        error_code=found.error_code,
        # v1-3: Kafka names the code even on success ("NONE"), checked by test_differential.
        error_message=(found.error_message or "NONE") if ctx.api_version >= 1 else None,
        node_id=found.node_id,
        host=found.host,
        port=found.port,
    )

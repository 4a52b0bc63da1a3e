"""DescribeCluster (key 60), v0-2: the cluster id, the controller and the brokers.

Behaviour, as Apache Kafka 4.4 (a broker listener):
- Brokers: every unfenced registered broker with its first endpoint (v2 with
  ``include_fenced_brokers``: fenced ones too, flagged ``is_fenced``); the controller
  id is a live broker's (this node: combined mode), or -1 when it is not listed.
- ``endpoint_type`` (v1+) must be 1 (brokers): 2 (controllers) is
  MISMATCHED_ENDPOINT_TYPE, anything else UNSUPPORTED_ENDPOINT_TYPE (INVALID_REQUEST
  for v0); the answer says endpoint type 1.
- ``include_cluster_authorized_operations``: with no authorizer, Kafka grants every
  CLUSTER operation; the bitfield says so. Otherwise it keeps its "not requested" value.

On a controller listener, as Kafka's controller: ``endpoint_type`` must be 2 (else
MISMATCHED_ENDPOINT_TYPE); the answer lists the quorum's voters with their controller
listener, and the controller id is the quorum's leader.
DescribeCluster v0 has no endpoint type and is refused there (UNSUPPORTED_VERSION).

Version notes: v1 adds endpoint_type (KIP-919); v2 adds fenced brokers (KIP-1073).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.describe_cluster_request import DescribeClusterRequest
from millpond.wire.generated.api.describe_cluster_response import (
    DescribeClusterBroker,
    DescribeClusterResponse,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer

BROKERS, CONTROLLERS = 1, 2
# Kafka's AclOperation codes a CLUSTER supports: CREATE, ALTER, DESCRIBE, CLUSTER_ACTION,
# DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE.
CLUSTER_OPERATIONS = sum(1 << op for op in (5, 7, 8, 9, 10, 11, 12))


def handle(
    broker: BrokerServer, ctx: RequestContext, request: DescribeClusterRequest
) -> DescribeClusterResponse:
    version = ctx.api_version
    wanted = request.endpoint_type if version >= 1 else BROKERS
    if wanted not in (BROKERS, CONTROLLERS):
        code = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE if version >= 1 else ErrorCode.INVALID_REQUEST
        return DescribeClusterResponse(
            error_code=code, error_message=f"Unsupported endpoint type {wanted}"
        )
    if ctx.listener.controller:
        return _controllers(broker, ctx, request, wanted)
    if wanted != BROKERS:
        code = ErrorCode.MISMATCHED_ENDPOINT_TYPE if version >= 1 else ErrorCode.INVALID_REQUEST
        return DescribeClusterResponse(
            error_code=code,
            error_message="The request was sent to an endpoint of type BROKER, but we wanted "
            "an endpoint of type CONTROLLER",
        )
    fenced_too = version >= 2 and request.include_fenced_brokers
    brokers = [
        DescribeClusterBroker(
            broker_id=b.broker_id,
            host=e.host,
            port=e.port,
            rack=b.rack,
            is_fenced=b.fenced,
        )
        for b in sorted(broker.image.brokers.values(), key=lambda b: b.broker_id)
        if fenced_too or not b.fenced
        if (e := b.endpoint(ctx.listener.name)) is not None
    ]
    listed = {b.broker_id for b in brokers if not b.is_fenced}
    response = DescribeClusterResponse(
        endpoint_type=BROKERS,
        cluster_id=broker.cluster_id,
        controller_id=broker.node_id if broker.node_id in listed else -1,
        brokers=brokers,
    )
    if request.include_cluster_authorized_operations:
        response.cluster_authorized_operations = CLUSTER_OPERATIONS
    return response


def _controllers(
    broker: BrokerServer, ctx: RequestContext, request: DescribeClusterRequest, wanted: int
) -> DescribeClusterResponse:
    quorum = broker.quorum
    if ctx.api_version < 1 or quorum is None:
        return DescribeClusterResponse(
            error_code=ErrorCode.UNSUPPORTED_VERSION,
            error_message="DescribeCluster v0 cannot ask a controller for controllers",
        )
    if wanted != CONTROLLERS:
        return DescribeClusterResponse(
            error_code=ErrorCode.MISMATCHED_ENDPOINT_TYPE,
            error_message="The request was sent to an endpoint of type CONTROLLER, but we "
            "wanted an endpoint of type BROKER",
        )
    controllers = [
        DescribeClusterBroker(broker_id=node_id, host=found.host, port=found.port)
        for node_id, endpoints in sorted(quorum.voter_endpoints().items())
        if (found := next((e for e in endpoints if e.listener == ctx.listener.name), None))
    ]
    response = DescribeClusterResponse(
        endpoint_type=CONTROLLERS,
        cluster_id=broker.cluster_id,
        controller_id=quorum.quorum_leader_id,
        brokers=controllers,
    )
    if request.include_cluster_authorized_operations:
        response.cluster_authorized_operations = CLUSTER_OPERATIONS
    return response

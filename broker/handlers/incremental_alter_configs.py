"""IncrementalAlterConfigs (key 44), v0-1: change single keys of a topic's or a broker's
dynamic configs.

Behaviour, as Apache Kafka 4.4 (the broker's checks, then its controller's; shared with
AlterConfigs in :mod:`~millpond.broker.handlers.alter_configs`):
- Operations per key: SET (0), DELETE (1), APPEND (2) and SUBTRACT (3); the last two
  only on LIST configs (else INVALID_CONFIG "Can't APPEND to key ... because its type
  is not LIST."); an unknown operation id is UNKNOWN_SERVER_ERROR with no message, as
  Kafka's broker answers it (its controller would say INVALID_REQUEST).
- A null value is refused except for DELETE; a key twice, a resource twice, a broker
  name other than "" or this node's id, or a static broker config are INVALID_REQUEST;
  a missing topic is UNKNOWN_TOPIC_OR_PARTITION; a topic config set that does not
  validate after the change is INVALID_CONFIG.
- ``validate_only`` checks and changes nothing. The answer waits for the commit, by
  which the broker's metadata publisher has applied a topic's new configs to its open
  logs.

Version notes: v1 is flexible. Not implemented: authorization, AlterConfigPolicy,
BROKER_LOGGER (log levels), GROUP and CLIENT_METRICS resources (INVALID_REQUEST);
a dynamic broker config is stored (and described) but, apart from the replication
throttles (``leader.replication.throttled.rate``, ``follower.replication.throttled.rate``),
not acted on yet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.broker.handlers.alter_configs import alter
from millpond.controller.config_control import AlterableConfig, AlterConfigsResource
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.incremental_alter_configs_request import (
    IncrementalAlterConfigsRequest,
)
from millpond.wire.generated.api.incremental_alter_configs_response import (
    AlterConfigsResourceResponse,
    IncrementalAlterConfigsResponse,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer


async def handle(
    broker: BrokerServer, ctx: RequestContext, request: IncrementalAlterConfigsRequest
) -> IncrementalAlterConfigsResponse:
    resources = [
        AlterConfigsResource(
            r.resource_type,
            r.resource_name,
            [AlterableConfig(c.name, c.config_operation, c.value) for c in r.configs],
        )
        for r in request.resources
    ]
    outcomes = await alter(
        broker, ctx, resources, validate_only=request.validate_only, incremental=True
    )
    responses = []
    for resource, o in zip(request.resources, outcomes, strict=True):
        code, message = o.error.code, o.error.message
        if any(c.config_operation not in KNOWN_OPERATIONS for c in resource.configs):
            # Kafka 4.4's broker fails on an operation id it does not know before its
            # controller sees it: UNKNOWN_SERVER_ERROR without a message (checked against
            # the real broker by compat_tests/test_differential.py). Nothing changes.
            code, message = ErrorCode.UNKNOWN_SERVER_ERROR, None
        responses.append(
            AlterConfigsResourceResponse(
                error_code=code,
                error_message=message,
                resource_type=o.resource_type,
                resource_name=o.resource_name,
            )
        )
    return IncrementalAlterConfigsResponse(responses=responses)


KNOWN_OPERATIONS = frozenset({0, 1, 2, 3})  # SET, DELETE, APPEND, SUBTRACT

"""IncrementalAlterConfigs (key 44), v0-1: change single keys of a topic's or a broker's
dynamic configs.

Behaviour, as Apache Kafka 4.4 (the broker's checks, then its controller's; shared with
AlterConfigs in :mod:`~millpond.broker.handlers.alter_configs`):
- Operations per key: SET (0), DELETE (1), APPEND (2) and SUBTRACT (3); the last two
  only on LIST configs (else INVALID_CONFIG "Can't APPEND to key ... because its type
  is not LIST."), and an unknown operation is INVALID_REQUEST.
- A null value is refused except for DELETE; a key twice, a resource twice, a broker
  name other than "" or this node's id, or a static broker config are INVALID_REQUEST;
  a missing topic is UNKNOWN_TOPIC_OR_PARTITION; a topic config set that does not
  validate after the change is INVALID_CONFIG.
- ``validate_only`` checks and changes nothing. A topic's new configs apply to its open
  logs at once.

Version notes: v1 is flexible. Not implemented: authorization, AlterConfigPolicy,
BROKER_LOGGER (log levels), GROUP and CLIENT_METRICS resources (INVALID_REQUEST);
a dynamic broker config is stored (and described) but not acted on yet.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.broker.dispatch import Route
from millpond.broker.handlers.alter_configs import alter
from millpond.controller.config_control import AlterableConfig, AlterConfigsResource
from millpond.wire.generated.api.incremental_alter_configs_request import (
    IncrementalAlterConfigsRequest,
)
from millpond.wire.generated.api.incremental_alter_configs_response import (
    AlterConfigsResourceResponse,
    IncrementalAlterConfigsResponse,
)

if TYPE_CHECKING:
    from millpond.broker.node import Broker


def handle(
    broker: Broker, ctx: RequestContext, request: IncrementalAlterConfigsRequest
) -> IncrementalAlterConfigsResponse:
    resources = [
        AlterConfigsResource(
            r.resource_type,
            r.resource_name,
            [AlterableConfig(c.name, c.config_operation, c.value) for c in r.configs],
        )
        for r in request.resources
    ]
    outcomes = alter(broker, resources, validate_only=request.validate_only, incremental=True)
    return IncrementalAlterConfigsResponse(
        responses=[
            AlterConfigsResourceResponse(
                error_code=o.error.code,
                error_message=o.error.message,
                resource_type=o.resource_type,
                resource_name=o.resource_name,
            )
            for o in outcomes
        ]
    )


ROUTE = Route(44, 0, 1, handle)

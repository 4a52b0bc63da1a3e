"""AlterConfigs (key 33), v0-2: replace a topic's or a broker's dynamic configs.

Behaviour, as Apache Kafka 4.4 (the broker's checks, then its controller's):
- Each resource's configs become its whole set: keys left out are deleted.
- Checked on the broker first, per resource: a resource listed twice is INVALID_REQUEST
  "Each resource must appear at most once." (both entries); a key listed twice or a
  null value is INVALID_REQUEST; a BROKER resource must be "" (cluster default) or this
  node's id, may set only dynamic broker configs ("Cannot update these configs
  dynamically: ..."), and its values must parse; other resource types than TOPIC and
  BROKER are "Unknown resource type" (INVALID_REQUEST).
- Then the controller: a missing topic is UNKNOWN_TOPIC_OR_PARTITION; topic configs
  with an unknown key or a bad value are INVALID_CONFIG.
- ``validate_only`` checks and changes nothing. The answer waits for the ConfigRecords
  to commit; the broker's metadata publisher has then applied a topic's new configs to
  its open logs.

Version notes: v1 changes only throttling; v2 is flexible.
Not implemented: authorization, AlterConfigPolicy; a dynamic broker config is stored
(and described) but the running broker does not act on it yet.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from millpond.broker.config_defs import (
    BROKER_CONFIGS,
    DYNAMIC_ONLY_BROKER_CONFIGS,
    ConfigError,
    parse_value,
)
from millpond.broker.context import RequestContext
from millpond.controller.config_control import AlterableConfig, AlterConfigsResource
from millpond.controller.image import ConfigResource, ConfigResourceType
from millpond.controller.results import NO_ERROR, ApiError
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.alter_configs_request import AlterConfigsRequest
from millpond.wire.generated.api.alter_configs_response import (
    AlterConfigsResourceResponse,
    AlterConfigsResponse,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer

_INTEGER = re.compile(r"[+-]?[0-9]+")
_DELETE = 1


@dataclass(frozen=True, slots=True)
class Outcome:
    resource_type: int
    resource_name: str
    error: ApiError


async def alter(
    broker: BrokerServer,
    ctx: RequestContext,
    resources: Sequence[AlterConfigsResource],
    *,
    validate_only: bool,
    incremental: bool,
) -> list[Outcome]:
    """The broker's checks, then the controller's, for AlterConfigs (``incremental``
    False: ops ignored) or IncrementalAlterConfigs; one outcome per resource, in order.
    A broker listener takes only its own node's broker resource (clients send each
    broker's to that broker); a controller listener, which also answers what brokers
    forward, takes any broker's."""
    own_id = None if ctx.listener.controller else broker.node_id
    keys = [(r.resource_type, r.resource_name) for r in resources]
    refused: dict[int, ApiError] = {}
    for i, resource in enumerate(resources):
        if keys.count(keys[i]) > 1:
            refused[i] = ApiError(
                ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."
            )
        else:
            error = _check(own_id, resource, incremental)
            if error.is_failure:
                refused[i] = error
    passed = [r for i, r in enumerate(resources) if i not in refused]
    outcome = await broker.admin_channel.alter_configs(
        passed, validate_only=validate_only, incremental=incremental
    )
    return [
        Outcome(
            r.resource_type,
            r.resource_name,
            refused.get(i) or outcome[ConfigResource(r.resource_type, r.resource_name)],
        )
        for i, r in enumerate(resources)
    ]


def _check(own_id: int | None, resource: AlterConfigsResource, incremental: bool) -> ApiError:
    names = [c.name for c in resource.configs]
    if len(names) != len(set(names)):
        return ApiError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    nulls = [
        c.name for c in resource.configs if c.value is None and (not incremental or c.op != _DELETE)
    ]
    if nulls:
        return ApiError(
            ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(nulls)
        )
    if resource.resource_type == ConfigResourceType.TOPIC:
        return NO_ERROR
    if resource.resource_type != ConfigResourceType.BROKER:
        return ApiError(
            ErrorCode.INVALID_REQUEST, f"Unknown resource type {resource.resource_type}"
        )
    name = resource.resource_name
    if name:
        if _INTEGER.fullmatch(name) is None:
            return ApiError(
                ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}"
            )
        if own_id is not None and int(name) != own_id:
            return ApiError(
                ErrorCode.INVALID_REQUEST,
                f"Unexpected broker id, expected {own_id}, but received {name}",
            )
    if incremental and any(c.op not in (0, 1, 2, 3) for c in resource.configs):
        op = next(c.op for c in resource.configs if c.op not in (0, 1, 2, 3))
        return ApiError(ErrorCode.INVALID_REQUEST, f"Unknown operations type {op}")
    changed = [c for c in resource.configs if not (incremental and c.op == _DELETE)]
    static = [
        c.name for c in changed if c.name in BROKER_CONFIGS and not BROKER_CONFIGS[c.name].dynamic
    ]
    if static:
        return ApiError(
            ErrorCode.INVALID_REQUEST,
            f"Cannot update these configs dynamically: Set({', '.join(static)})",
        )
    for c in changed:
        definition = BROKER_CONFIGS.get(c.name) or DYNAMIC_ONLY_BROKER_CONFIGS.get(c.name)
        if definition is not None and c.value is not None:
            try:
                parse_value(definition, c.value)
            except ConfigError as exc:
                return ApiError(ErrorCode.INVALID_REQUEST, str(exc))
    return NO_ERROR


async def handle(
    broker: BrokerServer, ctx: RequestContext, request: AlterConfigsRequest
) -> AlterConfigsResponse:
    resources = [
        AlterConfigsResource(
            r.resource_type,
            r.resource_name,
            [AlterableConfig(c.name, 0, c.value) for c in r.configs],
        )
        for r in request.resources
    ]
    outcomes = await alter(
        broker, ctx, resources, validate_only=request.validate_only, incremental=False
    )
    return AlterConfigsResponse(
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

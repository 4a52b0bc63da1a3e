"""ListConfigResources (key 74), v0-1: the resources that may hold dynamic configs.

Behaviour, as Apache Kafka 4.4 (KIP-1142; v0 was ListClientMetricsResources, KIP-714):
- The types a version lists: v0 only CLIENT_METRICS; v1 TOPIC, BROKER, BROKER_LOGGER,
  CLIENT_METRICS and GROUP. An empty ``resource_types`` means all of them; any type
  outside them fails the whole request with UNSUPPORTED_VERSION and no resources.
- What each type lists, in Kafka's order of types (groups, client metrics, broker
  loggers, brokers, topics), each type once however often it is asked for: the groups
  and client-metrics subscriptions that have configs; every unfenced broker's id, once
  as a broker logger and once as a broker; every topic (internal ones too).
- v1 answers carry each resource's type; v0 answers only names.

Kafka lists topics in hash order; they come sorted by name here (clients treat the list
as a set). Not implemented: authorization (Kafka asks DESCRIBE_CONFIGS on the cluster).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.controller.image import ConfigResourceType
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.list_config_resources_request import ListConfigResourcesRequest
from millpond.wire.generated.api.list_config_resources_response import (
    ConfigResource,
    ListConfigResourcesResponse,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer

#: The types each version lists (Kafka's ListConfigResourcesRequest.supportedResourceTypes).
SUPPORTED: dict[int, frozenset[int]] = {
    0: frozenset({ConfigResourceType.CLIENT_METRICS}),
    1: frozenset(
        {
            ConfigResourceType.TOPIC,
            ConfigResourceType.BROKER,
            ConfigResourceType.BROKER_LOGGER,
            ConfigResourceType.CLIENT_METRICS,
            ConfigResourceType.GROUP,
        }
    ),
}


def handle(
    broker: BrokerServer, ctx: RequestContext, request: ListConfigResourcesRequest
) -> ListConfigResourcesResponse:
    supported = SUPPORTED[min(ctx.api_version, 1)]
    wanted = set(request.resource_types) or supported
    if not wanted <= supported:
        return ListConfigResourcesResponse(error_code=ErrorCode.UNSUPPORTED_VERSION)
    image = broker.image
    found: list[ConfigResource] = []

    def add(kind: int, names: list[str]) -> None:
        if kind in wanted:
            found.extend(ConfigResource(resource_name=n, resource_type=kind) for n in names)

    def with_configs(kind: int) -> list[str]:
        return sorted(r.name for r, configs in image.configs.items() if r.type == kind and configs)

    brokers = [str(i) for i, b in sorted(image.brokers.items()) if not b.fenced]
    add(ConfigResourceType.GROUP, with_configs(ConfigResourceType.GROUP))
    add(ConfigResourceType.CLIENT_METRICS, with_configs(ConfigResourceType.CLIENT_METRICS))
    add(ConfigResourceType.BROKER_LOGGER, brokers)
    add(ConfigResourceType.BROKER, brokers)
    add(ConfigResourceType.TOPIC, sorted(image.topic_ids_by_name))
    return ListConfigResourcesResponse(config_resources=found)

"""DescribeConfigs (key 32), v1-4: the configs of topics and of this broker.

Behaviour, as Apache Kafka 4.4:
- TOPIC (2): every topic config with its effective value: the topic's own value
  (TOPIC_CONFIG), else the broker's synonyms (dynamic per-broker, dynamic cluster
  default, static), else the default. A bad name is INVALID_TOPIC_EXCEPTION, a missing
  topic UNKNOWN_TOPIC_OR_PARTITION (an empty message).
- BROKER (4): named by this node's id, every broker config with its value, source,
  synonyms, type and documentation (dynamic values from the metadata image first);
  named "" (the cluster default), only the dynamic cluster-wide values set. A
  non-integral name or another broker's id is INVALID_REQUEST with Kafka's message.
- BROKER_LOGGER (8): the id is checked as Kafka checks it; millpond has no loggers to
  report, so the list is empty. GROUP (32) and CLIENT_METRICS (16) are not
  implemented (INVALID_REQUEST per resource). Any other type fails the whole request
  with INVALID_REQUEST, as Kafka does.
- ``configuration_keys`` (null or empty: all) filters; unknown names are left out.
  Synonyms only with ``include_synonyms``; documentation only with
  ``include_documentation`` (v3+). Sensitive values are null.

Version notes: v1 adds synonyms and config_source; v2 is the same; v3 adds the config
type and documentation (KIP-569); v4 is flexible.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from millpond.broker.config import BrokerConfig
from millpond.broker.config_defs import TOPIC_SYNONYMS, ConfigError, ConfigSource
from millpond.broker.config_defs_describe import ConfigEntry, describe, describe_topic
from millpond.broker.context import RequestContext
from millpond.controller.image import ConfigResource, ConfigResourceType
from millpond.controller.replication_control import validate_topic_name
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.describe_configs_request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from millpond.wire.generated.api.describe_configs_response import (
    DescribeConfigsResponse,
    DescribeConfigsResult,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer

_INTEGER = re.compile(r"[+-]?[0-9]+")
_DYNAMIC = (ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
_KNOWN_TYPES = frozenset(int(t) for t in ConfigResourceType if t != ConfigResourceType.UNKNOWN)


class _Refused(Exception):
    def __init__(self, code: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def broker_config(broker: BrokerServer) -> BrokerConfig:
    """The broker's configuration (``Broker.config``)."""
    return broker.config


def dynamic_layers(broker: BrokerServer) -> tuple[Mapping[str, str], Mapping[str, str]]:
    """This broker's dynamic configs and the dynamic cluster defaults, from the image."""
    image = broker.image
    per_broker = image.config(ConfigResource(ConfigResourceType.BROKER, str(broker.node_id)))
    return per_broker, image.config(ConfigResource(ConfigResourceType.BROKER, ""))


def handle(
    broker: BrokerServer, ctx: RequestContext, request: DescribeConfigsRequest
) -> DescribeConfigsResponse:
    if any(r.resource_type not in _KNOWN_TYPES for r in request.resources):
        return DescribeConfigsResponse(
            results=[
                DescribeConfigsResult(
                    error_code=ErrorCode.INVALID_REQUEST,
                    error_message=ErrorCode.INVALID_REQUEST.message,
                    resource_type=r.resource_type,
                    resource_name=r.resource_name,
                )
                for r in request.resources
            ]
        )
    documentation = ctx.api_version >= 3 and request.include_documentation
    results = []
    for resource in request.resources:
        result = DescribeConfigsResult(
            resource_type=resource.resource_type, resource_name=resource.resource_name
        )
        try:
            entries = _describe(broker, resource, request.include_synonyms, documentation)
            result.configs = [e.to_wire() for e in entries]
        except _Refused as exc:
            result.error_code = exc.code
            result.error_message = exc.message
        results.append(result)
    return DescribeConfigsResponse(results=results)


def _describe(
    broker: BrokerServer, resource: DescribeConfigsResource, synonyms: bool, documentation: bool
) -> list[ConfigEntry]:
    name = resource.resource_name
    keys = resource.configuration_keys
    dynamic, dynamic_default = dynamic_layers(broker)
    config = broker_config(broker)
    if resource.resource_type == ConfigResourceType.TOPIC:
        error = validate_topic_name(name)
        if error.is_failure:
            raise _Refused(error.code, error.message)
        if broker.image.topic(name) is None:
            raise _Refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "")
        try:
            return topic_entries(
                broker, broker.image.topic_config(name), keys, synonyms, documentation
            )
        except ConfigError as exc:  # a stored value this broker cannot parse
            raise _Refused(ErrorCode.INVALID_CONFIG, str(exc)) from None
    if resource.resource_type == ConfigResourceType.BROKER:
        if not name:
            wanted = [k for k in dynamic_default if not keys or k in keys]
            if not wanted:
                return []
            return describe(
                config, wanted,
                include_synonyms=synonyms, include_documentation=documentation,
                dynamic_default=dynamic_default,
            )  # fmt: skip
        check_broker_id(broker, name)
        return describe(
            config, keys,
            include_synonyms=synonyms, include_documentation=documentation,
            dynamic=dynamic, dynamic_default=dynamic_default,
        )  # fmt: skip
    if resource.resource_type == ConfigResourceType.BROKER_LOGGER:
        if not name:
            raise _Refused(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
        check_broker_id(broker, name, logger=True)
        return []
    kind = ConfigResourceType(resource.resource_type).name
    raise _Refused(ErrorCode.INVALID_REQUEST, f"Resource type {kind} is not supported yet")


def topic_entries(
    broker: BrokerServer,
    own: Mapping[str, str],
    keys: Collection[str] | None,
    synonyms: bool,
    documentation: bool,
) -> list[ConfigEntry]:
    """A topic's configs as DescribeConfigs lists them. A value that comes from a
    dynamic broker config is that config's (in the topic config's unit)."""
    dynamic, dynamic_default = dynamic_layers(broker)
    entries = describe_topic(
        dict(own), broker_config(broker), keys,
        include_synonyms=True, include_documentation=documentation,
        dynamic=dynamic, dynamic_default=dynamic_default,
    )  # fmt: skip
    out = []
    for e in entries:
        if e.source in _DYNAMIC and e.synonyms and not e.is_sensitive:
            first = e.synonyms[0]
            factor = dict(TOPIC_SYNONYMS.get(e.name, ())).get(first.name, 1)
            value = first.value
            if factor != 1 and value is not None and _INTEGER.fullmatch(value.strip()):
                value = str(int(value) * factor)
            e = replace(e, value=value)
        out.append(e if synonyms else replace(e, synonyms=()))
    return out


def check_broker_id(broker: BrokerServer, name: str, *, logger: bool = False) -> None:
    if _INTEGER.fullmatch(name) is None:
        raise _Refused(
            ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}"
        )
    if int(name) != broker.node_id:
        expected = f"{broker.node_id}" if logger else f"{broker.node_id} or empty string,"
        raise _Refused(
            ErrorCode.INVALID_REQUEST,
            f"Unexpected broker id, expected {expected} but received {name}",
        )

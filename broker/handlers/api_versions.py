"""ApiVersions (key 18), v0-5: what this broker serves, and its features.

Behaviour, as Apache Kafka 4.4:
- Every API in the broker's routing table, with the range Kafka 4.4 advertises.
- A request above v5 (a newer client), or above the emulated release's maximum
  (``millpond.emulate``), is answered UNSUPPORTED_VERSION in the v0 body with only
  ApiVersions' own range, so the client retries at a version we know (KIP-511); the
  response header is always v0.
- v3+: ``client_software_name``/``client_software_version`` must match
  ``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?``, else INVALID_REQUEST (librdkafka then
  retries with v0).
- Features: the supported ranges (v3+; a range starting at 0 only from v4, as older
  clients reject one, KAFKA-17492), among them kraft.version 0-1, which a KRaft leader
  checks before it adds this node as a voter. None are reported finalized, which keeps
  Java clients on the transactions-v1 and classic-group paths that millpond serves.

Version notes: v1 adds throttle_time_ms; v3 is flexible and adds the client software
fields and features (KIP-511, KIP-584); v4 allows supported min version 0 (KAFKA-17011);
v5 adds cluster id and node id checks (KIP-1242).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.controller.feature_control import registered_features
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.api_versions_request import ApiVersionsRequest
from millpond.wire.generated.api.api_versions_response import (
    ApiVersion,
    ApiVersionsResponse,
    SupportedFeatureKey,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer

_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def handle(
    broker: BrokerServer, ctx: RequestContext, request: ApiVersionsRequest | None
) -> ApiVersionsResponse:
    if request is None or ctx.unknown_api_versions:
        own = broker.dispatcher_on(ctx.listener).routes[18]
        return ApiVersionsResponse(
            error_code=ErrorCode.UNSUPPORTED_VERSION,
            api_keys=[ApiVersion(api_key=18, min_version=0, max_version=own.max_version)],
        )
    if ctx.api_version >= 3 and not (
        _SOFTWARE.fullmatch(request.client_software_name)
        and _SOFTWARE.fullmatch(request.client_software_version)
    ):
        return ApiVersionsResponse(error_code=ErrorCode.INVALID_REQUEST)
    keys = [
        ApiVersion(api_key=key, min_version=low, max_version=high)
        for key, low, high in broker.dispatcher_on(ctx.listener).advertised()
    ]
    features = [
        SupportedFeatureKey(name=name, min_version=low, max_version=high)
        for name, (low, high) in registered_features().items()
        if ctx.api_version >= 4 or low > 0
    ]
    return ApiVersionsResponse(
        error_code=ErrorCode.NONE, api_keys=keys, supported_features=features
    )

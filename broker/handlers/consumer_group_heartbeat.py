"""ConsumerGroupHeartbeat (key 68), v0-1: the consumer group protocol (KIP-848).

Behaviour, as Apache Kafka 4.4 when ``group.coordinator.rebalance.protocols`` is
``classic``, the only protocol millpond's coordinator implements so far: the API is
advertised, and every heartbeat is answered UNSUPPORTED_VERSION with no message, whatever
the group.
A client configured with ``group.protocol=consumer`` therefore fails at once with a clear
error (librdkafka raises a fatal error, the Java consumer an UnsupportedVersionException)
instead of waiting for a coordinator that never answers: librdkafka treats an API the
broker does not advertise as a coordinator that is not there yet, and retries forever.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.consumer_group_heartbeat_request import (
    ConsumerGroupHeartbeatRequest,
)
from millpond.wire.generated.api.consumer_group_heartbeat_response import (
    ConsumerGroupHeartbeatResponse,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer


def handle(
    broker: BrokerServer, ctx: RequestContext, request: ConsumerGroupHeartbeatRequest
) -> ConsumerGroupHeartbeatResponse:
    del broker, ctx, request
    return ConsumerGroupHeartbeatResponse(error_code=ErrorCode.UNSUPPORTED_VERSION)

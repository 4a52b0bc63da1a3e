"""UnregisterBroker (key 64), v0: drop a broker's registration from the cluster's metadata
(``kafka-cluster unregister --id N``), answered by the active controller, as Kafka 4.4's.

The broker leaves every ISR it is in and its leaderships move, as when it is fenced; then
its registration is gone, so Metadata and DescribeCluster stop listing it. This is how a
broker that is not coming back is removed for good (a broker that starts again with the
id registers anew). BROKER_ID_NOT_REGISTERED when no broker of that id is registered.
Not implemented: authorization (every request is allowed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.wire.generated.api.unregister_broker_request import UnregisterBrokerRequest
from millpond.wire.generated.api.unregister_broker_response import UnregisterBrokerResponse

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer
    from millpond.broker.context import RequestContext
    from millpond.wire import Message


async def handle(
    broker: BrokerServer, ctx: RequestContext, request: UnregisterBrokerRequest
) -> Message:
    error = await broker.admin_channel.unregister_broker(request.broker_id)
    return UnregisterBrokerResponse(error_code=error.code, error_message=error.message)

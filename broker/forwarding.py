"""Where a client's admin request is answered: by the active controller, always.

The admin APIs that change metadata (CreateTopics, DeleteTopics, CreatePartitions,
ElectLeaders, AlterConfigs, IncrementalAlterConfigs, AlterPartitionReassignments,
UpdateFeatures, UnregisterBroker), and ListPartitionReassignments, are the controller's
to answer.

- On a controller listener, this node's controller answers them; while it is not the
  active one it refuses with NOT_CONTROLLER, as Kafka's controller does, and the client
  asks again.
- On a broker listener of a node in a quorum of several, the request goes on to the
  active controller in an Envelope (Kafka's forwarding, KIP-590): the client's request
  frame, principal and address, answered with the controller's response as it is. While
  no controller answers, the client gets REQUEST_TIMED_OUT once ``request.timeout.ms``
  has passed; so it does at once when the controller took the Envelope and did not
  answer within ``controller.quorum.request.timeout.ms``, since it may have applied it.
- DescribeQuorum, which only the quorum's leader answers, goes on to the active
  controller from such a broker listener too.
- On a single node, the controller beside the broker answers directly.
"""

from __future__ import annotations

import inspect
import ipaddress
from typing import TYPE_CHECKING, Any

from millpond.broker.dispatch import CloseConnection, Route
from millpond.broker.error_responses import error_response
from millpond.broker.handlers.envelope import encode_principal
from millpond.controller.results import NotControllerError
from millpond.wire import Message, RequestHeader, decode_response, encode_request
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.envelope_request import EnvelopeRequest
from millpond.wire.generated.api.envelope_response import EnvelopeResponse

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer
    from millpond.broker.context import RequestContext

__all__ = ["ADMIN_APIS", "FORWARDED_APIS", "answered_by_controller", "forwarded"]

#: CreateTopics, DeleteTopics, AlterConfigs, CreatePartitions, ElectLeaders,
#: IncrementalAlterConfigs, AlterPartitionReassignments, ListPartitionReassignments,
#: UpdateFeatures, UnregisterBroker.
ADMIN_APIS = frozenset({19, 20, 33, 37, 43, 44, 45, 46, 57, 64})
#: What a forwarding broker listener sends on: the admin APIs, and DescribeQuorum, which
#: only the quorum's leader answers.
FORWARDED_APIS = ADMIN_APIS | {55}
ENVELOPE = 58


def _refusal(ctx: RequestContext, request: Any, code: int, why: str) -> Message:
    response = error_response(ctx.api_key, ctx.api_version, request, code, why)
    if response is None:
        raise CloseConnection(why)
    return response


def answered_by_controller(route: Route) -> Route:
    """``route`` on a controller listener: NOT_CONTROLLER while this node is not the
    active controller."""
    handler = route.handler

    async def handle(broker: BrokerServer, ctx: RequestContext, request: Any) -> Message | None:
        try:
            answer = handler(broker, ctx, request)
            return await answer if inspect.isawaitable(answer) else answer
        except NotControllerError as exc:
            return _refusal(ctx, request, ErrorCode.NOT_CONTROLLER, str(exc))

    return route._replace(handler=handle)


def forwarded(route: Route) -> Route:
    """``route`` on a broker listener that forwards admin requests."""
    return route._replace(handler=_forward)


def _address(text: str) -> bytes:
    try:
        return ipaddress.ip_address(text).packed
    except ValueError:
        return b""


async def _forward(broker: BrokerServer, ctx: RequestContext, request: Any) -> Message:
    link = broker.controller_link
    assert link is not None
    header = RequestHeader(
        request_api_key=ctx.api_key,
        request_api_version=ctx.api_version,
        correlation_id=ctx.correlation_id,
        client_id=ctx.client_id,
    )
    envelope = EnvelopeRequest(
        request_data=encode_request(header, request),
        request_principal=encode_principal(ctx.principal),
        client_host_address=_address(ctx.client_address),
    )
    timeout_ms = broker.config.get_int("request.timeout.ms", 30_000)
    try:
        answer = await link.send(
            ENVELOPE,
            lambda _version: envelope,
            lambda r: getattr(r, "error_code", 0),
            timeout_ms,
            once_sent=True,
        )
    except ConnectionError as exc:
        return _refusal(ctx, request, ErrorCode.REQUEST_TIMED_OUT, str(exc))
    assert isinstance(answer, EnvelopeResponse)
    if answer.error_code != ErrorCode.NONE or answer.response_data is None:
        code = answer.error_code or ErrorCode.UNKNOWN_SERVER_ERROR
        why = f"the active controller refused the forwarded request: {ErrorCode(code).name}"
        return _refusal(ctx, request, code, why)
    return decode_response(answer.response_data, ctx.api_key, ctx.api_version)[1]

"""Envelope (key 58), v0: a request a broker forwards to the active controller on a
client's behalf (CreateTopics, configs, ...), answered as the controller answers it.

Behaviour, as Apache Kafka 4.4's controller:
- ``request_data`` is the client's request frame, header included; it is served by this
  controller listener's own route for its API, as the forwarding broker's client would
  be served here, under the client's principal (``request_principal``: Kafka's
  version-prefixed DefaultPrincipalData) and address.
- ``response_data`` is the inner response frame, header included, at the inner version.
- A node that is not the active controller answers NOT_CONTROLLER (the forwarding
  broker asks the new one).
- An inner request that cannot be read, an API this listener does not serve, or an
  Envelope inside an Envelope is INVALID_REQUEST (no response data); an unreadable
  principal is PRINCIPAL_DESERIALIZATION_FAILURE.
"""

from __future__ import annotations

import inspect
import ipaddress
from typing import TYPE_CHECKING

from millpond.broker.context import KafkaPrincipal, RequestContext
from millpond.wire import DecodeError, Message, ResponseHeader, decode_request, encode_response
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.envelope_request import EnvelopeRequest
from millpond.wire.generated.api.envelope_response import EnvelopeResponse
from millpond.wire.generated.data.default_principal_data import DefaultPrincipalData

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer

ENVELOPE = 58


#: The DefaultPrincipalData version this node writes.
PRINCIPAL_VERSION = 0


def encode_principal(principal: KafkaPrincipal) -> bytes:
    """A principal as a forwarding broker writes it: the version, then the data."""
    data = DefaultPrincipalData(
        type=principal.principal_type, name=principal.name, token_authenticated=False
    )
    return PRINCIPAL_VERSION.to_bytes(2, "big") + data.encode(PRINCIPAL_VERSION)


def _principal(data: bytes | None) -> KafkaPrincipal | None:
    if not data or len(data) < 2:
        return None
    version = int.from_bytes(data[:2], "big", signed=True)
    if not DefaultPrincipalData.supports(version):
        return None
    try:
        decoded = DefaultPrincipalData.decode(data[2:], version)
    except DecodeError:
        return None
    return KafkaPrincipal(decoded.type, decoded.name)


def _address(data: bytes) -> str:
    try:
        return str(ipaddress.ip_address(bytes(data)))
    except ValueError:
        return ""


async def handle(
    broker: BrokerServer, ctx: RequestContext, request: EnvelopeRequest
) -> EnvelopeResponse:
    quorum = broker.quorum
    if quorum is None or not quorum.is_active_controller:
        return EnvelopeResponse(error_code=ErrorCode.NOT_CONTROLLER)
    principal = _principal(request.request_principal)
    if principal is None:
        return EnvelopeResponse(error_code=ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE)
    try:
        header, body = decode_request(request.request_data)
    except DecodeError:
        return EnvelopeResponse(error_code=ErrorCode.INVALID_REQUEST)
    version = header.request_api_version
    route = broker.listeners.dispatcher(ctx.listener).routes.get(header.request_api_key)
    if (
        route is None
        or header.request_api_key == ENVELOPE
        or not route.min_version <= version <= route.max_version
    ):
        return EnvelopeResponse(error_code=ErrorCode.INVALID_REQUEST)
    inner = RequestContext(
        ctx.connection_id,
        ctx.peer,
        ctx.listener,
        principal,
        _address(request.client_host_address),
    )
    inner.set_header(header)
    answer = route.handler(broker, inner, body)
    if inspect.isawaitable(answer):
        answer = await answer
    if not isinstance(answer, Message):
        return EnvelopeResponse(error_code=ErrorCode.INVALID_REQUEST)  # acks=0 style: none
    frame = encode_response(ResponseHeader(correlation_id=header.correlation_id), answer, version)
    return EnvelopeResponse(response_data=frame)

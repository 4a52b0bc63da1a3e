"""Routing a decoded request to its handler, and turning the outcome into response bytes.

Every API the broker serves is a :class:`Route`: its key, the version range it
advertises (Apache Kafka 4.4's, quirks included, or an older release's under
``millpond.emulate``: :mod:`millpond.broker.emulation`) and its handler. ApiVersions
answers from this table, so what is advertised is exactly what is routed.

A handler takes ``(broker, context, request)`` and returns the response message, an
awaitable of it (long-poll fetches, ``acks=all`` produces), or ``None`` when Kafka
sends no response (``acks=0`` produces). Handlers never raise for a Kafka error:
error codes are response values. An exception out of a handler is a bug: the request
is logged and the connection closed, and nothing else is affected.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from millpond.broker.context import RequestContext
from millpond.wire import (
    APIS,
    DecodeError,
    Message,
    ResponseHeader,
    UnsupportedVersionError,
    decode_request,
    encode_response_parts,
)
from millpond.wire.splice import SplicingWriter

if TYPE_CHECKING:
    from millpond.broker.node import Broker

log = logging.getLogger("millpond.broker")

HandlerResult = Message | Awaitable[Message | None] | None
Handler = Callable[["Broker", RequestContext, Any], HandlerResult]


class Route(NamedTuple):
    api_key: int
    min_version: int
    max_version: int
    handler: Handler
    served_min_version: int | None = None
    """Lowest version actually served when Kafka advertises lower ones it refuses
    (Produce: advertised from v0 for old librdkafka, served from v3; KAFKA-18659)."""

    @property
    def name(self) -> str:
        return APIS[self.api_key].name


class CloseConnection(Exception):  # noqa: N818 (a signal, not an error condition)
    """Raised to the connection: answer nothing more and close (Kafka closes here too)."""


class Dispatcher:
    def __init__(self, routes: Iterable[Route]) -> None:
        self.routes: dict[int, Route] = {}
        for route in routes:
            if route.api_key in self.routes:
                raise ValueError(f"two routes for API key {route.api_key}")
            api = APIS[route.api_key]
            low = route.served_min_version or route.min_version
            if not (api.supports(low) and api.supports(route.max_version)):
                raise ValueError(f"{api.name} {low}-{route.max_version} exceeds the specs")
            self.routes[route.api_key] = route

    def advertised(self) -> list[tuple[int, int, int]]:
        return sorted((r.api_key, r.min_version, r.max_version) for r in self.routes.values())

    def parse(self, frame: memoryview, ctx: RequestContext) -> tuple[Route, Any]:
        """Decode a request frame for a route, or raise :class:`CloseConnection` (after
        one log line saying what and from whom) where Kafka would close too.

        An ApiVersions request above the routed range (unknown to the codecs, or only to
        the emulated release) is *not* refused here: the ApiVersions handler answers it in
        the v0 body (KIP-511)."""
        try:
            header, body = decode_request(frame)
        except UnsupportedVersionError as exc:
            if exc.api_key == 18 and exc.api_version >= 0:
                ctx.set_unknown_api_versions(exc.api_version, exc.correlation_id)
                return self.routes[18], None
            log.warning("closing %s: %s", ctx.peer, exc)
            raise CloseConnection from None
        except DecodeError as exc:
            log.warning("closing %s: malformed request: %s", ctx.peer, exc)
            raise CloseConnection from None
        ctx.set_header(header)
        route = self.routes.get(header.request_api_key)
        version = header.request_api_version
        if route is not None and route.api_key == 18 and version > route.max_version:
            # Known to our codecs, newer than the (emulated) release: as Kafka, KIP-511.
            ctx.unknown_api_versions = True
            return route, None
        if route is None or not (
            (route.served_min_version or route.min_version) <= version <= route.max_version
        ):
            log.warning(
                "closing %s: %s v%d is not served (client %r)",
                ctx.peer,
                APIS[header.request_api_key].name,
                version,
                header.client_id,
            )
            raise CloseConnection
        return route, body

    def encode(self, ctx: RequestContext, response: Message) -> SplicingWriter:
        """The response frame (without its size prefix), fetched records left to splice."""
        header = ResponseHeader(correlation_id=ctx.correlation_id)
        # An ApiVersions request above what we know is answered in its v0 body.
        version = 0 if ctx.unknown_api_versions else ctx.api_version
        return encode_response_parts(header, response, version)

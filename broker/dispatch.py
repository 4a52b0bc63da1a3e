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

Routes are per listener, as Kafka's: a broker listener serves the broker's APIs, a
controller listener (``controller.listener.names``) the controller's, each API's spec
saying where it belongs (``listeners``); a request for an API its listener does not
serve closes the connection, as Kafka closes it. Every request passes one authorization
hook (:mod:`millpond.broker.authorization`) before its handler.
"""

from __future__ import annotations

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
    from millpond.broker.authorization import Authorizer, Narrowed, RequestGuard, Topics
    from millpond.broker.broker_server import BrokerServer


HandlerResult = Message | Awaitable[Message | None] | None
Handler = Callable[["BrokerServer", RequestContext, Any], HandlerResult]


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
    """Raised to the connection: answer nothing more and close (Kafka closes here too),
    logging ``reason`` if given."""

    def __init__(self, reason: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason


def listener_routes(routes: Iterable[Route], controller: bool) -> tuple[Route, ...]:
    """The routes a broker listener (or a controller listener) serves: those whose API
    the specs place there."""
    where = "controller" if controller else "broker"
    return tuple(r for r in routes if where in APIS[r.api_key].listeners)


class Dispatcher:
    """One listener's routes and the authorization hook its requests pass."""

    def __init__(
        self,
        routes: Iterable[Route],
        authorizer: Authorizer | None = None,
        topics: Topics | None = None,
    ) -> None:
        self.routes: dict[int, Route] = {}
        #: None when every request is allowed (the default): nothing to ask per request.
        self._guard: RequestGuard | None = None
        if authorizer is not None:
            # Loaded with the first authorizer: a broker without one never pays for it.
            from millpond.broker.authorization import RequestGuard  # noqa: PLC0415

            self._guard = RequestGuard.of(authorizer, topics)
        #: Whether :meth:`authorize` must be asked (False: it would allow everything).
        self.guarded = self._guard is not None
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
        """Decode a request frame for a route, or raise :class:`CloseConnection` (with
        the reason to log: what and from whom) where Kafka would close too.

        An ApiVersions request above the routed range (unknown to the codecs, or only to
        the emulated release) is *not* refused here: the ApiVersions handler answers it in
        the v0 body (KIP-511)."""
        try:
            header, body = decode_request(frame)
        except UnsupportedVersionError as exc:
            if exc.api_key == 18 and exc.api_version >= 0:
                ctx.set_unknown_api_versions(exc.api_version, exc.correlation_id)
                return self.routes[18], None
            raise CloseConnection(str(exc)) from None
        except DecodeError as exc:
            raise CloseConnection(f"malformed request: {exc}") from None
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
            name = APIS[header.request_api_key].name
            where = f" on listener {ctx.listener.name}" if route is None else ""
            raise CloseConnection(
                f"{name} v{version} is not served{where} (client {header.client_id!r})"
            )
        return route, body

    def authorize(
        self, route: Route, ctx: RequestContext, request: Any
    ) -> Message | Narrowed | None:
        """The authorization hook, asked before every handler when an authorizer is set:
        None to handle the request, a narrowed request (part of it refused, the refusal
        added to its response), else the response that refuses it (Kafka's errors:
        TOPIC_AUTHORIZATION_FAILED per topic, CLUSTER_AUTHORIZATION_FAILED). Raises
        :class:`CloseConnection` for a refusal the API's response cannot carry."""
        assert self._guard is not None
        return self._guard.check(route.api_key, ctx, request)

    def encode(self, ctx: RequestContext, response: Message) -> SplicingWriter:
        """The response frame (without its size prefix), fetched records left to splice."""
        header = ResponseHeader(correlation_id=ctx.correlation_id)
        # An ApiVersions request above what we know is answered in its v0 body.
        version = 0 if ctx.unknown_api_versions else ctx.api_version
        return encode_response_parts(header, response, version)

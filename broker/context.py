"""What a handler knows about the request besides its body: who sent it, on which
connection, at which version."""

from __future__ import annotations

from millpond.wire import RequestHeader


class RequestContext:
    """One request's context; the connection fills it while parsing."""

    __slots__ = (
        "api_key",
        "api_version",
        "client_id",
        "connection_id",
        "correlation_id",
        "peer",
        "unknown_api_versions",
    )

    def __init__(self, connection_id: int, peer: str) -> None:
        self.connection_id = connection_id
        self.peer = peer
        self.api_key = -1
        self.api_version = -1
        self.correlation_id = -1
        self.client_id: str | None = None
        self.unknown_api_versions = False

    def set_header(self, header: RequestHeader) -> None:
        self.api_key = header.request_api_key
        self.api_version = header.request_api_version
        self.correlation_id = header.correlation_id
        self.client_id = header.client_id

    def set_unknown_api_versions(self, version: int, correlation_id: int) -> None:
        """An ApiVersions request newer than we know: answered in the v0 body (KIP-511)."""
        self.api_key = 18
        self.api_version = version
        self.correlation_id = correlation_id
        self.unknown_api_versions = True

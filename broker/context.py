"""What a handler knows about the request besides its body: who sent it (the
authenticated principal, the client's address), on which listener and connection, at
which version.

As in Kafka, every connection arrives on a named listener (``PLAINTEXT``, ``CONTROLLER``:
the names of ``listeners``) with its security protocol, and carries one principal, set
when the connection authenticates. A PLAINTEXT listener authenticates nobody: its
principal is ``User:ANONYMOUS``. SSL and SASL listeners will set a principal of their own.
"""

from __future__ import annotations

from typing import NamedTuple

from millpond.wire import RequestHeader


class KafkaPrincipal(NamedTuple):
    """Who a connection authenticated as: a type (``User``) and a name, written as Kafka
    writes them, ``User:alice``."""

    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"


#: The principal of every connection that did not authenticate (PLAINTEXT), as Kafka's.
ANONYMOUS = KafkaPrincipal("User", "ANONYMOUS")


class ListenerInfo(NamedTuple):
    """The listener a connection came in on: its name in ``listeners`` and its security
    protocol (``listener.security.protocol.map``), and whether it is a controller
    listener (``controller.listener.names``)."""

    name: str
    security_protocol: str = "PLAINTEXT"
    controller: bool = False


#: The listener of a broker built without a config (tests, the embedded broker).
DEFAULT_LISTENER = ListenerInfo("PLAINTEXT")


class RequestContext:
    """One request's context; the connection fills it while parsing."""

    __slots__ = (
        "api_key",
        "api_version",
        "client_address",
        "client_id",
        "connection_id",
        "correlation_id",
        "listener",
        "peer",
        "principal",
        "unknown_api_versions",
    )

    def __init__(
        self,
        connection_id: int,
        peer: str,
        listener: ListenerInfo = DEFAULT_LISTENER,
        principal: KafkaPrincipal = ANONYMOUS,
        client_address: str = "",
    ) -> None:
        self.connection_id = connection_id
        #: ``host:port`` of the client, for log lines.
        self.peer = peer
        #: The listener the request arrived on.
        self.listener = listener
        #: Who the connection authenticated as (``User:ANONYMOUS`` on PLAINTEXT).
        self.principal = principal
        #: The client's host address alone (what Kafka's ACLs match as the host).
        self.client_address = client_address
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

"""Requests from this controller to the other nodes of the quorum, over Kafka's protocol.

One connection per peer, opened on first use and negotiated with ApiVersions (v3, read
as v0 when the peer answers in v0's shape, as KIP-511 has it), so each request goes at
the highest version both sides speak: a millpond controller talks to Apache Kafka's as
to its own kind. Requests to one peer share its connection one at a time (the Raft core
keeps at most one in flight per peer, but may give up on one before the network does).
A connection that fails, or an answer
that does not come within the request timeout, is dropped: the next request opens a
new one, and the core retries on its own schedule.

This is the I/O edge of the Raft driver; asyncio only.
"""

from __future__ import annotations

import asyncio
import logging
import struct
from collections.abc import Callable, Mapping

from millpond.wire import APIS, DecodeError, Message, RequestHeader, decode_response, encode_request
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.api_versions_request import ApiVersionsRequest
from millpond.wire.generated.api.api_versions_response import ApiVersionsResponse

__all__ = ["PeerChannel", "PeerTimeoutError", "PeerUnreachableError", "pick_version"]

_log = logging.getLogger(__name__)
_SIZE = struct.Struct(">i")
API_VERSIONS = 18


class PeerUnreachableError(ConnectionError):
    """No answer from a peer: cannot connect, connection lost, bad answer, or timeout."""


class PeerTimeoutError(PeerUnreachableError):
    """The request went out and no answer came in time: the peer may have acted on it,
    so resending it is safe only for requests that may be applied twice."""


def pick_version(ours: tuple[int, int], theirs: tuple[int, int] | None) -> int | None:
    """The highest version in both ranges, or None if they do not meet."""
    if theirs is None:
        return None
    low, high = max(ours[0], theirs[0]), min(ours[1], theirs[1])
    return high if low <= high else None


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.correlation = 0
        self.versions: dict[int, tuple[int, int]] = {}

    async def roundtrip(self, body: Message, version: int, client_id: str) -> bytes:
        assert body.API_KEY is not None
        self.correlation += 1
        header = RequestHeader(
            request_api_key=body.API_KEY,
            request_api_version=version,
            correlation_id=self.correlation,
            client_id=client_id,
        )
        frame = encode_request(header, body)
        self.writer.write(_SIZE.pack(len(frame)) + frame)
        await self.writer.drain()
        (size,) = _SIZE.unpack(await self.reader.readexactly(4))
        answer = await self.reader.readexactly(size)
        if int.from_bytes(answer[0:4], "big", signed=True) != self.correlation:
            raise DecodeError(f"answer for correlation id {answer[0:4].hex()}, not ours")
        return answer

    def close(self) -> None:
        self.writer.close()


class PeerChannel:
    def __init__(
        self,
        address_of: Callable[[int], tuple[str, int] | None],
        versions: Mapping[int, tuple[int, int]],
        *,
        client_id: str,
        request_timeout_ms: int,
    ) -> None:
        """``address_of(node_id)``: where a peer's controller listener is (None: not
        known yet); ``versions``: the versions this side speaks, by API key."""
        self._address_of = address_of
        self._versions = versions
        self._client_id = client_id
        self._timeout = request_timeout_ms / 1000
        self._connections: dict[int, _Connection] = {}
        self._locks: dict[int, asyncio.Lock] = {}

    async def send(
        self, node_id: int, api_key: int, build: Callable[[int], Message]
    ) -> tuple[Message, int]:
        """Send ``build(version)`` to ``node_id`` at the version both speak; returns the
        answer and that version. :class:`PeerUnreachableError` if no answer comes."""
        name = APIS[api_key].name
        # One exchange at a time per peer, connecting included: a request the core gave up
        # on may still be under way when it sends the next one.
        lock = self._locks.setdefault(node_id, asyncio.Lock())
        sent = False
        try:
            async with asyncio.timeout(self._timeout), lock:
                connection = await self._connection(node_id)
                theirs = connection.versions.get(api_key)
                version = pick_version(self._versions[api_key], theirs)
                if version is None:
                    raise PeerUnreachableError(
                        f"node {node_id} does not speak {name} in a version this node"
                        f" does ({self._versions[api_key]} here, {theirs} there)"
                    )
                sent = True
                frame = await connection.roundtrip(build(version), version, self._client_id)
                return decode_response(frame, api_key, version)[1], version
        except (PeerUnreachableError, asyncio.CancelledError):
            self._drop(node_id)  # an exchange cut halfway leaves the socket unusable
            raise
        except TimeoutError:
            self._drop(node_id)
            if sent:
                raise PeerTimeoutError(
                    f"{name} to node {node_id}: no answer within {self._timeout * 1000:.0f} ms"
                ) from None
            raise PeerUnreachableError(
                f"{name} to node {node_id}: not connected within {self._timeout * 1000:.0f} ms"
            ) from None
        except (OSError, EOFError, DecodeError) as exc:
            self._drop(node_id)
            raise PeerUnreachableError(
                f"{name} to node {node_id}: {exc or type(exc).__name__}"
            ) from None

    async def _connection(self, node_id: int) -> _Connection:
        connection = self._connections.get(node_id)
        if connection is not None:
            return connection
        address = self._address_of(node_id)
        if address is None:
            raise PeerUnreachableError(f"no address known for node {node_id}")
        reader, writer = await asyncio.open_connection(*address)
        connection = _Connection(reader, writer)
        try:
            await self._negotiate(connection)
        except BaseException:
            connection.close()
            raise
        self._connections[node_id] = connection
        return connection

    async def _negotiate(self, connection: _Connection) -> None:
        request = ApiVersionsRequest(client_software_name="millpond", client_software_version="1")
        frame = await connection.roundtrip(request, 3, self._client_id)
        # After the 4-byte correlation id every version starts with the error code; a
        # peer that does not speak v3 answers in v0's shape.
        version = 0 if frame[4:6] == ErrorCode.UNSUPPORTED_VERSION.to_bytes(2, "big") else 3
        response = decode_response(frame, API_VERSIONS, version)[1]
        assert isinstance(response, ApiVersionsResponse)
        connection.versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}

    def _drop(self, node_id: int) -> None:
        connection = self._connections.pop(node_id, None)
        if connection is not None:
            connection.close()

    def close(self) -> None:
        for node_id in list(self._connections):
            self._drop(node_id)

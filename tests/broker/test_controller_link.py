"""A broker's requests to the active controller: a client's admin request that went out
unanswered is not sent again (the controller may have applied it); the broker's own
requests are, until their deadline."""

from __future__ import annotations

import asyncio
import struct

import pytest

from millpond.broker.controller_link import ControllerLink, ControllerUnavailableError
from millpond.wire import ResponseHeader, decode_request_header, encode_response
from millpond.wire.generated.api.api_versions_response import ApiVersion, ApiVersionsResponse
from millpond.wire.generated.api.envelope_request import EnvelopeRequest

_SIZE = struct.Struct(">i")
ENVELOPE = 58


class SilentController:
    """Answers ApiVersions, then takes every Envelope and never answers it."""

    def __init__(self) -> None:
        self.envelopes = 0
        self.port = 0
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []

    async def __aenter__(self) -> SilentController:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self._writers:
            writer.close()
        await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.append(writer)
        try:
            while True:
                (size,) = _SIZE.unpack(await reader.readexactly(4))
                frame = await reader.readexactly(size)
                header, api, _ = decode_request_header(frame)
                if api.key == ENVELOPE:
                    self.envelopes += 1
                    continue  # taken, never answered
                versions = ApiVersionsResponse(
                    error_code=0,
                    api_keys=[
                        ApiVersion(api_key=18, min_version=0, max_version=3),
                        ApiVersion(api_key=ENVELOPE, min_version=0, max_version=0),
                    ],
                )
                body = encode_response(
                    ResponseHeader(correlation_id=header.correlation_id),
                    versions,
                    header.request_api_version,
                )
                writer.write(_SIZE.pack(len(body)) + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


async def _send(port: int, *, once_sent: bool) -> None:
    link = ControllerLink(
        lambda: 1,
        lambda _node: ("127.0.0.1", port),
        client_id="test",
        request_timeout_ms=200,
        retry_backoff_ms=10,
    )
    envelope = EnvelopeRequest(request_data=b"", request_principal=b"", client_host_address=b"")
    try:
        await link.send(ENVELOPE, lambda _v: envelope, lambda _r: 0, 900, once_sent=once_sent)
    finally:
        link.close()


def test_an_admin_request_that_went_out_unanswered_is_not_sent_again() -> None:
    async def run() -> int:
        async with SilentController() as controller:
            with pytest.raises(ControllerUnavailableError, match="may have applied"):
                await _send(controller.port, once_sent=True)
            return controller.envelopes

    assert asyncio.run(run()) == 1


def test_the_brokers_own_requests_are_sent_again_until_their_deadline() -> None:
    async def run() -> int:
        async with SilentController() as controller:
            with pytest.raises(ControllerUnavailableError, match="no active controller"):
                await _send(controller.port, once_sent=False)
            return controller.envelopes

    assert asyncio.run(run()) >= 3

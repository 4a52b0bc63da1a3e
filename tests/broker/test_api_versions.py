from __future__ import annotations

import struct

import pytest

from millpond.broker.handlers import ROUTES
from millpond.wire import ResponseHeader, decode_response
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.api_versions_request import ApiVersionsRequest
from millpond.wire.generated.api.api_versions_response import ApiVersionsResponse

from .harness import Client, running_broker


@pytest.mark.parametrize("version", range(6))
def test_every_version_lists_what_is_routed(version: int) -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        request = ApiVersionsRequest(
            client_software_name="millpond-test", client_software_version="1.0"
        )
        header, body = client.request(request, version)
        assert header.correlation_id == client.correlation_id
        assert isinstance(body, ApiVersionsResponse)
        assert body.error_code == ErrorCode.NONE
        listed = [(k.api_key, k.min_version, k.max_version) for k in body.api_keys]
        assert listed == sorted((r.api_key, r.min_version, r.max_version) for r in ROUTES)
        assert (18, 0, 5) in listed
        features = {f.name: (f.min_version, f.max_version) for f in body.supported_features}
        if version < 3:
            assert features == {}
        elif version == 3:  # a range from 0 breaks older readers: left out (KAFKA-17492)
            assert features == {"metadata.version": (7, 27)}
        else:  # a KRaft leader checks kraft.version before it adds a voter
            assert features["kraft.version"] == (0, 1)
            assert features["metadata.version"] == (7, 27)
        assert body.finalized_features == []


def test_newer_version_gets_the_v0_body_with_our_range() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        # ApiVersions v9, header v2: api key, version, correlation id, client id, no tags.
        frame = struct.pack(">hhih", 18, 9, 77, 2) + b"me" + b"\x00" + b"\x00\x00\x00"
        client.send_raw(frame)
        raw = client.read_frame()
        header, body = decode_response(raw, 18, 0)
        assert header == ResponseHeader(correlation_id=77)
        assert isinstance(body, ApiVersionsResponse)
        assert body.error_code == ErrorCode.UNSUPPORTED_VERSION
        assert [(k.api_key, k.min_version, k.max_version) for k in body.api_keys] == [(18, 0, 5)]


def test_invalid_software_name_is_invalid_request() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        request = ApiVersionsRequest(client_software_name="-bad-", client_software_version="1")
        _, body = client.request(request, 3)
        assert body.error_code == ErrorCode.INVALID_REQUEST
        # The connection stays usable: librdkafka retries with v0 on it.
        _, body = client.request(ApiVersionsRequest(), 0)
        assert body.error_code == ErrorCode.NONE


def test_pipelined_requests_are_answered_in_order() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        from millpond.wire import RequestHeader, encode_request

        frames = b""
        for cid in range(1, 51):
            header = RequestHeader(
                request_api_key=18, request_api_version=cid % 4, correlation_id=cid
            )
            frame = encode_request(header, ApiVersionsRequest())
            frames += struct.pack(">i", len(frame)) + frame
        client.sock.sendall(frames)
        for cid in range(1, 51):
            response_header, _ = decode_response(client.read_frame(), 18, cid % 4)
            assert response_header.correlation_id == cid


def test_oversized_frame_closes_before_the_body_arrives() -> None:
    with running_broker(max_request_bytes=1024) as broker:
        client = Client(broker.port)
        client.sock.sendall(struct.pack(">i", 1025))
        assert client.is_closed_by_peer()
        other = Client(broker.port)  # the server is unharmed
        _, body = other.request(ApiVersionsRequest(), 0)
        assert body.error_code == ErrorCode.NONE


def test_malformed_and_unknown_requests_close_only_that_connection() -> None:
    with running_broker() as broker:
        for frame in (
            b"\x00\x12\x00",
            struct.pack(">hhih", 999, 0, 1, -1),
            struct.pack(">hhih", 3, 99, 1, -1),
        ):
            client = Client(broker.port)
            client.send_raw(frame)
            assert client.is_closed_by_peer()
        _, body = Client(broker.port).request(ApiVersionsRequest(), 1)
        assert body.error_code == ErrorCode.NONE


def test_idle_connections_are_closed() -> None:
    with running_broker(idle_ms=50) as broker:
        client = Client(broker.port)
        assert client.is_closed_by_peer()  # blocks until the reaper closes it

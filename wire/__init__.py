"""millpond.wire: the Kafka protocol, bytes <-> typed messages, for every API and version.

The public surface:

- :func:`decode_request` / :func:`encode_request` and :func:`decode_response` /
  :func:`encode_response` turn one frame (a request or response *without* its 4-byte
  size prefix) into ``(header, body)`` and back.
- Every message class has ``to_data()`` for plain Python data (dicts, lists; records
  as bytes; uuids in Kafka's base64 text form).
- Malformed input raises :class:`DecodeError` (or its subclass
  :class:`UnsupportedVersionError`, which carries the api key, version and correlation
  id so a broker can still answer), never anything else.

The message classes are generated from Kafka's JSON specs into
``millpond.wire.generated``; :data:`APIS` lists every API with its version range.
"""

from __future__ import annotations

from millpond.wire.api import APIS, ApiInfo, ApiKey, api_info
from millpond.wire.exceptions import (
    DecodeError,
    EncodeError,
    FrameTooLargeError,
    UnsupportedVersionError,
    WireError,
)
from millpond.wire.headers import RequestHeader, ResponseHeader
from millpond.wire.message import Message, Struct
from millpond.wire.primitives import DECODE_FAILURES, ENCODE_FAILURES, Buffer
from millpond.wire.splice import SplicingWriter

__all__ = [
    "APIS",
    "ApiInfo",
    "ApiKey",
    "DecodeError",
    "EncodeError",
    "FrameTooLargeError",
    "Message",
    "RequestHeader",
    "ResponseHeader",
    "Struct",
    "UnsupportedVersionError",
    "WireError",
    "api_info",
    "decode_request",
    "decode_request_header",
    "decode_response",
    "encode_request",
    "encode_response",
    "encode_response_parts",
    "read_request",
]


def decode_request_header(frame: Buffer) -> tuple[RequestHeader, ApiInfo, int]:
    """Decode only the header of a request: ``(header, api, body_offset)``.

    Raises :class:`UnsupportedVersionError` for an API key or version the specs do not
    define, after reading what it can (api key, version, correlation id).
    """
    if len(frame) < 8:
        raise DecodeError(f"request of {len(frame)} bytes is shorter than a request header")
    api_key = int.from_bytes(frame[0:2], "big", signed=True)
    version = int.from_bytes(frame[2:4], "big", signed=True)
    correlation_id = int.from_bytes(frame[4:8], "big", signed=True)
    api = APIS.get(api_key)
    if api is None or not api.supports(version):
        what = f"API key {api_key}" if api is None else f"{api.name} v{version}"
        raise UnsupportedVersionError(
            f"unsupported request: {what} (correlation id {correlation_id})",
            api_key,
            version,
            correlation_id,
        )
    try:
        header, pos = RequestHeader.read(frame, 0, api.request_header_version(version))
    except DecodeError:
        raise
    except DECODE_FAILURES as exc:
        raise DecodeError(f"malformed request header of {api.name} v{version}: {exc}") from exc
    return header, api, pos


def decode_request(frame: Buffer) -> tuple[RequestHeader, Message]:
    """Decode one request frame (without its size prefix) into ``(header, body)``.

    Bytes after the body are ignored, as Apache Kafka ignores them: librdkafka 2.16
    sends a few in some requests (Metadata v13, AlterUserScramCredentials v0).
    """
    header, body, _ = read_request(frame)
    return header, body


def read_request(frame: Buffer) -> tuple[RequestHeader, Message, int]:
    """Like :func:`decode_request`, and also the offset where the body ended."""
    header, api, pos = decode_request_header(frame)
    version = header.request_api_version
    try:
        body, pos = api.request_class.read(frame, pos, version)
    except DecodeError:
        raise
    except DECODE_FAILURES as exc:
        raise DecodeError(f"malformed {api.name} request v{version}: {exc}") from exc
    return header, body, pos


def encode_request(header: RequestHeader, body: Message) -> bytes:
    """Encode a request frame (without its size prefix) at ``header.request_api_version``."""
    api = _api_of(body, header.request_api_key)
    version = header.request_api_version
    return _encode(header, api.request_header_version(version), body, version, "request")


def decode_response(
    frame: Buffer, api_key: int, api_version: int
) -> tuple[ResponseHeader, Message]:
    """Decode one response frame (without its size prefix) to a request of
    ``api_key`` at ``api_version``."""
    api = APIS.get(api_key)
    if api is None or not api.supports(api_version):
        raise DecodeError(f"no response schema for API key {api_key} v{api_version}")
    try:
        header, pos = ResponseHeader.read(frame, 0, api.response_header_version(api_version))
        body, pos = api.response_class.read(frame, pos, api_version)
    except DecodeError:
        raise
    except DECODE_FAILURES as exc:
        raise DecodeError(f"malformed {api.name} response v{api_version}: {exc}") from exc
    if pos != len(frame):
        raise DecodeError(
            f"{len(frame) - pos} trailing bytes after {api.name} response v{api_version}"
        )
    return header, body


def encode_response(header: ResponseHeader, body: Message, api_version: int) -> bytes:
    """Encode a response frame (without its size prefix) at ``api_version``."""
    api = _api_of(body, body.API_KEY)
    header_version = api.response_header_version(api_version)
    return _encode(header, header_version, body, api_version, "response")


def encode_response_parts(
    header: ResponseHeader, body: Message, api_version: int
) -> SplicingWriter:
    """As :func:`encode_response`, leaving :class:`~millpond.wire.splice.Spliced` records
    out: the result's ``parts()`` are the frame, for the sender to write and splice."""
    api = _api_of(body, body.API_KEY)
    w = SplicingWriter()
    _write(w, header, api.response_header_version(api_version), body, api_version, "response")
    return w


def _encode(header: Message, header_version: int, body: Message, version: int, kind: str) -> bytes:
    w = bytearray()
    _write(w, header, header_version, body, version, kind)
    return bytes(w)


def _write(
    w: bytearray, header: Message, header_version: int, body: Message, version: int, kind: str
) -> None:
    try:
        header.write(w, header_version)
        body.write(w, version)
    except EncodeError:
        raise
    except ENCODE_FAILURES as exc:
        raise EncodeError(f"cannot encode {body.NAME} ({kind}) v{version}: {exc}") from exc


def _api_of(body: Message, api_key: int | None) -> ApiInfo:
    api = APIS.get(api_key) if api_key is not None else None
    if api is None or api.key != body.API_KEY:
        raise EncodeError(f"{body.NAME} does not belong to API key {api_key}")
    return api

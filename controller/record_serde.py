"""Kafka's metadata record framing: the value of every record in ``__cluster_metadata``.

Each data record of the metadata log has a null key, no headers, and a value framed as
Kafka's ``AbstractApiMessageSerde`` frames it (all three header fields unsigned varints)::

    frame_version  uvarint   always 1 (0 was KRaft's 2.8 preview and is refused)
    api_key        uvarint   the record type: TopicRecord is 2, PartitionRecord 3, ...
    version        uvarint   the version the message body is written at
    message        bytes     the generated record class's encoding at that version

Nothing may follow the message. The registry (api key -> class) is built from the
generated ``millpond.wire.generated.metadata.SPECS`` table, so a record type the specs
add is known without a change here.

Which version to *write* is a compatibility choice: :data:`WRITE_VERSIONS` names the
versions a Kafka 4.x controller writes at the metadata.version we bootstrap, so Kafka's
own tools read our log; everything else is written at version 0.

Pure functions; safe from any thread.
"""

from __future__ import annotations

from functools import cache
from typing import NamedTuple

from millpond.wire.api import load_message_class
from millpond.wire.exceptions import DecodeError, EncodeError
from millpond.wire.generated.metadata import SPECS
from millpond.wire.message import Message
from millpond.wire.primitives import DECODE_FAILURES
from millpond.wire.varint import encode_uvarint, read_uvarint

__all__ = [
    "FRAME_VERSION",
    "WRITE_VERSIONS",
    "ApiMessageAndVersion",
    "MetadataParseError",
    "UnknownMetadataRecordError",
    "decode_metadata_record",
    "encode_metadata_record",
    "record_class",
    "with_version",
]

FRAME_VERSION = 1

#: Versions written per record type (api key); unlisted types are written at 0.
#: RegisterBrokerRecord v3 carries the log dirs (tagged) as Kafka 3.7+ writes it; the
#: partition records stay at v0 because we assign no log directory ids yet (v1 would
#: promise one per replica).
WRITE_VERSIONS: dict[int, int] = {
    0: 3,  # RegisterBrokerRecord
    17: 2,  # BrokerRegistrationChangeRecord
}


class MetadataParseError(DecodeError):
    """A metadata record value that is not a well-formed framed record."""


class UnknownMetadataRecordError(MetadataParseError):
    """A well-framed record of a type (or a version of a type) we do not know.

    Replay skips these with a warning, as a reader must to survive a newer writer."""

    def __init__(self, message: str, api_key: int, version: int) -> None:
        super().__init__(message)
        self.api_key = api_key
        self.version = version


class ApiMessageAndVersion(NamedTuple):
    """A metadata record and the version it is (or will be) written at."""

    message: Message
    version: int


@cache
def _registry() -> dict[int, tuple[str, str]]:
    return {s.api_key: (s.module, s.name) for s in SPECS if s.api_key is not None}


def record_class(api_key: int) -> type[Message] | None:
    """The generated class of metadata record type ``api_key``, or None if unknown."""
    entry = _registry().get(api_key)
    return None if entry is None else load_message_class(*entry)


def with_version(message: Message) -> ApiMessageAndVersion:
    """Pair a record with the version this controller writes it at."""
    api_key = message.API_KEY
    assert api_key is not None and message.TYPE == "metadata", message.NAME
    return ApiMessageAndVersion(message, WRITE_VERSIONS.get(api_key, 0))


def encode_metadata_record(record: ApiMessageAndVersion) -> bytes:
    """Frame a record as a metadata log record value."""
    message, version = record
    api_key = message.API_KEY
    if api_key is None or message.TYPE != "metadata":
        raise EncodeError(f"{message.NAME} is not a metadata record")
    body = message.encode(version)
    return encode_uvarint(FRAME_VERSION) + encode_uvarint(api_key) + encode_uvarint(version) + body


def _read_short(value: bytes | memoryview, pos: int, what: str) -> tuple[int, int]:
    try:
        n, pos = read_uvarint(value, pos)
    except DecodeError as exc:
        raise MetadataParseError(f"cannot read the {what} of a metadata record: {exc}") from None
    if n > 0x7FFF:
        raise MetadataParseError(f"metadata record {what} {n} does not fit an int16")
    return n, pos


def decode_metadata_record(value: bytes | memoryview | None) -> ApiMessageAndVersion:
    """Decode a metadata log record value.

    Raises :class:`UnknownMetadataRecordError` for a type or version we do not know and
    :class:`MetadataParseError` for anything malformed (including a null value).
    """
    if value is None:
        raise MetadataParseError("metadata record has a null value")
    frame_version, pos = _read_short(value, 0, "frame version")
    if frame_version != FRAME_VERSION:
        raise MetadataParseError(
            f"metadata record frame version {frame_version} (only {FRAME_VERSION} is known)"
        )
    api_key, pos = _read_short(value, pos, "type")
    version, pos = _read_short(value, pos, "version")
    cls = record_class(api_key)
    if cls is None:
        raise UnknownMetadataRecordError(
            f"unknown metadata record type {api_key}", api_key, version
        )
    if not cls.supports(version):
        raise UnknownMetadataRecordError(
            f"{cls.NAME} version {version} is not known", api_key, version
        )
    try:
        message, end = cls.read(value, pos, version)
    except DecodeError as exc:
        raise MetadataParseError(f"malformed {cls.NAME} v{version}: {exc}") from None
    except DECODE_FAILURES as exc:
        raise MetadataParseError(f"malformed {cls.NAME} v{version}: {exc}") from None
    if end != len(value):
        raise MetadataParseError(
            f"{len(value) - end} byte(s) of garbage after {cls.NAME} v{version}"
        )
    return ApiMessageAndVersion(message, version)

"""The wire layer's exceptions.

Decoding untrusted bytes raises :class:`DecodeError` and nothing else: a broker
catches that one type at the connection edge, answers with Kafka's error code or
closes the connection, and logs the message. Encoding a message whose values do not
fit the requested version raises :class:`EncodeError`, which is a bug in the caller.
"""


class WireError(Exception):
    """Base class of everything the wire layer raises on purpose."""


class DecodeError(WireError, ValueError):
    """The bytes are not a valid Kafka message: truncated, oversized, or malformed."""


class UnsupportedVersionError(DecodeError):
    """A request names an API key or version that this codec does not know.

    Carries what could be read of the header, so a broker can still answer with
    ``UNSUPPORTED_VERSION`` (ApiVersions answers in its v0 body, as KIP-511 asks).
    """

    def __init__(self, message: str, api_key: int, api_version: int, correlation_id: int) -> None:
        super().__init__(message)
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id


class FrameTooLargeError(DecodeError):
    """A size prefix announces a frame above the configured maximum."""

    def __init__(self, size: int, max_size: int) -> None:
        super().__init__(
            f"frame of {size} bytes exceeds the maximum of {max_size} bytes "
            "(raise socket.request.max.bytes if the peer is legitimate)"
        )
        self.size = size
        self.max_size = max_size


class EncodeError(WireError, ValueError):
    """A message cannot be written at the requested version (a value is out of range,
    missing, or null where the version does not allow null)."""

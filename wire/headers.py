"""Request and response headers, chosen per (api key, api version).

A request header is v1 (api key, api version, correlation id, nullable client id with
an int16 length even in flexible versions) or v2 (v1 plus tagged fields) for flexible
versions. A response header is v0 (correlation id) or v1 (plus tagged fields), except
that ApiVersions answers always use v0. See :class:`millpond.wire.api.ApiInfo`.
"""

from millpond.wire.generated.header.request_header import RequestHeader
from millpond.wire.generated.header.response_header import ResponseHeader

__all__ = ["RequestHeader", "ResponseHeader"]

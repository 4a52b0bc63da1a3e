"""The protocol trace: one JSON line per request a connection handled, for people and
tools that need to know what clients really send (``millpond serve --trace FILE``).

A line names the connection and the client, the API (name, key and version), the
correlation id, how long the broker took and how the request ended: ``answered``, ``no
response`` (a Produce with acks=0) or ``closed`` (the broker closed the connection
instead of answering). Requests too malformed to name an API are not traced; the server
log says why it closed their connections.

Lines are written as each request ends (line-buffered), so a trace read while the broker
runs, or after it was killed, holds every request finished by then.
"""

from __future__ import annotations

import json
import time
from typing import TextIO

from millpond.broker.context import RequestContext
from millpond.wire.api import APIS

ANSWERED = "answered"
NO_RESPONSE = "no response"
CLOSED = "closed"


class RequestTrace:
    """Writes the trace lines to a text stream it owns."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    @classmethod
    def open(cls, path: str) -> RequestTrace:
        """Append to ``path`` (created if missing), one flushed line per request."""
        return cls(open(path, "a", buffering=1, encoding="utf-8"))  # noqa: SIM115 (owned)

    def record(self, ctx: RequestContext, started_ns: int, outcome: str) -> None:
        """Trace one request that ``ctx`` describes, begun at ``started_ns``
        (``time.perf_counter_ns``)."""
        line = {
            "ts": time.time_ns() // 1_000_000,
            "connection": ctx.connection_id,
            "peer": ctx.peer,
            "client": ctx.client_id,
            "api": APIS[ctx.api_key].name if ctx.api_key in APIS else None,
            "key": ctx.api_key,
            "version": ctx.api_version,
            "correlation_id": ctx.correlation_id,
            "latency_us": (time.perf_counter_ns() - started_ns) // 1000,
            "outcome": outcome,
        }
        self._stream.write(json.dumps(line, separators=(",", ":")) + "\n")

    def close(self) -> None:
        self._stream.close()

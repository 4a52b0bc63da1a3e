"""The protocol trace: one JSON line per request a connection handled, for people and
tools that need to know what clients really send (``millpond serve --trace FILE``, or
the ``millpond.trace.file`` config; ``millpond trace FILE`` reads it).

A line names the connection, its listener and principal, and the client, the API (name,
key and version), the correlation id, how long the broker took and how the request ended:
``answered``, ``no response`` (a Produce with acks=0) or ``closed`` (the broker closed the
connection instead of answering). ``request`` and ``response`` hold the decoded messages as data,
with record sets abbreviated to their batches' headers (offsets, counts, producer ids
and sequences, codec, size: what the protocol lint reads) and other byte fields to their
length. Requests too malformed to name an API are not traced; the server log says why
it closed their connections.

Lines are written as each request ends (line-buffered), so a trace read while the broker
runs, or after it was killed, holds every request finished by then.
"""

from __future__ import annotations

import json
import time
from typing import Any, TextIO

from millpond.broker.context import RequestContext
from millpond.wire.api import APIS
from millpond.wire.exceptions import DecodeError
from millpond.wire.message import Struct, uuid_to_str
from millpond.wire.records import iter_batches
from millpond.wire.splice import records_bytes

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

    def record(
        self,
        ctx: RequestContext,
        latency_ns: int,
        outcome: str,
        request: Struct | None = None,
        response: Struct | None = None,
    ) -> None:
        """Trace one request that ``ctx`` describes, which took ``latency_ns`` from its
        dispatch to its end, with its decoded body and response if any."""
        line = {
            "ts": time.time_ns() // 1_000_000,
            "connection": ctx.connection_id,
            "listener": ctx.listener.name,
            "principal": str(ctx.principal),
            "peer": ctx.peer,
            "client": ctx.client_id,
            "api": APIS[ctx.api_key].name if ctx.api_key in APIS else None,
            "key": ctx.api_key,
            "version": ctx.api_version,
            "correlation_id": ctx.correlation_id,
            "latency_us": latency_ns // 1000,
            "outcome": outcome,
            "request": _data_or_reason(request),
            "response": _data_or_reason(response),
        }
        self._stream.write(json.dumps(line, separators=(",", ":")) + "\n")

    def close(self) -> None:
        self._stream.close()


def _data_or_reason(message: Struct | None) -> dict[str, Any] | None:
    """The message as data; a message the trace cannot render (a bug in this module)
    costs its line's body, never the request it describes."""
    if message is None:
        return None
    try:
        return message_data(message)
    except Exception as exc:  # noqa: BLE001 (the trace is a witness: it must not interfere)
        return {"untraceable": f"{type(exc).__name__}: {exc}"}


def message_data(message: Struct) -> dict[str, Any]:
    """A message as JSON-ready data: record sets as their batches' headers, other bytes
    as their length, uuids in Kafka's text form."""
    out: dict[str, Any] = {}
    for f in message._FIELDS:
        out[f.name] = _value(f.kind, f.element, getattr(message, f.name))
    return out


def _value(kind: str, element: str | None, value: Any) -> Any:
    if value is None:
        return None
    if kind == "struct":
        return message_data(value)
    if kind == "array":
        return [_value(element or "", None, v) for v in value]
    if kind == "uuid":
        return uuid_to_str(value)
    if kind == "records":
        return records_summary(value)
    if kind == "bytes":
        return {"bytes": len(value)}
    return value


def records_summary(data: Any) -> dict[str, Any]:
    """A record set's size and each batch's header; never the records themselves."""
    raw = records_bytes(data)
    batches: list[dict[str, Any]] = []
    try:
        for batch in iter_batches(raw, allow_truncated_tail=True):
            batches.append(
                {
                    "base_offset": batch.base_offset,
                    "records": batch.records_count,
                    "magic": batch.magic,
                    "compression": batch.compression.name.lower(),
                    "producer_id": batch.producer_id,
                    "producer_epoch": batch.producer_epoch,
                    "base_sequence": batch.base_sequence,
                    "transactional": batch.is_transactional,
                    "control": batch.is_control,
                    "bytes": batch.size_in_bytes,
                }
            )
    except (DecodeError, ValueError) as exc:
        return {"bytes": len(raw), "batches": batches, "error": str(exc)}
    return {"bytes": len(raw), "batches": batches}

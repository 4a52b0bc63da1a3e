"""The control endpoint over HTTP, so tests in Java, Go or JavaScript drive a broker as
``millpond.testing`` does in Python: JSON in and out, described at ``/openapi.json``.

Off unless ``millpond.control.port`` is set, and bound to 127.0.0.1 only: it can fail
any request and move the clock, so nothing off the machine may reach it. The standard
library's threading HTTP server runs it; each operation is handed to the broker's event
loop, which owns the state, and its answer waited for. A request it cannot take (bad
JSON, a wrong type, an unknown field or path) gets a 4xx with a message saying what was
wrong; an operation that fails for a bug gets a 500 and one log line, and the broker
goes on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from millpond.broker.control.faults import FaultError
from millpond.broker.control.openapi import MAX_ADVANCE_MS, openapi
from millpond.broker.control.service import BrokerControl, ControlError

log = logging.getLogger("millpond.control")

HOST = "127.0.0.1"
MAX_BODY = 64 * 1024
_RULE_FIELDS = ("api", "action", "count", "error", "delay_ms", "topic", "partition", "client_id")
_OPERATION_TIMEOUT_S = 30.0


class _BadRequest(Exception):
    def __init__(self, status: HTTPStatus, message: str, allow: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.allow = allow


def _is_int(value: object) -> bool:
    """JSON's integers, 3.0 included (JSON Schema counts it as one); never a boolean."""
    if isinstance(value, float):
        return value.is_integer()
    return isinstance(value, int) and not isinstance(value, bool)


def _field(body: dict[str, Any], name: str, kind: str, *, nullable: bool = True) -> Any:
    value = body.get(name)
    if value is None:
        if name in body and not nullable:
            raise _BadRequest(HTTPStatus.BAD_REQUEST, f"{name} must not be null")
        return None
    ok = {"int": _is_int(value), "str": isinstance(value, str)}
    ok["str|int"] = ok["int"] or ok["str"]
    if not ok[kind]:
        wanted = {"int": "an integer", "str": "a string", "str|int": "a string or an integer"}[kind]
        raise _BadRequest(HTTPStatus.BAD_REQUEST, f"{name} must be {wanted}, not {value!r}")
    return int(value) if isinstance(value, float) else value


def _object(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw or b"{}")
    except (ValueError, UnicodeDecodeError) as exc:
        raise _BadRequest(HTTPStatus.BAD_REQUEST, f"the body is not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise _BadRequest(HTTPStatus.BAD_REQUEST, "the body must be a JSON object")
    return body


def _fault(control: BrokerControl, raw: bytes) -> Callable[[], Any]:
    body = _object(raw)
    unknown = sorted(set(body) - set(_RULE_FIELDS))
    if unknown:
        fields = ", ".join(_RULE_FIELDS)
        raise _BadRequest(
            HTTPStatus.BAD_REQUEST, f"unknown field(s) {', '.join(unknown)}; a rule has {fields}"
        )
    for required in ("api", "action"):
        if body.get(required) is None:
            raise _BadRequest(HTTPStatus.BAD_REQUEST, f"a rule needs {required}")
    api = _field(body, "api", "str|int")
    action = _field(body, "action", "str")
    count = _field(body, "count", "int") if "count" in body else 1
    error = _field(body, "error", "str|int")
    delay_ms = _field(body, "delay_ms", "int") or 0
    topic = _field(body, "topic", "str")
    partition = _field(body, "partition", "int")
    client_id = _field(body, "client_id", "str")
    return lambda: control.add_fault(
        api, action, count=count, error=error, delay_ms=delay_ms, topic=topic,
        partition=partition, client_id=client_id,
    )  # fmt: skip


def _advance(control: BrokerControl, raw: bytes) -> Callable[[], Any]:
    body = _object(raw)
    if set(body) != {"ms"}:
        raise _BadRequest(HTTPStatus.BAD_REQUEST, 'the body must be {"ms": <milliseconds>}')
    ms = _field(body, "ms", "int", nullable=False)
    if not 0 <= ms <= MAX_ADVANCE_MS:
        raise _BadRequest(
            HTTPStatus.BAD_REQUEST, f"ms must be between 0 and {MAX_ADVANCE_MS}, not {ms}"
        )
    return lambda: control.advance_clock(ms)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes; without this, Nagle's algorithm holds the
        # body until the client's delayed ACK, 40 ms a request.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the stdlib's name)
        log.debug("%s %s", self.address_string(), format % args)

    def __getattr__(self, name: str) -> Callable[[], None]:
        # The stdlib looks up do_<METHOD>; every method comes here, so an unknown one gets
        # a 405 naming the allowed ones rather than the stdlib's 501 page.
        if name.startswith("do_"):
            return lambda: self._serve(name[3:])
        raise AttributeError(name)

    def _body(self) -> bytes:
        length_header = self.headers.get("Content-Length") or "0"
        try:
            length = int(length_header)
        except ValueError:
            raise _BadRequest(HTTPStatus.BAD_REQUEST, "Content-Length is not a number") from None
        if length < 0:
            raise _BadRequest(HTTPStatus.BAD_REQUEST, "Content-Length is negative")
        if length > MAX_BODY:
            self.close_connection = True
            raise _BadRequest(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"the body is over {MAX_BODY} bytes"
            )
        return self.rfile.read(length)

    def _serve(self, method: str) -> None:
        headers: dict[str, str] = {}
        try:
            raw = self._body()
            status, payload = self._route(method, self.path.split("?", 1)[0], raw)
        except _BadRequest as exc:
            status, payload, headers = exc.status, {"error": str(exc)}, {}
            if exc.allow is not None:
                headers["Allow"] = exc.allow
        except (FaultError, ControlError) as exc:
            status, payload = HTTPStatus.BAD_REQUEST, {"error": str(exc)}
        except Exception:  # noqa: BLE001 (a bug: one log line and a 500; the broker goes on)
            log.exception("control endpoint: %s %s failed", method, self.path)
            status, payload = HTTPStatus.INTERNAL_SERVER_ERROR, {"error": "internal error"}
        self._send(status, payload, headers)

    def _send(self, status: HTTPStatus, payload: Any, headers: dict[str, str]) -> None:
        data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        if payload is not None:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _route(self, method: str, path: str, raw: bytes) -> tuple[HTTPStatus, Any]:
        control = self.server.control
        parts = [p for p in path.split("/") if p]
        routes: dict[tuple[str, ...], dict[str, Callable[[], Any]]] = {
            ("openapi.json",): {"GET": lambda: openapi()},
            ("v1", "state"): {"GET": lambda: self._run(control.state)},
            ("v1", "faults"): {
                "GET": lambda: self._run(lambda: [r.to_data() for r in control.faults.rules()]),
                "POST": lambda: (HTTPStatus.CREATED, self._run(_fault(control, raw))),
                "DELETE": lambda: self._run(lambda: {"removed": control.faults.clear()}),
            },
            ("v1", "clock"): {"GET": lambda: self._run(control.clock_state)},
            ("v1", "clock", "advance"): {"POST": lambda: self._run(_advance(control, raw))},
            ("v1", "clock", "freeze"): {"POST": lambda: self._run(control.freeze_clock)},
            ("v1", "clock", "resume"): {"POST": lambda: self._run(control.resume_clock)},
        }
        key = tuple(parts)
        if len(parts) == 3 and parts[:2] == ["v1", "faults"]:
            routes[key] = {"DELETE": lambda: self._remove_fault(parts[2])}
        if len(parts) == 4 and parts[:2] == ["v1", "groups"] and parts[3] == "rebalance":
            routes[key] = {"POST": lambda: self._rebalance(parts[2])}
        if len(parts) == 4 and parts[:2] == ["v1", "producers"] and parts[3] == "fence":
            routes[key] = {"POST": lambda: self._fence(parts[2])}
        methods = routes.get(key)
        if methods is None:
            raise _BadRequest(HTTPStatus.NOT_FOUND, f"no such path {path!r}; see /openapi.json")
        operation = methods.get(method)
        if operation is None:
            allowed = ", ".join(sorted(methods))
            raise _BadRequest(
                HTTPStatus.METHOD_NOT_ALLOWED,
                f"{method} is not allowed on {path}; use {allowed}",
                allow=allowed,
            )
        result = operation()
        if isinstance(result, tuple):
            return result
        if result is _NO_CONTENT:
            return HTTPStatus.NO_CONTENT, None
        return HTTPStatus.OK, result

    def _remove_fault(self, raw_id: str) -> object:
        try:
            rule_id = int(raw_id)
        except ValueError:
            raise _BadRequest(
                HTTPStatus.BAD_REQUEST, f"a rule id is an integer, not {raw_id!r}"
            ) from None
        if not self._run(lambda: self.server.control.faults.remove(rule_id)):
            raise _BadRequest(
                HTTPStatus.NOT_FOUND, f"no fault rule {rule_id}; GET /v1/faults lists them"
            )
        return _NO_CONTENT

    def _rebalance(self, quoted: str) -> Any:
        from urllib.parse import unquote

        group_id = unquote(quoted)
        try:
            return self._run(lambda: self.server.control.force_rebalance(group_id))
        except ControlError as exc:
            raise _BadRequest(HTTPStatus.NOT_FOUND, str(exc)) from None

    def _fence(self, raw_id: str) -> Any:
        try:
            producer_id = int(raw_id)
        except ValueError:
            raise _BadRequest(
                HTTPStatus.BAD_REQUEST, f"a producer id is an integer, not {raw_id!r}"
            ) from None
        try:
            return self._run(lambda: self.server.control.fence_producer(producer_id))
        except ControlError as exc:
            raise _BadRequest(HTTPStatus.NOT_FOUND, str(exc)) from None

    def _run(self, operation: Callable[[], Any]) -> Any:
        """Run ``operation`` on the broker's event loop and wait for its answer."""

        async def call() -> Any:
            return operation()

        future = asyncio.run_coroutine_threadsafe(call(), self.server.loop)
        return future.result(_OPERATION_TIMEOUT_S)


_NO_CONTENT = object()


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, port: int, control: BrokerControl, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__((HOST, port), _Handler)
        self.control = control
        self.loop = loop


class ControlServer:
    """The endpoint's lifecycle, started and stopped with the broker."""

    def __init__(self, control: BrokerControl, port: int) -> None:
        self._control = control
        self._requested_port = port
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    async def start(self) -> None:
        self._server = _Server(self._requested_port, self._control, asyncio.get_running_loop())
        # A short poll interval: shutdown() waits up to one for serve_forever to notice.
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), name="millpond-control", daemon=True
        )
        self._thread.start()
        log.info("control endpoint on %s (OpenAPI at %s/openapi.json)", self.url, self.url)

    async def stop(self) -> None:
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        # shutdown() waits for serve_forever to return; its handlers may be waiting on this
        # very loop, so wait in a thread while the loop keeps running them.
        await asyncio.to_thread(server.shutdown)
        server.server_close()
        await asyncio.to_thread(thread.join)
        self._server = self._thread = None

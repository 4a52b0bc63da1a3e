"""A broker on a free loopback port, run on its own event loop in a thread, and a tiny
blocking client speaking millpond.wire, for tests that need real sockets."""

from __future__ import annotations

import asyncio
import socket
import struct
import tempfile
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from millpond.broker.node import Broker
from millpond.cli.client import recv_exactly
from millpond.testing.embedded import stop_and_settle
from millpond.wire import (
    Message,
    RequestHeader,
    ResponseHeader,
    decode_response,
    encode_request,
)

T = TypeVar("T")
_open_clients: list[Client] = []
_loops: dict[int, asyncio.AbstractEventLoop] = {}


def run_on_loop(broker: Broker, coroutine: Coroutine[Any, Any, T], timeout: float = 30) -> T:
    """Run ``coroutine`` on the broker's event loop (which owns its state) and wait."""
    return asyncio.run_coroutine_threadsafe(coroutine, _loops[id(broker)]).result(timeout)


@contextmanager
def running_broker(**kwargs: Any) -> Iterator[Broker]:
    loop = asyncio.new_event_loop()
    data = tempfile.TemporaryDirectory(prefix="millpond-test-")
    kwargs.setdefault("data_dir", data.name)
    asyncio.set_event_loop(loop)
    broker = Broker(port=0, **kwargs)
    asyncio.set_event_loop(None)
    try:
        with served_on_thread(loop, broker.start, lambda: stop_and_settle(broker)):
            _loops[id(broker)] = loop
            try:
                yield broker
            finally:
                _loops.pop(id(broker), None)
                while _open_clients:
                    _open_clients.pop().close()
    finally:
        data.cleanup()


@contextmanager
def served_on_thread(
    loop: asyncio.AbstractEventLoop,
    start: Callable[[], Coroutine[Any, Any, None]],
    stop: Callable[[], Coroutine[Any, Any, None]],
) -> Iterator[None]:
    """Run ``start()`` and then ``loop`` forever on a thread of its own (the loop owns the
    server's state); a failed start is raised here. On the way out ``stop()`` runs on the
    loop, and the loop stops and closes."""
    started = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(start())
        except BaseException as exc:  # noqa: BLE001 (handed to the test thread)
            failure.append(exc)
            return
        finally:
            started.set()
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    if not started.wait(30):
        raise RuntimeError("the server did not start")
    if failure:
        loop.close()
        raise failure[0]
    try:
        yield
    finally:
        asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


class Client:
    """Blocking Kafka-protocol client: send one request, read one response. Closed when
    the :func:`running_broker` it talks to stops."""

    def __init__(self, port: int, client_id: str | None = "test") -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        _open_clients.append(self)
        self.client_id = client_id
        self.correlation_id = 0

    def send_raw(self, frame: bytes) -> None:
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._read_exactly(4))[0]
        return self._read_exactly(size)

    def _read_exactly(self, n: int) -> bytes:
        return recv_exactly(self.sock, n)

    def request(self, body: Message, version: int) -> tuple[ResponseHeader, Any]:
        assert body.API_KEY is not None
        self.correlation_id += 1
        header = RequestHeader(
            request_api_key=body.API_KEY,
            request_api_version=version,
            correlation_id=self.correlation_id,
            client_id=self.client_id,
        )
        self.send_raw(encode_request(header, body))
        return decode_response(self.read_frame(), body.API_KEY, version)

    def is_closed_by_peer(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def close(self) -> None:
        self.sock.close()

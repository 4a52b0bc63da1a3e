"""kafka-python, the test client most tests use, must not leave a refused connection's
socket for the collector: with ``filterwarnings = error`` it would fail an unrelated
later test (the root conftest closes it)."""

from __future__ import annotations

import asyncio
import gc
import socket

import kafka.errors
from kafka.net.inet import KafkaNetSocket


class _Waits:
    async def wait_write(self, sock: socket.socket, timeout_at: float | None = None) -> None:
        await asyncio.sleep(0.01)


def test_a_refused_connection_leaves_no_socket_open() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    factory = KafkaNetSocket()

    async def refused() -> None:
        for address in factory.dns_lookup("127.0.0.1", port):
            try:
                await factory.connect(_Waits(), address)
            except kafka.errors.KafkaConnectionError:
                continue
            raise AssertionError(f"127.0.0.1:{port} accepted a connection")

    asyncio.run(refused())
    gc.collect()  # a leaked socket warns here, which fails the test

"""The broker as one object: its routes, its listener, its state.

Handlers receive the :class:`Broker` and reach everything through it; the event loop
that runs the server owns every piece of mutable state, so nothing here locks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.broker.dispatch import Dispatcher, Route
from millpond.broker.handlers import ROUTES
from millpond.broker.server import KafkaServer

if TYPE_CHECKING:
    from millpond.broker.server import KafkaConnection

DEFAULT_MAX_REQUEST_BYTES = 104_857_600
DEFAULT_IDLE_MS = 600_000


class Broker:
    def __init__(
        self,
        *,
        node_id: int = 1,
        host: str = "127.0.0.1",
        port: int = 9092,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        idle_ms: int = DEFAULT_IDLE_MS,
        routes: tuple[Route, ...] = ROUTES,
    ) -> None:
        self.node_id = node_id
        self.connections: set[KafkaConnection] = set()
        self.dispatcher = Dispatcher(routes)
        self.server = KafkaServer(
            self,
            self.dispatcher,
            host,
            port,
            max_frame_size=max_request_bytes,
            idle_timeout_ms=idle_ms,
        )

    @property
    def port(self) -> int:
        return self.server.port

    async def start(self) -> None:
        await self.server.start()

    async def stop(self) -> None:
        await self.server.stop()
        for conn in list(self.connections):
            conn.close()

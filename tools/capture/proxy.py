"""A recording TCP proxy between Kafka clients and a real Kafka broker.

Bytes are forwarded unchanged in both directions; on the side, the proxy cuts each direction into
Kafka's size-prefixed frames and keeps them. A request's api key and version are in its header;
a response only carries the correlation id, so it is matched to the request seen earlier on the
same connection. The event loop runs in a thread of its own, so run.py can drive the clients as
ordinary blocking subprocesses while the proxy records.
"""

from __future__ import annotations

import asyncio
import itertools
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

Kind = Literal["request", "response"]

#: Frames larger than this are counted but their bytes are not kept (goldens stay small).
MAX_KEPT_FRAME = 64 * 1024


@dataclass(frozen=True)
class Frame:
    """One Kafka frame without its 4-byte size prefix; payload is None when it was too large."""

    seq: int
    label: str
    connection: int
    kind: Kind
    api_key: int
    api_version: int
    correlation_id: int
    size: int
    payload: bytes | None


class RecordingProxy:
    """Listens on loopback ports, each forwarding to one upstream port, and records frames.

    A port is either bound to a fixed label (for the broker's own connections) or takes the
    label current at accept time (`label` attribute): drivers run one after another, so every
    connection a driver opens, reconnections included, is attributed to that driver.
    """

    def __init__(self) -> None:
        self.label = "unlabelled"
        self.frames: list[Frame] = []
        self._seq = itertools.count()
        self._conn_ids = itertools.count(1)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._servers: list[asyncio.Server] = []
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        """Start the event loop thread."""
        self._thread.start()

    def listen(self, upstream_port: int, fixed_label: str | None = None) -> int:
        """Open a listening port on 127.0.0.1 forwarding to upstream_port; return its port."""

        def label() -> str:
            return fixed_label if fixed_label is not None else self.label

        fut = asyncio.run_coroutine_threadsafe(self._listen(upstream_port, label), self._loop)
        return fut.result(timeout=10)

    async def _listen(self, upstream_port: int, label: Callable[[], str]) -> int:
        async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            self._tasks.add(task)
            try:
                await self._serve(reader, writer, upstream_port, label())
            finally:
                self._tasks.discard(task)

        server = await asyncio.start_server(on_client, "127.0.0.1", 0)
        self._servers.append(server)
        port: int = server.sockets[0].getsockname()[1]
        return port

    async def _serve(
        self,
        c_reader: asyncio.StreamReader,
        c_writer: asyncio.StreamWriter,
        upstream_port: int,
        label: str,
    ) -> None:
        conn = next(self._conn_ids)
        try:
            u_reader, u_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
        except OSError:
            c_writer.close()
            return
        pending: dict[int, tuple[int, int]] = {}
        pumps = [
            asyncio.create_task(self._pump(c_reader, u_writer, conn, label, "request", pending)),
            asyncio.create_task(self._pump(u_reader, c_writer, conn, label, "response", pending)),
        ]
        try:
            # Either side closing ends the connection, as a direct connection would.
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for p in pumps:
                p.cancel()
            await asyncio.gather(*pumps, return_exceptions=True)
            for w in (c_writer, u_writer):
                w.close()

    async def _pump(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        conn: int,
        label: str,
        kind: Kind,
        pending: dict[int, tuple[int, int]],
    ) -> None:
        buf = bytearray()
        while True:
            try:
                data = await reader.read(1 << 16)
            except ConnectionError:
                return
            if not data:
                return
            writer.write(data)
            # Frames are cut before yielding, so a request is registered in `pending` before its
            # response can possibly be read by the other pump.
            buf += data
            while len(buf) >= 4:
                (size,) = struct.unpack_from(">i", buf, 0)
                if len(buf) < 4 + size:
                    break
                self._record(bytes(buf[4 : 4 + size]), conn, label, kind, pending)
                del buf[: 4 + size]
            try:
                await writer.drain()
            except ConnectionError:
                return

    def _record(
        self,
        frame: bytes,
        conn: int,
        label: str,
        kind: Kind,
        pending: dict[int, tuple[int, int]],
    ) -> None:
        if kind == "request":
            if len(frame) < 8:
                return
            api_key, api_version, corr = struct.unpack_from(">hhi", frame, 0)
            pending[corr] = (api_key, api_version)
        else:
            if len(frame) < 4:
                return
            (corr,) = struct.unpack_from(">i", frame, 0)
            api_key, api_version = pending.pop(corr, (-1, -1))
        payload = frame if len(frame) <= MAX_KEPT_FRAME else None
        self.frames.append(
            Frame(
                next(self._seq), label, conn, kind, api_key, api_version, corr, len(frame), payload
            )
        )

    def stop(self) -> None:
        """Close listeners and live connections, then stop the loop thread (bounded)."""
        if not self._thread.is_alive():
            return

        async def shutdown() -> None:
            for s in self._servers:
                s.close()
            for t in list(self._tasks):
                t.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

        try:
            asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(timeout=10)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)

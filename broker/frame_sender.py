"""Writing one response frame whose records are spliced in from segment files.

A response encodes into a :class:`~millpond.wire.splice.SplicingWriter`: the frame is its
parts, views of the encoded bytes between file regions. Small parts are joined and
written; a region of at least :data:`SENDFILE_MIN_BYTES` goes from the page cache to the
socket with ``os.sendfile`` (``loop.sendfile``), never through Python's memory. Smaller
regions are read, since a sendfile costs a few syscalls and a wait for the transport's
buffer to drain.

Each region's descriptor is duplicated before the first wait, so a segment closed while
the frame is still being sent (its topic deleted) cannot leave a stale descriptor number
that the process has reused for another file.
"""

from __future__ import annotations

import asyncio
import os
from contextlib import ExitStack
from typing import BinaryIO

from millpond.storage.segment_read import FileRegion
from millpond.wire.framing import size_prefix
from millpond.wire.splice import SplicingWriter

SENDFILE_MIN_BYTES = 64 * 1024


class FrameSender:
    """Sends frames on one transport; remembers when the transport cannot sendfile (TLS)."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._sendfile = True

    def send_now(self, frame: SplicingWriter) -> bool:
        """Write ``frame`` now if no region of it goes by sendfile (True); False, having
        written nothing, when :meth:`send` must be awaited instead."""
        if not frame.splices:
            self._transport.writelines((size_prefix(len(frame)), frame))
            return True
        for _, source in frame.splices:
            if isinstance(source, FileRegion) and self._sendable(source) is not None:
                return False
        parts: list[bytes | memoryview] = [size_prefix(frame.frame_size())]
        parts.extend(p if isinstance(p, memoryview) else p.read() for p in frame.parts())
        self._transport.writelines(parts)
        return True

    async def send(self, frame: SplicingWriter) -> None:
        """Write ``frame`` with its size prefix; returns once the last byte is handed to
        the transport. OSError when a region can no longer be read."""
        if not frame.splices:
            self._transport.writelines((size_prefix(len(frame)), frame))
            return
        with ExitStack() as descriptors:
            # Runs of bytes to write, each followed by a region to sendfile (None: none).
            plan: list[tuple[bytes, tuple[BinaryIO, FileRegion] | None]] = []
            pending: list[bytes | memoryview] = [size_prefix(frame.frame_size())]
            for part in frame.parts():
                if isinstance(part, FileRegion) and (fd := self._sendable(part)) is not None:
                    file = descriptors.enter_context(open(os.dup(fd), "rb", buffering=0))
                    plan.append((b"".join(pending), (file, part)))
                    pending = []
                else:
                    pending.append(part if isinstance(part, memoryview) else part.read())
            plan.append((b"".join(pending), None))
            await self._write(plan)

    async def _write(self, plan: list[tuple[bytes, tuple[BinaryIO, FileRegion] | None]]) -> None:
        transport = self._transport
        loop = asyncio.get_running_loop()
        for data, spliced in plan:
            transport.write(data)
            if transport.is_closing():
                return
            if spliced is None:
                continue
            file, region = spliced
            if self._sendfile:
                try:
                    await loop.sendfile(
                        transport, file, region.position, region.size, fallback=False
                    )
                    continue
                except (asyncio.SendfileNotAvailableError, RuntimeError):
                    if transport.is_closing():
                        return
                    self._sendfile = False  # this transport never can: read from now on
            transport.write(region.read())

    def _sendable(self, region: FileRegion) -> int | None:
        """The descriptor to sendfile ``region`` from, if it is large enough to pay off."""
        if self._sendfile and region.size >= SENDFILE_MIN_BYTES:
            fd = region.file.fileno()
            return fd if fd is not None and fd >= 0 else None
        return None

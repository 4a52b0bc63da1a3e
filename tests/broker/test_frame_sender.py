"""Frames with spliced file regions over a real socket: what arrives is the frame a plain
encoding makes, whether regions go by sendfile, are read, or their file closes mid-send."""

from __future__ import annotations

import asyncio
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from millpond.broker.frame_sender import SENDFILE_MIN_BYTES, FrameSender
from millpond.storage.fs import File, MemFileSystem, OsFileSystem
from millpond.storage.segment_read import FileRegion
from millpond.wire.splice import SplicingWriter


def frame_of(pieces: list[bytes | FileRegion]) -> tuple[SplicingWriter, bytes]:
    """A frame of literal bytes and regions, and the bytes it stands for (size prefix
    included)."""
    w = SplicingWriter()
    expected = bytearray()
    for piece in pieces:
        if isinstance(piece, FileRegion):
            w.splices.append((len(w), piece))
            expected += piece.read()
        else:
            w += piece
            expected += piece
    return w, len(expected).to_bytes(4, "big") + bytes(expected)


async def send_and_receive(
    frame: SplicingWriter, size: int, *, mid_send: Callable[[], None] | None = None
) -> bytes:
    """Send ``frame`` over a loopback TCP connection with a small send buffer (so large
    regions cannot go in one call) and return what the peer read."""
    loop = asyncio.get_running_loop()
    with socket.create_server(("127.0.0.1", 0)) as listener:
        theirs = socket.socket()
        theirs.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * 1024)
        theirs.connect(listener.getsockname())
        ours, _ = listener.accept()
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16 * 1024)
    transport, _ = await loop.connect_accepted_socket(asyncio.Protocol, ours)
    reader, writer = await asyncio.open_connection(sock=theirs)
    try:
        sending = asyncio.ensure_future(FrameSender(transport).send(frame))
        if mid_send is not None:
            await asyncio.sleep(0)  # the sender runs until the full socket makes it wait
            assert not sending.done()
            mid_send()
        # gather: a send that fails surfaces at once instead of leaving the read waiting;
        # the bound turns a send that never ends (asyncio loses a sendfile whose file was
        # closed under it) into a failure.
        async with asyncio.timeout(20):
            received, _ = await asyncio.gather(reader.readexactly(size), sending)
        return received
    finally:
        transport.close()
        writer.close()


@pytest.fixture
def segment(tmp_path: Path) -> File:
    file = OsFileSystem().open(str(tmp_path / "00000000000000000000.log"), create=True)
    file.append(os.urandom(64 * SENDFILE_MIN_BYTES + 123))
    return file


def test_large_regions_sent_with_sendfile_and_small_ones_read(segment: File) -> None:
    big = FileRegion(segment, 100, 2 * SENDFILE_MIN_BYTES)
    small = FileRegion(segment, 5, SENDFILE_MIN_BYTES - 1)
    frame, expected = frame_of([b"head", big, b"mid", small, big, b"", b"tail"])
    calls: list[int] = []

    async def run() -> bytes:
        loop = asyncio.get_running_loop()
        original = loop.sendfile

        async def counting(*args: Any, **kw: Any) -> int:
            calls.append(args[3])
            return await original(*args, **kw)

        loop.sendfile = counting  # type: ignore[method-assign]
        return await send_and_receive(frame, len(expected))

    assert asyncio.run(run()) == expected
    assert calls == [big.size, big.size]  # the two large regions, not the small one


def test_a_region_whose_file_closes_mid_send_still_arrives_whole(segment: File) -> None:
    region = FileRegion(segment, 0, segment.size())
    frame, expected = frame_of([b"x", region, b"y"])

    # Closed as deleting its topic closes a segment, while the sender waits for the socket.
    received = asyncio.run(send_and_receive(frame, len(expected), mid_send=segment.close))
    assert received == expected
    assert segment.fileno() == -1


def test_without_sendfile_regions_are_read(segment: File, monkeypatch: pytest.MonkeyPatch) -> None:
    """A transport that cannot sendfile (TLS) gets the bytes read and written."""
    region = FileRegion(segment, 7, 2 * SENDFILE_MIN_BYTES)
    frame, expected = frame_of([b"a", region, b"b", region])

    async def refuse(*_args: object, **_kw: object) -> int:
        raise asyncio.SendfileNotAvailableError("not here")

    async def run() -> bytes:
        monkeypatch.setattr(asyncio.get_running_loop(), "sendfile", refuse)
        return await send_and_receive(frame, len(expected))

    assert asyncio.run(run()) == expected


def test_memory_files_are_read() -> None:
    file = MemFileSystem().open("/seg.log", create=True)
    file.append(os.urandom(2 * SENDFILE_MIN_BYTES))
    frame, expected = frame_of([b"p", FileRegion(file, 1, 2 * SENDFILE_MIN_BYTES - 1)])
    assert asyncio.run(send_and_receive(frame, len(expected))) == expected


def test_a_frame_without_regions_is_written_as_is() -> None:
    frame, expected = frame_of([b"just bytes"])
    assert asyncio.run(send_and_receive(frame, len(expected))) == expected

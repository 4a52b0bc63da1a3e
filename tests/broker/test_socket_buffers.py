"""``socket.send.buffer.bytes`` and ``socket.receive.buffer.bytes`` set the client sockets'
SO_SNDBUF and SO_RCVBUF, as in Kafka; -1 leaves the OS's (autotuned) buffer."""

from __future__ import annotations

import socket
import tempfile

from millpond.broker.config import build_config
from millpond.wire.generated.api.api_versions_request import ApiVersionsRequest

from .harness import Client, running_broker


def _server_side_buffers(props: dict[str, str]) -> tuple[int, int]:
    """SO_SNDBUF and SO_RCVBUF of the broker's end of one client connection."""
    with tempfile.TemporaryDirectory() as data:
        config, _ = build_config({"log.dirs": data, **props}, {"HOME": data})
        with running_broker(data_dir=data, config=config) as broker:
            client = Client(broker.port)
            client.request(ApiVersionsRequest(), 3)  # the connection is served by now
            [conn] = broker.connections
            return _buffers(conn)


def _buffers(conn: object) -> tuple[int, int]:
    sock = conn._transport.get_extra_info("socket")  # type: ignore[attr-defined]
    return (
        sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF),
        sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF),
    )


def test_configured_sizes_are_set() -> None:
    # Linux doubles what is asked for (the other half is its bookkeeping).
    sizes = {"socket.send.buffer.bytes": "65536", "socket.receive.buffer.bytes": "131072"}
    assert _server_side_buffers(sizes) == (2 * 65536, 2 * 131072)


def test_defaults_kafkas_send_buffer_and_the_os_receive_buffer() -> None:
    """Sending, Kafka's 100 KB; receiving, the OS's buffer (millpond's default, which a
    ``socket.receive.buffer.bytes`` line in server.properties overrides)."""
    send, receive = _server_side_buffers({})
    assert send == 2 * 102_400
    with socket.socket() as fresh:
        assert receive != 2 * 102_400
        assert receive >= fresh.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)


def test_minus_one_keeps_the_os_buffers() -> None:
    minus_one = {"socket.send.buffer.bytes": "-1", "socket.receive.buffer.bytes": "-1"}
    send, receive = _server_side_buffers(minus_one)
    assert send != 2 * 102_400 and receive != 2 * 102_400
    with socket.socket() as fresh:
        assert send >= fresh.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)

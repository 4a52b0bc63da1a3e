"""A tiny blocking Kafka-protocol client for the benchmarks: one request, one response,
on one socket, with nothing in between that a measurement could mistake for the broker."""

from __future__ import annotations

import socket
import struct
from typing import Any

from millpond.cli.client import recv_exactly
from millpond.wire import Message, RequestHeader, decode_response, encode_request

#: Benchmarks read answers with the command line's blocking reader.
recv_exact = recv_exactly


class Client:
    def __init__(self, port: int, timeout: float = 60.0, client_id: str = "bench") -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.correlation_id = 0
        self.client_id = client_id

    def request(self, body: Message, version: int) -> Any:
        assert body.API_KEY is not None
        self.correlation_id += 1
        header = RequestHeader(
            request_api_key=body.API_KEY,
            request_api_version=version,
            correlation_id=self.correlation_id,
            client_id=self.client_id,
        )
        frame = encode_request(header, body)
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        (size,) = struct.unpack(">i", recv_exact(self.sock, 4))
        return decode_response(recv_exact(self.sock, size), body.API_KEY, version)[1]

    def close(self) -> None:
        self.sock.close()

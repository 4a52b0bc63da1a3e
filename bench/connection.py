"""Micro-benchmark of the connection path: what one request costs between the bytes a
socket read and the response frame handed to the transport.

Not a test. Run ``.venv/bin/python bench/connection.py [REQUESTS]``. A real broker (its
handlers and storage, on a temporary directory) serves one connection over a transport
that only counts bytes; each request is fed to it as the socket would, and the event
loop turns once per request. Reports CPU microseconds per request, the best of several
runs (the least disturbed by other work on the machine), for a Produce of 16 x 1 KiB
records (acks=1), a Fetch of 32 KiB (read, not sendfile) and an ApiVersions (the
connection's own overhead with almost no handler). Run it on two trees to compare them.
"""

from __future__ import annotations

import asyncio
import struct
import sys
import tempfile
import time
from typing import Any

from millpond.broker.node import Broker
from millpond.broker.server import KafkaConnection
from millpond.controller.replication_control import CreatableTopic
from millpond.wire import Message, RequestHeader, encode_request
from millpond.wire.generated.api.api_versions_request import ApiVersionsRequest
from millpond.wire.generated.api.fetch_request import FetchPartition, FetchRequest, FetchTopic
from millpond.wire.generated.api.produce_request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from millpond.wire.records import NewRecord, build_batch

RUNS = 7


class CountingTransport(asyncio.Transport):
    """Takes every write and counts it; nothing reaches a socket."""

    def __init__(self) -> None:
        super().__init__()
        self.written = 0

    def write(self, data: Any) -> None:
        self.written += len(data)

    def writelines(self, list_of_data: Any) -> None:
        for data in list_of_data:
            self.written += len(data)

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return ("127.0.0.1", 50000) if name == "peername" else default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        pass


def request_frame(body: Message, version: int) -> bytes:
    assert body.API_KEY is not None
    header = RequestHeader(
        request_api_key=body.API_KEY,
        request_api_version=version,
        correlation_id=1,
        client_id="bench",
    )
    encoded = encode_request(header, body)
    return struct.pack(">i", len(encoded)) + encoded


def requests() -> dict[str, bytes]:
    now = int(time.time() * 1000)
    batch = build_batch([NewRecord(b"k", b"v" * 1024, timestamp=now) for _ in range(16)])
    data = [
        TopicProduceData(name="t", partition_data=[PartitionProduceData(index=0, records=batch)])
    ]
    wanted = [FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=32 * 1024)]
    fetch = FetchRequest(
        max_wait_ms=0,
        min_bytes=0,
        max_bytes=1 << 20,
        topics=[FetchTopic(topic="t", partitions=wanted)],
    )
    return {
        "produce": request_frame(ProduceRequest(acks=1, timeout_ms=1000, topic_data=data), 9),
        "fetch": request_frame(fetch, 12),
        "api_versions": request_frame(ApiVersionsRequest(), 0),
    }


async def measure(count: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="millpond-bench-connection-") as data_dir:
        broker = Broker(data_dir=data_dir, port=0)
        await broker.start()
        broker.controller.create_topics([CreatableTopic("t", 1)])
        connection = KafkaConnection(broker, broker.dispatcher, 1 << 24)
        connection.connection_made(CountingTransport())
        out: dict[str, float] = {}
        for name, frame in requests().items():
            best = float("inf")
            for _ in range(RUNS + 1):  # the first warms up
                started = time.process_time()
                for _ in range(count):
                    connection.data_received(frame)
                    await asyncio.sleep(0)
                best = min(best, (time.process_time() - started) / count)
            out[name] = best * 1e6
        connection.connection_lost(None)
        await broker.stop()
    return out


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    figures = asyncio.run(measure(count))
    print(" ".join(f"{name} {us:.1f} us" for name, us in figures.items()))


if __name__ == "__main__":
    main()

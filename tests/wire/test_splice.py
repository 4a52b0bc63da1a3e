"""Spliced records: an encoding that leaves them out must describe the same frame as one
that holds their bytes, at classic (v4) and compact (v12+) versions of Fetch."""

from __future__ import annotations

import os

import pytest

from millpond.wire import ResponseHeader, decode_response, encode_response, encode_response_parts
from millpond.wire.generated.api.fetch_response import (
    FetchableTopicResponse,
    FetchResponse,
    PartitionData,
)
from millpond.wire.splice import Spliced, SpliceSource, SplicingWriter, records_bytes, records_size


class Source:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.reads = 0

    @property
    def size(self) -> int:
        return len(self.data)

    def read(self) -> bytes:
        self.reads += 1
        return self.data


def response(records: list[bytes | bytearray | None]) -> FetchResponse:
    return FetchResponse(
        responses=[
            FetchableTopicResponse(
                topic="t",
                topic_id=b"\x01" * 16,
                partitions=[
                    PartitionData(partition_index=i, high_watermark=7, records=r)
                    for i, r in enumerate(records)
                ],
            )
        ]
    )


def joined(parts: list[memoryview | SpliceSource]) -> bytes:
    return b"".join(p.tobytes() if isinstance(p, memoryview) else p.read() for p in parts)


# 127 and 128 bytes: the compact length prefix grows from one varint byte to two there.
CONTENTS = [os.urandom(300), None, b"", os.urandom(126), os.urandom(127), os.urandom(70_000)]


@pytest.mark.parametrize("version", [4, 11, 12, 16, 18])
def test_a_spliced_frame_is_the_frame_holding_the_bytes(version: int) -> None:
    header = ResponseHeader(correlation_id=9)
    plain = encode_response(header, response(list(CONTENTS)), version)
    sources = [Source(c) if c else None for c in CONTENTS]
    spliced = response([Spliced(s) if s else c for s, c in zip(sources, CONTENTS, strict=True)])

    frame = encode_response_parts(header, spliced, version)
    assert len(frame) < len(plain) - 70_000  # the record bytes are not in the buffer
    assert all(s.reads == 0 for s in sources if s)
    assert frame.frame_size() == len(plain)
    assert joined(frame.parts()) == plain
    # A plain encoding of the same message reads the sources instead.
    assert encode_response(header, spliced, version) == plain
    _, decoded = decode_response(plain, 1, version)
    assert isinstance(decoded, FetchResponse)
    got = [p.records for p in decoded.responses[0].partitions]
    assert [None if r is None else bytes(r) for r in got] == CONTENTS


def test_parts_between_sources_are_views_of_the_buffer() -> None:
    w = SplicingWriter()
    w += b"abc"
    first, second = Source(b"12"), Source(b"345")
    w.splices.append((3, first))
    w.splices.append((3, second))
    w += b"de"
    parts = w.parts()
    assert [type(p) for p in parts] == [memoryview, Source, Source, memoryview]
    assert joined(parts) == b"abc12345de"
    assert w.frame_size() == 10


def test_size_bytes_and_display_of_a_spliced_value() -> None:
    source = Source(b"records!")
    value = Spliced(source)
    assert len(value) == 0 and records_size(value) == 8
    assert records_bytes(value) == b"records!"
    assert records_size(None) == 0 and records_size(memoryview(b"xy")) == 2
    data = PartitionData(records=value)
    assert "<8 bytes of records>" in repr(data)
    assert data.to_data()["records"] == b"records!"

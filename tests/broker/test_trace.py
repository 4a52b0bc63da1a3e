"""The protocol trace (``millpond serve --trace``): one JSON line per request, saying who
asked what and how it ended."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from millpond.broker.trace import RequestTrace
from millpond.controller.replication_control import CreatableTopic
from millpond.wire.generated.api.api_versions_request import ApiVersionsRequest
from millpond.wire.generated.api.metadata_request import MetadataRequest
from millpond.wire.generated.api.produce_request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from millpond.wire.records import NewRecord, build_batch

from .harness import Client, running_broker


class _Kept(io.StringIO):
    """A stream whose text outlives ``close`` (the broker closes its trace on stop)."""

    def close(self) -> None:
        self.kept = self.getvalue()
        super().close()


def _lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines()]


def test_each_request_is_one_line_with_its_outcome() -> None:
    stream = _Kept()
    with running_broker(trace=RequestTrace(stream)) as broker:
        broker.controller.create_topics([CreatableTopic("t", 1)])
        client = Client(broker.port, client_id="tracer-test")
        client.request(ApiVersionsRequest(), 3)
        client.request(MetadataRequest(topics=None), 12)
        batch = build_batch([NewRecord(b"k", b"v", timestamp=int(time.time() * 1000))])
        data = [
            TopicProduceData(
                name="t", partition_data=[PartitionProduceData(index=0, records=batch)]
            )
        ]
        client.send_raw(_produce_frame(client, ProduceRequest(acks=0, topic_data=data)))
        # An answered request after the acks=0 one: the connection handled both in order.
        client.request(ApiVersionsRequest(), 3)
    lines = _lines(stream.kept)
    assert [(x["api"], x["key"], x["version"], x["outcome"]) for x in lines] == [
        ("ApiVersions", 18, 3, "answered"),
        ("Metadata", 3, 12, "answered"),
        ("Produce", 0, 9, "no response"),
        ("ApiVersions", 18, 3, "answered"),
    ]
    assert {x["client"] for x in lines} == {"tracer-test"}
    assert [x["correlation_id"] for x in lines] == [1, 2, 3, 4]
    assert len({x["connection"] for x in lines}) == 1
    assert all(x["latency_us"] >= 0 and x["ts"] > 0 for x in lines)


def _produce_frame(client: Client, request: ProduceRequest) -> bytes:
    from millpond.wire import RequestHeader, encode_request

    client.correlation_id += 1
    header = RequestHeader(
        request_api_key=0,
        request_api_version=9,
        correlation_id=client.correlation_id,
        client_id=client.client_id,
    )
    return encode_request(header, request)


def test_serve_writes_the_trace_file(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    command = [sys.executable, "-m", "millpond", "serve", "--trace", str(trace)]
    command += ["--override", f"log.dirs={tmp_path / 'data'}"]
    command += ["--override", "listeners=PLAINTEXT://127.0.0.1:0"]
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert "listening on" in first, first
        port = int(first.split("listening on ")[1].split()[0].rsplit(":", 1)[1])
        client = Client(port, client_id="cli-trace")
        client.request(ApiVersionsRequest(), 0)
        client.close()
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
    assert [(x["api"], x["version"], x["client"]) for x in _lines(trace.read_text())] == [
        ("ApiVersions", 0, "cli-trace")
    ]


def test_lines_carry_the_decoded_messages_with_records_abbreviated() -> None:
    stream = _Kept()
    with running_broker(trace=RequestTrace(stream)) as broker:
        broker.controller.create_topics([CreatableTopic("t", 1)])
        client = Client(broker.port, client_id="bodies")
        records = [NewRecord(b"key", b"secret value", timestamp=int(time.time() * 1000))] * 3
        data = [
            TopicProduceData(
                name="t",
                partition_data=[PartitionProduceData(index=0, records=build_batch(records))],
            )
        ]
        client.request(ProduceRequest(acks=1, timeout_ms=1000, topic_data=data), 9)
    [line] = _lines(stream.kept)
    partition = line["request"]["topic_data"][0]["partition_data"][0]
    [batch] = partition["records"]["batches"]
    assert (batch["base_offset"], batch["records"], batch["magic"]) == (0, 3, 2)
    assert (batch["producer_id"], batch["base_sequence"], batch["compression"]) == (-1, -1, "none")
    assert partition["records"]["bytes"] == batch["bytes"] > 0
    assert "secret value" not in stream.kept  # payloads never reach the trace
    answer = line["response"]["responses"][0]["partition_responses"][0]
    assert (answer["index"], answer["error_code"], answer["base_offset"]) == (0, 0, 0)


def test_the_trace_file_config_traces_like_the_flag(tmp_path: Path) -> None:
    from millpond.testing import broker

    trace = tmp_path / "by-config.jsonl"
    with broker(millpond_trace_file=str(trace)) as running:
        Client(running.port, client_id="by-config").request(ApiVersionsRequest(), 2)
    [line] = _lines(trace.read_text())
    assert (line["api"], line["client"], line["response"]["error_code"]) == (
        "ApiVersions",
        "by-config",
        0,
    )

"""``millpond trace``: the real executable over a trace that real clients made, and its
lint, each rule shown firing on the protocol misuse it names and silent otherwise."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from millpond.cli.trace_lint import Linter
from millpond.testing import broker
from millpond.wire.generated.api.init_producer_id_request import InitProducerIdRequest
from millpond.wire.generated.api.metadata_request import MetadataRequest
from millpond.wire.generated.api.produce_request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from millpond.wire.records import NewRecord, build_batch
from tests.broker.harness import Client


def _millpond(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "millpond", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def _real_client_trace(path: Path) -> None:
    """librdkafka producing idempotently and reading back, traced by the broker."""
    with broker(millpond_trace_file=str(path)) as running:
        running.create_topic("traced")
        producer = Producer(
            {"bootstrap.servers": running.bootstrap_servers, "enable.idempotence": True}
        )
        for i in range(20):
            producer.produce("traced", str(i).encode())
        assert producer.flush(10) == 0
        consumer = Consumer({"bootstrap.servers": running.bootstrap_servers, "group.id": "g"})
        consumer.assign([TopicPartition("traced", 0, 0)])
        while (message := consumer.poll(5)) is not None and int(message.value()) < 19:
            pass
        consumer.close()


def test_the_command_prints_filters_and_passes_on_a_real_trace(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    _real_client_trace(trace)
    shown = _millpond("trace", str(trace))
    assert shown.returncode == 0, shown.stderr
    apis = {line.split()[4] for line in shown.stdout.splitlines()}
    assert {"ApiVersions", "Metadata", "InitProducerId", "Produce", "Fetch"} <= apis
    produce = _millpond("trace", str(trace), "--api", "produce", "--format", "json")
    lines = [json.loads(x) for x in produce.stdout.splitlines()]
    assert lines and {x["api"] for x in lines} == {"Produce"}
    sent = sum(
        b["records"]
        for x in lines
        for t in x["request"]["topic_data"]
        for p in t["partition_data"]
        for b in p["records"]["batches"]
    )
    assert sent == 20
    verbose = _millpond("trace", str(trace), "--api", "InitProducerId", "-v")
    assert '"producer_id": 0' in verbose.stdout and "request:" in verbose.stdout
    linted = _millpond("trace", str(trace), "--lint")
    assert linted.returncode == 0, linted.stdout  # a well-behaved client: nothing to say
    assert "0 finding(s)" in linted.stdout


def _produce(producer_id: int, sequence: int, count: int) -> ProduceRequest:
    records = [NewRecord(None, b"v", timestamp=int(time.time() * 1000))] * count
    batch = build_batch(records, producer_id=producer_id, producer_epoch=0, base_sequence=sequence)
    data = [
        TopicProduceData(name="t", partition_data=[PartitionProduceData(index=0, records=batch)])
    ]
    return ProduceRequest(acks=-1, timeout_ms=1000, topic_data=data)


def test_the_lint_finds_a_guessed_version_and_a_sequence_gap(tmp_path: Path) -> None:
    trace = tmp_path / "misuse.jsonl"
    with broker(millpond_trace_file=str(trace)) as running:
        running.create_topic("t")
        client = Client(running.port, client_id="careless")
        client.request(MetadataRequest(topics=None), 12)  # no ApiVersions first
        _, answer = client.request(InitProducerIdRequest(transactional_id=None), 4)
        client.request(_produce(answer.producer_id, 0, 2), 9)
        client.request(_produce(answer.producer_id, 2, 1), 9)
        client.request(_produce(answer.producer_id, 2, 1), 9)  # a retry: fine
        client.request(_produce(answer.producer_id, 5, 1), 9)  # 3 and 4 skipped
    linted = _millpond("trace", str(trace), "--lint", "--format", "json")
    assert linted.returncode == 1
    findings = [json.loads(x)["lint"] for x in linted.stdout.splitlines() if '"lint"' in x]
    assert [(f["rule"], f["client"]) for f in findings] == [
        ("no-api-versions", "careless"),
        ("sequence-gap", "careless"),
    ]
    assert "sent sequence 5 after 2: 2 sequence number(s) skipped" in findings[1]["message"]


def _line(key: int, request: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    return {"key": key, "api": "x", "version": 1, "connection": 1, "peer": "p", "client": "c",
            "request": request, "response": response}  # fmt: skip


def test_the_lint_finds_a_commit_without_a_generation_only_in_a_group_with_members() -> None:
    linter = Linter()
    api_versions = _line(18, {}, {"error_code": 0})
    commit = _line(8, {"group_id": "g", "generation_id_or_member_epoch": -1}, {})
    assert linter.feed(1, api_versions) == []
    assert linter.feed(2, commit) == []  # no members seen: a simple consumer's commit
    assert linter.feed(3, _line(11, {"group_id": "g"}, {"error_code": 0, "generation_id": 1})) == []
    [finding] = linter.feed(4, commit)
    assert finding.rule == "commit-without-generation" and finding.line == 4
    assert linter.feed(5, _line(8, {"group_id": "g", "generation_id_or_member_epoch": 1}, {})) == []


def test_unreadable_lines_are_reported_and_skipped(tmp_path: Path) -> None:
    trace = tmp_path / "mixed.jsonl"
    good = json.dumps(_line(18, {}, {"error_code": 0}) | {"api": "ApiVersions", "ts": 0})
    trace.write_text(f"{good}\nnot json\n[1]\n")
    shown = _millpond("trace", str(trace))
    assert shown.returncode == 0
    assert len(shown.stdout.splitlines()) == 1
    assert (
        ":2: skipped, not JSON" in shown.stderr and ":3: skipped, not a trace line" in shown.stderr
    )
    missing = _millpond("trace", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 1 and "cannot read" in missing.stderr and "hint" in missing.stderr

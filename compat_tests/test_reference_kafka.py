"""The reference-Kafka harness works: the broker serves, Kafka writes partition directories that
its own DumpLogSegments reads back, copies of them are complete, and errors are reported."""

from __future__ import annotations

import re
import shutil
import socket
import struct
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic

from compat_tests.kafka.reference import (
    LOG_0,
    SEGMENT_0,
    KafkaNotInstalledError,
    RunningBroker,
    ToolError,
    dump_log_segments,
    kafka_classpath,
    run_tool,
)
from millpond.wire import APIS, RequestHeader, decode_response, encode_request
from millpond.wire.generated.api.api_versions_request import ApiVersionsRequest
from millpond.wire.generated.api.api_versions_response import ApiVersionsResponse

pytestmark = pytest.mark.compat

TOPIC = "reference-dump"
RECORDS = 40  # ~1 KiB each, one batch each: about ten offset-index entries (every 4 KiB)


@dataclass(frozen=True)
class Produced:
    live: Path  # the partition directory under the running broker's log dir
    copy: Path  # copy_partition_dir's copy of it, taken with the broker stopped
    keys: list[bytes]
    values: list[bytes]


def _key(i: int) -> bytes:
    return f"key-{i:03d}".encode()


def _value(i: int) -> bytes:
    return f"value-{i:03d}-".encode() + b"x" * 1000


@pytest.fixture(scope="module")
def produced(reference_kafka: RunningBroker, tmp_path_factory: pytest.TempPathFactory) -> Produced:
    """RECORDS records produced by kafka-python to TOPIC partition 0, one batch each."""
    admin = KafkaAdminClient(bootstrap_servers=reference_kafka.bootstrap)
    try:
        admin.create_topics([NewTopic(TOPIC, 1, 1)], timeout_ms=30_000)
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=reference_kafka.bootstrap, acks="all")
    try:
        for i in range(RECORDS):
            producer.send(TOPIC, key=_key(i), value=_value(i)).get(timeout=30)
    finally:
        producer.close(timeout=30)
    copy = reference_kafka.copy_partition_dir(TOPIC, 0, tmp_path_factory.mktemp("copy"))
    return Produced(
        live=reference_kafka.partition_dir(TOPIC, 0),
        copy=copy,
        keys=[_key(i) for i in range(RECORDS)],
        values=[_value(i) for i in range(RECORDS)],
    )


def _recv_exact(s: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        assert chunk, "connection closed"
        data += chunk
    return data


def test_broker_answers_api_versions(reference_kafka: RunningBroker) -> None:
    header = RequestHeader(
        request_api_key=18, request_api_version=3, correlation_id=7, client_id="compat"
    )
    body = ApiVersionsRequest(client_software_name="millpond", client_software_version="0")
    frame = encode_request(header, body)
    with socket.create_connection(("127.0.0.1", reference_kafka.ports.plaintext), 10) as s:
        s.sendall(struct.pack(">i", len(frame)) + frame)
        (size,) = struct.unpack(">i", _recv_exact(s, 4))
        answer = _recv_exact(s, size)
    response_header, response = decode_response(answer, 18, 3)
    assert response_header.correlation_id == 7
    assert isinstance(response, ApiVersionsResponse)
    assert response.error_code == 0
    offered = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
    for key in (0, 1, 3, 18):  # Produce, Fetch, Metadata, ApiVersions
        assert key in offered
    # Every API Kafka 4.4 offers is one millpond.wire knows, up to the same latest version.
    unknown = {k: v for k, v in offered.items() if k not in APIS or not APIS[k].supports(v[1])}
    assert unknown == {}
    # ... and from the same oldest version, except Produce: Kafka 4 advertises v0 although it
    # rejects v0-v2, because older librdkafka only compresses when v0 is listed (KAFKA-18659).
    older = {k: v for k, v in offered.items() if not APIS[k].supports(v[0])}
    assert older == {0: (0, APIS[0].max_version)}


def test_dump_log_segments_lists_the_produced_records(produced: Produced) -> None:
    output = dump_log_segments([str(produced.live / LOG_0)], "--deep-iteration", "--print-data-log")
    records = re.findall(r"^\| offset: (\d+) .* key: (\S+) payload: (\S+)$", output, re.M)
    assert [int(offset) for offset, _, _ in records] == list(range(RECORDS))
    assert [key.encode() for _, key, _ in records] == produced.keys
    assert [value.encode() for _, _, value in records] == produced.values
    assert len(re.findall(r"^baseOffset: ", output, re.M)) == RECORDS  # one batch each


def test_copied_partition_dir_is_complete(produced: Produced) -> None:
    names = {p.name for p in produced.copy.iterdir()}
    for suffix in (".log", ".index", ".timeindex"):
        assert f"{SEGMENT_0}{suffix}" in names
    assert {"leader-epoch-checkpoint", "partition.metadata"} <= names
    assert any(name.endswith(".snapshot") for name in names)  # written at clean shutdown
    assert (produced.copy / LOG_0).read_bytes() == (produced.live / LOG_0).read_bytes()
    # Clean shutdown trims the preallocated indexes to their entries (8 and 12 bytes each).
    assert 0 < (produced.copy / f"{SEGMENT_0}.index").stat().st_size < 1024
    assert 0 < (produced.copy / f"{SEGMENT_0}.timeindex").stat().st_size < 1024


def test_indexes_of_the_copy_pass_kafka_checks(produced: Produced) -> None:
    indexes = [str(produced.copy / f"{SEGMENT_0}{s}") for s in (".index", ".timeindex")]
    sane = dump_log_segments(indexes, "--index-sanity-check")
    assert sane.count("passed sanity check") == 2, sane
    dump_log_segments(indexes, "--verify-index-only")
    entries = re.findall(r"^offset: \d+ position: \d+$", dump_log_segments(indexes[:1]), re.M)
    assert len(entries) >= 5  # a real index to check, not an empty one


def test_dump_log_segments_raises_on_reported_errors(produced: Produced, tmp_path: Path) -> None:
    broken = Path(shutil.copytree(produced.copy, tmp_path / produced.copy.name))
    with (broken / LOG_0).open("ab") as log:
        log.write(b"\x00" * 7)
    with pytest.raises(ToolError, match="Found 7 invalid bytes at the end"):
        dump_log_segments([str(broken / LOG_0)])
    # An index entry whose offset is not the last offset of the batch at its position.
    index = broken / f"{SEGMENT_0}.index"
    with index.open("ab") as f:
        f.write(struct.pack(">ii", RECORDS - 1, 0))
    with pytest.raises(ToolError, match="Mismatches in"):
        dump_log_segments([str(index)], "--verify-index-only")
    with index.open("ab") as f:
        f.write(b"\x00\x00\x00")  # no longer a whole number of entries
    with pytest.raises(ToolError, match="CorruptIndexException"):
        dump_log_segments([str(index)], "--index-sanity-check")


def test_run_tool_runs_kafka_tools_against_the_broker(
    reference_kafka: RunningBroker, produced: Produced
) -> None:
    args = ["--bootstrap-server", reference_kafka.bootstrap, "--describe", "--topic", TOPIC]
    result = run_tool("org.apache.kafka.tools.TopicCommand", args)
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(rf"Topic: {TOPIC}\s.*PartitionCount: 1\s", result.stdout), result.stdout


def test_missing_or_stale_jars_fail_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("MILLPOND_KAFKA_CACHE", str(tmp_path))
    with pytest.raises(KafkaNotInstalledError, match=r"jars not found .*install\.sh"):
        kafka_classpath()
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "kafka-clients-0.jar").write_bytes(b"")
    (tmp_path / "pom.sha256").write_text("0" * 64)
    with pytest.raises(
        KafkaNotInstalledError, match=r"not resolved from the current .*install\.sh"
    ):
        kafka_classpath()

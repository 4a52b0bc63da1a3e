"""The control plane on a running broker: each fault action on the wire, the filters
that pick requests, the clock, forced rebalances, live state, and the HTTP endpoint
(its errors, and schemathesis fuzzing it against its own OpenAPI description)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from millpond.testing import EmbeddedBroker, broker
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.api_versions_request import ApiVersionsRequest
from millpond.wire.generated.api.find_coordinator_request import FindCoordinatorRequest
from millpond.wire.generated.api.list_offsets_request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from millpond.wire.generated.api.produce_request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from millpond.wire.records import NewRecord, build_batch
from tests.broker.harness import Client


@pytest.fixture
def running() -> Iterator[EmbeddedBroker]:
    with broker(millpond_control_port=0) as embedded:
        embedded.create_topic("t", partitions=2)
        embedded.create_topic("u")
        yield embedded


def _produce(topic: str, partition: int, value: bytes) -> ProduceRequest:
    batch = build_batch([NewRecord(b"k", value, timestamp=1_700_000_000_000)])
    return ProduceRequest(
        acks=1,
        timeout_ms=5000,
        topic_data=[
            TopicProduceData(
                name=topic, partition_data=[PartitionProduceData(index=partition, records=batch)]
            )
        ],
    )


def _produce_error(client: Client, topic: str, partition: int, value: bytes) -> int:
    _, response = client.request(_produce(topic, partition, value), 9)
    [topic_response] = response.responses
    [partition_response] = topic_response.partition_responses
    assert partition_response.index == partition
    code: int = partition_response.error_code
    return code


def test_an_error_rule_refuses_the_next_requests_and_writes_nothing(
    running: EmbeddedBroker,
) -> None:
    rule = running.fail("Produce", "NOT_LEADER_OR_FOLLOWER", count=2)
    assert rule["error_code"] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    client = Client(running.port)
    assert _produce_error(client, "t", 0, b"a") == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert _produce_error(client, "t", 1, b"b") == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert running.records("t") == []
    assert _produce_error(client, "t", 0, b"c") == ErrorCode.NONE  # the rule is used up
    assert [r.value for r in running.records("t")] == [b"c"]
    state = running.state()
    assert state["faults"] == []
    assert [(f["id"], f["applied"]) for f in state["spent_faults"]] == [(rule["id"], 2)]


def test_topic_partition_and_client_filters_pick_only_their_requests(
    running: EmbeddedBroker,
) -> None:
    running.fail("Produce", "REQUEST_TIMED_OUT", count=None, topic="t", partition=1)
    running.fail("Produce", "KAFKA_STORAGE_ERROR", count=None, topic="u", client_id="victim")
    client, victim = Client(running.port), Client(running.port, client_id="victim")
    assert _produce_error(client, "t", 0, b"x") == ErrorCode.NONE
    assert _produce_error(client, "t", 1, b"x") == ErrorCode.REQUEST_TIMED_OUT
    assert _produce_error(client, "u", 0, b"x") == ErrorCode.NONE
    assert _produce_error(victim, "u", 0, b"x") == ErrorCode.KAFKA_STORAGE_ERROR
    assert _produce_error(victim, "t", 1, b"x") == ErrorCode.REQUEST_TIMED_OUT
    faults = running.state()["faults"]
    assert [f["applied"] for f in faults] == [2, 1]  # count None: they stay
    assert running.clear_faults() == 2
    assert _produce_error(victim, "u", 0, b"x") == ErrorCode.NONE


def test_a_topic_filter_picks_requests_naming_the_topic_by_id(running: EmbeddedBroker) -> None:
    """Produce v13 (Java kafka-clients 4.x) names topics by id only, its name left empty."""
    topic = running.broker.image.topic("t")
    assert topic is not None
    running.fail("Produce", "NOT_LEADER_OR_FOLLOWER", count=None, topic="t", partition=1)
    client = Client(running.port)

    def produce_by_id(partition: int) -> int:
        request = _produce("t", partition, b"x")
        request.topic_data[0].name = ""
        request.topic_data[0].topic_id = topic.topic_id
        _, response = client.request(request, 13)
        code: int = response.responses[0].partition_responses[0].error_code
        return code

    assert produce_by_id(0) == ErrorCode.NONE
    assert produce_by_id(1) == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert [f["applied"] for f in running.state()["faults"]] == [1]


def test_error_answers_keep_each_apis_shape(running: EmbeddedBroker) -> None:
    running.fail("ListOffsets", "UNKNOWN_LEADER_EPOCH")
    running.fail("FindCoordinator", "COORDINATOR_NOT_AVAILABLE")
    running.fail("ApiVersions", 35)
    client = Client(running.port)
    request = ListOffsetsRequest(
        replica_id=-1,
        topics=[
            ListOffsetsTopic(
                name="t",
                partitions=[
                    ListOffsetsPartition(partition_index=0, timestamp=-1),
                    ListOffsetsPartition(partition_index=1, timestamp=-1),
                ],
            )
        ],
    )
    _, offsets = client.request(request, 7)
    assert [(p.partition_index, p.error_code) for p in offsets.topics[0].partitions] == [
        (0, ErrorCode.UNKNOWN_LEADER_EPOCH),
        (1, ErrorCode.UNKNOWN_LEADER_EPOCH),
    ]
    _, found = client.request(FindCoordinatorRequest(key_type=0, coordinator_keys=["g", "h"]), 4)
    assert [(c.key, c.error_code, c.node_id) for c in found.coordinators] == [
        ("g", ErrorCode.COORDINATOR_NOT_AVAILABLE, -1),
        ("h", ErrorCode.COORDINATOR_NOT_AVAILABLE, -1),
    ]
    _, versions = client.request(ApiVersionsRequest(), 2)
    assert versions.error_code == ErrorCode.UNSUPPORTED_VERSION
    _, versions = client.request(ApiVersionsRequest(), 2)  # only the next one
    assert versions.error_code == ErrorCode.NONE


def test_a_delay_rule_holds_the_answer_of_a_request_it_handled(running: EmbeddedBroker) -> None:
    running.delay("Produce", 400)
    client = Client(running.port)
    started = time.monotonic()
    assert _produce_error(client, "t", 0, b"late") == ErrorCode.NONE
    assert time.monotonic() - started >= 0.4
    assert [r.value for r in running.records("t")] == [b"late"]


def test_a_drop_rule_silences_the_connection_and_only_it(running: EmbeddedBroker) -> None:
    running.drop("Produce", topic="t")
    client = Client(running.port)
    client.sock.settimeout(0.5)
    with pytest.raises(TimeoutError):
        _produce_error(client, "t", 0, b"dropped")
    with pytest.raises(TimeoutError):  # and nothing after it is answered either
        client.request(ApiVersionsRequest(), 2)
    assert [r.value for r in running.records("t")] == []
    other = Client(running.port)
    assert _produce_error(other, "t", 0, b"fine") == ErrorCode.NONE


def test_a_close_rule_closes_the_connection_instead_of_answering(running: EmbeddedBroker) -> None:
    running.close("Metadata")
    client = Client(running.port)
    assert _produce_error(client, "t", 0, b"kept") == ErrorCode.NONE
    from millpond.wire.generated.api.metadata_request import MetadataRequest

    with pytest.raises(ConnectionError):
        client.request(MetadataRequest(topics=None), 12)
    assert [r.value for r in running.records("t")] == [b"kept"]


def test_rules_are_checked_when_made(running: EmbeddedBroker) -> None:
    from millpond.broker.control.faults import FaultError

    with pytest.raises(FaultError, match="unknown API 'Produse'"):
        running.fail("Produse", "NOT_LEADER_OR_FOLLOWER")
    with pytest.raises(FaultError, match="unknown Kafka error 'NOT_A_LEADER'"):
        running.fail("Produce", "NOT_A_LEADER")
    with pytest.raises(FaultError, match="DescribeConfigs has no error code"):
        running.fail("DescribeConfigs", "UNKNOWN_SERVER_ERROR")
    with pytest.raises(FaultError, match="delay_ms must be between 1"):
        running.delay("Fetch", 0)
    with pytest.raises(FaultError, match="count must be between 1"):
        running.close("Fetch", count=0)


def test_advancing_the_clock_expires_idle_producers_at_once(running: EmbeddedBroker) -> None:
    producer = Producer(
        {"bootstrap.servers": running.bootstrap_servers, "enable.idempotence": True}
    )
    producer.produce("t", b"v", partition=0)
    assert producer.flush(10) == 0
    [state] = running.state()["producers"]
    assert (state["topic"], state["partition"], state["last_sequence"]) == ("t", 0, 0)
    before = running.state()["clock"]["now_ms"]
    running.advance_clock(86_400_000 - 60_000)  # producer.id.expiration.ms is one day
    assert len(running.state()["producers"]) == 1
    clock = running.advance_clock(120_000)
    assert clock["now_ms"] >= before + 86_460_000
    assert running.state()["producers"] == []


def test_a_frozen_clock_stands_still_until_advanced(running: EmbeddedBroker) -> None:
    frozen = running.freeze_clock()
    assert frozen["frozen"]
    time.sleep(0.05)
    assert running.state()["clock"]["now_ms"] == frozen["now_ms"]
    assert running.advance_clock(1000)["now_ms"] == frozen["now_ms"] + 1000
    resumed = running.resume_clock()
    assert not resumed["frozen"]
    assert resumed["now_ms"] >= frozen["now_ms"] + 1000


# -- HTTP -------------------------------------------------------------------------------


def _http(url: str, method: str = "GET", body: Any = None) -> tuple[int, Any]:
    data = (
        None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    )
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 (loopback)
            raw = response.read()
            return response.status, json.loads(raw) if raw else None
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_http_endpoint_drives_faults_clock_and_state(running: EmbeddedBroker) -> None:
    url = running.control_url
    assert url is not None and url.startswith("http://127.0.0.1:")
    status, rule = _http(
        f"{url}/v1/faults",
        "POST",
        {"api": "Produce", "action": "error", "error": "NOT_ENOUGH_REPLICAS", "topic": "t"},
    )
    assert status == 201 and rule["error"] == "NOT_ENOUGH_REPLICAS" and rule["count"] == 1
    assert _produce_error(Client(running.port), "t", 0, b"x") == ErrorCode.NOT_ENOUGH_REPLICAS
    status, rule = _http(f"{url}/v1/faults", "POST", {"api": 1, "action": "delay", "delay_ms": 5})
    assert _http(f"{url}/v1/faults") == (200, [rule])
    assert _http(f"{url}/v1/faults/{rule['id']}", "DELETE") == (204, None)
    assert _http(f"{url}/v1/faults/{rule['id']}", "DELETE")[0] == 404
    status, clock = _http(f"{url}/v1/clock/advance", "POST", {"ms": 5000})
    assert status == 200 and clock["offset_ms"] >= 5000
    status, state = _http(f"{url}/v1/state")
    assert status == 200 and set(state) >= {"groups", "producers", "fetch_sessions", "faults"}
    status, spec = _http(f"{url}/openapi.json")
    assert status == 200 and spec["openapi"].startswith("3.1")


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "says"),
    [
        ("POST", "/v1/faults", b"{not json", 400, "not JSON"),
        ("POST", "/v1/faults", [1], 400, "JSON object"),
        ("POST", "/v1/faults", {"api": "Produce"}, 400, "needs action"),
        ("POST", "/v1/faults", {"api": "Produce", "action": "drop", "cont": 1}, 400, "cont"),
        ("POST", "/v1/faults", {"api": True, "action": "drop"}, 400, "api must be"),
        ("POST", "/v1/faults", {"api": "Produce", "action": "explode"}, 400, "unknown action"),
        ("POST", "/v1/clock/advance", {"ms": -1}, 400, "between 0 and"),
        ("POST", "/v1/clock/advance", {"seconds": 1}, 400, '{"ms"'),
        ("POST", "/v1/groups/none/rebalance", None, 404, "does not exist"),
        ("GET", "/v2/faults", None, 404, "no such path"),
        ("PUT", "/v1/faults", b"{}", 405, "use DELETE, GET, POST"),
        ("DELETE", "/v1/faults/x", None, 400, "integer"),
    ],
)
def test_the_http_endpoint_says_what_was_wrong(
    running: EmbeddedBroker, method: str, path: str, body: Any, status: int, says: str
) -> None:
    got, answer = _http(f"{running.control_url}{path}", method, body)
    assert got == status
    assert says in answer["error"]


def test_the_http_endpoint_refuses_a_huge_body(running: EmbeddedBroker) -> None:
    assert running.control_url is not None
    port = int(running.control_url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"POST /v1/faults HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999\r\n\r\n")
        head = sock.recv(4096)
    assert head.startswith(b"HTTP/1.1 413")


def test_the_endpoint_is_off_unless_configured() -> None:
    with broker() as plain:
        assert plain.control_url is None
        assert plain.broker.control_server is None


def test_schemathesis_finds_no_server_error_and_no_departure_from_the_description(
    running: EmbeddedBroker, tmp_path: Path
) -> None:
    """Every check schemathesis has (5xx, response schemas and status codes, accepting
    what the description allows and refusing what it does not), then a Kafka request:
    the broker still serves."""
    st = Path(sys.executable).with_name("st")
    result = subprocess.run(
        [
            str(st), "run", f"{running.control_url}/openapi.json", "--checks", "all",
            "--max-examples", "40", "--seed", "7", "--generation-deterministic", "--no-color",
            "--report-dir", str(tmp_path),
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-8000:] + result.stderr[-2000:]
    assert "passed" in result.stdout
    running.clear_faults()
    _, versions = Client(running.port).request(ApiVersionsRequest(), 2)
    assert versions.error_code == ErrorCode.NONE


def test_a_fenced_producer_has_its_next_batch_refused_and_librdkafka_recovers(
    running: EmbeddedBroker,
) -> None:
    producer = Producer(
        {"bootstrap.servers": running.bootstrap_servers, "enable.idempotence": True}
    )
    failures: list[Any] = []

    def delivered(error: Any, _message: Any) -> None:
        if error is not None:
            failures.append(error.code())

    for value in (b"before", b"fenced", b"after"):
        producer.produce("u", value, on_delivery=delivered)
        assert producer.flush(10) == 0
        if value == b"before":
            [state] = running.state()["producers"]
            fenced = running.fence_producer(state["producer_id"])
            assert fenced["partitions"] == [{"topic": "u", "partition": 0, "producer_epoch": 1}]
    from confluent_kafka import KafkaError

    assert failures == [KafkaError.INVALID_PRODUCER_EPOCH]
    # librdkafka bumps its epoch (KIP-360) and goes on; the fenced batch is not stored.
    assert [r.value for r in running.records("u")] == [b"before", b"after"]
    status, answer = _http(f"{running.control_url}/v1/producers/424242/fence", "POST")
    assert status == 404 and "no partition knows producer id 424242" in answer["error"]


def test_advancing_the_clock_past_retention_deletes_the_expired_records_at_once(
    running: EmbeddedBroker,
) -> None:
    running.create_topic("r", configs={"retention.ms": "3600000"})
    producer = Producer({"bootstrap.servers": running.bootstrap_servers})
    for value in (b"a", b"b", b"c"):
        producer.produce("r", value)
    assert producer.flush(10) == 0
    running.advance_clock(1_800_000)  # half the retention: all kept
    assert [r.value for r in running.records("r")] == [b"a", b"b", b"c"]
    running.advance_clock(1_900_000)  # past it: gone now, not at the next check
    assert running.records("r") == []
    producer.produce("r", b"d")
    assert producer.flush(10) == 0
    assert [(r.offset, r.value) for r in running.records("r")] == [(3, b"d")]

"""The ``millpond`` command line as a user runs it: the real executable against a broker,
checked by its output (tables and JSON) and by its effects, seen through other means
(raw protocol requests, a real client). Each scenario takes a bootstrap address, so the
same checks run against millpond (tests/cli) and Apache Kafka 4.4 (compat_tests)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from millpond.wire import RequestHeader, decode_response, encode_request
from millpond.wire.generated.api.describe_configs_request import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
)
from millpond.wire.generated.api.metadata_request import MetadataRequest, MetadataRequestTopic
from millpond.wire.generated.api.offset_fetch_request import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
)

MILLPOND = str(Path(sys.executable).parent / "millpond")


def run(
    *args: str, bootstrap: str | None = None, stdin: str | None = None, code: int = 0
) -> subprocess.CompletedProcess[str]:
    """Run ``millpond ARGS [--bootstrap-server B]``; assert its exit code, no traceback."""
    cmd = [MILLPOND, *args] + (["--bootstrap-server", bootstrap] if bootstrap else [])
    result = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=60)
    assert result.returncode == code, (cmd, result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def run_json(*args: str, bootstrap: str, stdin: str | None = None) -> Any:
    return json.loads(run(*args, "--format", "json", bootstrap=bootstrap, stdin=stdin).stdout)


def table_rows(output: str) -> list[list[str]]:
    return [line.split() for line in output.splitlines() if line.strip()]


def name(prefix: str) -> str:
    return f"cli-{prefix}-{uuid.uuid4().hex[:8]}"


def request(bootstrap: str, body: Any, version: int) -> Any:
    """One raw request, independent of the CLI's own client."""
    import socket
    import struct

    host, _, port = bootstrap.rpartition(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        header = RequestHeader(
            request_api_key=body.API_KEY, request_api_version=version, correlation_id=1
        )
        frame = encode_request(header, body)
        sock.sendall(struct.pack(">i", len(frame)) + frame)
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = sock.recv(1 << 20)
            assert chunk, "closed by the broker"
            data += chunk
    return decode_response(data[4:], body.API_KEY, version)[1]


def metadata_partitions(bootstrap: str, topic: str) -> int | None:
    """The partition count Metadata shows for ``topic``, None if it does not exist."""
    body = MetadataRequest(
        topics=[MetadataRequestTopic(name=topic)], allow_auto_topic_creation=False
    )
    (found,) = request(bootstrap, body, 12).topics
    return None if found.error_code else len(found.partitions)


def topic_config(bootstrap: str, topic: str, key: str) -> tuple[str | None, int]:
    """(value, config_source) of one topic config, by DescribeConfigs v4."""
    body = DescribeConfigsRequest(
        resources=[
            DescribeConfigsResource(resource_type=2, resource_name=topic, configuration_keys=[key])
        ]
    )
    (result,) = request(bootstrap, body, 4).results
    assert result.error_code == 0, result
    (config,) = result.configs
    return config.value, config.config_source


def committed(bootstrap: str, group: str) -> dict[tuple[str, int], int]:
    """A group's committed offsets by OffsetFetch v8 (to the only broker, the coordinator)."""
    body = OffsetFetchRequest(groups=[OffsetFetchRequestGroup(group_id=group, topics=None)])
    (answer,) = request(bootstrap, body, 8).groups
    return {
        (t.name, p.partition_index): p.committed_offset
        for t in answer.topics
        for p in t.partitions
        if p.committed_offset >= 0
    }


def read_all(bootstrap: str, topic: str, partitions: int) -> list[Any]:
    """Every record of ``topic``, read by confluent-kafka (librdkafka)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": name("reader"), "enable.auto.commit": False}
    )
    try:
        parts = [TopicPartition(topic, p, 0) for p in range(partitions)]
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), 10)[1]
            for p in range(partitions)
        }
        consumer.assign(parts)
        got: list[Any] = []
        deadline = time.monotonic() + 20
        while len(got) < sum(ends.values()) and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is not None and msg.error() is None:
                got.append(msg)
        return got
    finally:
        consumer.close()


# --- scenarios -------------------------------------------------------------------------------


def check_help() -> None:
    top = run("--help").stdout
    commands = ("topic", "produce", "consume", "group", "cluster", "configs", "dump-log", "bench")
    for command in commands:
        assert command in top
    for verbs in (
        ["topic", "create"], ["topic", "list"], ["topic", "describe"], ["topic", "alter-config"],
        ["topic", "delete"], ["topic", "add-partitions"], ["produce"], ["consume"],
        ["group", "list"], ["group", "describe"], ["group", "reset-offsets"], ["group", "delete"],
        ["cluster", "info"], ["cluster", "api-versions"], ["configs", "describe"],
        ["configs", "alter"],
    ):  # fmt: skip
        assert "--bootstrap-server" in run(*verbs, "--help").stdout, verbs
    assert "--print-data-log" in run("dump-log", "--help").stdout
    for verb in ("produce", "consume"):
        assert "--bootstrap-server" in run("bench", verb, "--help").stdout
    assert "joins the group as\na member (the classic protocol" in run("consume", "--help").stdout


def check_topic_commands(bootstrap: str) -> None:
    a, b = name("a"), name("b")
    out = run("topic", "create", a, b, "-p", "3", "-c", "retention.ms=3600000", bootstrap=bootstrap)
    rows = table_rows(out.stdout)
    assert rows[0] == ["TOPIC", "ID", "PARTITIONS", "STATUS"]
    assert sorted((r[0], r[2], r[3]) for r in rows[1:]) == [(a, "3", "OK"), (b, "3", "OK")]
    assert metadata_partitions(bootstrap, a) == 3
    assert topic_config(bootstrap, a, "retention.ms") == ("3600000", 1)

    again = run("topic", "create", a, bootstrap=bootstrap, code=1)
    assert "TOPIC_ALREADY_EXISTS" in again.stdout

    listed = {t["name"]: t for t in run_json("topic", "list", bootstrap=bootstrap)}
    assert listed[a] == {"name": a, "partitions": 3, "replicas": 1, "internal": False}
    assert "__consumer_offsets" not in listed or not listed["__consumer_offsets"]["internal"]
    assert a in [r[0] for r in table_rows(run("topic", "list", bootstrap=bootstrap).stdout)]

    described = run_json("topic", "describe", a, bootstrap=bootstrap)
    assert described["partitions"] == 3 and len(described["id"]) == 36
    assert [p["partition"] for p in described["partition_details"]] == [0, 1, 2]
    assert all(
        p["high_watermark"] == 0 and p["leader"] >= 0 for p in described["partition_details"]
    )
    configs = {c["name"]: c for c in described["configs"]}
    assert configs["retention.ms"]["value"] == "3600000"
    assert configs["retention.ms"]["source"] == "DYNAMIC_TOPIC_CONFIG"
    text = run("topic", "describe", a, bootstrap=bootstrap).stdout
    assert "retention.ms" in text and "HIGH-WATERMARK" in text

    run(
        "topic",
        "alter-config",
        a,
        "--set",
        "cleanup.policy=compact",
        "--delete",
        "retention.ms",
        bootstrap=bootstrap,
    )
    assert topic_config(bootstrap, a, "cleanup.policy") == ("compact", 1)
    assert topic_config(bootstrap, a, "retention.ms")[1] != 1  # back to a default

    grown = run_json("topic", "add-partitions", a, "-n", "2", bootstrap=bootstrap)
    assert grown == [{"topic": a, "partitions": 5, "was": 3}]
    assert metadata_partitions(bootstrap, a) == 5
    run("topic", "add-partitions", a, "--total", "6", bootstrap=bootstrap)
    assert metadata_partitions(bootstrap, a) == 6

    deleted = run_json("topic", "delete", b, bootstrap=bootstrap)
    assert deleted == [{"topic": b, "status": "OK"}]
    deadline = time.monotonic() + 10
    while metadata_partitions(bootstrap, b) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert metadata_partitions(bootstrap, b) is None


def check_produce(bootstrap: str, tmp: Path) -> None:
    topic = name("produce")
    run("topic", "create", topic, "-p", "4", bootstrap=bootstrap)
    lines = "".join(f"key{i}:value {i}\n" for i in range(20))
    out = run_json(
        "produce",
        topic,
        "-k",
        ":",
        "-H",
        "source=cli",
        "-H",
        "n=1",
        bootstrap=bootstrap,
        stdin=lines,
    )
    assert out["topic"] == topic and sum(p["records"] for p in out["partitions"]) == 20
    path = tmp / "lines.txt"
    path.write_text("plain one\nplain two\n")
    table = run("produce", topic, "--file", str(path), "-p", "2", "-z", "gzip", bootstrap=bootstrap)
    assert table_rows(table.stdout)[1][:2] == ["2", "2"]  # partition 2, 2 records

    records = read_all(bootstrap, topic, 4)
    keyed = {m.key(): m for m in records if m.key() is not None}
    assert len(keyed) == 20
    for i in range(20):
        msg = keyed[f"key{i}".encode()]
        assert msg.value() == f"value {i}".encode()
        assert msg.headers() == [("source", b"cli"), ("n", b"1")]
    # A key lands where Kafka's own clients put it (murmur2, as librdkafka's "murmur2_random").
    from kafka.partitioner.default import murmur2

    for key, msg in keyed.items():
        assert msg.partition() == (murmur2(key) & 0x7FFFFFFF) % 4, key
    plain = [m for m in records if m.key() is None]
    assert [(m.partition(), m.value()) for m in plain] == [(2, b"plain one"), (2, b"plain two")]

    bad = run("produce", topic, "-k", ":", bootstrap=bootstrap, stdin="no separator\n", code=1)
    assert "line 1 has no key separator" in bad.stderr and "hint:" in bad.stderr

    # --acks as Kafka's producers spell it (all is -1); anything else is a usage error.
    for acks in ("all", "-1", "1", "0"):
        run("produce", topic, "-p", "3", "--acks", acks, bootstrap=bootstrap, stdin="a\n")
    assert end_offsets_sum(bootstrap, topic, 4) == 26
    usage = run("produce", topic, "--acks", "2", bootstrap=bootstrap, stdin="a\n", code=2)
    assert "--acks: invalid value '2': use all (the same as -1), 1 or 0" in usage.stderr


def check_produce_creates_a_missing_topic(bootstrap: str) -> None:
    """On a broker with ``auto.create.topics.enable`` (both session brokers), producing to
    a topic that does not exist creates it, as Kafka's console producer and kcat do."""
    topic = name("autocreated")
    assert metadata_partitions(bootstrap, topic) is None
    out = run_json("produce", topic, bootstrap=bootstrap, stdin="first\nsecond\n")
    assert out == {
        "topic": topic,
        "partitions": [{"partition": 0, "records": 2, "first_offset": 0, "last_offset": 1}],
    }
    assert metadata_partitions(bootstrap, topic) == 1  # the broker's num.partitions
    assert run("consume", topic, bootstrap=bootstrap).stdout == "first\nsecond\n"


def check_produce_to_a_missing_topic_without_auto_create(bootstrap: str) -> None:
    """Where the broker does not create topics, producing to a missing one says so."""
    topic = name("never")
    failed = run("produce", topic, bootstrap=bootstrap, stdin="x\n", code=1)
    assert f"topic {topic!r} does not exist and the broker did not create it" in failed.stderr
    assert "auto.create.topics.enable" in failed.stderr
    assert metadata_partitions(bootstrap, topic) is None


def check_consume(bootstrap: str) -> None:
    topic = name("consume")
    run("topic", "create", topic, "-p", "2", bootstrap=bootstrap)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    base = 1_700_000_000_000
    for i in range(6):
        producer.produce(
            topic,
            value=f"v{i}",
            key=f"k{i}",
            partition=i % 2,
            headers=[("h", f"x{i}".encode())],
            timestamp=base + i * 1000,
        )
    assert producer.flush(30) == 0

    everything = [
        json.loads(line)
        for line in run(
            "consume", topic, "--format", "json", bootstrap=bootstrap
        ).stdout.splitlines()
    ]
    assert sorted((r["partition"], r["offset"], r["key"], r["value"]) for r in everything) == [
        (i % 2, i // 2, f"k{i}", f"v{i}") for i in sorted(range(6), key=lambda i: (i % 2, i))
    ]
    assert all(r["headers"] == [{"key": "h", "value": "x" + r["value"][1:]}] for r in everything)
    assert {r["timestamp"] for r in everything} == {base + i * 1000 for i in range(6)}

    templated = run(
        "consume",
        topic,
        "-p",
        "1",
        "-t",
        "{partition}/{offset} {key}={value} {headers}",
        bootstrap=bootstrap,
    ).stdout
    assert templated.splitlines() == ["1/0 k1=v1 h=x1", "1/1 k3=v3 h=x3", "1/2 k5=v5 h=x5"]
    assert run("consume", topic, "-p", "0", "-o", "2", bootstrap=bootstrap).stdout == "v4\n"
    committed_only = run("consume", topic, "--isolation-level", "read_committed",
                         "-t", "{value}", bootstrap=bootstrap)  # fmt: skip
    assert sorted(committed_only.stdout.split()) == [f"v{i}" for i in range(6)]
    assert run("consume", topic, "-p", "0", "-o", "end", bootstrap=bootstrap).stdout == ""
    by_time = run("consume", topic, "-o", f"@{base + 3000}", "-t", "{value}", bootstrap=bootstrap)
    assert sorted(by_time.stdout.split()) == ["v3", "v4", "v5"]
    assert len(run("consume", topic, "-n", "4", bootstrap=bootstrap).stdout.split()) == 4
    followed = run(
        "consume",
        topic,
        "-p",
        "1",
        "-o",
        "1",
        "--follow",
        "--idle-timeout-ms",
        "300",
        bootstrap=bootstrap,
    )
    assert followed.stdout.split() == ["v3", "v5"]

    group = name("group")
    first = run("consume", topic, "-g", group, "-n", "4", bootstrap=bootstrap).stdout.split()
    assert len(first) == 4
    offsets = committed(bootstrap, group)
    assert sum(offsets.values()) == 4 and set(offsets) <= {(topic, 0), (topic, 1)}
    rest = run("consume", topic, "-g", group, bootstrap=bootstrap).stdout.split()
    assert sorted(first + rest) == [f"v{i}" for i in range(6)]
    assert committed(bootstrap, group) == {(topic, 0): 3, (topic, 1): 3}
    assert run("consume", topic, "-g", group, bootstrap=bootstrap).stdout == ""

    bad = run("consume", topic, "-t", "{nope}", bootstrap=bootstrap, code=1)
    assert "bad --template" in bad.stderr and "{value}" in bad.stderr


def check_group_commands(bootstrap: str) -> None:
    topic, group = name("gtopic"), name("group")
    run("topic", "create", topic, "-p", "2", bootstrap=bootstrap)
    run("produce", topic, bootstrap=bootstrap, stdin="".join(f"r{i}\n" for i in range(10)))
    run("consume", topic, "-g", group, "-n", "4", bootstrap=bootstrap)
    before = committed(bootstrap, group)
    assert sum(before.values()) == 4

    listed = run_json("group", "list", bootstrap=bootstrap)
    assert {"group": group, "state": "Empty"}.items() <= next(
        g for g in listed if g["group"] == group
    ).items()
    assert group in run("group", "list", bootstrap=bootstrap).stdout

    described = run_json("group", "describe", group, bootstrap=bootstrap)
    assert described["state"] == "Empty" and described["members"] == []
    lags = {(o["topic"], o["partition"]): o for o in described["offsets"]}
    assert set(lags) == {(topic, 0), (topic, 1)}
    for (t, p), row in lags.items():
        assert row["current_offset"] == before[(t, p)] and row["log_end_offset"] == 5
        assert row["lag"] == 5 - before[(t, p)]
    assert described["total_lag"] == 6
    text = table_rows(run("group", "describe", group, bootstrap=bootstrap).stdout)
    heading = next(i for i, row in enumerate(text) if row[0] == "TOPIC")
    assert text[heading][:5] == ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"]
    assert sorted(text[heading + 1 :]) == sorted(
        [topic, str(p), str(before[(topic, p)]), "5", str(5 - before[(topic, p)]), "-", "-"]
        for p in (0, 1)
    )

    def reset_all(*how: str) -> None:
        run("group", "reset-offsets", group, "--all-topics", *how, "--execute", bootstrap=bootstrap)

    dry = run(
        "group", "reset-offsets", group, "--topic", topic, "--to-earliest", bootstrap=bootstrap
    )
    assert "dry run" in dry.stderr and committed(bootstrap, group) == before
    reset = run_json(
        "group",
        "reset-offsets",
        group,
        "--topic",
        f"{topic}:1",
        "--to-offset",
        "1",
        "--execute",
        bootstrap=bootstrap,
    )
    assert reset["offsets"] == [
        {"topic": topic, "partition": 1, "old_offset": before[(topic, 1)], "new_offset": 1}
    ]
    assert committed(bootstrap, group) == {**before, (topic, 1): 1}
    reset_all("--to-latest")
    assert committed(bootstrap, group) == {(topic, 0): 5, (topic, 1): 5}
    reset_all("--shift-by", "-2")
    assert committed(bootstrap, group) == {(topic, 0): 3, (topic, 1): 3}
    reset_all("--shift-by", "-99")
    assert committed(bootstrap, group) == {(topic, 0): 0, (topic, 1): 0}  # kept within the log

    check_active_group(bootstrap, topic, group)

    missing = run("group", "describe", name("nope"), bootstrap=bootstrap, code=1)
    assert "does not exist" in missing.stderr and "group list" in missing.stderr
    assert run_json("group", "delete", group, bootstrap=bootstrap) == [
        {"group": group, "status": "OK"}
    ]
    assert committed(bootstrap, group) == {}


def check_cluster_and_configs(bootstrap: str) -> None:
    check_api_versions(bootstrap)
    info = run_json("cluster", "info", bootstrap=bootstrap)
    (broker,) = info["brokers"]
    assert broker["controller"] is True and broker["id"] == info["controller_id"]
    assert isinstance(info["cluster_id"], str) and len(info["cluster_id"]) == 22
    assert "CONTROLLER" in run("cluster", "info", bootstrap=bootstrap).stdout
    # A one-node cluster: its one voter leads, caught up, and its broker is unfenced.
    quorum = run_json("cluster", "quorum", bootstrap=bootstrap)
    assert quorum["voters"] == 1 and quorum["leader_epoch"] >= 1, quorum
    [voter] = quorum["replicas"]
    assert voter["id"] == quorum["leader_id"] and voter["role"] == "leader", quorum
    assert voter["log_end_offset"] >= quorum["high_watermark"] > 0 and voter["lag"] == 0, quorum
    assert quorum["brokers"] == [
        {"id": broker["id"], "host": broker["host"], "port": broker["port"], "fenced": False}
    ], quorum
    shown = run("cluster", "quorum", bootstrap=bootstrap).stdout
    assert "leader_epoch" in shown and "LAST-CAUGHT-UP-MS-AGO" in shown

    topic = name("configs")
    run("topic", "create", topic, bootstrap=bootstrap)
    run(
        "configs",
        "alter",
        "--entity-type",
        "topics",
        "--entity-name",
        topic,
        "--set",
        "retention.bytes=123456",
        bootstrap=bootstrap,
    )
    assert topic_config(bootstrap, topic, "retention.bytes") == ("123456", 1)
    shown = run_json(
        "configs", "describe", "--entity-type", "topic", "--entity-name", topic, bootstrap=bootstrap
    )
    assert {
        "name": "retention.bytes",
        "value": "123456",
        "source": "DYNAMIC_TOPIC_CONFIG",
        "read_only": False,
    } in shown
    every = run_json(
        "configs",
        "describe",
        "--entity-type",
        "topic",
        "--entity-name",
        topic,
        "--all",
        bootstrap=bootstrap,
    )
    assert len(every) > len(shown) and "segment.bytes" in {c["name"] for c in every}
    node = str(broker["id"])
    brokers = run_json(
        "configs",
        "describe",
        "--entity-type",
        "broker",
        "--entity-name",
        node,
        "--all",
        bootstrap=bootstrap,
    )
    assert "log.dirs" in {c["name"] for c in brokers}
    bad = run(
        "configs",
        "alter",
        "--entity-type",
        "topic",
        "--entity-name",
        topic,
        "--set",
        "no.such.config=1",
        bootstrap=bootstrap,
        code=1,
    )
    assert "INVALID_CONFIG" in bad.stderr and "hint:" in bad.stderr


def check_errors(bootstrap: str, unreachable: str) -> None:
    down = run("topic", "list", bootstrap=unreachable, code=1)
    assert f"cannot reach a broker at {unreachable}" in down.stderr
    assert "--bootstrap-server" in down.stderr
    unknown = run("topic", "describe", name("missing"), bootstrap=bootstrap, code=1)
    assert "does not exist" in unknown.stderr and "topic list" in unknown.stderr
    missing = run("consume", name("missing"), bootstrap=bootstrap, code=1)
    assert "does not exist" in missing.stderr
    assert "bad broker address" in run("topic", "list", bootstrap="nohost", code=1).stderr
    usage = run("topic", "add-partitions", "x", code=2)  # argparse: a missing required option
    assert "one of the arguments -n/--num --total is required" in usage.stderr


def produce_for_dump(bootstrap: str) -> str:
    """A one-partition topic holding a keyed batch with headers and a gzip batch."""
    topic = name("dump")
    run("topic", "create", topic, "-p", "1", bootstrap=bootstrap)
    run("produce", topic, "-k", ":", "-H", "a=1", "-H", "b=2", bootstrap=bootstrap,
        stdin="k1:v1\nk2:v2\n")  # fmt: skip
    run("produce", topic, "-z", "gzip", bootstrap=bootstrap, stdin="x\ny\n")
    return topic


def check_dump_log(partition_dir: Path) -> None:
    """``dump-log`` of a partition holding :func:`produce_for_dump`'s records."""
    segment = partition_dir / "00000000000000000000.log"
    lines = run("dump-log", "--files", str(segment), "--print-data-log").stdout.splitlines()
    assert lines[:2] == [f"Dumping {segment}", "Log starting offset: 0"]
    batches = [line for line in lines if line.startswith("baseOffset:")]
    assert [b.split()[:6] for b in batches] == [
        ["baseOffset:", "0", "lastOffset:", "1", "count:", "2"],
        ["baseOffset:", "2", "lastOffset:", "3", "count:", "2"],
    ]
    assert "compresscodec: none" in batches[0] and "compresscodec: gzip" in batches[1]
    assert all(b.endswith("isvalid: true") for b in batches)
    records = [line.split("headerKeys: ")[1] for line in lines if line.startswith("| offset:")]
    assert records == [
        "[a,b] key: k1 payload: v1", "[a,b] key: k2 payload: v2", "[] payload: x", "[] payload: y"
    ]  # fmt: skip

    dumped = json.loads(run("dump-log", "--files", str(partition_dir), "--format", "json").stdout)
    assert [d["file"] for d in dumped] == [str(segment)]
    assert [(b["baseOffset"], b["count"]) for b in dumped[0]["batches"]] == [(0, 2), (2, 2)]
    assert "records" not in dumped[0]["batches"][0]
    whole = run("dump-log", "--files", str(partition_dir.parent)).stdout
    assert f"Dumping {segment}\n" in whole
    index = run("dump-log", "--files", str(segment.with_suffix(".index"))).stdout
    assert index.startswith(f"Dumping {segment.with_suffix('.index')}\n")

    missing = run("dump-log", "--files", str(partition_dir / "nope.log"), code=1)
    assert "no such file or directory" in missing.stderr


def end_offsets_sum(bootstrap: str, topic: str, partitions: int) -> int:
    """The sum of the partitions' log end offsets, by ListOffsets v7 (latest)."""
    from millpond.wire.generated.api.list_offsets_request import (
        ListOffsetsPartition,
        ListOffsetsRequest,
        ListOffsetsTopic,
    )

    body = ListOffsetsRequest(
        replica_id=-1,
        topics=[
            ListOffsetsTopic(
                name=topic,
                partitions=[
                    ListOffsetsPartition(partition_index=p, timestamp=-1) for p in range(partitions)
                ],
            )
        ],
    )
    (answer,) = request(bootstrap, body, 7).topics
    return sum(p.offset for p in answer.partitions)


def check_bench(bootstrap: str) -> None:
    topic = name("bench")
    run("topic", "create", topic, "-p", "2", bootstrap=bootstrap)
    produced = run_json("bench", "produce", topic, "-n", "3000", "-s", "64", "-b", "200",
                        bootstrap=bootstrap)  # fmt: skip
    assert produced["records"] == 3000 and produced["bytes"] == 3000 * 64
    assert produced["requests"] == 15
    assert sum(b["count"] for b in produced["histogram"]) == 15
    lat = produced["latency_ms"]
    assert 0 < lat["p50"] <= lat["p99"] <= lat["max"]
    assert end_offsets_sum(bootstrap, topic, 2) == 3000

    consumed = run_json("bench", "consume", topic, bootstrap=bootstrap)
    assert consumed["records"] == 3000 and consumed["requests"] >= 1
    assert consumed["bytes"] > 3000 * 64
    text = run("bench", "produce", topic, "-n", "500", "-z", "zstd", bootstrap=bootstrap)
    assert text.stdout.startswith("500 records") and "LE-MS" in text.stdout
    assert text.stderr == ""  # no progress bar when stderr is not a terminal
    assert end_offsets_sum(bootstrap, topic, 2) == 3500


def check_active_group(bootstrap: str, topic: str, group: str) -> None:
    """With a live member (confluent-kafka), ``describe`` shows who owns each partition and
    ``reset-offsets`` refuses to touch the group's offsets."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "client.id": "cli-test-member",
            "enable.auto.commit": False,
        }
    )
    try:
        assigned: list[Any] = []
        consumer.subscribe([topic], on_assign=lambda _, parts: assigned.extend(parts))
        deadline = time.monotonic() + 30
        while not assigned and time.monotonic() < deadline:
            consumer.poll(0.1)
        assert len(assigned) == 2, "the member was never assigned the topic"
        described = run_json("group", "describe", group, bootstrap=bootstrap)
        assert described["state"] == "Stable" and described["protocol_type"] == "consumer"
        (member,) = described["members"]
        assert member["client_id"] == "cli-test-member" and member["partitions"] == 2
        owners = {o["partition"]: o["consumer_id"] for o in described["offsets"]}
        assert owners == {0: member["member_id"], 1: member["member_id"]}
        before = committed(bootstrap, group)
        refused = run("group", "reset-offsets", group, "--all-topics", "--to-earliest",
                      "--execute", bootstrap=bootstrap, code=1)  # fmt: skip
        assert "is Stable" in refused.stderr and "stop the group's consumers" in refused.stderr
        assert committed(bootstrap, group) == before
    finally:
        consumer.close()


def check_consume_as_a_group_member(bootstrap: str) -> tuple[str, str, int]:
    """``consume --group`` joins a group that a confluent-kafka consumer is in: the range
    assignor gives each one partition, the CLI reads and commits only its own, and the
    other member is assigned the other partition meanwhile. Returns (topic, group, the
    partition the CLI read)."""
    import threading

    topic, group = name("member"), name("shared")
    run("topic", "create", topic, "-p", "2", bootstrap=bootstrap)
    run("produce", topic, bootstrap=bootstrap, stdin="".join(f"r{i}\n" for i in range(10)))
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
         "auto.offset.reset": "earliest", "partition.assignment.strategy": "range",
         "heartbeat.interval.ms": 300}  # it hears of each rebalance within 0.3 s
    )  # fmt: skip
    assignments: list[list[int]] = []
    stop = threading.Event()

    def on_assign(_: Any, parts: list[Any]) -> None:
        assignments.append(sorted(p.partition for p in parts))

    def poll() -> None:
        while not stop.is_set():
            consumer.poll(0.05)

    consumer.subscribe([topic], on_assign=on_assign)
    poller = threading.Thread(target=poll)
    poller.start()
    try:
        deadline = time.monotonic() + 30
        while not assignments and time.monotonic() < deadline:
            time.sleep(0.05)
        assert assignments and assignments[-1] == [0, 1]
        # A long session: on a loaded machine a late heartbeat must not start a rebalance
        # that hands the CLI the other partition as well.
        out = run("consume", topic, "-g", group, "-t", "{partition} {value}",
                  "--session-timeout-ms", "30000", bootstrap=bootstrap)  # fmt: skip
        lines = [line.split() for line in out.stdout.splitlines()]
        (mine,) = {int(p) for p, _ in lines}
        assert [v for _, v in lines] == [f"r{i}" for i in range(mine, 10, 2)]
        assert committed(bootstrap, group) == {(topic, mine): 5}
        assert [1 - mine] in assignments  # the other member's share while the CLI was in
        while assignments[-1] != [0, 1] and time.monotonic() < deadline:
            time.sleep(0.05)  # the CLI left: the other member takes everything again
        assert assignments[-1] == [0, 1]
    finally:
        stop.set()
        poller.join()
        consumer.close()
    return topic, group, mine


def check_offsets_decoder(data_dir: Path, topic: str, group: str, partition: int) -> None:
    """``dump-log --offsets-decoder`` shows the CLI member's commit and the group's
    metadata (both members, their decoded subscriptions and assignments)."""
    dirs = [str(d) for d in sorted(data_dir.glob("__consumer_offsets-*"))]
    lines = run("dump-log", "--files", *dirs, "--offsets-decoder").stdout.splitlines()
    key = {"type": "1", "data": {"group": group, "topic": topic, "partition": partition}}
    commits = [
        json.loads(line.split(" payload: ")[1])
        for line in lines
        if " key: " in line and json.loads(line.split(" key: ")[1].split(" payload: ")[0]) == key
    ]
    assert [c["data"]["offset"] for c in commits] == [5]
    metadata = [
        json.loads(line.split(" payload: ")[1])["data"]
        for line in lines
        if f'key: {{"type":"2","data":{{"group":"{group}"}}}} payload: {{' in line
    ]
    both = [m for m in metadata if len(m["members"]) == 2]
    assert both and both[0]["protocolType"] == "consumer" and both[0]["protocol"] == "range"
    cli = next(m for m in both[0]["members"] if m["clientId"] == "millpond-cli")
    assert cli["subscription"] == {"topics": [topic], "userData": None}
    assert cli["assignment"]["assignedPartitions"] == [{"topic": topic, "partitions": [partition]}]


def check_cluster_metadata_decoder(data_dir: Path, topic: str) -> None:
    """``dump-log --cluster-metadata-decoder`` shows the topic's TopicRecord and
    PartitionRecords, and the quorum's LeaderChange control record."""
    segment = data_dir / "__cluster_metadata-0" / "00000000000000000000.log"
    lines = run("dump-log", "--files", str(segment), "--cluster-metadata-decoder").stdout
    payloads = [
        json.loads(line.split(" payload: ")[1])
        for line in lines.splitlines()
        if line.startswith("| ") and " payload: " in line
    ]
    (created,) = [p for p in payloads if p["type"] == "TOPIC_RECORD" and p["data"]["name"] == topic]
    parts = [
        p["data"]
        for p in payloads
        if p["type"] == "PARTITION_RECORD" and p["data"]["topicId"] == created["data"]["topicId"]
    ]
    assert sorted(p["partitionId"] for p in parts) == [0, 1]
    assert all(p["leader"] >= 0 and p["replicas"] == p["isr"] for p in parts)
    assert '] LeaderChange: {"version":' in lines


def check_api_versions(bootstrap: str) -> None:
    """``cluster api-versions`` lists what ApiVersions (v3, raw) advertises, and the
    version negotiated is the lower of the broker's and the specs' newest stable one."""
    from millpond.wire import APIS
    from millpond.wire.generated.api.api_versions_request import ApiVersionsRequest

    body = ApiVersionsRequest(client_software_name="cli-test", client_software_version="1")
    advertised = {
        k.api_key: (k.min_version, k.max_version) for k in request(bootstrap, body, 3).api_keys
    }
    shown = run_json("cluster", "api-versions", bootstrap=bootstrap)
    assert shown["broker"] == bootstrap
    assert {row["key"]: (row["min"], row["max"]) for row in shown["apis"]} == advertised
    rows = {row["api"]: row for row in shown["apis"]}
    for name in ("Produce", "Fetch", "Metadata", "JoinGroup", "OffsetFetch"):
        api = next(a for a in APIS.values() if a.name == name)
        newest = api.max_version - (1 if api.latest_version_unstable else 0)
        assert rows[name]["negotiated"] == min(rows[name]["max"], newest), name
    text = run("cluster", "api-versions", bootstrap=bootstrap).stdout
    assert text.splitlines()[0].split() == ["KEY", "API", "MIN", "MAX", "NEGOTIATED"]


def _default_sigint() -> None:
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def check_follow_in_a_group_until_interrupted(bootstrap: str) -> None:
    """``consume --group --follow`` prints records produced while it runs; Ctrl-C (SIGINT)
    makes it commit what it printed, leave the group and exit 130."""
    import signal

    topic, group = name("follow"), name("follow")
    run("topic", "create", topic, "-p", "2", bootstrap=bootstrap)
    run("produce", topic, bootstrap=bootstrap, stdin="before\n")
    command = [MILLPOND, "consume", topic, "-g", group, "--follow", "--bootstrap-server",
               bootstrap]  # fmt: skip
    # As at a terminal, where Ctrl-C is not ignored: a test run started in the background
    # (nohup, `&`) passes SIGINT on ignored, and Python then leaves it ignored.
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        try:
            assert proc.stdout.readline() == "before\n"
            run("produce", topic, bootstrap=bootstrap, stdin="during\n")
            assert proc.stdout.readline() == "during\n"
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=30) == 130
            assert "interrupted" in proc.stderr.read()
        finally:
            if proc.poll() is None:
                proc.kill()
    assert sum(committed(bootstrap, group).values()) == 2
    described = run_json("group", "describe", group, bootstrap=bootstrap)
    assert described["state"] == "Empty" and described["members"] == []


def produce_transactions(bootstrap: str) -> str:
    """A one-partition topic holding a committed, an aborted and a committed transaction
    of confluent-kafka's transactional producer; returns its name."""
    topic = name("txn")
    run("topic", "create", topic, "-p", "1", bootstrap=bootstrap)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": name("txn-id")})
    producer.init_transactions(30)
    for values, commit in ((["kept-1", "kept-2"], True), (["dropped"], False), (["kept-3"], True)):
        producer.begin_transaction()
        for value in values:
            producer.produce(topic, value=value)
        assert producer.flush(30) == 0
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
    return topic


def check_read_committed(bootstrap: str, topic: str) -> None:
    """read_committed leaves out the aborted transaction's records; the default shows all."""
    committed_only = run("consume", topic, "--isolation-level", "read_committed",
                         bootstrap=bootstrap)  # fmt: skip
    assert committed_only.stdout.split() == ["kept-1", "kept-2", "kept-3"]
    everything = run("consume", topic, bootstrap=bootstrap).stdout.split()
    assert everything == ["kept-1", "kept-2", "dropped", "kept-3"]

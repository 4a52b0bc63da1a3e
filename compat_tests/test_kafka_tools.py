"""Apache Kafka 4.4's own command-line tools, run through their main classes (what Kafka's bin/
scripts call) against millpond and the reference Kafka 4.4: topics, configs, the console
producer and consumer, offsets, delete-records, log dirs and the producer performance tool. Each
test names its own topics (the brokers are shared by the session) and asserts on what the tool
prints. In compat_tests/MATRIX.md the console producer and consumer fill the "Kafka CLI tools"
row's produce-consume/none cells, ProducerPerformance its producer-perf cells, the other tools
its admin cells."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from compat_tests.harness import create_topic, millpond_server
from compat_tests.kafka.reference import (
    TOOL_JVM,
    TOOLS_LOG4J,
    RunningBroker,
    free_port,
    kafka_classpath,
    run_tool,
)

pytestmark = pytest.mark.compat

TOOLS = "org.apache.kafka.tools"


def _tool(main_class: str, args: Sequence[str], stdin: str | None = None) -> str:
    """Run ``main_class`` with ``args`` (and ``stdin``, if given) and return its stdout; fail the
    test, with the whole output, when it exits non-zero or logs an error."""
    if stdin is None:
        result = run_tool(main_class, args, timeout=60)
    else:  # run_tool gives the tool no stdin: the console producer reads its records there
        command = [
            "java",
            *TOOL_JVM,
            "-Djava.awt.headless=true",
            f"-Dlog4j2.configurationFile={TOOLS_LOG4J}",
            "-cp",
            kafka_classpath(),
            main_class,
            *args,
        ]
        result = subprocess.run(
            command, input=stdin, capture_output=True, text=True, timeout=60, check=False
        )
    name = main_class.rsplit(".", 1)[-1]
    report = f"--- stdout\n{result.stdout}--- stderr\n{result.stderr}"
    assert result.returncode == 0, f"{name} {' '.join(args)} exited {result.returncode}:\n{report}"
    assert "ERROR" not in result.stderr, f"{name} {' '.join(args)} logged errors:\n{report}"
    return result.stdout


def _produce(bootstrap: str, topic: str, lines: Sequence[str]) -> None:
    """Produce ``key:value`` lines with the console producer (acks=all). Not ``--sync``: each
    synchronous send would wait out the tool's default 1 s linger; closing flushes them all."""
    _tool(
        f"{TOOLS}.ConsoleProducer",
        [
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
            "--property",
            "parse.key=true",
            "--property",
            "key.separator=:",
            "--producer-property",
            "acks=all",
        ],
        stdin="".join(f"{line}\n" for line in lines),
    )


def _offsets(bootstrap: str, topic: str, time: str) -> dict[int, int]:
    """GetOffsetShell's ``topic:partition:offset`` lines at ``time`` (-1 latest, -2 earliest,
    ...); it leaves out partitions the broker answers offset -1 for."""
    out = _tool(
        f"{TOOLS}.GetOffsetShell",
        ["--bootstrap-server", bootstrap, "--topic", topic, "--time", time],
    )
    offsets: dict[int, int] = {}
    for line in out.splitlines():
        match = re.fullmatch(rf"{re.escape(topic)}:(\d+):(\d+)", line.strip())
        assert match, f"GetOffsetShell printed an unexpected line {line!r}:\n{out}"
        offsets[int(match[1])] = int(match[2])
    return offsets


def _describe_partitions(out: str, topic: str) -> list[int]:
    """The partition numbers of ``topic`` in TopicCommand --describe's per-partition lines."""
    return [
        int(m[1])
        for m in re.finditer(rf"^\s*Topic: {re.escape(topic)}\s+Partition: (\d+)\s", out, re.M)
    ]


@pytest.mark.compat_matrix("Kafka CLI tools", "admin")
def test_topic_command(broker_bootstrap: str) -> None:
    topic = "tools-topic-command"
    cmd = f"{TOOLS}.TopicCommand"
    server = ["--bootstrap-server", broker_bootstrap]
    created = _tool(
        cmd,
        [
            *server,
            "--create",
            "--topic",
            topic,
            "--partitions",
            "2",
            "--replication-factor",
            "1",
            "--config",
            "retention.ms=123456",
            "--config",
            "cleanup.policy=compact",
        ],
    )
    assert f"Created topic {topic}." in created, created

    listed = _tool(cmd, [*server, "--list"]).splitlines()
    assert topic in listed, listed

    described = _tool(cmd, [*server, "--describe", "--topic", topic])
    summary = re.search(rf"^Topic: {re.escape(topic)}\s.*$", described, re.M)
    assert summary, described
    assert re.search(r"\bPartitionCount: 2\b", summary[0]), described
    assert re.search(r"\bReplicationFactor: 1\b", summary[0]), described
    configs = re.search(r"\bConfigs: (\S*)", summary[0])
    assert configs, described
    assert {"retention.ms=123456", "cleanup.policy=compact"} <= set(configs[1].split(",")), (
        described
    )
    assert _describe_partitions(described, topic) == [0, 1], described

    _tool(cmd, [*server, "--alter", "--topic", topic, "--partitions", "3"])
    described = _tool(cmd, [*server, "--describe", "--topic", topic])
    assert re.search(r"\bPartitionCount: 3\b", described), described
    assert _describe_partitions(described, topic) == [0, 1, 2], described


def _topic_configs(bootstrap: str, topic: str) -> dict[str, str]:
    """ConfigCommand --describe's dynamic configs of ``topic`` (name -> value)."""
    out = _tool(
        f"{TOOLS}.ConfigCommand",
        [
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--entity-type",
            "topics",
            "--entity-name",
            topic,
        ],
    )
    header = f"Dynamic configs for topic {topic} are:"
    assert header in out, out
    configs: dict[str, str] = {}
    for line in out.split(header, 1)[1].splitlines():
        match = re.match(r"\s+([\w.]+)=(\S*) sensitive=", line)
        if match:
            configs[match[1]] = match[2]
    return configs


@pytest.mark.compat_matrix("Kafka CLI tools", "admin")
def test_config_command(broker_bootstrap: str) -> None:
    topic = "tools-config-command"
    create_topic(broker_bootstrap, topic, 1, {"retention.ms": "600000"})
    cmd = f"{TOOLS}.ConfigCommand"
    entity = ["--entity-type", "topics", "--entity-name", topic]
    server = ["--bootstrap-server", broker_bootstrap]
    assert _topic_configs(broker_bootstrap, topic) == {"retention.ms": "600000"}

    out = _tool(
        cmd,
        [*server, "--alter", *entity, "--add-config", "max.message.bytes=65536,retention.ms=5000"],
    )
    assert f"Completed updating config for topic {topic}." in out, out
    assert _topic_configs(broker_bootstrap, topic) == {
        "retention.ms": "5000",
        "max.message.bytes": "65536",
    }

    out = _tool(cmd, [*server, "--alter", *entity, "--delete-config", "retention.ms"])
    assert f"Completed updating config for topic {topic}." in out, out
    assert _topic_configs(broker_bootstrap, topic) == {"max.message.bytes": "65536"}


@pytest.mark.compat_matrix("Kafka CLI tools", "produce-consume/none")
def test_console_producer_consumer(broker_bootstrap: str) -> None:
    topic = "tools-console"
    create_topic(broker_bootstrap, topic, 1)
    lines = [f"key-{i}:value {i}" for i in range(5)]
    _produce(broker_bootstrap, topic, lines)
    out = _tool(
        f"{TOOLS}.consumer.ConsoleConsumer",
        [
            "--bootstrap-server",
            broker_bootstrap,
            "--topic",
            topic,
            "--partition",
            "0",
            "--offset",
            "earliest",
            "--max-messages",
            str(len(lines)),
            "--timeout-ms",
            "30000",
            "--formatter-property",
            "print.key=true",
            "--formatter-property",
            "key.separator=:",
            "--formatter-property",
            "print.offset=true",
        ],
    )
    expected = [f"Offset:{i}:{line}" for i, line in enumerate(lines)]
    assert out.splitlines() == expected, out


@pytest.mark.compat_matrix("Kafka CLI tools", "admin")
def test_get_offsets_and_delete_records(broker_bootstrap: str, tmp_path: Path) -> None:
    topic = "tools-delete-records"
    create_topic(broker_bootstrap, topic, 1)
    _produce(broker_bootstrap, topic, [f"k{i}:v{i}" for i in range(6)])
    assert _offsets(broker_bootstrap, topic, "-1") == {0: 6}
    assert _offsets(broker_bootstrap, topic, "-2") == {0: 0}

    offsets_file = tmp_path / "offsets.json"
    offsets_file.write_text(
        json.dumps({"version": 1, "partitions": [{"topic": topic, "partition": 0, "offset": 4}]})
    )
    out = _tool(
        f"{TOOLS}.DeleteRecordsCommand",
        ["--bootstrap-server", broker_bootstrap, "--offset-json-file", str(offsets_file)],
    )
    assert re.search(rf"partition: {re.escape(topic)}-0\s+low_watermark: 4", out), (
        f"DeleteRecordsCommand did not report the new low watermark:\n{out}"
    )
    assert _offsets(broker_bootstrap, topic, "-2") == {0: 4}
    assert _offsets(broker_bootstrap, topic, "earliest-local") == {0: 4}
    assert _offsets(broker_bootstrap, topic, "-1") == {0: 6}


@pytest.mark.compat_matrix("Kafka CLI tools", "admin")
def test_log_dirs_command(broker_bootstrap: str) -> None:
    topic = "tools-log-dirs"
    create_topic(broker_bootstrap, topic, 2)
    _produce(broker_bootstrap, topic, ["a:1", "b:2"])
    out = _tool(
        f"{TOOLS}.LogDirsCommand",
        ["--bootstrap-server", broker_bootstrap, "--describe", "--topic-list", topic],
    )
    json_lines = [line for line in out.splitlines() if line.startswith("{")]
    assert len(json_lines) == 1, out
    described = json.loads(json_lines[0])
    assert described["version"] == 1, described
    brokers = described["brokers"]
    assert len(brokers) == 1, described
    log_dirs = brokers[0]["logDirs"]
    assert log_dirs and all(d["error"] is None for d in log_dirs), described
    partitions = {p["partition"]: p for d in log_dirs for p in d["partitions"]}
    assert sorted(partitions) == [f"{topic}-0", f"{topic}-1"], described
    assert sum(p["size"] for p in partitions.values()) > 0, described
    assert all(p["offsetLag"] == 0 and p["isFuture"] is False for p in partitions.values()), (
        described
    )


PERF_RECORDS = 20_000
PERF_RECORD_SIZE = 100
# ProducerPerformance's last line: the totals, then latency percentiles.
PERF_SUMMARY = re.compile(
    r"(\d+) records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, "
    r"[\d.]+ ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\."
)


@pytest.mark.compat_matrix("Kafka CLI tools", "producer-perf")
def test_producer_performance(broker_bootstrap: str) -> None:
    """kafka-producer-perf-test at full speed: many full batches in flight at once (acks=all,
    the default idempotent producer), which no scenario's few records exercise."""
    topic = "tools-producer-perf"
    create_topic(broker_bootstrap, topic, 3)
    out = _tool(
        f"{TOOLS}.ProducerPerformance",
        [
            "--topic",
            topic,
            "--num-records",
            str(PERF_RECORDS),
            "--record-size",
            str(PERF_RECORD_SIZE),
            "--throughput",
            "-1",
            "--command-property",
            f"bootstrap.servers={broker_bootstrap}",
            "acks=all",
        ],
    )
    summaries = [m for line in out.splitlines() if (m := PERF_SUMMARY.fullmatch(line.strip()))]
    assert len(summaries) == 1, f"no single summary line in ProducerPerformance's output:\n{out}"
    # The tool counts a record as sent when its delivery succeeded (a failure prints the
    # exception instead), so the total says that every record was acknowledged.
    assert int(summaries[0][1]) == PERF_RECORDS, out
    ends = _offsets(broker_bootstrap, topic, "-1")
    assert sorted(ends) == [0, 1, 2] and sum(ends.values()) == PERF_RECORDS, ends


@pytest.mark.compat_matrix("Kafka CLI tools", "consumer-perf")
def test_consumer_performance(broker_bootstrap: str) -> None:
    """kafka-consumer-perf-test: a consumer of a group reading a topic at full speed until
    it has every record."""
    from compat_tests.harness import produce_values

    topic = "tools-consumer-perf"
    create_topic(broker_bootstrap, topic, 3)
    produce_values(broker_bootstrap, topic, 3, ["x" * PERF_RECORD_SIZE] * PERF_RECORDS)
    out = _tool(
        f"{TOOLS}.ConsumerPerformance",
        [
            "--bootstrap-server", broker_bootstrap, "--topic", topic,
            "--num-records", str(PERF_RECORDS), "--group", "tools-consumer-perf-g",
            "--timeout", "30000",
        ],
    )  # fmt: skip
    lines = out.splitlines()
    at = next((i for i, line in enumerate(lines) if line.startswith("start.time")), None)
    assert at is not None and at + 1 < len(lines), f"no statistics in its output:\n{out}"
    header = [c.strip() for c in lines[at].split(",")]
    values = dict(zip(header, (c.strip() for c in lines[at + 1].split(",")), strict=False))
    # At least: a consumer may read past the target within its last fetch.
    assert int(values["data.consumed.in.nMsg"]) >= PERF_RECORDS, out


GROUPS = f"{TOOLS}.consumer.group.ConsumerGroupCommand"


def _commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    """Commit ``offsets`` for ``group`` as a consumer outside group management does
    (confluent-kafka, generation -1), leaving the group Empty."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        done = consumer.commit(
            offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False
        )
        assert done is not None and all(tp.error is None for tp in done), done
    finally:
        consumer.close()


def _rows(out: str, group: str) -> list[list[str]]:
    """The whitespace-separated rows of a ConsumerGroupCommand table that are about ``group``."""
    return [line.split() for line in out.splitlines() if line.split()[:1] == [group]]


@pytest.mark.compat_matrix("Kafka CLI tools", "consumer-groups")
def test_consumer_group_command(broker_bootstrap: str) -> None:
    """kafka-consumer-groups: --list, --describe (--offsets, --state, --members), the lag it
    shows against the harness's own figures, --reset-offsets and --delete."""
    from compat_tests.groups import Member
    from compat_tests.harness import produce_values

    topic, group = "tools-groups", "tools-groups-g"
    create_topic(broker_bootstrap, topic, 3)
    produce_values(broker_bootstrap, topic, 3, [f"v{i}" for i in range(30)])  # 10 each
    committed = {0: 4, 1: 10, 2: 0}
    _commit(broker_bootstrap, group, topic, committed)
    server = ["--bootstrap-server", broker_bootstrap]

    assert group in _tool(GROUPS, [*server, "--list"]).split()

    described = _tool(GROUPS, [*server, "--describe", "--group", group, "--offsets"])
    lag = {int(r[2]): (int(r[3]), int(r[4]), int(r[5])) for r in _rows(described, group)}
    assert lag == {p: (o, 10, 10 - o) for p, o in committed.items()}, described

    state = _rows(_tool(GROUPS, [*server, "--describe", "--group", group, "--state"]), group)
    assert [r[-2:] for r in state] == [["Empty", "0"]], state

    reset = [*server, "--reset-offsets", "--group", group, "--topic", topic, "--execute"]
    _tool(GROUPS, [*reset, "--to-earliest"])
    described = _tool(GROUPS, [*server, "--describe", "--group", group, "--offsets"])
    assert {int(r[2]): int(r[3]) for r in _rows(described, group)} == {0: 0, 1: 0, 2: 0}
    _tool(GROUPS, [*reset, "--shift-by", "3"])
    described = _tool(GROUPS, [*server, "--describe", "--group", group, "--offsets"])
    assert {int(r[2]): int(r[3]) for r in _rows(described, group)} == {0: 3, 1: 3, 2: 3}
    _tool(GROUPS, [*reset, "--to-datetime", "2000-01-01T00:00:00.000"])  # before every record
    described = _tool(GROUPS, [*server, "--describe", "--group", group, "--offsets"])
    assert {int(r[2]): int(r[3]) for r in _rows(described, group)} == {0: 0, 1: 0, 2: 0}

    # A live member: --members shows it with the partitions it was given.
    live = f"{group}-live"
    member = Member(
        [
            sys.executable, str(Path(__file__).parent / "python" / "member_confluent.py"),
            "group-member", "--bootstrap", broker_bootstrap, "--topic", topic, "--group", live,
        ],
        "live",
    )  # fmt: skip
    try:
        member.wait_for("the member's assignment", lambda: bool(member.assignment), 60)
        members = _rows(_tool(GROUPS, [*server, "--describe", "--group", live, "--members"]), live)
        assert len(members) == 1 and members[0][-1] == "3", members
        state = _rows(_tool(GROUPS, [*server, "--describe", "--group", live, "--state"]), live)
        assert [r[-2:] for r in state] == [["Stable", "1"]], state
    finally:
        member.close()

    deleted = _tool(GROUPS, [*server, "--delete", "--group", group])
    assert "successful" in deleted, deleted
    assert group not in _tool(GROUPS, [*server, "--list"]).split()


def _status(text: str) -> dict[str, str]:
    return {
        key.strip(): value.strip()
        for key, _, value in (line.partition(":") for line in text.splitlines())
        if value
    }


def _quorum_views(controller: str, bootstrap: str) -> list[tuple[dict[str, str], str]]:
    """MetadataQuorumCommand's status and replication, through the controller listener
    and through the broker listener."""
    views = []
    for flag, address in (
        ("--bootstrap-controller", controller),
        ("--bootstrap-server", bootstrap),
    ):
        status = _tool(f"{TOOLS}.MetadataQuorumCommand", [flag, address, "describe", "--status"])
        replication = _tool(
            f"{TOOLS}.MetadataQuorumCommand", [flag, address, "describe", "--replication"]
        )
        views.append((_status(status), replication))
    return views


def _check_one_voter_quorum(views: list[tuple[dict[str, str], str]], controller: str) -> None:
    for status, replication in views:
        assert status["LeaderId"] == "1" and int(status["LeaderEpoch"]) >= 1, status
        assert int(status["HighWatermark"]) > 0 and status["MaxFollowerLag"] == "0", status
        [voter] = json.loads(status["CurrentVoters"])
        assert voter["id"] == 1, status
        assert voter.get("endpoints") == [f"CONTROLLER://{controller}"], status
        assert status["CurrentObservers"] == "[]", status
        [header, leader] = replication.strip().splitlines()
        assert header.split()[:4] == ["NodeId", "DirectoryId", "LogEndOffset", "Lag"]
        cells = leader.split()
        assert cells[0] == "1" and cells[3] == "0" and cells[-1] == "Leader", replication
        assert abs(int(cells[4]) - time.time() * 1000) < 120_000, replication  # wall clock


def test_metadata_quorum_command(tmp_path: Path, reference_kafka: RunningBroker) -> None:
    """``kafka-metadata-quorum describe`` reads a one-node quorum the same way from Kafka
    and from millpond, through either listener."""
    ports = reference_kafka.ports
    kafka_controller = f"127.0.0.1:{ports.adv_controller}"
    _check_one_voter_quorum(
        _quorum_views(kafka_controller, reference_kafka.bootstrap), kafka_controller
    )
    controller_port = free_port()
    with millpond_server(tmp_path, controller_port=controller_port) as bootstrap:
        controller = f"127.0.0.1:{controller_port}"
        _check_one_voter_quorum(_quorum_views(controller, bootstrap), controller)

"""What every client ecosystem's compat tests share (see SCENARIOS.md): a ``millpond serve``
subprocess, topic creation over the wire, running a driver, and the checks of each scenario.

    with millpond_server(tmp_path) as bootstrap:          # or the session fixture
        create_topic(bootstrap, "orders", 3)               # in conftest.py: millpond_bootstrap
        events = run_driver([*driver, "produce-consume", "--bootstrap", bootstrap,
                             "--topic", "orders", "--partitions", "3"])
        check_produce_consume(events, count=60, start_ts=1700000000000)

Every wait is bounded and waits on a real condition (a log line, a Metadata answer, a process
exiting); every process started here is stopped, also when a test fails.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import socket
import struct
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from compat_tests.kafka.reference import free_port
from millpond.cli.client import recv_exactly
from millpond.wire import RequestHeader, decode_response, encode_request
from millpond.wire.generated.api.create_partitions_request import (
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from millpond.wire.generated.api.create_topics_request import (
    CreatableTopic,
    CreatableTopicConfig,
    CreateTopicsRequest,
)
from millpond.wire.generated.api.fetch_request import FetchPartition, FetchRequest, FetchTopic
from millpond.wire.generated.api.metadata_request import MetadataRequest, MetadataRequestTopic
from millpond.wire.generated.api.produce_request import (
    PartitionProduceData,
    ProduceRequest,
    TopicProduceData,
)
from millpond.wire.records import NewRecord, build_batch, iter_batches

DEFAULT_COUNT = 60
DEFAULT_START_TS = 1700000000000
READY_TIMEOUT = 60.0
STOP_TIMEOUT = 30.0

# The log of every server started here, by bootstrap: a failing driver's message ends with it.
_SERVER_LOGS: dict[str, Path] = {}


# --- the broker ----------------------------------------------------------------------------


def _tail(path: Path, lines: int = 40) -> str:
    if not path.exists():
        return f"(no log at {path})"
    text = path.read_text(errors="replace").splitlines()[-lines:]
    return "\n".join([f"--- last lines of {path}", *text])


@contextmanager
def millpond_server(
    work_dir: Path, *overrides: str, trace: Path | None = None, controller_port: int | None = None
) -> Iterator[str]:
    """Run ``millpond serve`` on a free loopback port with its data in ``work_dir/data`` and
    its output (stdout and stderr) in ``work_dir/millpond.log``; yield its bootstrap
    ``127.0.0.1:PORT`` once it says it is listening. ``overrides`` are extra ``key=value``
    broker properties; ``trace`` is where it traces every request (``--trace``);
    ``controller_port``: also a controller listener there (``CONTROLLER``). On exit:
    SIGTERM, and SIGKILL if it has not stopped within 30 s."""
    work_dir.mkdir(parents=True, exist_ok=True)
    data = work_dir / "data"
    log_path = work_dir / "millpond.log"
    port = free_port()
    command = [sys.executable, "-m", "millpond", "serve"]
    if trace is not None:
        command += ["--trace", str(trace)]
    listeners = [f"listeners=PLAINTEXT://127.0.0.1:{port}"]
    if controller_port is not None:
        listeners = [
            f"{listeners[0]},CONTROLLER://127.0.0.1:{controller_port}",
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "controller.listener.names=CONTROLLER",
        ]
    for override in (f"log.dirs={data}", *listeners, *overrides):
        command += ["--override", override]
    if shutil.which("setpriv"):  # util-linux: SIGTERM the broker if the test run dies first
        command = ["setpriv", "--pdeathsig", "TERM", *command]
    with log_path.open("ab") as log:
        offset = log.tell()
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    bootstrap = f"127.0.0.1:{port}"
    try:
        wait_listening(proc, log_path, offset, f"listening on {bootstrap}")
        _SERVER_LOGS[bootstrap] = log_path
        yield bootstrap
    finally:
        _SERVER_LOGS.pop(bootstrap, None)
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=STOP_TIMEOUT)


def wait_listening(proc: subprocess.Popen[bytes], log_path: Path, offset: int, line: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT
    marker = line.encode()
    with log_path.open("rb") as log:
        log.seek(offset)
        seen = b""
        while True:
            seen += log.read()
            if marker in seen:
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(
                    f"millpond serve did not say {line!r} in {READY_TIMEOUT}s:\n{_tail(log_path)}"
                )
            try:  # the pause between checks, cut short if the broker exits
                code = proc.wait(timeout=min(0.1, remaining))
            except subprocess.TimeoutExpired:
                continue
            raise RuntimeError(f"millpond serve exited ({code}) at start:\n{_tail(log_path)}")


# --- the wire --------------------------------------------------------------------------------


class Connection:
    """One blocking Kafka-protocol connection: a request, then its response (for the
    harness's own requests, not a client's)."""

    def __init__(self, bootstrap: str, timeout: float = 30.0) -> None:
        host, _, port = bootstrap.rpartition(":")
        self._sock = socket.create_connection((host, int(port)), timeout=timeout)
        self._correlation_id = 0

    def request(self, body: Any, version: int) -> Any:
        self._correlation_id += 1
        header = RequestHeader(
            request_api_key=body.API_KEY,
            request_api_version=version,
            correlation_id=self._correlation_id,
            client_id="millpond-compat-harness",
        )
        frame = encode_request(header, body)
        self._sock.sendall(struct.pack(">i", len(frame)) + frame)
        (size,) = struct.unpack(">i", self._read(4))
        response_header, response = decode_response(self._read(size), body.API_KEY, version)
        assert response_header.correlation_id == self._correlation_id
        return response

    def _read(self, n: int) -> bytes:
        return recv_exactly(self._sock, n)

    def close(self) -> None:
        self._sock.close()


def create_topic(
    bootstrap: str,
    name: str,
    partitions: int,
    configs: dict[str, str] | None = None,
    timeout: float = 30.0,
) -> None:
    """Create topic ``name`` with ``partitions`` partitions (replication factor 1) through
    CreateTopics v7, then wait until Metadata shows every partition with a leader."""
    conn = Connection(bootstrap)
    try:
        topic = CreatableTopic(
            name=name,
            num_partitions=partitions,
            replication_factor=1,
            configs=[CreatableTopicConfig(name=k, value=v) for k, v in (configs or {}).items()],
        )
        response = conn.request(CreateTopicsRequest(topics=[topic], timeout_ms=30000), 7)
        results = {r.name: r for r in response.topics}
        result = results.get(name)
        assert result is not None, f"CreateTopics answered no result for {name!r}: {response}"
        assert result.error_code == 0, (
            f"CreateTopics {name!r}: error {result.error_code} {result.error_message!r}"
        )
        wait_for_leaders(conn, name, partitions, timeout)
    finally:
        conn.close()


def add_partitions(bootstrap: str, name: str, total: int, timeout: float = 30.0) -> None:
    """Grow topic ``name`` to ``total`` partitions (CreatePartitions v3), then wait until
    Metadata shows every partition with a leader."""
    conn = Connection(bootstrap)
    try:
        grow = CreatePartitionsTopic(name=name, count=total, assignments=None)
        response = conn.request(CreatePartitionsRequest(topics=[grow], timeout_ms=30000), 3)
        [result] = response.results
        assert result.error_code == 0, (
            f"CreatePartitions {name!r} to {total}: error {result.error_code} "
            f"{result.error_message!r}"
        )
        wait_for_leaders(conn, name, total, timeout)
    finally:
        conn.close()


def wait_for_leaders(conn: Connection, name: str, partitions: int, timeout: float) -> None:
    """Until Metadata shows ``partitions`` partitions of ``name``, each with a leader."""
    deadline = time.monotonic() + timeout
    while True:
        metadata = conn.request(
            MetadataRequest(
                topics=[MetadataRequestTopic(name=name)], allow_auto_topic_creation=False
            ),
            12,
        )
        ready = [
            t
            for t in metadata.topics
            if t.name == name
            and t.error_code == 0
            and len(t.partitions) == partitions
            and all(p.error_code == 0 and p.leader_id >= 0 for p in t.partitions)
        ]
        if ready:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {name!r} not ready after {timeout}s: {metadata}")
        time.sleep(0.05)


#: Produce errors a client retries: UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE,
#: NOT_LEADER_OR_FOLLOWER (Kafka answers them for a moment after a topic is created).
RETRIABLE_PRODUCE_ERRORS = frozenset({3, 5, 6})


def produce_values(
    bootstrap: str, topic: str, partitions: int, values: Sequence[str], timeout: float = 30.0
) -> list[tuple[int, int]]:
    """Produce ``values`` (UTF-8, no key), value i to partition i % ``partitions``, one
    batch per partition through Produce v9 (acks=all), retrying a partition on a
    retriable error as a client would; returns each value's (partition, offset)."""
    pending: dict[int, list[int]] = defaultdict(list)
    for i in range(len(values)):
        pending[i % partitions].append(i)
    positions: list[tuple[int, int]] = [(-1, -1)] * len(values)
    deadline = time.monotonic() + timeout
    conn = Connection(bootstrap)
    try:
        while pending:
            now = int(time.time() * 1000)
            data = [
                PartitionProduceData(
                    index=p,
                    records=build_batch(
                        [NewRecord(None, values[i].encode(), timestamp=now) for i in idx]
                    ),
                )
                for p, idx in sorted(pending.items())
            ]
            request = ProduceRequest(
                acks=-1,
                timeout_ms=30000,
                topic_data=[TopicProduceData(name=topic, partition_data=data)],
            )
            response = conn.request(request, 9)
            for part in response.responses[0].partition_responses:
                code = part.error_code
                if code in RETRIABLE_PRODUCE_ERRORS and time.monotonic() < deadline:
                    continue
                assert code == 0, f"Produce {topic}-{part.index}: error {code}"
                for n, i in enumerate(pending.pop(part.index)):
                    positions[i] = (part.index, part.base_offset + n)
            if pending:
                time.sleep(0.1)
    finally:
        conn.close()
    return positions


def stored_batches(bootstrap: str, topic: str, partitions: int) -> list[dict[str, Any]]:
    """The record batches of every partition of ``topic`` as a consumer fetches them from
    offset 0 (Fetch v12): ``{"partition", "base_offset", "records", "codec"`` ("none", "gzip",
    "snappy", "lz4", "zstd")``, "producer_id", "producer_epoch", "base_sequence"}``. Tells which
    codec a client really used and whether it produced idempotently."""
    conn = Connection(bootstrap)
    try:
        request = FetchRequest(
            replica_id=-1,
            max_wait_ms=0,
            min_bytes=0,
            max_bytes=64 << 20,
            topics=[
                FetchTopic(
                    topic=topic,
                    partitions=[
                        FetchPartition(partition=p, fetch_offset=0, partition_max_bytes=16 << 20)
                        for p in range(partitions)
                    ],
                )
            ],
        )
        response = conn.request(request, 12)
    finally:
        conn.close()
    assert response.error_code == 0, f"Fetch {topic}: error {response.error_code}"
    batches: list[dict[str, Any]] = []
    for topic_response in response.responses:
        for part in topic_response.partitions:
            assert part.error_code == 0, (
                f"Fetch {topic}-{part.partition_index}: error {part.error_code}"
            )
            for batch in iter_batches(part.records or b""):
                batches.append(
                    {
                        "partition": part.partition_index,
                        "base_offset": batch.base_offset,
                        "records": batch.records_count,
                        "codec": batch.compression.name.lower(),
                        "producer_id": batch.producer_id,
                        "producer_epoch": batch.producer_epoch,
                        "base_sequence": batch.base_sequence,
                    }
                )
    return batches


# --- drivers ---------------------------------------------------------------------------------


def run_driver(cmd: Sequence[str], timeout: float = 120) -> list[dict[str, Any]]:
    """Run a driver (SCENARIOS.md) and return its JSON lines, one dict per event.

    Fails the test, with the driver's stderr (and the end of the broker's log when the driver
    talked to a server started here), when the driver exits non-zero, runs longer than
    ``timeout`` seconds (it is killed), or prints a line that is not a JSON object."""
    # Only tests run drivers: bench/ uses the rest of this module and runs without pytest.
    import pytest  # noqa: PLC0415

    command = [str(c) for c in cmd]
    try:
        result = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(
            driver_failure(
                command, f"still running after {timeout}s (killed)", exc.stdout, exc.stderr
            ),
            pytrace=False,
        )
    if result.returncode != 0:
        pytest.fail(
            driver_failure(command, f"exit {result.returncode}", result.stdout, result.stderr),
            pytrace=False,
        )
    events: list[dict[str, Any]] = []
    for number, line in enumerate(result.stdout.splitlines(), 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            event = None
        if not isinstance(event, dict):
            pytest.fail(
                driver_failure(
                    command,
                    f"stdout line {number} is not a JSON object: {line!r}",
                    result.stdout,
                    result.stderr,
                ),
                pytrace=False,
            )
        events.append(event)
    return events


def _text(output: str | bytes | None) -> str:
    if output is None:
        return ""
    return output.decode(errors="replace") if isinstance(output, bytes) else output


def driver_failure(
    command: list[str], what: str, stdout: str | bytes | None, stderr: str | bytes | None
) -> str:
    """What a test says of a driver that failed: the command, why, the ends of its output
    and of the log of the server it talked to."""
    out = _text(stdout).splitlines()
    err = _text(stderr).splitlines()
    parts = [
        f"driver failed ({what}): {' '.join(command)}",
        f"--- stderr (last 80 of {len(err)} lines)",
        *err[-80:],
        f"--- stdout (last 10 of {len(out)} lines)",
        *out[-10:],
    ]
    for bootstrap, log in _SERVER_LOGS.items():
        if bootstrap in command:
            parts.append(_tail(log, 30))
    return "\n".join(parts)


# --- checks ----------------------------------------------------------------------------------


def expected_record(i: int, start_ts: int = DEFAULT_START_TS) -> dict[str, Any]:
    """Record ``i`` of ``produce-consume`` as a driver prints it (without partition/offset)."""
    return {
        "key": f"key-{i % 7}",
        "value": f"value-{i}",
        "headers": [["h1", f"v{i}"], ["h2", ""]],
        "timestamp": start_ts + i * 1000,
    }


def _index_of(record: dict[str, Any], count: int) -> int:
    value = record.get("value")
    assert isinstance(value, str) and value.startswith("value-"), (
        f"a record with an unexpected value (not one we produced): {record}"
    )
    i = int(value.removeprefix("value-"))
    assert 0 <= i < count, f"a record with an unexpected value (not one we produced): {record}"
    return i


def check_produce_consume(
    events: Sequence[dict[str, Any]],
    count: int = DEFAULT_COUNT,
    start_ts: int = DEFAULT_START_TS,
    *,
    exact_timestamps: bool = True,
) -> None:
    """Every check of SCENARIOS.md's ``produce-consume`` on a driver's events (other event
    kinds are ignored). Raises AssertionError saying what differs.

    ``exact_timestamps=False`` is for a client that cannot set a record's timestamp (kcat's
    producer stamps the wall clock): then record i's timestamp is the one the ``beginning``
    phase read, those must increase with i (records were produced one after the other), the
    other phase must read the same ones, and the replay threshold is record ``count // 2``'s."""
    produced: dict[int, tuple[int, int]] = {}
    for event in events:
        if event.get("event") != "produced":
            continue
        i, p, o = event.get("i"), event.get("partition"), event.get("offset")
        assert isinstance(i, int) and isinstance(p, int) and isinstance(o, int), (
            f"a produced event without integer i/partition/offset: {event}"
        )
        assert i not in produced, f"record {i} reported produced twice: {event}"
        assert p >= 0 and o >= 0, f"record {i} produced at an invalid position: {event}"
        produced[i] = (p, o)
    missing = sorted(set(range(count)) - set(produced))
    assert not missing, f"no delivery report for records {missing}"
    assert len(produced) == count, (
        f"delivery reports for records outside 0..{count - 1}: "
        f"{sorted(set(produced) - set(range(count)))}"
    )
    positions = list(produced.values())
    assert len(set(positions)) == count, "two records reported at the same partition and offset"

    by_partition: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for i in range(count):
        p, o = produced[i]
        by_partition[p].append((o, i))
    for p, entries in by_partition.items():
        offsets = [o for o, _ in entries]
        assert offsets == sorted(offsets), (
            f"partition {p}: production order not kept, offsets by i: {entries}"
        )
    key_partitions: dict[str, set[int]] = defaultdict(set)
    for i, (p, _) in produced.items():
        key_partitions[f"key-{i % 7}"].add(p)
    split = {k: sorted(ps) for k, ps in key_partitions.items() if len(ps) > 1}
    assert not split, f"equal keys produced to more than one partition: {split}"

    timestamps = {i: expected_record(i, start_ts)["timestamp"] for i in range(count)}
    if not exact_timestamps:
        timestamps = _read_timestamps(events, count)
    _check_phase(events, "beginning", produced, set(range(count)), count, start_ts, timestamps)
    from_offset = {i for i, (_, offset) in produced.items() if offset >= 1}
    _check_phase(events, "from_offset", produced, from_offset, count, start_ts, timestamps)
    threshold = timestamps[count // 2]
    expected_replay = {i for i in range(count) if timestamps[i] >= threshold}
    _check_phase(events, "from_timestamp", produced, expected_replay, count, start_ts, timestamps)


def _read_timestamps(events: Sequence[dict[str, Any]], count: int) -> dict[int, int]:
    """Record i's timestamp as the ``beginning`` phase read it (``exact_timestamps=False``)."""
    timestamps: dict[int, int] = {}
    for event in events:
        if event.get("event") == "record" and event.get("phase") == "beginning":
            ts = event.get("timestamp")
            assert isinstance(ts, int), f"a record without an integer timestamp: {event}"
            timestamps[_index_of(event, count)] = ts
    missing = sorted(set(range(count)) - set(timestamps))
    assert not missing, f"beginning: records never read: {missing} (read {len(timestamps)})"
    in_order = [timestamps[i] for i in range(count)]
    assert all(a < b for a, b in zip(in_order, in_order[1:], strict=False)), (
        f"timestamps do not increase with the production order: {in_order}"
    )
    return timestamps


def _check_phase(
    events: Sequence[dict[str, Any]],
    phase: str,
    produced: dict[int, tuple[int, int]],
    expected: set[int],
    count: int,
    start_ts: int,
    timestamps: dict[int, int],
) -> None:
    records = [e for e in events if e.get("event") == "record" and e.get("phase") == phase]
    seen: dict[int, dict[str, Any]] = {}
    read_order: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for record in records:
        i = _index_of(record, count)
        assert i not in seen, f"{phase}: record {i} read twice:\n  {seen[i]}\n  {record}"
        seen[i] = record
        got = {k: record.get(k) for k in ("key", "value", "headers", "timestamp")}
        want = {**expected_record(i, start_ts), "timestamp": timestamps[i]}
        assert got == want, (
            f"{phase}: record {i} differs from what was produced:\n  got  {got}\n  want {want}"
        )
        p, o = produced[i]
        assert (record.get("partition"), record.get("offset")) == (p, o), (
            f"{phase}: record {i} read at partition {record.get('partition')} offset "
            f"{record.get('offset')}, produced at partition {p} offset {o}"
        )
        read_order[p].append((o, i))
    missing = sorted(expected - set(seen))
    assert not missing, f"{phase}: records never read: {missing} (read {len(seen)})"
    extra = sorted(set(seen) - expected)
    assert not extra, f"{phase}: records read that should not be: {extra}"
    for p, entries in read_order.items():
        offsets = [o for o, _ in entries]
        assert all(a < b for a, b in zip(offsets, offsets[1:], strict=False)), (
            f"{phase}: partition {p} read out of order (offset, i): {entries}"
        )


def _events(events: Sequence[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e.get("event") == kind]


def errors_by_step(events: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The ``error`` lines of a driver (SCENARIOS.md), by step; one per step."""
    found: dict[str, dict[str, Any]] = {}
    for event in _events(events, "error"):
        step = str(event.get("step"))
        assert step not in found, f"two error lines for step {step}: {found[step]}, {event}"
        assert event.get("code") is None or isinstance(event.get("code"), int), (
            f"an error line whose code is neither an integer nor null: {event}"
        )
        found[step] = event
    return found


ACKS_PRODUCERS = ("acks0", "acks1", "acksall", "idempotent")  # partitions 0..3
ACKS_COUNT = 10


def check_acks(events: Sequence[dict[str, Any]]) -> None:
    """SCENARIOS.md ``acks``: what the driver read and what its producers reported."""
    read: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for event in _events(events, "record"):
        read[event.get("partition", -1)].append((event.get("offset", -1), event.get("value", "")))
    reported: dict[tuple[str, int], tuple[int, int]] = {}
    for event in _events(events, "produced"):
        key = (str(event.get("producer")), int(event.get("i", -1)))
        assert key not in reported, f"two delivery reports for {key}: {event}"
        reported[key] = (event.get("partition", -1), event.get("offset", -1))
    for partition, name in enumerate(ACKS_PRODUCERS):
        want = [(i, f"{name}-{i}") for i in range(ACKS_COUNT)]
        assert sorted(read.get(partition, [])) == want, (
            f"partition {partition} ({name}): read {read.get(partition)}, want {want}"
        )
        for i in range(ACKS_COUNT):
            got = reported.get((name, i))
            assert got is not None, f"{name}: no delivery report for record {i}"
            offset_unknown = name == "acks0" and got[1] == -1
            assert got == (partition, i) or (offset_unknown and got[0] == partition), (
                f"{name}: record {i} reported at (partition, offset) {got}, read at "
                f"{(partition, i)}"
            )
    extra = sorted(set(read) - set(range(len(ACKS_PRODUCERS))))
    assert not extra, f"records read from partitions nobody produced to: {extra}"


def check_idempotent_batches(batches: Sequence[dict[str, Any]]) -> None:
    """SCENARIOS.md ``acks``: producer ids and sequences of the stored batches."""
    by_partition: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for batch in batches:
        by_partition[batch["partition"]].append(batch)
    for partition in range(3):
        # The producer id alone says "not idempotent": kafkajs writes epoch 0 beside -1.
        ids = sorted({b["producer_id"] for b in by_partition[partition]})
        assert ids == [-1], (
            f"partition {partition}: a non-idempotent producer wrote producer ids {ids}"
        )
    stored = sorted(by_partition[3], key=lambda b: b["base_offset"])
    ids = sorted({(b["producer_id"], b["producer_epoch"]) for b in stored})
    assert len(ids) == 1 and ids[0][0] >= 0 and ids[0][1] >= 0, (
        f"partition 3: the idempotent producer's batches carry producer ids/epochs {ids}"
    )
    sequence = 0
    for batch in stored:
        assert batch["base_sequence"] == sequence, (
            f"partition 3: batch at offset {batch['base_offset']} has base sequence "
            f"{batch['base_sequence']}, want {sequence} (batches: {stored})"
        )
        sequence += batch["records"]


LARGE_NEAR = 1_000_000
LARGE_OVER = 1_100_000
MESSAGE_TOO_LARGE = 10


def large_value(size: int) -> bytes:
    """The value of SCENARIOS.md ``large``: byte j is ``'a' + j % 26``."""
    alphabet = bytes(range(ord("a"), ord("a") + 26))
    return (alphabet * (size // 26 + 1))[:size]


def check_large(events: Sequence[dict[str, Any]]) -> None:
    produced = [e for e in _events(events, "produced") if e.get("step") == "near-limit"]
    assert [(e.get("partition"), e.get("offset")) for e in produced] == [(0, 0)], (
        f"near-limit: want one delivery at partition 0 offset 0, got {produced}"
    )
    error = errors_by_step(events).get("over-limit")
    assert error is not None, "over-limit: a record over max.message.bytes was not refused"
    assert error.get("code") == MESSAGE_TOO_LARGE, (
        f"over-limit: refused with {error}, want code {MESSAGE_TOO_LARGE} (MESSAGE_TOO_LARGE)"
    )
    digest = hashlib.sha256(large_value(LARGE_NEAR)).hexdigest()
    records = [
        {k: e.get(k) for k in ("offset", "size", "sha256")} for e in _events(events, "record")
    ]
    want = [{"offset": 0, "size": LARGE_NEAR, "sha256": digest}]
    assert records == want, f"read {records}, want {want}"


ADMIN_START_TS = 1700000000000


class AdminSteps:
    """The ``admin`` lines of a driver by step, and what differs from what is wanted."""

    def __init__(self, events: Sequence[dict[str, Any]]) -> None:
        self.steps = {e.get("step"): e for e in _events(events, "admin")}
        self.problems: list[str] = []

    def want(self, step: str, field: str, expected: Any) -> None:
        event = self.steps.get(step)
        if event is None:
            self.problems.append(f"{step}: no output")
        elif "error" in event:
            self.problems.append(f"{step}: {event['error']}")
        elif event.get(field) != expected:
            self.problems.append(f"{step}.{field}: got {event.get(field)!r}, want {expected!r}")


def admin_problems(events: Sequence[dict[str, Any]]) -> list[str]:
    """What a driver's ``admin`` scenario (SCENARIOS.md) got that Apache Kafka 4.4 would not
    answer, one line per difference; every step is checked."""
    checked = AdminSteps(events)
    steps, problems, want = checked.steps, checked.problems, checked.want

    def config(value: str, source: str) -> dict[str, str]:
        return {"value": value, "source": source}

    want("createTopics", "listed", True)
    described = steps.get("describeConfigs", {}).get("configs", {})
    entries = described.get("_entries", 0) if isinstance(described, dict) else 0
    if not isinstance(entries, int) or entries < 30:
        problems.append(f"describeConfigs: {entries!r} entries, want at least 30")
    for step, retention, max_bytes in (
        ("describeConfigs", "86400000", config("500000", "DYNAMIC_TOPIC_CONFIG")),
        ("alterConfigs", "3600000", config("1048588", "DEFAULT_CONFIG")),
    ):
        configs = steps.get(step, {}).get("configs", {})
        picked = {
            k: configs.get(k) for k in ("retention.ms", "max.message.bytes", "cleanup.policy")
        }
        expected = {
            "retention.ms": config(retention, "DYNAMIC_TOPIC_CONFIG"),
            "max.message.bytes": max_bytes,
            "cleanup.policy": config("delete", "DEFAULT_CONFIG"),
        }
        if "error" in steps.get(step, {}) or step not in steps:
            want(step, "configs", expected)
        elif picked != expected:
            problems.append(f"{step}.configs: got {picked!r}, want {expected!r}")
    want("createPartitions", "partitions", 4)
    want("produce", "offsets", list(range(10)))
    want("deleteRecords", "low_watermark", 5)
    want("deleteRecords", "earliest_after", 5)
    want("listOffsets", "for_timestamp", 7)
    want("deleteTopics", "listed", False)
    return problems


def check_admin(events: Sequence[dict[str, Any]], bootstrap: str) -> None:
    problems = admin_problems(events)
    assert not problems, f"the admin scenario against {bootstrap}:\n" + "\n".join(problems)


def check_errors(events: Sequence[dict[str, Any]], expected: dict[str, int | None]) -> None:
    """SCENARIOS.md ``errors``: every step of ``expected`` failed, with the code given there
    (what the same client reports against Apache Kafka 4.4; None: no Kafka error code)."""
    found = errors_by_step(events)
    for step, code in expected.items():
        error = found.get(step)
        assert error is not None, f"{step}: the client reported no error"
        assert error.get("code") == code, (
            f"{step}: the client reported {error}, against Apache Kafka 4.4 it reports code {code}"
        )

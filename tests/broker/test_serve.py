"""``millpond serve`` as a user runs it: a real process, its output, its signals."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from pathlib import Path

from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.api_versions_request import ApiVersionsRequest

from .harness import Client


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _serve(data: Path, port: int, *overrides: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "millpond",
            "serve",
            "--override",
            f"log.dirs={data}",
            "--override",
            f"listeners=PLAINTEXT://127.0.0.1:{port}",
            *(arg for o in overrides for arg in ("--override", o)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_serve_listens_refuses_a_second_broker_and_stops_cleanly(tmp_path: Path) -> None:
    port = _free_port()
    proc = _serve(tmp_path, port)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # blocks until the broker is listening
        assert f"listening on 127.0.0.1:{port}" in line and str(tmp_path) in line
        client = Client(port)
        _, body = client.request(ApiVersionsRequest(), 0)
        assert body.error_code == ErrorCode.NONE
        client.close()
        _round_trip(port)

        second = _serve(tmp_path, _free_port())
        _, err = second.communicate(timeout=30)
        assert second.returncode == 1
        assert "in use by another broker" in err

        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0
        assert "stopped cleanly" in out
        assert (tmp_path / ".kafka_cleanshutdown").exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def _round_trip(port: int) -> None:
    """Produce and consume with kafka-python, as the README's quick start does."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{port}")
    for i in range(3):
        producer.send("quickstart", key=b"k", value=b"hello %d" % i).get(timeout=30)
    producer.close(timeout=10)
    consumer = KafkaConsumer(bootstrap_servers=f"127.0.0.1:{port}")
    partition = TopicPartition("quickstart", 0)
    consumer.assign([partition])
    consumer.seek_to_beginning(partition)
    values: list[bytes] = []
    for _ in range(30):  # bounded: each poll waits at most 1 s
        if len(values) >= 3:
            break
        for records in consumer.poll(timeout_ms=1000).values():
            values.extend(record.value for record in records)
    consumer.close()
    assert values == [b"hello 0", b"hello 1", b"hello 2"]


def test_invalid_config_is_refused_naming_the_key(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "millpond",
            "serve",
            "--override",
            "num.partitions=zero",
            "--override",
            f"log.dirs={tmp_path}",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2
    assert "num.partitions" in result.stderr


def test_a_setting_millpond_cannot_honour_stops_the_start_saying_what_to_do(
    tmp_path: Path,
) -> None:
    """A controller of a quorum found through other nodes' bootstrap servers, with no
    controller listener for its peers to reach it on, could never vote: the start is
    refused, with one line and the config error's exit code."""
    data = tmp_path / "data"
    result = subprocess.run(
        [
            sys.executable, "-m", "millpond", "serve",
            "--override", "controller.quorum.bootstrap.servers=other:9093",
            "--override", f"log.dirs={data}",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        "millpond: controller.listener.names: invalid value '': a controller of a quorum "
        "of several serves its peers on a controller listener: list one in listeners "
        "under a name of controller.listener.names\n"
    )
    assert not data.exists()  # nothing was formatted


def test_a_port_in_use_is_one_clear_error_and_frees_the_data_directory(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        first = _serve(tmp_path, port)
        _, err = first.communicate(timeout=30)
    assert first.returncode == 1
    assert "cannot listen" in err and "address already in use" in err
    assert "Traceback" not in err
    # Nothing was left locked: the same directory serves on a free port.
    second = _serve(tmp_path, _free_port())
    try:
        assert second.stdout is not None
        assert "listening on" in second.stdout.readline()
    finally:
        second.send_signal(signal.SIGTERM)
        second.communicate(timeout=30)
    assert second.returncode == 0


def test_a_broker_whose_quorum_never_answers_stops_saying_so(tmp_path: Path) -> None:
    """A broker-only node of a quorum nobody runs: its registration times out, and the
    start ends with one line naming what to check, not a traceback."""
    data = tmp_path / "data"
    overrides = [
        "node.id=4", "process.roles=broker", "controller.listener.names=CONTROLLER",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.quorum.voters=1@127.0.0.1:1", "listeners=PLAINTEXT://127.0.0.1:0",
        "initial.broker.registration.timeout.ms=1000", f"log.dirs={data}",
    ]  # fmt: skip
    args = [a for o in overrides for a in ("--override", o)]
    formatted = subprocess.run(
        [sys.executable, "-m", "millpond", "storage", "format", "-t", "AAAAAAAAAAAAAAAAAAAAAA",
         *args],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert formatted.returncode == 0, formatted.stderr
    result = subprocess.run(
        [sys.executable, "-m", "millpond", "serve", *args],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 1
    assert "millpond: broker 4 could not register: no active controller answered" in (result.stderr)
    assert "controller.quorum.voters" in result.stderr and "Traceback" not in result.stderr


def test_a_corrupt_metadata_snapshot_stops_the_start_saying_so(tmp_path: Path) -> None:
    port = _free_port()
    proc = _serve(tmp_path, port, "metadata.log.max.record.bytes.between.snapshots=1")
    assert proc.stdout is not None
    assert "listening on" in proc.stdout.readline()
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=30)
    snapshots = sorted((tmp_path / "__cluster_metadata-0").glob("*.checkpoint"))
    assert snapshots, "no snapshot written"
    data = bytearray(snapshots[-1].read_bytes())
    data[-1] ^= 0xFF  # the footer batch no longer matches its CRC
    snapshots[-1].write_bytes(bytes(data))
    again = _serve(tmp_path, port)
    out, err = again.communicate(timeout=30)
    assert again.returncode == 1, out + err
    assert "the metadata log cannot be read" in err and "fails its CRC" in err, err
    assert "Traceback" not in err

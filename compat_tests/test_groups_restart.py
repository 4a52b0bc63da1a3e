"""Committed offsets survive ``kill -9``: a consumer of a group commits, the broker is
SIGKILLed and started again on the same data directory, and the group's next consumer
resumes exactly after the last commit (confluent-kafka against ``millpond serve``)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as TP

from compat_tests.harness import create_topic, produce_values, wait_listening
from compat_tests.kafka.reference import free_port

pytestmark = pytest.mark.compat

TOPIC = "restart-topic"
GROUP = "restart-group"


def _serve(data: Path, port: int, log: Path) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", "millpond", "serve",
        "--override", f"log.dirs={data}",
        "--override", f"listeners=PLAINTEXT://127.0.0.1:{port}",
        "--override", "group.initial.rebalance.delay.ms=0",
    ]  # fmt: skip
    with log.open("ab") as out:
        offset = out.tell()
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
    wait_listening(proc, log, offset, f"listening on 127.0.0.1:{port}")
    return proc


def _consumer(bootstrap: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": GROUP,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
        }
    )


def _read(consumer: Consumer, count: int) -> list[tuple[int, int]]:
    """Poll until ``count`` records were read (bounded); their (partition, offset)."""
    got: list[tuple[int, int]] = []
    for _ in range(600):
        if len(got) >= count:
            break
        msg = consumer.poll(0.1)
        if msg is not None and msg.error() is None:
            got.append((msg.partition(), msg.offset()))
    assert len(got) >= count, f"read {len(got)} of {count} records"
    return got[:count]


def test_committed_offsets_survive_kill_9(tmp_path: Path) -> None:
    port = free_port()
    bootstrap = f"127.0.0.1:{port}"
    log = tmp_path / "millpond.log"
    proc = _serve(tmp_path / "data", port, log)
    try:
        create_topic(bootstrap, TOPIC, 1)
        produce_values(bootstrap, TOPIC, 1, [f"v{i}" for i in range(50)])
        first = _consumer(bootstrap)
        first.subscribe([TOPIC])
        read = _read(first, 20)
        assert read == [(0, o) for o in range(20)]
        first.commit(offsets=[TP(TOPIC, 0, 20)], asynchronous=False)
        # Not closed: the broker dies under a live member, as in a crash.
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        first.close()  # its LeaveGroup goes nowhere; the group is not touched
        proc = _serve(tmp_path / "data", port, log)
        second = _consumer(bootstrap)
        try:
            committed = second.committed([TP(TOPIC, 0)], timeout=30)
            assert [(tp.partition, tp.offset) for tp in committed] == [(0, 20)]
            second.subscribe([TOPIC])
            assert _read(second, 5) == [(0, o) for o in range(20, 25)]
        finally:
            second.close()
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=30)
    assert "loaded" in log.read_text(), "the restart did not replay __consumer_offsets"

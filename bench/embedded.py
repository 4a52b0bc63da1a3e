"""Start-to-ready time of the embedded broker (``millpond.testing.broker()``), each
start followed by a produce/consume round trip with confluent-kafka (librdkafka), so a
start counts only if a real client is then served.

Run: ``.venv/bin/python bench/embedded.py --rounds 100``
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass

from confluent_kafka import Consumer, Producer, TopicPartition

from millpond.testing import broker


@dataclass(frozen=True)
class Round:
    ready_ms: float
    """From calling ``broker()`` until its ``with`` block runs (listening, registered)."""
    round_trip_ms: float
    stop_ms: float
    consumed: tuple[bytes | None, bytes | None]


def one_round(index: int, in_memory: bool = False) -> Round:
    """Start a broker, produce one record with librdkafka, read it back, stop."""
    started = time.perf_counter()
    with broker(in_memory=in_memory) as running:
        ready = time.perf_counter()
        producer = Producer({"bootstrap.servers": running.bootstrap_servers, "linger.ms": 0})
        producer.produce("round-trip", key=b"round", value=str(index).encode())
        if producer.flush(10) != 0:
            raise RuntimeError("the record was not delivered in 10 s")
        consumer = Consumer(
            {
                "bootstrap.servers": running.bootstrap_servers,
                "group.id": "unused",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 10,
            }
        )
        try:
            consumer.assign([TopicPartition("round-trip", 0, 0)])
            deadline = time.monotonic() + 10
            message = None
            while message is None and time.monotonic() < deadline:
                message = consumer.poll(0.05)
            if message is None or message.error():
                raise RuntimeError(f"no record read back: {message and message.error()}")
            consumed = (message.key(), message.value())
        finally:
            consumer.close()
        done = time.perf_counter()
    stopped = time.perf_counter()
    return Round(
        ready_ms=(ready - started) * 1000,
        round_trip_ms=(done - ready) * 1000,
        stop_ms=(stopped - done) * 1000,
        consumed=consumed,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--in-memory", action="store_true", help="data in memory, not on disk")
    args = parser.parse_args()
    rounds = [one_round(i, args.in_memory) for i in range(args.rounds)]
    for name in ("ready_ms", "round_trip_ms", "stop_ms"):
        values = sorted(getattr(r, name) for r in rounds)
        print(
            f"{name}: median {statistics.median(values):.1f}, "
            f"p90 {values[int(len(values) * 0.9) - 1]:.1f}, max {values[-1]:.1f}"
        )


if __name__ == "__main__":
    main()

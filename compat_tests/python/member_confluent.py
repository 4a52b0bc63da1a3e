"""confluent-kafka (librdkafka) as one member of SCENARIOS.md's ``group`` scenario:
``python member_confluent.py group-member --bootstrap ... --topic T --group G``.

Eager assignors (range, roundrobin) replace the assignment in each callback; the
cooperative one (cooperative-sticky) adds and removes partitions incrementally, so the
member keeps the whole set itself and prints it after every callback."""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make compat_tests importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from confluent_kafka import Consumer, KafkaError, KafkaException  # noqa: E402
from confluent_kafka import TopicPartition as TP  # noqa: E402

from compat_tests.python.contract import emit  # noqa: E402

#: Commit errors of a member whose group is rebalancing: it commits again after rejoining.
REFUSED_BY_REBALANCE = {
    KafkaError.ILLEGAL_GENERATION,
    KafkaError.REBALANCE_IN_PROGRESS,
    KafkaError.UNKNOWN_MEMBER_ID,
}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=["group-member"])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--assignor")
    parser.add_argument("--instance-id")
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    parser.add_argument("--heartbeat-interval-ms", type=int, help="default: a quarter session")
    args = parser.parse_args()
    config: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": args.session_timeout_ms,
        "heartbeat.interval.ms": args.heartbeat_interval_ms
        or max(args.session_timeout_ms // 4, 100),
    }
    if args.assignor:
        config["partition.assignment.strategy"] = args.assignor
    if args.instance_id:
        config["group.instance.id"] = args.instance_id
    cooperative = args.assignor == "cooperative-sticky"
    consumer = Consumer(config)
    owned: set[int] = set()

    def report() -> None:
        emit({"event": "assigned", "partitions": sorted(owned)})

    def on_assign(_: Any, partitions: list[Any]) -> None:
        if not cooperative:
            owned.clear()
        owned.update(tp.partition for tp in partitions)
        report()

    pending: dict[int, int] = {}  # processed, not yet committed: partition -> next offset

    def commit_pending(only: set[int] | None = None) -> None:
        """Commit what was processed; a commit the rebalance refuses (the generation moved
        on) stays pending and is sent again once the member rejoined, with the new one."""
        wanted = {p: o for p, o in pending.items() if only is None or p in only}
        if not wanted:
            return
        offsets = [TP(args.topic, p, o) for p, o in sorted(wanted.items())]
        try:
            done = consumer.commit(offsets=offsets, asynchronous=False) or []
        except KafkaException as exc:
            if exc.args[0].code() in REFUSED_BY_REBALANCE:
                return
            raise
        for tp in done:
            if tp.error is not None:
                raise KafkaException(tp.error)
            pending.pop(tp.partition, None)
            emit({"event": "committed", "partition": tp.partition, "offset": tp.offset})

    def on_revoke(_: Any, partitions: list[Any]) -> None:
        commit_pending({tp.partition for tp in partitions})  # before another member owns them
        if cooperative:
            owned.difference_update(tp.partition for tp in partitions)
        else:
            owned.clear()
        report()

    closing = threading.Event()

    def read_commands() -> None:
        for line in sys.stdin:
            if line.strip() == "close":
                closing.set()
                return
        closing.set()  # stdin closed: the harness is gone

    threading.Thread(target=read_commands, daemon=True).start()
    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_revoke)
    while not closing.is_set():
        messages = consumer.consume(num_messages=100, timeout=0.2)
        for msg in messages:
            if msg.error() is not None:
                raise KafkaException(msg.error())
            value = msg.value()
            emit(
                {
                    "event": "record",
                    "partition": msg.partition(),
                    "offset": msg.offset(),
                    "value": value.decode() if value is not None else None,
                }
            )
            pending[msg.partition()] = msg.offset() + 1
        commit_pending()
    commit_pending()
    consumer.close()
    emit({"event": "closed"})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

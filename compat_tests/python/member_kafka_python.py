"""kafka-python as one member of SCENARIOS.md's ``group`` scenario:
``python member_kafka_python.py group-member --bootstrap ... --topic T --group G``.

kafka-python's assignors are classes, named here by their protocol names (range,
roundrobin, sticky, cooperative-sticky). A ConsumerRebalanceListener tracks the assignment:
eager assignors revoke everything and then hand over the whole new set, the cooperative
one only the partitions removed and added, so the member keeps the set itself.
``MILLPOND_DRIVER_DEBUG=1`` logs the client's protocol traffic to stderr."""

from __future__ import annotations

import argparse
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make compat_tests importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from kafka import ConsumerRebalanceListener, KafkaConsumer  # noqa: E402
from kafka.coordinator.assignors.cooperative_sticky import (  # noqa: E402
    CooperativeStickyAssignor,
)
from kafka.coordinator.assignors.range import RangePartitionAssignor  # noqa: E402
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor  # noqa: E402
from kafka.coordinator.assignors.sticky.sticky_assignor import (  # noqa: E402
    StickyPartitionAssignor,
)
from kafka.structs import OffsetAndMetadata  # noqa: E402

from compat_tests.python.contract import emit as _emit  # noqa: E402

ASSIGNORS = {
    "range": RangePartitionAssignor,
    "roundrobin": RoundRobinPartitionAssignor,
    "sticky": StickyPartitionAssignor,
    "cooperative-sticky": CooperativeStickyAssignor,
}

#: The listener may run on kafka-python's network thread: whole lines, one at a time.
_EMIT_LOCK = threading.Lock()


def emit(event: dict[str, Any]) -> None:
    with _EMIT_LOCK:
        _emit(event)


class Tracker(ConsumerRebalanceListener):  # type: ignore[misc]
    """Prints the whole assignment whenever a callback changed it, and after the first
    assignment even when empty (kafka-python also revokes nothing before its first join:
    no line for that)."""

    def __init__(self, cooperative: bool) -> None:
        self.cooperative = cooperative
        self.owned: set[int] = set()
        self.printed: set[int] | None = None

    def _report(self) -> None:
        if self.owned != self.printed:
            self.printed = set(self.owned)
            emit({"event": "assigned", "partitions": sorted(self.owned)})

    def on_partitions_revoked(self, revoked: Any) -> None:
        if self.cooperative:
            self.owned.difference_update(tp.partition for tp in revoked)
        else:
            self.owned.clear()
        if self.printed is not None:
            self._report()

    def on_partitions_assigned(self, assigned: Any) -> None:
        if not self.cooperative:
            self.owned.clear()
        self.owned.update(tp.partition for tp in assigned)
        self._report()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=["group-member"])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--assignor", choices=sorted(ASSIGNORS))
    parser.add_argument("--instance-id")
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    args = parser.parse_args()
    if os.environ.get("MILLPOND_DRIVER_DEBUG"):
        logging.basicConfig(
            level=logging.DEBUG,
            stream=sys.stderr,
            format="%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s",
        )
    config: dict[str, Any] = {}
    if args.assignor:
        config["partition_assignment_strategy"] = (ASSIGNORS[args.assignor],)
    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=args.group,
        group_instance_id=args.instance_id,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=args.session_timeout_ms,
        heartbeat_interval_ms=max(args.session_timeout_ms // 4, 100),
        fetch_max_wait_ms=100,
        **config,
    )
    tracker = Tracker(cooperative=args.assignor == "cooperative-sticky")
    closing = threading.Event()

    def read_commands() -> None:
        for line in sys.stdin:
            if line.strip() == "close":
                break
        closing.set()  # a close, or stdin closed: the harness is gone

    threading.Thread(target=read_commands, daemon=True).start()
    consumer.subscribe([args.topic], listener=tracker)
    # A metadata fetch between subscribe() and the first join, so that the leader's
    # metadata snapshot holds the topic when it assigns. Otherwise the leader rejoins as
    # soon as the topic's metadata arrives, a rebalance of its own making (which the static
    # scenario sees as one); and kafka-python 3.0.12 loses such a rejoin when it outlasts
    # a poll: the join completes unseen, heartbeats never restart, and the member keeps
    # its assignment until its session expires.
    if args.topic not in consumer.topics():
        raise SystemExit(f"topic {args.topic} not found")
    while not closing.is_set():
        processed: dict[Any, int] = {}
        for tp, messages in consumer.poll(timeout_ms=200).items():
            for msg in messages:
                value = msg.value
                emit(
                    {
                        "event": "record",
                        "partition": tp.partition,
                        "offset": msg.offset,
                        "value": value.decode() if value is not None else None,
                    }
                )
                processed[tp] = msg.offset + 1
        if processed:
            # commit() is synchronous and raises when the broker refuses the commit.
            consumer.commit({tp: OffsetAndMetadata(o, "", -1) for tp, o in processed.items()})
            for tp, offset in sorted(processed.items(), key=lambda item: item[0].partition):
                emit({"event": "committed", "partition": tp.partition, "offset": offset})
    consumer.close()
    emit({"event": "closed"})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

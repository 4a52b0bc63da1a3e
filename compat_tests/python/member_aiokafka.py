"""aiokafka as one member of SCENARIOS.md's ``group`` scenario:
``python member_aiokafka.py group-member --bootstrap ... --topic T --group G``.

aiokafka's assignors are eager only (range, roundrobin, sticky), named here by their
protocol names; every on_partitions_assigned callback hands over the whole assignment.
A static member (group_instance_id) does not leave the group when it stops: aiokafka's
choice, which the scenario allows. ``MILLPOND_DRIVER_DEBUG=1`` logs the client's protocol
traffic to stderr."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import threading
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make compat_tests importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener  # noqa: E402
from aiokafka.coordinator.assignors.range import RangePartitionAssignor  # noqa: E402
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor  # noqa: E402
from aiokafka.coordinator.assignors.sticky.sticky_assignor import (  # noqa: E402
    StickyPartitionAssignor,
)

from compat_tests.python.contract import emit  # noqa: E402

ASSIGNORS = {
    "range": RangePartitionAssignor,
    "roundrobin": RoundRobinPartitionAssignor,
    "sticky": StickyPartitionAssignor,
}


class Tracker(ConsumerRebalanceListener):  # type: ignore[misc]
    """Prints the whole assignment whenever a callback changed it, and after the first
    assignment even when empty (aiokafka also revokes nothing before its first join: no
    line for that). Callbacks run on the event loop, like the record lines, so lines
    never interleave."""

    def __init__(self) -> None:
        self.printed: list[int] | None = None

    def _report(self, partitions: list[int]) -> None:
        if partitions != self.printed:
            self.printed = partitions
            emit({"event": "assigned", "partitions": partitions})

    def on_partitions_revoked(self, revoked: Any) -> None:
        if self.printed is not None:
            self._report([])

    def on_partitions_assigned(self, assigned: Any) -> None:
        self._report(sorted(tp.partition for tp in assigned))


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("scenario", choices=["group-member"])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--assignor", choices=sorted(ASSIGNORS))
    parser.add_argument("--instance-id")
    parser.add_argument("--session-timeout-ms", type=int, default=6000)
    return parser.parse_args()


async def run(args: argparse.Namespace) -> None:
    loop = asyncio.get_running_loop()
    closing = asyncio.Event()

    def read_commands() -> None:
        for line in sys.stdin:
            if line.strip() == "close":
                break
        loop.call_soon_threadsafe(closing.set)  # a close, or stdin closed: the harness is gone

    config: dict[str, Any] = {}
    if args.assignor:
        config["partition_assignment_strategy"] = (ASSIGNORS[args.assignor],)
    consumer = AIOKafkaConsumer(
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
    await consumer.start()
    threading.Thread(target=read_commands, daemon=True).start()
    try:
        consumer.subscribe([args.topic], listener=Tracker())
        while not closing.is_set():
            processed: dict[Any, int] = {}
            batches = await consumer.getmany(timeout_ms=200)
            for tp, messages in batches.items():
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
                # Awaited: commit() returns once the broker accepted, raises if it refused.
                await consumer.commit(processed)
                for tp, offset in sorted(processed.items(), key=lambda item: item[0].partition):
                    emit({"event": "committed", "partition": tp.partition, "offset": offset})
    finally:
        await consumer.stop()
    emit({"event": "closed"})


def main() -> int:
    args = parse_args()
    if os.environ.get("MILLPOND_DRIVER_DEBUG"):
        logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

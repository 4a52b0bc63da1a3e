"""The queue workload of the replication fault runs: real clients (librdkafka, through
confluent-kafka) sending unique integers and reading them back, recorded as the history
:mod:`tests.cluster.queue_checker` checks.

- :class:`Producers` are idempotent ``acks=all`` producers, each choosing a partition per
  value. A delivery report is the send's outcome: ok with its offset, or info (a timeout
  or any other error: the value may or may not be in the log). A producer that
  librdkafka declares fatally failed is replaced by a new one, a new process.
- :class:`Consumers` read every partition by ``assign`` from its start, recording each
  batch of records as a poll.
- :func:`final_polls` reads every partition from its start to its end with a fresh
  consumer once the faults are healed.
- :class:`IsrMonitor` samples each partition's leader and ISR from Metadata answers, for
  the ISR checks and the figures (how long a shrink and an expansion took).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    Message,
    Producer,
    TopicPartition,
)

from millpond.wire.generated.api.metadata_request import MetadataRequest, MetadataRequestTopic
from millpond.wire.generated.api.metadata_response import MetadataResponse

from .queue_checker import Assign, Poll, Send
from .rig import BROKER_PORT, request

#: Long enough to ride through a failover; a value undelivered by then is indefinite.
MESSAGE_TIMEOUT_MS = 20_000


class Producers(threading.Thread):
    """Sends ``rate`` values a second in all, round-robin over ``count`` producers."""

    def __init__(
        self, bootstrap: str, topic: str, partitions: int, count: int, rate: float, seed: int
    ) -> None:
        super().__init__(daemon=True, name="queue-producers")
        self.bootstrap, self.topic, self.partitions, self.rate = bootstrap, topic, partitions, rate
        self.count = count
        self.stopping = threading.Event()
        self._processes = itertools.count()
        self._values = itertools.count(seed * 10_000_000)
        #: Every send, in the order each process invoked them.
        self.sends: list[_Pending] = []
        self.fatal: list[str] = []

    def _new(self) -> tuple[int, Producer, list[str]]:
        failed: list[str] = []

        def on_error(error: KafkaError) -> None:
            if error.fatal():
                failed.append(str(error))

        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 2,
                "message.timeout.ms": MESSAGE_TIMEOUT_MS,
                "request.timeout.ms": 5000,
                "retry.backoff.ms": 100,
                "retry.backoff.max.ms": 500,
                "topic.metadata.refresh.interval.ms": 1000,
                "error_cb": on_error,
            }
        )
        return next(self._processes), producer, failed

    def run(self) -> None:
        clients = [self._new() for _ in range(self.count)]
        period = 1 / self.rate
        due = time.monotonic()
        try:
            for n in itertools.count():
                if self.stopping.is_set():
                    break
                slot = n % len(clients)
                process, producer, failed = clients[slot]
                if failed:  # fatally failed: what it has in flight is indefinite
                    self.fatal += failed
                    producer.flush(1)
                    clients[slot] = self._new()
                    process, producer, _ = clients[slot]
                value = next(self._values)
                pending = _Pending(process, value % self.partitions, value, time.monotonic())
                self.sends.append(pending)
                try:
                    producer.produce(
                        self.topic, str(value).encode(), partition=pending.partition,
                        on_delivery=pending.delivered,
                    )  # fmt: skip
                except BufferError:
                    pending.outcome = "fail"  # never queued
                    pending.completed = time.monotonic()
                producer.poll(0)
                due += period
                delay = due - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                else:
                    due = time.monotonic()
        finally:
            deadline = time.monotonic() + MESSAGE_TIMEOUT_MS / 1000 + 5
            for _, producer, _ in clients:
                producer.flush(max(deadline - time.monotonic(), 0.1))
            for pending in self.sends:
                if pending.outcome is None:  # no report even after its timeout
                    pending.outcome, pending.completed = "info", time.monotonic()

    def history(self) -> list[Send]:
        return [p.send() for p in self.sends]


class _Pending:
    def __init__(self, process: int, partition: int, value: int, invoked: float) -> None:
        self.process, self.partition, self.value, self.invoked = process, partition, value, invoked
        self.outcome: str | None = None
        self.offset: int | None = None
        self.completed = 0.0
        self.error = ""

    def delivered(self, error: KafkaError | None, message: Message) -> None:
        self.completed = time.monotonic()
        if error is None:
            self.outcome, self.offset = "ok", message.offset()
        else:
            self.outcome, self.error = "info", error.name()

    def send(self) -> Send:
        # No report at all (a producer dropped as fatally failed): the value may be in.
        if self.outcome is None:
            return Send(self.process, self.partition, self.value, "info", None, self.invoked, 0.0)
        assert self.outcome in ("ok", "info", "fail")
        return Send(
            self.process, self.partition, self.value, self.outcome,  # type: ignore[arg-type]
            self.offset, self.invoked, self.completed,
        )  # fmt: skip


def _consumer(bootstrap: str, name: str) -> Consumer:
    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": name,  # librdkafka wants one; nothing is committed
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "fetch.wait.max.ms": 100,
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )


def _records(messages: Sequence[Message]) -> tuple[tuple[int, int, int], ...]:
    return tuple(
        (m.partition(), m.offset(), int(m.value()))
        for m in messages
        if m.error() is None and m.value() is not None
    )


class Consumers(threading.Thread):
    """``count`` consumers, each assigned every partition from its start."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, count: int) -> None:
        super().__init__(daemon=True, name="queue-consumers")
        self.bootstrap, self.topic, self.partitions, self.count = (
            bootstrap,
            topic,
            partitions,
            count,
        )
        self.stopping = threading.Event()
        self.ops: list[Assign | Poll] = []

    def run(self) -> None:
        consumers = []
        for process in range(self.count):
            consumer = _consumer(self.bootstrap, f"queue-{process}")
            consumer.assign(
                [TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in range(self.partitions)]
            )
            self.ops += [Assign(process, p, 0) for p in range(self.partitions)]
            consumers.append(consumer)
        try:
            while not self.stopping.is_set():
                for process, consumer in enumerate(consumers):
                    invoked = time.monotonic()
                    records = _records(consumer.consume(500, 0.1))
                    if records:
                        self.ops.append(Poll(process, records, invoked, time.monotonic()))
        finally:
            for consumer in consumers:
                consumer.close()


def final_polls(
    bootstrap: str, topic: str, partitions: int, process: int, timeout_s: float = 60
) -> tuple[list[Assign | Poll], dict[int, int]]:
    """Every partition read from its start to its end; the ops and each partition's end
    (the high watermark when the read began). AssertionError if the read does not reach
    every end within ``timeout_s``."""
    consumer = _consumer(bootstrap, "queue-final")
    try:
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(partitions)
        }
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        ops: list[Assign | Poll] = [Assign(process, p, 0) for p in range(partitions)]
        reached = dict.fromkeys(range(partitions), 0)
        deadline = time.monotonic() + timeout_s
        while any(reached[p] < ends[p] for p in ends):
            assert time.monotonic() < deadline, f"the final read reached {reached} of {ends}"
            invoked = time.monotonic()
            records = _records(consumer.consume(1000, 0.5))
            if records:
                ops.append(Poll(process, records, invoked, time.monotonic(), final=True))
                for partition, offset, _ in records:
                    reached[partition] = max(reached[partition], offset + 1)
        return ops, ends
    finally:
        consumer.close()


class Sample(NamedTuple):
    at: float
    #: partition -> (leader, ISR), as a broker's Metadata answer has them.
    partitions: dict[int, tuple[int, tuple[int, ...]]]


class IsrMonitor(threading.Thread):
    """Asks a running broker for the topic's Metadata every ``period_s``."""

    def __init__(
        self, addresses: Callable[[], Sequence[str]], topic: str, period_s: float = 0.2
    ) -> None:
        super().__init__(daemon=True, name="isr-monitor")
        self.addresses, self.topic, self.period_s = addresses, topic, period_s
        self.stopping = threading.Event()
        self.samples: list[Sample] = []

    def run(self) -> None:
        while not self.stopping.wait(self.period_s):
            for address in self.addresses():
                found = metadata(address, self.topic)
                if found is not None:
                    self.samples.append(Sample(time.monotonic(), found))
                    break


def metadata(address: str, topic: str) -> dict[int, tuple[int, tuple[int, ...]]] | None:
    """partition -> (leader, ISR) for ``topic`` as the broker at ``address`` answers."""
    body = MetadataRequest(topics=[MetadataRequestTopic(name=topic)])
    response: Any = request(address, BROKER_PORT, body, 12, timeout_s=1)
    if not isinstance(response, MetadataResponse) or not response.topics:
        return None
    [found] = response.topics
    if found.error_code:
        return None
    return {p.partition_index: (p.leader_id, tuple(p.isr_nodes)) for p in found.partitions}

"""Fault scenarios with confluent-kafka (librdkafka) against the embedded broker, driven
through millpond.testing's control helpers: an idempotent producer retries through
injected NOT_LEADER_OR_FOLLOWER and REQUEST_TIMED_OUT errors, a delayed answer it gave up
on, and a closed connection, and the topic holds every record exactly once, in order; a
consumer group rebalances when the broker's clock jumps past one member's session, and
when the control plane forces it."""

from __future__ import annotations

import functools
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Message, Producer

from compat_tests.groups import PARTITIONS, Member, wait_settled
from millpond.testing import EmbeddedBroker, broker

pytestmark = pytest.mark.compat

DRIVERS = Path(__file__).resolve().parent / "python"
RECORDS = 600
TOPIC_PARTITIONS = 3


@pytest.fixture
def running() -> Iterator[EmbeddedBroker]:
    with broker() as embedded:
        yield embedded


def _produce_all(
    bootstrap: str, topic: str, install: Callable[[], object], **config: object
) -> list[KafkaError]:
    """Send RECORDS values, keyed so they spread over the partitions, and ``install``
    the faults once the producer has a first record on every partition: a brand-new
    producer's first sequence is taken as it comes (as Kafka does), so a refused first
    batch with a later one in flight would leave a gap no retry fills. The delivery
    errors (none expected)."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "batch.num.messages": 50,
            "retry.backoff.ms": 20,
            **config,
        }
    )
    errors: list[KafkaError] = []

    def delivered(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            errors.append(error)

    for i in range(TOPIC_PARTITIONS):
        producer.produce(topic, value=str(i).encode(), partition=i, on_delivery=delivered)
    assert producer.flush(30) == 0
    install()
    for i in range(TOPIC_PARTITIONS, RECORDS):
        producer.produce(
            topic, key=str(i % 7).encode(), value=str(i).encode(), on_delivery=delivered
        )
        producer.poll(0)
    remaining = producer.flush(60)
    assert remaining == 0, f"{remaining} records never delivered"
    return errors


def _check_exactly_once_in_order(running: EmbeddedBroker, topic: str) -> None:
    stored = running.records(topic)
    values = [int(r.value or b"-1") for r in stored]
    assert sorted(values) == list(range(RECORDS)), "lost or duplicated records"
    for partition in range(TOPIC_PARTITIONS):
        mine = [int(r.value or b"-1") for r in stored if r.partition == partition]
        assert mine == sorted(mine), f"partition {partition} out of order"


@pytest.mark.parametrize("error", ["NOT_LEADER_OR_FOLLOWER", "REQUEST_TIMED_OUT"])
def test_an_idempotent_producer_retries_through_injected_errors(
    running: EmbeddedBroker, error: str
) -> None:
    topic = f"retry-{error.lower()}"
    running.create_topic(topic, TOPIC_PARTITIONS)

    def install() -> None:
        running.fail("Produce", error, count=3, topic=topic)
        running.fail("Produce", error, count=2, topic=topic, partition=1)

    assert _produce_all(running.bootstrap_servers, topic, install) == []
    assert running.state()["faults"] == []  # all five requests were refused and retried
    _check_exactly_once_in_order(running, topic)


def test_a_retry_of_a_request_the_broker_wrote_but_answered_too_late_is_not_stored_twice(
    running: EmbeddedBroker,
) -> None:
    topic = "retry-after-timeout"
    running.create_topic(topic, TOPIC_PARTITIONS)
    # The broker appends, then holds the answer past the client's timeout; the client
    # drops the connection and sends the same sequence numbers again.
    config = {"request.timeout.ms": 1000, "socket.timeout.ms": 1000, "message.timeout.ms": 30000}
    install = functools.partial(running.delay, "Produce", 2500, count=2, topic=topic)
    assert _produce_all(running.bootstrap_servers, topic, install, **config) == []
    assert running.state()["faults"] == []
    _check_exactly_once_in_order(running, topic)


def test_a_producer_reconnects_after_the_broker_closes_its_connection(
    running: EmbeddedBroker,
) -> None:
    topic = "retry-after-close"
    running.create_topic(topic, TOPIC_PARTITIONS)
    install = functools.partial(running.close, "Produce", count=2, topic=topic)
    assert _produce_all(running.bootstrap_servers, topic, install) == []
    assert running.state()["faults"] == []
    _check_exactly_once_in_order(running, topic)


# -- consumer groups ---------------------------------------------------------------------

#: Longer than the whole test runs: only the broker's clock can end such a session.
SESSION_MS = 300_000


def _member(bootstrap: str, topic: str, group: str, name: str) -> Member:
    command = [
        sys.executable, str(DRIVERS / "member_confluent.py"), "group-member",
        "--bootstrap", bootstrap, "--topic", topic, "--group", group,
        "--session-timeout-ms", str(SESSION_MS), "--heartbeat-interval-ms", "300",
    ]  # fmt: skip
    return Member(command, name)


def _members_state(running: EmbeddedBroker, group: str) -> dict[str, dict[str, object]]:
    [found] = [g for g in running.state()["groups"] if g["group_id"] == group]
    return {m["client_host"] + m["member_id"]: m for m in found["members"]}


def _changed(member: Member, seen: int) -> bool:
    return member.assignment_changes() > seen


def _wait(what: str, done: object, timeout: float = 30.0) -> None:
    assert callable(done)
    deadline = time.monotonic() + timeout
    while not done():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not after {timeout}s")
        time.sleep(0.05)


def test_a_group_rebalances_when_the_clock_jumps_past_one_members_session(
    running: EmbeddedBroker,
) -> None:
    topic, group = "clock-group", "clock-group"
    running.create_topic(topic, PARTITIONS)
    start = running.freeze_clock()["now_ms"]
    first = _member(running.bootstrap_servers, topic, group, "first")
    second = _member(running.bootstrap_servers, topic, group, "second")
    try:
        wait_settled([first, second], "two members")
        generation = running.state()["groups"][0]["generation"]
        second.proc.send_signal(signal.SIGSTOP)  # it heartbeats no more
        # Half a session on: the first member's next heartbeat pushes its deadline past
        # the second's, which stays where the frozen clock left it.
        running.advance_clock(SESSION_MS // 2)
        later = start + SESSION_MS // 2 + SESSION_MS

        def first_heartbeated() -> bool:
            deadlines = [m["session_deadline_ms"] for m in _members_state(running, group).values()]
            return later in deadlines

        _wait("the first member heartbeating after the jump", first_heartbeated)
        running.advance_clock(SESSION_MS // 2 + 10_000)  # past the second's session only
        wait_settled([first], "the first member alone")
        [state] = running.state()["groups"]
        assert len(state["members"]) == 1 and state["generation"] > generation
        second.proc.send_signal(signal.SIGCONT)  # fenced: it rejoins as a new member
        wait_settled([first, second], "the second member back")
    finally:
        if second.proc.poll() is None:
            second.proc.send_signal(signal.SIGCONT)
        first.kill()
        second.kill()


def test_a_forced_rebalance_reassigns_a_stable_group(running: EmbeddedBroker) -> None:
    topic, group = "forced-group", "forced-group"
    running.create_topic(topic, PARTITIONS)
    members = [_member(running.bootstrap_servers, topic, group, f"m{i}") for i in range(2)]
    try:
        wait_settled(members, "two members")
        before = running.state()["groups"][0]["generation"]
        changes = [m.assignment_changes() for m in members]
        state = running.rebalance(group)
        assert state["state"] == "PreparingRebalance"
        for member, seen in zip(members, changes, strict=True):
            member.wait_for("a new assignment", functools.partial(_changed, member, seen), 30)
        wait_settled(members, "after the forced rebalance")
        _wait("the group stable", lambda: running.state()["groups"][0]["state"] == "Stable")
        assert running.state()["groups"][0]["generation"] == before + 1
    finally:
        for member in members:
            member.kill()

"""What the fault-injection tests of every language share (test_faults_java.py, _go, _node):
a ``millpond serve`` with its control endpoint on, the endpoint's HTTP calls from Python,
and the checks that a driver's rules really fired and its records arrived exactly once.

The drivers install their rules over HTTP themselves (that is what the tests show: any
language drives the endpoint) and print each rule as the endpoint answered it:

    {"event": "rule", "rule": {"id": 1, "action": "error", "count": 3, ...}}

A rule that has acted on its ``count`` requests leaves the plan, and the broker logs one
``fault rule <id>: <action> on ...`` line per request it acts on: the checks count those.
"""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compat_tests.harness import Connection, millpond_server
from compat_tests.kafka.reference import free_port
from millpond.wire.generated.api.fetch_request import FetchPartition, FetchRequest, FetchTopic
from millpond.wire.records import iter_batches

HTTP_TIMEOUT = 30.0
#: The error rules every producer test goes through, by test id (on Produce, for its topic).
ERROR_RULES: dict[str, dict[str, Any]] = {
    "not-leader": {"action": "error", "error": "NOT_LEADER_OR_FOLLOWER", "count": 3},
    "request-timed-out": {"action": "error", "error": "REQUEST_TIMED_OUT", "count": 3},
}


def delay_past(timeout_ms: int) -> dict[str, Any]:
    """A delay rule holding one answer well past a client's ``timeout_ms``."""
    return {"action": "delay", "delay_ms": timeout_ms + 1500, "count": 1}


@dataclass(frozen=True)
class ControlledBroker:
    bootstrap: str
    control_url: str
    log_path: Path


@contextmanager
def controlled_broker(work_dir: Path, *overrides: str) -> Iterator[ControlledBroker]:
    """``millpond serve`` with ``millpond.control.port`` on a free port picked here (the
    endpoint is up before the broker says it is listening); ``overrides`` as
    :func:`millpond_server` takes them."""
    port = free_port()
    with millpond_server(work_dir, f"millpond.control.port={port}", *overrides) as bootstrap:
        yield ControlledBroker(bootstrap, f"http://127.0.0.1:{port}", work_dir / "millpond.log")


def control(url: str, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
    """One call to the control endpoint; its JSON answer (None for 204)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"{url}{path}", data=data, method=method)
    request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT) as response:  # noqa: S310
        raw = response.read()
    return json.loads(raw) if raw else None


def value(i: int) -> str:
    """The value of record ``i``; every driver sends record i to partition i % partitions."""
    return f"record-{i}"


def stored_values(bootstrap: str, topic: str, partitions: int) -> dict[int, list[str]]:
    """Every value of ``topic`` by partition, in offset order, as Fetch v12 reads them."""
    out: dict[int, list[str]] = {p: [] for p in range(partitions)}
    conn = Connection(bootstrap)
    try:
        for partition in range(partitions):
            offset, end = 0, None
            while end is None or offset < end:
                fetch = FetchPartition(
                    partition=partition, fetch_offset=offset, partition_max_bytes=4 << 20
                )
                request = FetchRequest(
                    replica_id=-1, max_wait_ms=0, min_bytes=0, max_bytes=4 << 20,
                    topics=[FetchTopic(topic=topic, partitions=[fetch])],
                )  # fmt: skip
                part = conn.request(request, 12).responses[0].partitions[0]
                assert part.error_code == 0, f"Fetch {topic}-{partition}: error {part.error_code}"
                end = part.high_watermark
                start = offset
                for batch in iter_batches(part.records or b"", allow_truncated_tail=True):
                    offset = batch.last_offset + 1
                    out[partition] += [
                        (r.value or b"").decode() for r in batch.records() if r.offset >= start
                    ]
                if not part.records:
                    break
    finally:
        conn.close()
    return out


def check_exactly_once(bootstrap: str, topic: str, partitions: int, count: int) -> None:
    """Records 0..count-1 are each stored once, in the order sent, on partition i % P."""
    stored = stored_values(bootstrap, topic, partitions)
    for partition in range(partitions):
        want = [value(i) for i in range(partition, count, partitions)]
        got = stored[partition]
        if got != want:
            dupes = len(got) - len(set(got))
            missing = sorted(set(want) - set(got), key=lambda v: int(v.split("-")[1]))
            raise AssertionError(
                f"{topic}-{partition}: {len(got)} records stored, want {len(want)} "
                f"({dupes} duplicates, missing {missing[:5]}...); first stored {got[:5]}"
            )


def installed_rules(events: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rules a driver installed, as the endpoint described them; fresh ones."""
    rules = [e["rule"] for e in events if e.get("event") == "rule"]
    for rule in rules:
        assert rule["applied"] == 0 and isinstance(rule["id"], int), rule
    return rules


def check_rules_fired(broker: ControlledBroker, rules: Sequence[dict[str, Any]]) -> None:
    """Each rule acted on exactly ``count`` requests: it has left the plan (GET
    /v1/faults), and the broker logged that many ``fault rule <id>`` lines."""
    left = {r["id"]: r for r in control(broker.control_url, "GET", "/v1/faults")}
    log = broker.log_path.read_text(errors="replace")
    for rule in rules:
        assert rule["id"] not in left, f"rule not used up: {left[rule['id']]}"
        pattern = rf"fault rule {rule['id']}: {rule['action']} on \w+ v\d+ "
        fired = len(re.findall(pattern, log))
        assert fired == rule["count"], f"rule {rule} acted on {fired} requests, not {rule['count']}"


def check_producer_state(broker: ControlledBroker, topic: str, partitions: int, count: int) -> None:
    """GET /v1/state shows one idempotent producer per partition whose last sequence is
    its records' count less one: no batch was written twice under a new sequence."""
    state = control(broker.control_url, "GET", "/v1/state")
    producers = [p for p in state["producers"] if p["topic"] == topic]
    last = {p["partition"]: p["last_sequence"] for p in producers}
    want = {p: len(range(p, count, partitions)) - 1 for p in range(partitions)}
    assert last == want, f"producer state of {topic}: {producers}, want last sequences {want}"
    assert len({p["producer_id"] for p in producers}) == 1, producers


def clear_faults(broker: ControlledBroker) -> None:
    control(broker.control_url, "DELETE", "/v1/faults")


def driver_options(
    broker: ControlledBroker, topic: str, partitions: int, count: int, rule: dict[str, Any]
) -> list[str]:
    """The options of a driver's ``produce`` or ``consume``: one rule, for ``topic``."""
    return [
        "--bootstrap", broker.bootstrap, "--control", broker.control_url, "--topic", topic,
        "--partitions", str(partitions), "--count", str(count),
        "--rule", json.dumps({"topic": topic, **rule}),
    ]  # fmt: skip


def check_used_up(broker: ControlledBroker, events: Sequence[dict[str, Any]], topic: str) -> None:
    """The driver installed one rule for ``topic``, saw it gone from GET /v1/faults at its
    end, and it acted on exactly ``count`` requests."""
    rules = installed_rules(events)
    assert len(rules) == 1 and rules[0]["topic"] == topic, rules
    (after,) = [e for e in events if e["event"] == "faults-after"]
    assert rules[0]["id"] not in [r["id"] for r in after["rules"]], after
    check_rules_fired(broker, rules)


def check_produced_once(
    broker: ControlledBroker,
    events: Sequence[dict[str, Any]],
    topic: str,
    partitions: int,
    count: int,
) -> None:
    """A driver's ``produce`` through its rule: the rule fired, every record is stored
    once and in order, and one idempotent producer wrote them."""
    check_used_up(broker, events, topic)
    check_exactly_once(broker.bootstrap, topic, partitions, count)
    check_producer_state(broker, topic, partitions, count)


def check_clock(events: Sequence[dict[str, Any]]) -> None:
    """A driver's ``clock``: frozen, then an hour later exactly, then running again."""
    answers = {k: v for e in events for k, v in e.items() if k != "event"}
    assert answers["freeze"]["frozen"] is True, answers
    assert answers["advance"]["now_ms"] == answers["freeze"]["now_ms"] + 3_600_000, answers
    assert answers["advance"]["offset_ms"] >= 3_600_000, answers
    assert answers["resume"]["frozen"] is False, answers

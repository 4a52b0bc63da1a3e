"""Real clients against ``millpond serve --override millpond.emulate=3.9`` (and ``=4.0``):
they negotiate from the emulated ranges, produce and consume every record, and the broker's
request trace (``--trace``) shows that every request stayed inside the release's ranges.

Java kafka-clients 4.4 knows every version up to 4.4's, so it takes the emulated maxima
exactly: the test asserts it retried ApiVersions at the release's version after its v5 was
refused (KIP-511) and sent some request at a maximum below 4.4's (its fallback paths).
librdkafka and kafka-python top out lower on some APIs; for them the trace check is that
nothing went outside the release's ranges. One broker per release and client, so a trace
holds one client's requests (plus the harness's, which are left out)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from compat_tests.harness import check_produce_consume, create_topic, millpond_server, run_driver
from compat_tests.python import runs
from compat_tests.python.runs import Runs
from compat_tests.test_clients_java import _driver_command
from millpond.broker.emulation import RANGES, REFUSED_BELOW
from millpond.broker.handlers import ROUTES
from millpond.wire import APIS

pytestmark = pytest.mark.compat

HARNESS_CLIENT = "millpond-compat-harness"
NATIVE_MAX = {r.api_key: r.max_version for r in ROUTES}
CLIENTS = ("java", "confluent-kafka", "kafka-python")
PYTHON_DRIVERS = {
    "confluent-kafka": "driver_confluent.py",
    "kafka-python": "driver_kafka_python.py",
}


@pytest.fixture(params=["3.9", "4.0"])
def release(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


@pytest.fixture
def emulating(release: str, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    trace = tmp_path / "trace.jsonl"
    with millpond_server(tmp_path / "broker", f"millpond.emulate={release}", trace=trace) as b:
        yield b, trace


def _used(trace: Path) -> set[tuple[int, int]]:
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    return {(x["key"], x["version"]) for x in lines if x["client"] != HARNESS_CLIENT}


def _outside(release: str, used: set[tuple[int, int]]) -> list[tuple[str, int]]:
    ranges, refused = RANGES[release], REFUSED_BELOW[release]
    outside = []
    for key, version in sorted(used):
        if key == 18 and version > ranges[18][1]:
            continue  # a client's first guess, answered UNSUPPORTED_VERSION (KIP-511)
        low, high = ranges.get(key, (1, 0))
        if not max(low, refused.get(key, low)) <= version <= high:
            outside.append((APIS[key].name if key in APIS else str(key), version))
    return outside


def _produce_consume(client: str, bootstrap: str) -> list[dict[str, Any]]:
    if client == "java":
        topic = "emulated-java"
        create_topic(bootstrap, topic, runs.PRODUCE_CONSUME_PARTITIONS)
        argv = ["produce-consume", "--topic", topic, "--partitions",
                str(runs.PRODUCE_CONSUME_PARTITIONS), "--compression", "lz4"]  # fmt: skip
        events = run_driver(_driver_command(bootstrap, [argv]), timeout=300)
        return [e for e in events if e.get("scenario") == "produce-consume/lz4"]
    run = runs.produce_consume(f"emulated-{client}", "lz4")
    found = Runs.start(runs.python_driver(PYTHON_DRIVERS[client]), bootstrap, [run])
    return found.of(run.label)


@pytest.mark.parametrize("client", CLIENTS)
def test_client_is_served_within_the_emulated_release(
    client: str, release: str, emulating: tuple[str, Path]
) -> None:
    bootstrap, trace = emulating
    check_produce_consume(_produce_consume(client, bootstrap))
    used = _used(trace)
    assert {0, 1} <= {key for key, _ in used}, f"no Produce or Fetch traced: {sorted(used)}"
    assert not _outside(release, used), (
        f"{client} sent requests outside Kafka {release}'s ranges: {_outside(release, used)}"
    )
    lowered = sorted(
        (APIS[k].name, v) for k, v in used if v == RANGES[release][k][1] < NATIVE_MAX[k]
    )
    print(f"{client} against {release}: {sorted(used)}; at emulated maxima below 4.4's: {lowered}")
    if client == "java":
        assert lowered, f"Java 4.4 used no emulated maximum below 4.4's: {sorted(used)}"
        # It opened with its own ApiVersions v5, was told the release's range, and retried.
        assert {(18, 5), (18, RANGES[release][18][1])} <= used, sorted(used)

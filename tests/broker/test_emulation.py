"""``millpond.emulate``: the broker advertises and serves an older Kafka release's ranges.

The facts are tests/broker/golden/api_versions/kafka-<release>/: the ApiVersions answers of
real Apache Kafka 3.9.1, 4.0.2 and 4.4.0 brokers and how each answered probes above its
maxima (tools/capture/api_versions.py recorded them). Here they are decoded with
millpond.wire and compared with what an emulating millpond broker says and does.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer

from millpond.broker.config import ConfigError, build_config
from millpond.broker.dispatch import Route
from millpond.broker.emulation import CAPTURED_FROM, RANGES, REFUSED_BELOW, emulate
from millpond.broker.handlers import ROUTES
from millpond.broker.trace import RequestTrace
from millpond.wire import APIS, decode_response
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.api_versions_request import ApiVersionsRequest
from millpond.wire.generated.api.api_versions_response import ApiVersionsResponse

from .harness import Client, running_broker

GOLDEN = Path(__file__).resolve().parent / "golden" / "api_versions"
RELEASES = sorted(CAPTURED_FROM)

#: Where emulating 3.9 must advertise a higher minimum than 3.9 did: the versions KIP-896
#: removed from the 4.x specs, which millpond has no codecs for (broker/emulation.py).
NOT_SERVABLE = {"3.9": {0: 3, 1: 4, 2: 1, 8: 2, 9: 1, 19: 2, 20: 1, 23: 2, 32: 1, 34: 1, 35: 1}}
#: Probes a real release answered but an emulating millpond closes: 3.9 serves Produce v2.
DEVIATIONS = {("3.9", "produce_v2")}


def _index(release: str) -> list[dict[str, Any]]:
    path = GOLDEN / f"kafka-{CAPTURED_FROM[release]}" / "index.json"
    entries: list[dict[str, Any]] = json.loads(path.read_text())
    return entries


def _captured(release: str, probe: str) -> bytes:
    return (GOLDEN / f"kafka-{CAPTURED_FROM[release]}" / f"{probe}.bin").read_bytes()


def _ranges(body: ApiVersionsResponse) -> dict[int, tuple[int, int]]:
    return {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}


def _config(release: str | None) -> Any:
    return build_config({} if release is None else {"millpond.emulate": release}, env={})[0]


@pytest.mark.parametrize("release", RELEASES)
def test_table_is_what_the_real_release_advertised(release: str) -> None:
    answered = [e for e in _index(release) if e["api_key"] == 18 and e["api_version"] <= 5]
    known = [e for e in answered if e["api_version"] <= RANGES[release][18][1]]
    assert len(known) >= 2  # v0 and v3 at least
    for entry in known:
        _, body = decode_response(_captured(release, entry["probe"]), 18, entry["api_version"])
        assert isinstance(body, ApiVersionsResponse)
        assert body.error_code == ErrorCode.NONE
        assert _ranges(body) == RANGES[release], entry["probe"]


def _expected(release: str) -> list[tuple[int, int, int]]:
    """The release's real ranges for the APIs millpond routes, less what cannot be served."""
    real = RANGES[release]
    raised = NOT_SERVABLE.get(release, {})
    for key, low in raised.items():  # each only where the 4.x specs start later
        assert real[key][0] < low == APIS[key].min_version
    return sorted(
        (r.api_key, raised.get(r.api_key, real[r.api_key][0]), real[r.api_key][1])
        for r in ROUTES
        if r.api_key in real
    )


@pytest.mark.parametrize("release", RELEASES)
def test_emulating_broker_advertises_the_release(release: str) -> None:
    with running_broker(config=_config(release)) as broker:
        client = Client(broker.port)
        for version in range(RANGES[release][18][1] + 1):
            request = ApiVersionsRequest(client_software_name="t", client_software_version="1")
            _, body = client.request(request, version)
            assert body.error_code == ErrorCode.NONE
            listed = [(k.api_key, k.min_version, k.max_version) for k in body.api_keys]
            assert listed == _expected(release), f"ApiVersions v{version}"


def test_unset_is_kafka_4_4() -> None:
    assert emulate(ROUTES, None) == ROUTES
    assert sorted(emulate(ROUTES, "4.4"), key=lambda r: r.api_key) == sorted(
        ROUTES, key=lambda r: r.api_key
    )
    assert _expected("4.4") == sorted((r.api_key, r.min_version, r.max_version) for r in ROUTES)


def _outcome(client: Client, request: bytes) -> bytes | None:
    client.send_raw(request)
    try:
        return client.read_frame()
    except ConnectionError:
        return None


@pytest.mark.parametrize("release", RELEASES)
def test_refusals_are_the_releases(release: str) -> None:
    """Every captured probe, replayed byte for byte: ApiVersions above the release's max gets
    the very bytes the release sent (UNSUPPORTED_VERSION, its own range, v0 body); other APIs
    above it, and Produce v2 on 4.x, close the connection as the release did."""
    with running_broker(config=_config(release)) as broker:
        for entry in _index(release):
            ours = _outcome(Client(broker.port), bytes.fromhex(entry["request"]))
            if (release, entry["probe"]) in DEVIATIONS:
                assert entry["outcome"] == "answered" and ours is None
                continue
            assert ("closed" if ours is None else "answered") == entry["outcome"], entry["probe"]
            if entry["api_key"] == 18 and entry["api_version"] > RANGES[release][18][1]:
                assert ours == _captured(release, entry["probe"]), entry["probe"]


@pytest.mark.parametrize("release", ["3.9", "4.0"])
def test_kafka_python_is_served_within_the_release(release: str) -> None:
    """A real client negotiates against the emulated ranges, produces and consumes; the
    trace shows every request inside the release's ranges, some below 4.4's maxima."""
    stream = _KeptOpen()
    with running_broker(config=_config(release), trace=RequestTrace(stream)) as broker:
        bootstrap = f"127.0.0.1:{broker.port}"
        producer = KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=10_000)
        try:
            for i in range(5):
                producer.send("emulated", key=b"k%d" % i, value=b"v%d" % i).get(timeout=10)
        finally:
            producer.close()
        consumer = KafkaConsumer(
            "emulated", bootstrap_servers=bootstrap, auto_offset_reset="earliest",
            group_id="emulated-group", consumer_timeout_ms=5000,
        )  # fmt: skip
        try:
            got = [(m.key, m.value) for m in consumer]
            consumer.commit()
        finally:
            consumer.close()
    assert got == [(b"k%d" % i, b"v%d" % i) for i in range(5)]
    traced = stream.getvalue().splitlines()
    used = {(line["key"], line["version"]) for line in map(json.loads, traced)}
    outside = [(APIS[k].name, v) for k, v in used if not _served(release, k, v)]
    assert not outside, f"{release}: requests outside the emulated ranges: {outside}"
    native = {r.api_key: r.max_version for r in ROUTES}
    lowered = {APIS[k].name for k, v in used if v < native[k] and v == RANGES[release][k][1]}
    assert lowered, f"{release}: no request at an emulated maximum below 4.4's: {sorted(used)}"


class _KeptOpen(io.StringIO):
    """A trace stream that outlives the broker: Broker.stop closes its trace before the
    cancelled connection tasks have finished, and one still tracing then would raise."""

    def close(self) -> None:
        pass


def _served(release: str, key: int, version: int) -> bool:
    low, high = RANGES[release].get(key, (1, 0))
    return max(low, REFUSED_BELOW[release].get(key, low)) <= version <= high


def test_an_api_the_release_lacks_is_neither_advertised_nor_routed() -> None:
    share_heartbeat = Route(76, 1, 1, lambda broker, ctx, request: None)  # Kafka 4.4 only
    assert 76 in RANGES["4.4"] and 76 not in RANGES["4.0"]
    assert 76 in {r.api_key for r in emulate((*ROUTES, share_heartbeat), "4.4")}
    assert 76 not in {r.api_key for r in emulate((*ROUTES, share_heartbeat), "4.0")}


def test_quirks_are_kept() -> None:
    produce = {r.api_key: r for r in emulate(ROUTES, "4.0")}[0]
    assert (produce.min_version, produce.served_min_version) == (0, REFUSED_BELOW["4.0"][0])
    produce = {r.api_key: r for r in emulate(ROUTES, "3.9")}[0]
    assert (produce.min_version, produce.max_version, produce.served_min_version) == (3, 11, None)


@pytest.mark.parametrize("value", ["3.8", "4", "4.0.2", ""])
def test_invalid_release_names_key_value_and_choices(value: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build_config({"millpond.emulate": value}, env={})
    message = str(caught.value)
    assert "millpond.emulate" in message
    assert repr(value) in message
    assert "3.9, 4.0, 4.4" in message
    with pytest.raises(ValueError, match="accepted: 3.9, 4.0, 4.4"):
        emulate(ROUTES, value)


def test_serve_refuses_an_unknown_release(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "millpond", "serve", "--override", "millpond.emulate=3.8",
         "--override", f"log.dirs={tmp_path}"],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert "millpond.emulate" in result.stderr and "3.9, 4.0, 4.4" in result.stderr

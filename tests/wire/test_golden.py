"""Golden bytes: frames captured from real clients and from a real Apache Kafka 4.4 broker
(see tools/capture) decode and re-encode byte for byte."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from millpond.wire import (
    APIS,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    read_request,
)

GOLDEN = Path(__file__).resolve().parent / "golden"


def _entries() -> list[tuple[str, dict[str, Any]]]:
    entries: list[tuple[str, dict[str, Any]]] = []
    for index in sorted(GOLDEN.glob("*/index.json")):
        client = index.parent.name
        entries.extend((client, entry) for entry in json.loads(index.read_text()))
    return entries


ENTRIES = _entries()


def test_goldens_cover_four_clients_and_twenty_api_keys() -> None:
    clients = {client for client, _ in ENTRIES}
    keys = {entry["api_key"] for _, entry in ENTRIES}
    response_keys = {entry["api_key"] for _, entry in ENTRIES if entry["kind"] == "response"}
    assert len(clients) >= 4, clients
    assert len(keys) >= 20, sorted(keys)
    assert len(response_keys) >= 20, sorted(response_keys)


@pytest.mark.parametrize(("client", "entry"), ENTRIES, ids=[f"{c}/{e['file']}" for c, e in ENTRIES])
def test_golden_frame_round_trips(client: str, entry: dict[str, Any]) -> None:
    frame = (GOLDEN / client / entry["file"]).read_bytes()
    if entry["kind"] == "request":
        header, body, end = read_request(frame)
        assert header.request_api_key == entry["api_key"]
        assert header.request_api_version == entry["api_version"]
        assert header.correlation_id == entry["correlation_id"]
        assert encode_request(header, body) == frame[:end]
        # librdkafka 2.16 appends stray bytes to a few requests; Kafka ignores them.
        assert end == len(frame) or client == "confluent-kafka"
        assert decode_request(frame) == (header, body)
    else:
        version = entry["api_version"]
        response_header, body = decode_response(frame, entry["api_key"], version)
        assert response_header.correlation_id == entry["correlation_id"]
        assert entry["api_key"] == body.API_KEY
        assert entry["api_key"] in APIS
        assert encode_response(response_header, body, version) == frame
    assert isinstance(body.to_data(), dict)

"""Every message in the specs round-trips at every valid version, tagged fields included."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from millpond.wire.codegen.jars import default_jar_dir, read_specs
from millpond.wire.message import Message
from tests.wire.messages import all_message_versions, struct_values

PAIRS = all_message_versions()


def test_every_spec_is_generated() -> None:
    names = {cls.NAME for cls, _ in PAIRS}
    # Spot checks across every package of specs.
    for name in (
        "ProduceRequest",
        "FetchResponse",
        "RequestHeader",
        "ResponseHeader",
        "TopicRecord",
        "OffsetCommitValue",
        "TransactionLogValue",
        "LeaderChangeMessage",
        "VotersRecord",
        "ProducerSnapshot",
        "QuorumStateData",
    ):
        assert name in names
    assert len(PAIRS) == _versions_in_specs()


def _versions_in_specs() -> int:
    """Count (message, version) pairs straight from the JSON in Kafka's jars."""
    total = 0
    for spec in read_specs(default_jar_dir()):
        text = re.sub(r"^\s*//.*$", "", spec.text, flags=re.MULTILINE)
        valid = json.loads(text).get("validVersions", "none")
        if valid == "none":
            continue
        low, _, high = valid.partition("-")
        total += int(high or low) - int(low) + 1
    return total


@pytest.mark.parametrize(("cls", "version"), PAIRS, ids=[f"{c.NAME}-v{v}" for c, v in PAIRS])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_round_trip(cls: type[Message], version: int, data: st.DataObject) -> None:
    message = data.draw(struct_values(cls, version, cls.is_flexible(version)))
    encoded = message.encode(version)
    decoded = cls.decode(encoded, version)
    assert decoded == message
    assert decoded.encode(version) == encoded


@pytest.mark.parametrize(("cls", "version"), PAIRS, ids=[f"{c.NAME}-v{v}" for c, v in PAIRS])
def test_defaults_round_trip(cls: type[Message], version: int) -> None:
    encoded = cls().encode(version) if _defaults_encodable(cls, version) else None
    if encoded is not None:
        assert cls.decode(encoded, version) == cls()


def _defaults_encodable(cls: type[Message], version: int) -> bool:
    # Records default to null; a version where they are not nullable needs a value.
    return all(
        not (f.kind == "records" and f.present(version) and not f.nullable_at(version))
        for f in cls._FIELDS
    )

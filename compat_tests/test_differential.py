"""Differential tests (DESIGN.md section 5 item 4): every sequence of compat_tests/differential/
sequences*.py is sent to the reference Apache Kafka 4.4 broker and to ``millpond serve``; the
normalized responses must be equal field by field, error codes and messages included. A mismatch
fails with both responses side by side (compat_tests/differential/compare.py)."""

from __future__ import annotations

import pytest

from compat_tests.differential import sequences, sequences_groups, sequences_offsets
from compat_tests.differential.compare import assert_same
from compat_tests.differential.normalize import normalize
from compat_tests.differential.runner import run_both
from compat_tests.kafka.reference import RunningBroker
from millpond.broker.handlers import ROUTES

pytestmark = pytest.mark.compat

SERVED = frozenset(route.api_key for route in ROUTES)
ALL = sorted([*sequences.ALL, *sequences_groups.ALL, *sequences_offsets.ALL])

#: Sequences that show a difference of millpond's in a module another change is making
#: (the group coordinator), with what differs: strict xfails, so the fix shows up as a
#: failure here until its mark is removed.
#: Sequences where millpond is known to answer differently, each with why (a strict xfail:
#: once the answers agree, the entry must go).
KNOWN_DIFFERENCES: dict[str, str] = {}


def check_sequence(name: str, kafka: str, millpond: str) -> None:
    """Run sequence ``name`` against both brokers and compare the normalized responses."""
    fn = dict(ALL)[name]
    on_kafka, on_millpond = run_both(fn, name, kafka, millpond)
    assert_same(normalize(on_kafka, SERVED), normalize(on_millpond, SERVED), name)


def test_enough_sequences() -> None:
    assert len(ALL) >= 40


def test_sequence_names_unique() -> None:
    assert len({name for name, _ in ALL}) == len(ALL)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.xfail(reason=KNOWN_DIFFERENCES[name], strict=True))
        if name in KNOWN_DIFFERENCES
        else name
        for name, _ in ALL
    ],
)
def test_differential(name: str, reference_kafka: RunningBroker, millpond_bootstrap: str) -> None:
    check_sequence(name, reference_kafka.bootstrap, millpond_bootstrap)

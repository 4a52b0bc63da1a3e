"""Differential tests (DESIGN.md section 5 item 4): every sequence of compat_tests/differential/
sequences.py is sent to the reference Apache Kafka 4.4 broker and to ``millpond serve``; the
normalized responses must be equal field by field, error codes and messages included. A mismatch
fails with both responses side by side (compat_tests/differential/compare.py)."""

from __future__ import annotations

import pytest

from compat_tests.differential.compare import assert_same
from compat_tests.differential.normalize import normalize
from compat_tests.differential.runner import run_both
from compat_tests.differential.sequences import ALL
from compat_tests.kafka.reference import RunningBroker
from millpond.broker.handlers import ROUTES

pytestmark = pytest.mark.compat

SERVED = frozenset(route.api_key for route in ROUTES)


def check_sequence(name: str, kafka: str, millpond: str) -> None:
    """Run sequence ``name`` against both brokers and compare the normalized responses."""
    fn = dict(ALL)[name]
    on_kafka, on_millpond = run_both(fn, name, kafka, millpond)
    assert_same(normalize(on_kafka, SERVED), normalize(on_millpond, SERVED), name)


def test_enough_sequences() -> None:
    assert len(ALL) >= 40


@pytest.mark.parametrize("name", [name for name, _ in ALL])
def test_differential(name: str, reference_kafka: RunningBroker, millpond_bootstrap: str) -> None:
    check_sequence(name, reference_kafka.bootstrap, millpond_bootstrap)

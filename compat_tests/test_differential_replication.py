"""Differential tests of a replicated cluster
(compat_tests/differential/sequences_replication.py): each sequence goes to broker 2 of
an Apache Kafka 4.4 cluster and of a millpond one, both a controller (id 1) and brokers
2, 3 and 4, and the normalized answers must be equal field by field."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from compat_tests.differential import sequences_replication as r
from compat_tests.differential.compare import assert_same
from compat_tests.differential.normalize import normalize
from compat_tests.differential.runner import run_both
from compat_tests.kafka.cluster import kafka_cluster
from millpond.broker.handlers import ROUTES
from millpond.testing.cluster import cluster

pytestmark = pytest.mark.compat

SERVED = frozenset(route.api_key for route in ROUTES)


@pytest.fixture(scope="module")
def clusters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(Kafka's broker 2, millpond's broker 2)."""
    root = tmp_path_factory.mktemp("replication-differential")
    with kafka_cluster(root / "kafka") as kafka, cluster(controllers=1, brokers=3) as millpond:
        yield kafka.address(2), f"127.0.0.1:{millpond.node(2).port}"


@pytest.mark.parametrize("name", sorted(r.SEQUENCES))
def test_replication_differential(name: str, clusters: tuple[str, str]) -> None:
    on_kafka, on_millpond = run_both(r.SEQUENCES[name], name, *clusters)
    assert_same(normalize(on_kafka, SERVED), normalize(on_millpond, SERVED), name)

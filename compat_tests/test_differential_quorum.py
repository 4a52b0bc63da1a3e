"""Differential tests of a KRaft controller (compat_tests/differential/sequences_quorum.py):
each sequence goes to the controller listener of an Apache Kafka 4.4 controller and of a
millpond one, each the one voter of its own quorum with the same node id, directory id
and cluster id (formatted ``--initial-controllers``), and the normalized answers must be
equal field by field."""

from __future__ import annotations

import base64
from collections.abc import Iterator

import pytest

from compat_tests.differential import sequences_quorum as q
from compat_tests.differential.compare import assert_same
from compat_tests.differential.normalize import normalize
from compat_tests.differential.runner import run_both
from compat_tests.kafka.controller import KafkaController
from compat_tests.kafka.reference import free_port
from millpond.broker.handlers import CONTROLLER_ROUTES, ROUTES
from millpond.broker.quorum_config import node_properties
from tests.cluster import rig

pytestmark = pytest.mark.compat

SERVED = frozenset(route.api_key for route in (*ROUTES, *CONTROLLER_ROUTES))
#: Sequences where millpond answers differently on purpose, each with why (strict xfails:
#: once the answers agree, the entry must go).
KNOWN_DIFFERENCES = {
    "quorum-fetch-snapshot-edges": (
        "Kafka 4.4's controller answers every FetchSnapshot it refuses for a partition "
        "(no such snapshot, a stale or future epoch, another partition) with "
        "UNKNOWN_SERVER_ERROR and no partition: building the refusal fails on its null "
        "records (a NullPointerException in ControllerApis, in its log). millpond answers "
        "the partition's own error (SNAPSHOT_NOT_FOUND, FENCED_LEADER_EPOCH, "
        "UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION), which the schema defines and "
        "Kafka's fetching side handles"
    ),
}


def _initial(port: int) -> str:
    directory = base64.urlsafe_b64encode(q.DIRECTORY_ID).decode().rstrip("=")
    return f"1@127.0.0.1:{port}:{directory}"


def _leads(port: int) -> bool:
    view = rig.quorum_leader({1: ("127.0.0.1", port)}, [1], [1])
    return view is not None and view.leader == 1


@pytest.fixture(scope="module")
def controllers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(Kafka's controller listener, millpond's), each leading its quorum of one."""
    root = tmp_path_factory.mktemp("quorum-differential")
    kafka_port, millpond_port = free_port(), free_port()
    kafka = KafkaController(
        root / "kafka", 1, kafka_port,
        {"controller.quorum.bootstrap.servers": f"127.0.0.1:{kafka_port}"}, session_ms=9000,
    )  # fmt: skip
    props = node_properties(
        1, "controller", "127.0.0.1", (0, millpond_port), "", root / "millpond",
        {"controller.quorum.bootstrap.servers": f"127.0.0.1:{millpond_port}"},
    )  # fmt: skip
    del props["controller.quorum.voters"]
    node = rig.Node(
        1, "controller", None, "127.0.0.1", root / "millpond", root / "millpond.log",
        [f"{k}={v}" for k, v in props.items()],
    )  # fmt: skip
    kafka.format(q.CLUSTER_ID, "--initial-controllers", _initial(kafka_port))
    node.format(q.CLUSTER_ID, "--initial-controllers", _initial(millpond_port))
    try:
        kafka.launch()
        node.start()
        node.wait_listening(0)
        rig.until(lambda: _leads(kafka_port) and _leads(millpond_port), "both lead")
        yield f"127.0.0.1:{kafka_port}", f"127.0.0.1:{millpond_port}"
    finally:
        node.stop()
        kafka.stop()


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(name, marks=pytest.mark.xfail(reason=KNOWN_DIFFERENCES[name], strict=True))
        if name in KNOWN_DIFFERENCES
        else name
        for name, _ in q.ALL
    ],
)
def test_quorum_differential(name: str, controllers: tuple[str, str]) -> None:
    on_kafka, on_millpond = run_both(dict(q.ALL)[name], name, *controllers)
    assert_same(normalize(on_kafka, SERVED), normalize(on_millpond, SERVED), name)

"""Differential tests (DESIGN.md section 5 item 4): every sequence of compat_tests/differential/
sequences*.py is sent to the reference Apache Kafka 4.4 broker and to ``millpond serve``; the
normalized responses must be equal field by field, error codes and messages included. A mismatch
fails with both responses side by side (compat_tests/differential/compare.py)."""

from __future__ import annotations

import pytest

from compat_tests.differential import (
    sequences,
    sequences_groups,
    sequences_log_dirs,
    sequences_offsets,
)
from compat_tests.differential.compare import assert_same
from compat_tests.differential.group_helpers import join_request
from compat_tests.differential.normalize import normalize
from compat_tests.differential.runner import Session, run_both
from compat_tests.kafka.reference import RunningBroker
from millpond.broker.handlers import ROUTES
from millpond.wire.generated.api.delete_groups_request import DeleteGroupsRequest
from millpond.wire.generated.api.describe_groups_request import DescribeGroupsRequest
from millpond.wire.generated.api.heartbeat_request import HeartbeatRequest
from millpond.wire.generated.api.leave_group_request import LeaveGroupRequest, MemberIdentity
from millpond.wire.generated.api.offset_delete_request import OffsetDeleteRequest
from millpond.wire.generated.api.offset_fetch_request import OffsetFetchRequest
from millpond.wire.generated.api.sync_group_request import SyncGroupRequest

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
    names = [name for name, _ in [*ALL, *sequences_log_dirs.ALL]]
    assert len(set(names)) == len(names)


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


@pytest.mark.parametrize("name", [name for name, _ in sequences_log_dirs.ALL])
def test_differential_on_two_log_dirs(
    name: str, jbod_reference_kafka: RunningBroker, jbod_millpond_bootstrap: str
) -> None:
    """The sequences that move partitions between log directories, on brokers with two."""
    fn = dict(sequences_log_dirs.ALL)[name]
    on_kafka, on_millpond = run_both(
        fn, name, jbod_reference_kafka.bootstrap, jbod_millpond_bootstrap
    )
    assert_same(normalize(on_kafka, SERVED), normalize(on_millpond, SERVED), name)


def no_coordinator_yet(s: Session) -> None:
    """The group APIs before ``__consumer_offsets`` exists (no client has looked a group
    up yet): no partition, so no coordinator (NOT_COORDINATOR), except where a request is
    refused before its group is looked at."""
    g = s.group("g")
    s.send(join_request(g), 9, "join")
    s.send(SyncGroupRequest(group_id=g, generation_id=1, member_id="m"), 3, "sync")
    s.send(HeartbeatRequest(group_id=g, generation_id=1, member_id="m"), 4, "heartbeat")
    s.send(LeaveGroupRequest(group_id=g, members=[MemberIdentity(member_id="m")]), 5, "leave")
    s.send(OffsetFetchRequest(group_id=g, topics=None), 7, "offset fetch")
    s.send(DescribeGroupsRequest(groups=[g]), 5, "describe")
    s.send(DeleteGroupsRequest(groups_names=[g]), 2, "delete")
    s.send(OffsetDeleteRequest(group_id=g, topics=[]), 0, "offset delete")


def test_group_apis_before_the_coordinator_exists(
    strict_reference_kafka: RunningBroker, strict_millpond_bootstrap: str
) -> None:
    """On the brokers without auto-creation, where nothing ever looks a group up (so the
    answers are those of a fresh cluster); the wrong-coordinator path a single node has."""
    name = "no-coordinator-yet"
    on_kafka, on_millpond = run_both(
        no_coordinator_yet, name, strict_reference_kafka.bootstrap, strict_millpond_bootstrap
    )
    assert_same(normalize(on_kafka, SERVED), normalize(on_millpond, SERVED), name)

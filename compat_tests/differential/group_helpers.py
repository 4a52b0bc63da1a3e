"""Building blocks of the consumer-group sequences (sequences_groups.py, sequences_offsets.py):
requests of the classic group protocol, a consumer's subscription and assignment bytes, and
bounded waits on a group's state.

Group ids go through ``s.group(...)`` (the sequence's namespace). Every member id a sequence
uses comes from a recorded answer (MEMBER_ID_REQUIRED, or a static member's JoinGroup), so
the normalizer numbers member ids in the order the sequence met them.

Timing: both brokers run with ``group.initial.rebalance.delay.ms=0``, so a new group's first
join completes as soon as the broker's timer runs; sessions and rebalance timeouts are long
(``SESSION_MS``, ``REBALANCE_MS``) so that nothing expires while a sequence runs. A request
that cannot be answered before another member acts (a JoinGroup that starts a rebalance) is
written with ``begin`` on its own connection, and the sequence waits (unrecorded, bounded)
until the broker shows it took effect before the next member acts.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable, Iterable
from typing import Any

from compat_tests.differential.runner import WAIT_PAUSE, WAIT_TIMEOUT, Data, SequenceFn, Session
from millpond.wire.generated.api.describe_groups_request import DescribeGroupsRequest
from millpond.wire.generated.api.find_coordinator_request import FindCoordinatorRequest
from millpond.wire.generated.api.heartbeat_request import HeartbeatRequest
from millpond.wire.generated.api.join_group_request import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
)
from millpond.wire.generated.api.offset_commit_request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from millpond.wire.generated.api.sync_group_request import (
    SyncGroupRequest,
    SyncGroupRequestAssignment,
)

SESSION_MS = 30_000
REBALANCE_MS = 60_000
CONSUMER = "consumer"
RANGE = "range"


def registry() -> tuple[dict[str, SequenceFn], Callable[[SequenceFn], SequenceFn]]:
    """A table of sequences and the decorator that fills it (names: dashes for underscores)."""
    table: dict[str, SequenceFn] = {}

    def register(fn: SequenceFn) -> SequenceFn:
        table[fn.__name__.replace("_", "-")] = fn
        return fn

    return table, register


# --- a consumer's protocol bytes ------------------------------------------------------------


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0: the topics (full names), no user data."""
    out = struct.pack(">hi", 0, len(topics))
    for topic in topics:
        out += struct.pack(">h", len(topic)) + topic.encode()
    return out + struct.pack(">i", -1)


def assignment(topic: str, *partitions: int) -> bytes:
    """ConsumerProtocolAssignment v0: ``partitions`` of ``topic``, no user data."""
    out = struct.pack(">hi", 0, 1) + struct.pack(">h", len(topic)) + topic.encode()
    out += struct.pack(">i", len(partitions)) + b"".join(struct.pack(">i", p) for p in partitions)
    return out + struct.pack(">i", -1)


# --- waits (unrecorded) ---------------------------------------------------------------------


def _wait(s: Session, what: str, request: Any, version: int, done: Callable[[Any], bool]) -> Any:
    deadline = time.monotonic() + WAIT_TIMEOUT
    while True:
        response = s.request(request, version)
        if done(response):
            return response
        if time.monotonic() > deadline:
            s.record(f"wait for {what}", "wait", 0, {"timed_out": response.to_data()})
            return None
        time.sleep(WAIT_PAUSE)


def coordinator_ready(s: Session, group_id: str) -> None:
    """Wait until the group's coordinator answers for ``group_id`` (a full id): Kafka creates
    ``__consumer_offsets`` on the first lookup of its life and then loads its partition,
    answering NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS meanwhile."""
    _wait(s, "coordinator", FindCoordinatorRequest(key=group_id), 3, lambda r: r.error_code == 0)
    _wait(
        s,
        "group coordinator",
        DescribeGroupsRequest(groups=[group_id]),
        5,
        lambda r: r.groups[0].error_code == 0,
    )


def wait_state(s: Session, group_id: str, state: str, members: int | None = None) -> None:
    """Wait until DescribeGroups shows ``group_id`` (a full id) in ``state`` (with that many
    members, when given): a request written with ``begin`` has taken effect."""
    _wait(
        s,
        f"{group_id} {state}",
        DescribeGroupsRequest(groups=[group_id]),
        5,
        lambda r: (
            r.groups[0].group_state == state
            and (members is None or len(r.groups[0].members) == members)
        ),
    )


# --- requests -------------------------------------------------------------------------------


def join_request(
    group_id: str,
    member_id: str = "",
    *,
    instance: str | None = None,
    protocols: Iterable[tuple[str, bytes]] = ((RANGE, b"m"),),
    protocol_type: str = CONSUMER,
    session_ms: int = SESSION_MS,
    rebalance_ms: int = REBALANCE_MS,
) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=group_id,
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=rebalance_ms,
        member_id=member_id,
        group_instance_id=instance,
        protocol_type=protocol_type,
        protocols=[JoinGroupRequestProtocol(name=n, metadata=m) for n, m in protocols],
    )


def join_new(
    s: Session,
    group_id: str,
    version: int = 9,
    label: str = "join",
    **options: Any,
) -> Data:
    """A new dynamic member's two JoinGroups (v4+: MEMBER_ID_REQUIRED, then with the id
    handed out), both recorded; the second answer."""
    first = s.send(join_request(group_id, **options), version, f"{label}: member id required")
    return s.send(
        join_request(group_id, first["member_id"], **options), version, f"{label}: with the id"
    )


def sync(
    s: Session,
    group_id: str,
    generation: int,
    member_id: str,
    assignments: dict[str, bytes] | None = None,
    *,
    version: int = 5,
    instance: str | None = None,
    protocol_type: str | None = CONSUMER,
    protocol_name: str | None = RANGE,
    label: str = "sync",
) -> Data:
    request = SyncGroupRequest(
        group_id=group_id,
        generation_id=generation,
        member_id=member_id,
        group_instance_id=instance,
        protocol_type=protocol_type if version >= 5 else None,
        protocol_name=protocol_name if version >= 5 else None,
        assignments=[
            SyncGroupRequestAssignment(member_id=m, assignment=a)
            for m, a in (assignments or {}).items()
        ],
    )
    return s.send(request, version, label)


def heartbeat(
    s: Session,
    group_id: str,
    generation: int,
    member_id: str,
    *,
    version: int = 4,
    instance: str | None = None,
    label: str = "heartbeat",
) -> Data:
    request = HeartbeatRequest(
        group_id=group_id,
        generation_id=generation,
        member_id=member_id,
        group_instance_id=instance,
    )
    return s.send(request, version, label)


def commit(
    s: Session,
    group_id: str,
    offsets: dict[str, dict[int, int]],
    *,
    generation: int = -1,
    member_id: str = "",
    instance: str | None = None,
    metadata: str | None = "",
    version: int = 9,
    label: str = "commit",
) -> Data:
    """OffsetCommit of ``offsets`` (full topic name -> partition -> offset)."""
    request = OffsetCommitRequest(
        group_id=group_id,
        generation_id_or_member_epoch=generation,
        member_id=member_id,
        group_instance_id=instance,
        topics=[
            OffsetCommitRequestTopic(
                name=topic,
                partitions=[
                    OffsetCommitRequestPartition(
                        partition_index=p, committed_offset=o, committed_metadata=metadata
                    )
                    for p, o in partitions.items()
                ],
            )
            for topic, partitions in offsets.items()
        ],
    )
    return s.send(request, version, label)


def stable_member(
    s: Session, group_id: str, *topics: str, label: str = "member"
) -> tuple[str, int]:
    """A one-member consumer group, Stable (recorded: join, join, sync): its member id and
    generation. The member subscribes to ``topics`` (full names)."""
    joined = join_new(s, group_id, label=label, protocols=[(RANGE, subscription(*topics))])
    member_id, generation = joined["member_id"], joined["generation_id"]
    sync(s, group_id, generation, member_id, {member_id: b"a1"}, label=f"{label}: sync")
    return member_id, generation

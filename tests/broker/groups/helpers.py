"""A group coordinator on a manual clock with an in-memory ``__consumer_offsets``, and
members that remember what the coordinator answered them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from millpond.broker.groups import placement, records
from millpond.broker.groups.coordinator import (
    Caller,
    GroupConfig,
    GroupCoordinator,
    Record,
    StorageError,
)
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.heartbeat_request import HeartbeatRequest
from millpond.wire.generated.api.join_group_request import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
)
from millpond.wire.generated.api.join_group_response import JoinGroupResponse
from millpond.wire.generated.api.leave_group_request import MemberIdentity
from millpond.wire.generated.api.sync_group_request import (
    SyncGroupRequest,
    SyncGroupRequestAssignment,
)
from millpond.wire.generated.api.sync_group_response import SyncGroupResponse

GROUP = "g"


def subscription(*topics: str) -> bytes:
    """A ConsumerProtocolSubscription v0 of ``topics``."""
    out = bytearray(b"\x00\x00") + len(topics).to_bytes(4, "big")
    for topic in topics:
        out += len(topic).to_bytes(2, "big") + topic.encode()
    return bytes(out + b"\xff\xff\xff\xff")  # null user data


@dataclass
class Log:
    """What the coordinator appended, as its partition holds it (the group's, of 50);
    ``fail`` makes appends raise as a partition without enough replicas does."""

    records: list[tuple[int, bytes, bytes | None]] = field(default_factory=list)
    fail: bool = False

    def append(self, batch: Sequence[Record]) -> None:
        if self.fail:
            raise StorageError(ErrorCode.NOT_ENOUGH_REPLICAS, "injected")
        for record in batch:
            partition = placement.partition_for(record.group_id, 50)
            self.records.append((partition, *records.encode(record)))


class Harness:
    def __init__(self, **config: Any) -> None:
        config.setdefault("initial_rebalance_delay_ms", 100)
        self.log = Log()
        self.coordinator = GroupCoordinator(GroupConfig(**config), self.log.append)
        self.now = 1_000_000

    def tick(self, ms: int) -> None:
        self.now += ms
        self.coordinator.advance(self.now)


@dataclass
class Client:
    """One consumer: its member id and generation, and its pending answers."""

    h: Harness
    name: str
    instance_id: str | None = None
    topics: tuple[str, ...] = ("t",)
    protocols: tuple[str, ...] = ("range",)
    session_ms: int = 10_000
    rebalance_ms: int = 30_000
    version: int = 9
    member_id: str = ""
    generation: int = -1
    joined: list[JoinGroupResponse] = field(default_factory=list)
    synced: list[SyncGroupResponse] = field(default_factory=list)

    def join(self) -> None:
        request = JoinGroupRequest(
            group_id=GROUP,
            session_timeout_ms=self.session_ms,
            rebalance_timeout_ms=self.rebalance_ms,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
            protocol_type="consumer",
            protocols=[
                JoinGroupRequestProtocol(name=p, metadata=subscription(*self.topics))
                for p in self.protocols
            ],
        )
        self.h.coordinator.join(
            Caller(self.name, "/127.0.0.1"), request, self.version, self.h.now, self._on_join
        )

    def _on_join(self, response: JoinGroupResponse) -> None:
        self.joined.append(response)
        if response.member_id:
            self.member_id = response.member_id
        if response.error_code == 0:
            self.generation = response.generation_id

    @property
    def last_join(self) -> JoinGroupResponse:
        return self.joined[-1]

    def sync(self, assignments: dict[str, bytes] | None = None) -> None:
        request = SyncGroupRequest(
            group_id=GROUP,
            generation_id=self.generation,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
            protocol_type="consumer",
            protocol_name=self.last_join.protocol_name,
            assignments=[
                SyncGroupRequestAssignment(member_id=m, assignment=a)
                for m, a in (assignments or {}).items()
            ],
        )
        self.h.coordinator.sync(request, self.h.now, self.synced.append)

    def heartbeat(self) -> int:
        request = HeartbeatRequest(
            group_id=GROUP,
            generation_id=self.generation,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
        )
        return self.h.coordinator.heartbeat(request, self.h.now)

    def leave(self) -> int:
        identity = MemberIdentity(member_id=self.member_id, group_instance_id=self.instance_id)
        error, answers = self.h.coordinator.leave(GROUP, [identity], self.h.now)
        return error or answers[0].error_code

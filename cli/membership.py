"""A member of a consumer group, for ``millpond consume --group``.

The classic group protocol as Kafka's consumers speak it: JoinGroup with a "consumer"
subscription offering the "range" assignor (which Kafka's Java client and librdkafka
also offer by default, so mixed groups agree on it), SyncGroup (the leader computes the
assignment for everyone), Heartbeat to stay in and to learn of rebalances, OffsetCommit
with the generation, and LeaveGroup on the way out.
"""

from __future__ import annotations

import struct
from functools import partial
from typing import Any

from millpond.cli.client import Client, Connection
from millpond.cli.errors import kafka_error
from millpond.wire import DecodeError, Message
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.heartbeat_request import HeartbeatRequest
from millpond.wire.generated.api.join_group_request import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
)
from millpond.wire.generated.api.leave_group_request import LeaveGroupRequest, MemberIdentity
from millpond.wire.generated.api.sync_group_request import (
    SyncGroupRequest,
    SyncGroupRequestAssignment,
)
from millpond.wire.generated.data.consumer_protocol_assignment import (
    ConsumerProtocolAssignment,
)
from millpond.wire.generated.data.consumer_protocol_assignment import (
    TopicPartition as AssignedTopic,
)
from millpond.wire.generated.data.consumer_protocol_subscription import (
    ConsumerProtocolSubscription,
)
from millpond.wire.primitives import DECODE_FAILURES

ASSIGNOR = "range"
_VERSION = struct.Struct(">h")
#: Errors after which the member must join again (its generation is over).
REJOIN = frozenset(
    {
        ErrorCode.REBALANCE_IN_PROGRESS,
        ErrorCode.ILLEGAL_GENERATION,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.FENCED_INSTANCE_ID,
    }
)


def encode_versioned(message: Message, version: int = 0) -> bytes:
    """A consumer protocol message as it travels: its version, then its fields."""
    return _VERSION.pack(version) + message.encode(version)


def decode_versioned(cls: type[Any], data: bytes | None) -> Any:
    """Read a consumer protocol message of any version (newer ones only append fields, so
    they read as the newest version we know); ``None`` when it is not one."""
    if not data or len(data) < 2:
        return None
    (version,) = _VERSION.unpack_from(data)
    try:
        return cls.read(data, 2, min(max(version, 0), cls.VALID_VERSIONS[1]))[0]
    except (DecodeError, *DECODE_FAILURES):
        return None


def assigned_partitions(assignment: bytes | None) -> list[tuple[str, int]]:
    """The partitions in a consumer protocol assignment (none if it is not one)."""
    decoded = decode_versioned(ConsumerProtocolAssignment, assignment)
    if decoded is None:
        return []
    return [(t.topic, p) for t in decoded.assigned_partitions for p in t.partitions]


def range_assign(
    subscriptions: dict[str, list[str]], partition_counts: dict[str, int]
) -> dict[str, dict[str, list[int]]]:
    """Kafka's range assignment: per topic, its partitions in order split into contiguous
    runs over the subscribed members in member id order, the first ones one longer."""
    result: dict[str, dict[str, list[int]]] = {m: {} for m in subscriptions}
    for topic, count in sorted(partition_counts.items()):
        members = sorted(m for m, topics in subscriptions.items() if topic in topics)
        if not members:
            continue
        share, extra = divmod(count, len(members))
        start = 0
        for i, member in enumerate(members):
            length = share + (1 if i < extra else 0)
            if length:
                result[member][topic] = list(range(start, start + length))
            start += length
    return result


class GroupMember:
    """One membership of ``group``, subscribed to ``topic``."""

    def __init__(self, client: Client, group: str, topic: str, session_timeout_ms: int) -> None:
        self.client = client
        self.group = group
        self.topic = topic
        self.session_timeout_ms = session_timeout_ms
        self.member_id = ""
        self.generation = -1

    def _send(self, build: Any, error: Any = lambda r: r.error_code) -> tuple[Connection, Any]:
        return self.client.group_request(self.group, build, error)

    def join(self) -> list[int]:
        """Join (again) and return the partitions of the topic assigned to this member."""
        while True:
            _, joined = self._send(lambda _: self._join_request())
            if joined.error_code == ErrorCode.MEMBER_ID_REQUIRED:  # KIP-394: ask again with it
                self.member_id = joined.member_id
                continue
            if joined.error_code == ErrorCode.UNKNOWN_MEMBER_ID:
                self.member_id = ""
                continue
            if joined.error_code:
                raise kafka_error(joined.error_code, f"joining group {self.group!r}")
            self.member_id = joined.member_id
            self.generation = joined.generation_id
            plan: dict[str, bytes] = {}
            if joined.leader == self.member_id:
                plan = self._assign(joined.members)
            _, synced = self._send(partial(self._sync_request, plan=plan))
            if synced.error_code in REJOIN:
                continue
            if synced.error_code:
                raise kafka_error(synced.error_code, f"syncing group {self.group!r}")
            return sorted(p for t, p in assigned_partitions(synced.assignment) if t == self.topic)

    def _join_request(self) -> JoinGroupRequest:
        subscription = ConsumerProtocolSubscription(topics=[self.topic])
        return JoinGroupRequest(
            group_id=self.group,
            session_timeout_ms=self.session_timeout_ms,
            rebalance_timeout_ms=max(self.session_timeout_ms, 30000),
            member_id=self.member_id,
            group_instance_id=None,
            protocol_type="consumer",
            protocols=[
                JoinGroupRequestProtocol(name=ASSIGNOR, metadata=encode_versioned(subscription))
            ],
        )

    def _assign(self, members: list[Any]) -> dict[str, bytes]:
        """The leader's work: every member's assignment from their subscriptions."""
        subscriptions: dict[str, list[str]] = {}
        for member in members:
            decoded = decode_versioned(ConsumerProtocolSubscription, member.metadata)
            subscriptions[member.member_id] = list(decoded.topics) if decoded else []
        counts: dict[str, int] = {}
        for topic in sorted({t for topics in subscriptions.values() for t in topics}):
            response = self.client.metadata([topic])
            for found in response.topics:
                if found.name == topic and found.error_code == 0:
                    counts[topic] = len(found.partitions)
        plan = range_assign(subscriptions, counts)
        return {
            member: encode_versioned(
                ConsumerProtocolAssignment(
                    assigned_partitions=[
                        AssignedTopic(topic=t, partitions=p) for t, p in sorted(topics.items())
                    ]
                )
            )
            for member, topics in plan.items()
        }

    def _sync_request(self, conn: Connection, *, plan: dict[str, bytes]) -> SyncGroupRequest:
        named = conn.version(14) >= 5  # protocol type and name travel from v5 on
        return SyncGroupRequest(
            group_id=self.group,
            generation_id=self.generation,
            member_id=self.member_id,
            group_instance_id=None,
            protocol_type="consumer" if named else None,
            protocol_name=ASSIGNOR if named else None,
            assignments=[
                SyncGroupRequestAssignment(member_id=m, assignment=a) for m, a in plan.items()
            ],
        )

    def heartbeat(self) -> bool:
        """Stay in the group; False when it is rebalancing and this member must rejoin."""
        _, response = self._send(
            lambda _: HeartbeatRequest(
                group_id=self.group,
                generation_id=self.generation,
                member_id=self.member_id,
                group_instance_id=None,
            )
        )
        if response.error_code in REJOIN:
            return False
        if response.error_code:
            raise kafka_error(response.error_code, f"heartbeat in group {self.group!r}")
        return True

    def commit(self, offsets: dict[int, int]) -> bool:
        """Commit as this generation's member; False if the generation ended meanwhile
        (the partitions' new owners will read from the last commit that counted)."""
        return self.client.commit(
            self.group,
            {(self.topic, p): o for p, o in offsets.items()},
            generation=self.generation,
            member_id=self.member_id,
            tolerate=REJOIN,
        )

    def leave(self) -> None:
        if not self.member_id:
            return

        def build(conn: Connection) -> LeaveGroupRequest:
            if conn.version(13) >= 3:  # KIP-345: members leave in a list
                return LeaveGroupRequest(
                    group_id=self.group, members=[MemberIdentity(member_id=self.member_id)]
                )
            return LeaveGroupRequest(group_id=self.group, member_id=self.member_id)

        self._send(build)  # leaving is best effort: the session timeout would end it too
        self.member_id = ""

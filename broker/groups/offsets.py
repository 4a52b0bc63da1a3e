"""Committed offsets: Kafka 4.4's OffsetCommit, OffsetFetch, OffsetDelete, DeleteGroups and
offset expiry (``OffsetMetadataManager``) over the groups of a shard.

A commit or a deletion is an operation that returns its records and its answer
(:class:`~millpond.broker.coordinator.runtime.CoordinatorResult`): the offsets change
when the records are replayed, so only after they were stored. The ``*_offsets`` and
``delete_group`` forms do the append and the replay themselves, for a shard driven
without a runtime.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from millpond.broker.coordinator.runtime import CoordinatorResult, coordinator_error
from millpond.broker.groups.classic import ClassicGroup, GroupError, GroupState
from millpond.broker.groups.records import GroupRecord, OffsetRecord
from millpond.broker.groups.shard_state import (
    CommittedOffset,
    Record,
    ShardState,
    StorageError,
)
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.group_coordinator.offset_commit_value import OffsetCommitValue

log = logging.getLogger("millpond.groups")

#: OffsetCommit v9+ answers GROUP_ID_NOT_FOUND for a generation-aware commit to no group.
GROUP_ID_NOT_FOUND_COMMIT_VERSION = 9
DEFAULT_RETENTION = -1

R = TypeVar("R")
Result = CoordinatorResult[R, Record]


@dataclass(frozen=True)
class OffsetToCommit:
    topic: str
    partition: int
    offset: int
    leader_epoch: int
    metadata: str | None


class Offsets(ShardState):
    # -- OffsetCommit ----------------------------------------------------------------------

    def commit(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        instance_id: str | None,
        retention_ms: int,
        offsets: list[OffsetToCommit],
        version: int,
        now_ms: int,
    ) -> Result[tuple[int, list[int]]]:
        """An OffsetCommit: its records, and (group-level error, per-offset error); on a
        group-level error nothing is written and every offset carries it."""
        self.advance(now_ms)
        try:
            group = self._validate_commit(group_id, generation_id, member_id, instance_id, version)
        except GroupError as exc:
            return CoordinatorResult((), (exc.code, [exc.code] * len(offsets)))
        if group.state in (GroupState.STABLE, GroupState.PREPARING_REBALANCE):
            member = group.members.get(member_id)
            if member is not None:
                self._schedule_session(group, member_id, member.session_timeout_ms)
        expire = now_ms + retention_ms if retention_ms != DEFAULT_RETENTION else -1
        codes: list[int] = []
        batch: list[Record] = []
        limit = self.config.offset_metadata_max_bytes
        for item in offsets:
            metadata = item.metadata or ""
            if item.metadata is not None and len(item.metadata) > limit:
                codes.append(ErrorCode.OFFSET_METADATA_TOO_LARGE)
                continue
            value = OffsetCommitValue(
                offset=item.offset,
                leader_epoch=item.leader_epoch,
                metadata=metadata,
                commit_timestamp=now_ms,
                expire_timestamp=expire,
            )
            batch.append(OffsetRecord(group_id, item.topic, item.partition, value))
            codes.append(ErrorCode.NONE)
        return CoordinatorResult(batch, (ErrorCode.NONE, codes))

    def commit_offsets(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        instance_id: str | None,
        retention_ms: int,
        offsets: list[OffsetToCommit],
        version: int,
        now_ms: int,
    ) -> tuple[int, list[int]]:
        """:meth:`commit`, stored and applied here."""
        result = self.commit(
            group_id, generation_id, member_id, instance_id, retention_ms, offsets, version, now_ms
        )
        return self._store(result, lambda code: (code, [code] * len(offsets)))

    def _store(self, result: Result[R], failed: Callable[[int], R]) -> R:
        """Append a result's records and replay them (what the runtime does), or the
        answer for a failed append."""
        if result.records:
            try:
                self._append(result.records)
            except StorageError as exc:
                return failed(coordinator_error(exc.code))
            for record in result.records:
                self.replay(record)
        return result.response

    def _validate_commit(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        instance_id: str | None,
        version: int,
    ) -> ClassicGroup:
        # Unlike the membership APIs, commits take "" for a group id like any other.
        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                if version >= GROUP_ID_NOT_FOUND_COMMIT_VERSION:
                    raise GroupError(ErrorCode.GROUP_ID_NOT_FOUND)
                raise GroupError(ErrorCode.ILLEGAL_GENERATION)
            # A commit outside group management (an admin, an assigning consumer) makes
            # a "simple" group: Empty, with no protocol.
            group = self.groups[group_id] = ClassicGroup(group_id, state_timestamp_ms=self.now_ms)
        if group.state is GroupState.DEAD:
            raise GroupError(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if generation_id < 0 and group.is_empty:
            return group
        if generation_id >= 0 or member_id or instance_id is not None:
            group.validate_member(member_id, instance_id)
            if generation_id != group.generation_id:
                raise GroupError(ErrorCode.ILLEGAL_GENERATION)
        elif not group.is_empty:
            raise GroupError(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.state is GroupState.COMPLETING_REBALANCE:
            raise GroupError(ErrorCode.REBALANCE_IN_PROGRESS)
        return group

    def committed(self, group_id: str) -> dict[tuple[str, int], CommittedOffset]:
        """The group's committed offsets (a copy), by (topic, partition)."""
        group = self.groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            return {}
        return dict(self.offsets.get(group_id, {}))

    def fetch_offsets(
        self, group_id: str, wanted: list[tuple[str, list[int]]] | None
    ) -> list[tuple[str, list[tuple[int, CommittedOffset | None]]]]:
        """OffsetFetch of one group: for each wanted (topic, partitions) the committed
        offset or None; with ``wanted`` None, every committed offset of the group."""
        committed = self.committed(group_id)
        if wanted is None:
            by_topic: dict[str, list[tuple[int, CommittedOffset | None]]] = {}
            for (topic, partition), offset in committed.items():
                by_topic.setdefault(topic, []).append((partition, offset))
            return list(by_topic.items())
        return [
            (topic, [(p, committed.get((topic, p))) for p in partitions])
            for topic, partitions in wanted
        ]

    def delete(
        self, group_id: str, topics: list[tuple[str, list[int]]], now_ms: int
    ) -> Result[tuple[int, list[tuple[str, list[tuple[int, int]]]]]]:
        """An OffsetDelete: its tombstones, and (group error, per topic the partitions'
        errors)."""
        self.advance(now_ms)
        if not group_id:
            return CoordinatorResult((), (ErrorCode.INVALID_GROUP_ID, []))
        group = self.groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            return CoordinatorResult((), (ErrorCode.GROUP_ID_NOT_FOUND, []))
        if not group.is_empty and not group.uses_consumer_protocol:
            return CoordinatorResult((), (ErrorCode.NON_EMPTY_GROUP, []))
        stored = self.offsets.get(group_id, {})
        answers: list[tuple[str, list[tuple[int, int]]]] = []
        tombstones: list[Record] = []
        for topic, partitions in topics:
            if group.is_subscribed_to(topic):
                code = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                answers.append((topic, [(p, code) for p in partitions]))
                continue
            answers.append((topic, [(p, ErrorCode.NONE) for p in partitions]))
            tombstones += [
                OffsetRecord(group_id, topic, p, None) for p in partitions if (topic, p) in stored
            ]
        return CoordinatorResult(tombstones, (ErrorCode.NONE, answers))

    def delete_offsets(
        self, group_id: str, topics: list[tuple[str, list[int]]], now_ms: int
    ) -> tuple[int, list[tuple[str, list[tuple[int, int]]]]]:
        """:meth:`delete`, stored and applied here."""
        return self._store(self.delete(group_id, topics, now_ms), lambda code: (code, []))

    # -- DeleteGroups ----------------------------------------------------------------------

    def delete_group_result(self, group_id: str, now_ms: int) -> Result[int]:
        """DeleteGroups of one group: tombstones for its offsets and its metadata (their
        replay removes the group), and its error code."""
        self.advance(now_ms)
        group = self.groups.get(group_id)  # "" is a group id like any other here
        if group is None or group.state is GroupState.DEAD:
            return CoordinatorResult((), ErrorCode.GROUP_ID_NOT_FOUND)
        if not group.is_empty:
            return CoordinatorResult((), ErrorCode.NON_EMPTY_GROUP)
        tombstones: list[Record] = [
            OffsetRecord(group_id, t, p, None) for t, p in self.offsets.get(group_id, {})
        ]
        tombstones.append(GroupRecord(group_id, None))
        return CoordinatorResult(tombstones, ErrorCode.NONE)

    def delete_group(self, group_id: str, now_ms: int) -> int:
        """:meth:`delete_group_result`, stored and applied here."""
        return self._store(self.delete_group_result(group_id, now_ms), lambda code: code)

    # -- expiry ----------------------------------------------------------------------------

    def expire_offsets(self, now_ms: int) -> int:
        """Kafka's offset expiry (every ``offsets.retention.check.interval.ms``): drop the
        offsets past ``offsets.retention.minutes``, counted from when the group became
        Empty (from the commit for a group outside group management, or for a topic a
        Stable consumer group no longer subscribes to), or past a commit's own expiry
        time; then delete every Empty group left without offsets. Returns how many
        offsets expired."""
        self.advance(now_ms)
        retention = self.config.offsets_retention_ms
        expired_count = 0
        for group in list(self.groups.values()):
            stored = self.offsets.get(group.group_id, {})
            base = _expiry_base(group)
            expired = [
                key
                for key, committed in stored.items()
                if base is not None
                and not group.is_subscribed_to(key[0])
                and _is_expired(committed, base, retention, now_ms)
            ]
            gone = group.is_empty and len(expired) == len(stored)
            batch: list[Record] = [OffsetRecord(group.group_id, t, p, None) for t, p in expired]
            if gone:
                batch.append(GroupRecord(group.group_id, None))
            if not batch:
                continue
            try:
                self._append(batch)
            except StorageError as exc:
                log.warning("group %s: expiring offsets failed: %s", group.group_id, exc)
                continue
            for key in expired:
                stored.pop(key, None)
            expired_count += len(expired)
            if gone:
                self._forget(group)
        return expired_count


# -- helpers -------------------------------------------------------------------------------


def _expiry_base(group: ClassicGroup) -> Callable[[CommittedOffset], int] | None:
    """From when a group's offsets age (Kafka's offset expiration condition), or None
    when they do not expire now (a group with members, other than the case below)."""
    if group.protocol_type is None:  # a group outside group management: from the commit
        return lambda committed: committed.commit_timestamp_ms
    if group.is_empty:
        since = group.state_timestamp_ms
        return lambda committed: since if since >= 0 else committed.commit_timestamp_ms
    if (
        group.uses_consumer_protocol
        and group.subscribed_topics is not None
        and group.state is GroupState.STABLE
    ):
        return lambda committed: committed.commit_timestamp_ms
    return None


def _is_expired(
    committed: CommittedOffset, base: Callable[[CommittedOffset], int], retention: int, now: int
) -> bool:
    if committed.expire_timestamp_ms >= 0:
        return now >= committed.expire_timestamp_ms
    return now - base(committed) >= retention

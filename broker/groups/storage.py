"""Storage of a group coordinator shard: the records it writes to ``__consumer_offsets``
and how it reads them back (Kafka 4.4's replay): an offset record sets or (a tombstone)
drops one committed offset, a group metadata record replaces the group with the one it
describes (members, generation, leader, assignment), and its tombstone removes the
group and its offsets. A loaded group with members is Stable, and their sessions run
from the shard's time at load.
"""

from __future__ import annotations

from millpond.broker.groups import records
from millpond.broker.groups.classic import ClassicGroup, GroupState, Member
from millpond.broker.groups.shard_state import CommittedOffset, Record, ShardState
from millpond.broker.groups.subscription import subscribed_topics
from millpond.wire.generated.group_coordinator.group_metadata_value import (
    GroupMetadataValue,
    MemberMetadata,
)


class GroupStorage(ShardState):
    # -- loading ---------------------------------------------------------------------------

    def replay(self, record: Record) -> None:
        """Apply one record: read back from ``__consumer_offsets`` in log order while
        loading (the state is what the records say; sessions restart from now), or just
        stored by an offsets operation."""
        if isinstance(record, records.OffsetRecord):
            stored = self.offsets.setdefault(record.group_id, {})
            key = (record.topic, record.partition)
            if record.value is None:
                stored.pop(key, None)
            else:
                v = record.value
                stored[key] = CommittedOffset(
                    v.offset, v.leader_epoch, v.metadata, v.commit_timestamp, v.expire_timestamp
                )
            if record.group_id not in self.groups and record.value is not None:
                self.groups[record.group_id] = ClassicGroup(
                    record.group_id, state_timestamp_ms=self.now_ms
                )
            return
        old = self.groups.get(record.group_id)
        if record.value is None:  # the group was deleted, or expired with its offsets
            if old is not None:
                self._forget(old)
            self.offsets.pop(record.group_id, None)
            return
        if old is not None:
            del self.groups[record.group_id]
            for member_id in old.members:
                self._cancel_session(old, member_id)
        self.groups[record.group_id] = self._loaded_group(record.group_id, record.value)

    def _loaded_group(self, group_id: str, value: GroupMetadataValue) -> ClassicGroup:
        group = ClassicGroup(
            group_id,
            state_timestamp_ms=value.current_state_timestamp,
            generation_id=value.generation,
            protocol_type=value.protocol_type or None,
            protocol_name=value.protocol,
        )
        for m in value.members:
            member = Member(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout
                if m.rebalance_timeout >= 0
                else m.session_timeout,
                session_timeout_ms=m.session_timeout,
                protocol_type=value.protocol_type,
                protocols=[(value.protocol or "", m.subscription)],
                assignment=m.assignment,
            )
            group.add(member, None)
        group.leader_id = value.leader if value.leader in group.members else group.leader_id
        if group.members:
            group.state = GroupState.STABLE
            group.previous_state = GroupState.COMPLETING_REBALANCE
            for member in group.members.values():
                self._schedule_session(group, member.member_id, member.session_timeout_ms)
        group.subscribed_topics = group.compute_subscribed_topics(subscribed_topics)
        return group

    # -- storage ---------------------------------------------------------------------------

    def _store_group(
        self, group: ClassicGroup, assignment: dict[str, bytes], *, members: bool = True
    ) -> None:
        """Append the group's metadata record (``members=False``: the record of a group
        just created, before any member completed a join)."""
        value = GroupMetadataValue(
            protocol_type=group.protocol_type or "",
            generation=group.generation_id,
            protocol=group.protocol_name,
            leader=group.leader_id,
            current_state_timestamp=group.state_timestamp_ms,
            members=[
                MemberMetadata(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    rebalance_timeout=m.rebalance_timeout_ms,
                    session_timeout=m.session_timeout_ms,
                    subscription=m.metadata(group.protocol_name),
                    assignment=assignment.get(m.member_id, b""),
                )
                for m in (group.members.values() if members else ())
            ],
        )
        self._append([records.GroupRecord(group.group_id, value)])

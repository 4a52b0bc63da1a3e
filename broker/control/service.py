"""The control operations a test drives a broker with (the HTTP endpoint and
``millpond.testing`` both call these): fault rules, the clock, a forced rebalance and
the live state of groups, producers and fetch sessions.

Everything here runs on the broker's event loop, which owns the state it touches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from millpond.broker.control.clock import ControlledClock
from millpond.broker.control.faults import (
    FaultAction,
    FaultError,
    FaultPlan,
    FaultRule,
    api_key_of,
    error_code_of,
)
from millpond.broker.error_responses import check
from millpond.wire.errors import ErrorCode
from millpond.wire.message import uuid_to_str

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer


class ControlError(ValueError):
    """An operation the broker cannot do as asked; the message says why."""


class BrokerControl:
    def __init__(self, broker: BrokerServer) -> None:
        self._broker = broker
        self.faults = FaultPlan()

    # -- faults ------------------------------------------------------------------------

    def topic_name(self, topic_id: bytes) -> str | None:
        topic = self._broker.image.topic_by_id(topic_id)
        return None if topic is None else topic.name

    def add_fault(
        self,
        api: str | int,
        action: str,
        *,
        count: int | None = 1,
        error: str | int | None = None,
        delay_ms: int = 0,
        topic: str | None = None,
        partition: int | None = None,
        client_id: str | None = None,
    ) -> dict[str, Any]:
        """Add a rule (see :mod:`millpond.broker.control.faults`); its description."""
        try:
            kind = FaultAction(action)
        except ValueError:
            choices = ", ".join(a.value for a in FaultAction)
            raise FaultError(f"unknown action {action!r}: one of {choices}") from None
        key = api_key_of(api)
        code: int = ErrorCode.NONE
        if kind is FaultAction.ERROR:
            if error is None:
                raise FaultError("an error rule needs an error (a Kafka error name or code)")
            code = error_code_of(error)
            check(key)
        elif error is not None:
            raise FaultError(f"only an error rule takes an error, not a {kind.value} rule")
        if kind is not FaultAction.DELAY and delay_ms:
            raise FaultError(f"only a delay rule takes delay_ms, not a {kind.value} rule")
        rule = FaultRule(key, kind, count, code, delay_ms, topic, partition, client_id)
        return self.faults.add(rule).to_data()

    # -- the clock ---------------------------------------------------------------------

    @property
    def clock(self) -> ControlledClock:
        clock = self._broker.clock
        if not isinstance(clock, ControlledClock):
            raise ControlError("this broker runs on a clock of its own that cannot be moved")
        return clock

    def clock_state(self) -> dict[str, Any]:
        clock = self.clock
        return {"now_ms": clock.now_ms(), "frozen": clock.frozen, "offset_ms": clock.offset_ms}

    def advance_clock(self, ms: int) -> dict[str, Any]:
        """Jump forwards and act on it at once: the groups' deadlines, retention and
        producer and offset expiry run as if that time had passed."""
        if ms < 0:
            raise ControlError(f"the clock only moves forwards: ms must be at least 0, not {ms}")
        self.clock.advance(ms)
        self._broker.groups.poke()
        self._broker.replicas.poke_delayed()
        self._broker.maintenance.run_time_driven_tasks()
        return self.clock_state()

    def freeze_clock(self) -> dict[str, Any]:
        self.clock.freeze()
        return self.clock_state()

    def resume_clock(self) -> dict[str, Any]:
        self.clock.resume()
        self._broker.groups.poke()
        return self.clock_state()

    # -- groups ------------------------------------------------------------------------

    def force_rebalance(self, group_id: str) -> dict[str, Any]:
        from millpond.broker.coordinator.runtime import CoordinatorResult

        groups = self._broker.groups
        now = groups.now_ms()
        done = groups.write(
            group_id, lambda c: CoordinatorResult((), c.force_rebalance(group_id, now))
        )
        code = done.error if done.error is not None else done.result() if done.done else None
        if code is None:
            raise ControlError(f"group {group_id!r}: its partition is not committing writes")
        if code != ErrorCode.NONE:
            raise ControlError(f"group {group_id!r} does not exist")
        return self._group(group_id)

    def _group(self, group_id: str) -> dict[str, Any]:
        coordinator = self._broker.groups.shard(group_id)
        if coordinator is None or group_id not in coordinator.groups:
            raise ControlError(f"group {group_id!r} does not exist")
        group = coordinator.groups[group_id]
        return {
            "group_id": group.group_id,
            "state": group.state.value,
            "generation": group.generation_id,
            "protocol_type": group.protocol_type,
            "protocol": group.protocol_name,
            "leader": group.leader_id,
            "members": [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "session_timeout_ms": m.session_timeout_ms,
                    "rebalance_timeout_ms": m.rebalance_timeout_ms,
                    "session_deadline_ms": coordinator.session_deadline(group_id, m.member_id),
                }
                for m in group.members.values()
            ],
        }

    # -- producers ---------------------------------------------------------------------

    def fence_producer(self, producer_id: int) -> dict[str, Any]:
        """Bump the epoch of ``producer_id`` on every partition it wrote to, so its next
        batch at the old epoch is refused (INVALID_PRODUCER_EPOCH), as if a newer
        instance had taken its id."""
        fenced = [
            {"topic": topic, "partition": partition, "producer_epoch": epoch}
            for topic, partition, manager in self._broker.replicas.producer_states()
            if (epoch := manager.fence(producer_id)) is not None
        ]
        if not fenced:
            raise ControlError(
                f"no partition knows producer id {producer_id}; GET /v1/state lists producers"
            )
        return {"producer_id": producer_id, "partitions": fenced}

    # -- state -------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """Groups, idempotent producers per partition and fetch sessions, as JSON data."""
        from millpond.broker.handlers.fetch import session_cache

        groups = sorted(g for shard in self._broker.groups.shards() for g in shard.groups)
        producers = [
            {
                "topic": topic,
                "partition": partition,
                "producer_id": entry.producer_id,
                "producer_epoch": entry.producer_epoch,
                "last_sequence": entry.batches[-1].last_seq if entry.batches else -1,
                "last_timestamp": entry.last_timestamp,
            }
            for topic, partition, manager in self._broker.replicas.producer_states()
            for entry in manager.active_producers.values()
        ]
        sessions = [
            {
                "session_id": s.id,
                "epoch": s.epoch,
                "partitions": [
                    {
                        "topic": c.request.topic,
                        "topic_id": uuid_to_str(c.request.topic_id),
                        "partition": c.request.partition,
                    }
                    for c in s.partitions.values()
                ],
            }
            for s in session_cache(self._broker).sessions()
        ]
        return {
            "groups": [self._group(g) for g in groups],
            "producers": producers,
            "fetch_sessions": sessions,
            "clock": self.clock_state()
            if isinstance(self._broker.clock, ControlledClock)
            else None,
            "faults": [rule.to_data() for rule in self.faults.rules()],
            "spent_faults": [rule.to_data() for rule in self.faults.spent()],
        }


__all__ = ["BrokerControl", "ControlError", "FaultError", "FaultRule"]

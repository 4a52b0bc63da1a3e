"""Fault injection: rules that make the next requests of an API fail, wait, go
unanswered or close their connection, so a client's retry and recovery paths can be
tested against a real broker.

Sans-I/O: a :class:`FaultPlan` holds the rules and says which one a request meets; the
connection (:mod:`millpond.broker.network.connection`) carries the action out. A rule matches an
API key and, optionally, a client id, a topic and a partition; it applies to the next
``count`` requests it matches (``count`` None: until removed), the oldest rule first.
"""

from __future__ import annotations

import enum
import itertools
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from millpond.wire.api import APIS
from millpond.wire.errors import ErrorCode
from millpond.wire.message import Struct

#: Longest delay a rule may ask for: ten minutes is past every client timeout.
MAX_DELAY_MS = 600_000
INT32_MAX = 2**31 - 1
SPENT_KEPT = 256
_TOPIC_FIELDS = ("name", "topic")
_PARTITION_FIELDS = ("partition_index", "index", "partition")
_PARTITION_LISTS = ("partition_indexes", "partitions", "partition_data")


class FaultAction(enum.StrEnum):
    ERROR = "error"
    """Answer with ``error_code`` instead of handling the request (nothing happens)."""
    DELAY = "delay"
    """Handle the request, then hold the answer ``delay_ms`` longer."""
    DROP = "drop"
    """Read the request and never answer it (the connection stays open, muted)."""
    CLOSE = "close"
    """Close the connection instead of answering."""


class FaultError(ValueError):
    """A rule that cannot be applied; the message says which field and why."""


@dataclass
class FaultRule:
    api_key: int
    action: FaultAction
    count: int | None = 1
    error_code: int = ErrorCode.NONE
    delay_ms: int = 0
    topic: str | None = None
    partition: int | None = None
    client_id: str | None = None
    id: int = 0
    #: Requests this rule has acted on so far.
    applied: int = field(default=0)

    def to_data(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "api": APIS[self.api_key].name,
            "api_key": self.api_key,
            "action": self.action.value,
            "count": self.count,
            "error": ErrorCode(self.error_code).name if self.action is FaultAction.ERROR else None,
            "error_code": int(self.error_code) if self.action is FaultAction.ERROR else None,
            "delay_ms": self.delay_ms if self.action is FaultAction.DELAY else None,
            "topic": self.topic,
            "partition": self.partition,
            "client_id": self.client_id,
            "applied": self.applied,
        }


def api_key_of(api: str | int) -> int:
    """An API by key or by Kafka's name (``Produce``, ``produce``, ``0``)."""
    if isinstance(api, int) or (isinstance(api, str) and api.isdigit()):
        key = int(api)
        if key in APIS:
            return key
    else:
        for key, info in APIS.items():
            if info.name.lower() == api.lower():
                return key
    names = ", ".join(sorted(info.name for info in APIS.values()))
    raise FaultError(f"unknown API {api!r}: give a key or one of {names}")


def error_code_of(error: str | int) -> int:
    """A Kafka error by code or by name (``NOT_LEADER_OR_FOLLOWER``, ``6``)."""
    try:
        if isinstance(error, int) or error.lstrip("-").isdigit():
            return ErrorCode(int(error))
        return ErrorCode[error.upper()]
    except (KeyError, ValueError):
        raise FaultError(
            f"unknown Kafka error {error!r}: give its code or its name "
            "(e.g. NOT_LEADER_OR_FOLLOWER or 6)"
        ) from None


class FaultPlan:
    """The active rules, oldest first."""

    def __init__(self) -> None:
        self._rules: list[FaultRule] = []
        #: Rules used up, newest last: how often each fired stays visible afterwards.
        self._spent: deque[FaultRule] = deque(maxlen=SPENT_KEPT)
        self._ids = itertools.count(1)

    def add(self, rule: FaultRule) -> FaultRule:
        if rule.count is not None and not 1 <= rule.count <= INT32_MAX:
            raise FaultError(
                f"count must be between 1 and {INT32_MAX} (or null for every request), "
                f"not {rule.count}"
            )
        if rule.action is FaultAction.ERROR and rule.error_code == ErrorCode.NONE:
            raise FaultError("an error rule needs an error other than NONE")
        if rule.action is FaultAction.DELAY and not 0 < rule.delay_ms <= MAX_DELAY_MS:
            raise FaultError(f"delay_ms must be between 1 and {MAX_DELAY_MS}, not {rule.delay_ms}")
        if rule.partition is not None and not 0 <= rule.partition <= INT32_MAX:
            raise FaultError(f"partition must be between 0 and {INT32_MAX}, not {rule.partition}")
        rule.id = next(self._ids)
        rule.applied = 0
        self._rules.append(rule)
        return rule

    def rules(self) -> list[FaultRule]:
        return list(self._rules)

    def spent(self) -> list[FaultRule]:
        """The last :data:`SPENT_KEPT` rules that were used up, oldest first."""
        return list(self._spent)

    def remove(self, rule_id: int) -> bool:
        before = len(self._rules)
        self._rules = [r for r in self._rules if r.id != rule_id]
        return len(self._rules) < before

    def clear(self) -> int:
        removed = len(self._rules)
        self._rules.clear()
        return removed

    def __bool__(self) -> bool:
        return bool(self._rules)

    def take(
        self,
        api_key: int,
        client_id: str | None,
        request: Any,
        topic_name: Callable[[bytes], str | None],
    ) -> FaultRule | None:
        """The rule ``request`` meets, counted as applied (and dropped once used up),
        or None. ``topic_name`` resolves topic ids (Fetch v13+)."""
        for rule in self._rules:
            if rule.api_key != api_key:
                continue
            if rule.client_id is not None and rule.client_id != client_id:
                continue
            if (rule.topic is not None or rule.partition is not None) and not _names(
                rule, request_partitions(request, topic_name) if request else iter(())
            ):
                continue
            rule.applied += 1
            if rule.count is not None and rule.applied >= rule.count:
                self._rules.remove(rule)
                self._spent.append(rule)
            return rule
        return None


def _names(rule: FaultRule, named: Iterator[tuple[str, int | None]]) -> bool:
    """Whether a request naming ``named`` is one the rule's topic and partition pick (a
    partition without a topic picks that partition of any topic)."""
    return any(
        (rule.topic is None or topic == rule.topic)
        and (rule.partition is None or partition == rule.partition)
        for topic, partition in named
    )


def request_partitions(
    message: Struct, topic_name: Callable[[bytes], str | None]
) -> Iterator[tuple[str, int | None]]:
    """Every (topic, partition) a request names, found by the specs' field names: a
    struct with a topic name (or id) and a list of partitions, anywhere in the message;
    ``None`` for a topic named without partitions (Metadata, CreateTopics)."""
    names = {f.name: f for f in message._FIELDS}
    topic = next((getattr(message, n) for n in _TOPIC_FIELDS if n in names), None)
    # From Produce v13 and Fetch v13 on, the name is empty and the topic id names it.
    if not topic and "topic_id" in names:
        topic = topic_name(message.topic_id)  # type: ignore[attr-defined]
    if isinstance(topic, str) and topic:
        partitions = list(_partitions(message, names))
        if partitions:
            for partition in partitions:
                yield topic, partition
        else:
            yield topic, None
        return
    for f in message._FIELDS:
        value = getattr(message, f.name)
        if f.kind == "struct" and value is not None:
            yield from request_partitions(value, topic_name)
        elif f.kind == "array" and f.element == "struct" and value:
            for item in value:
                yield from request_partitions(item, topic_name)
        elif f.kind == "array" and f.element == "string" and f.name == "topic_names" and value:
            for name in value:
                yield name, None


def _partitions(message: Struct, names: dict[str, Any]) -> Iterator[int]:
    for list_name in _PARTITION_LISTS:
        f = names.get(list_name)
        if f is None or f.kind != "array":
            continue
        value = getattr(message, list_name) or []
        if f.element == "int32":
            yield from value
        elif f.element == "struct":
            for item in value:
                for part in _PARTITION_FIELDS:
                    if hasattr(item, part):
                        yield getattr(item, part)
                        break

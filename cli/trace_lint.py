"""A lint over a protocol trace (``millpond serve --trace``): what a client did that the
protocol allows but that will hurt it, found from the decoded requests and responses.

- ``no-api-versions``: a connection's first request is not ApiVersions, yet uses a
  version above 0. The client guessed what the broker serves; against an older broker
  (or ``millpond.emulate``) it gets its connection closed instead of a fallback.
- ``sequence-gap``: an idempotent producer's batch starts past the sequence that follows
  its last acknowledged batch on that partition. Kafka answers OUT_OF_ORDER_SEQUENCE_NUMBER;
  a client that skipped a sequence lost or reordered a batch. (A batch below it is a
  retry, which is fine.)
- ``commit-without-generation``: an OffsetCommit with generation -1 for a group whose
  members this trace saw join. Such a commit bypasses the group's fencing and can
  overwrite what the members committed.

Sans-I/O: :class:`Linter` takes trace lines (dicts) in order and returns the warnings
each one causes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

API_VERSIONS = 18
PRODUCE = 0
JOIN_GROUP = 11
SYNC_GROUP = 14
OFFSET_COMMIT = 8


@dataclass(frozen=True)
class Finding:
    rule: str
    line: int
    connection: int | None
    client: str | None
    message: str

    def to_data(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "line": self.line,
            "connection": self.connection,
            "client": self.client,
            "message": self.message,
        }


class Linter:
    def __init__(self) -> None:
        self._connections: set[tuple[Any, Any]] = set()
        #: (producer id, epoch, topic, partition) -> the sequence its next batch should have
        self._next_sequence: dict[tuple[int, int, str, int], int] = {}
        self._joined_groups: set[str] = set()

    def feed(self, number: int, line: dict[str, Any]) -> list[Finding]:
        """The warnings trace line ``number`` (1-based) causes."""
        warnings: list[Finding] = []

        def warn(rule: str, message: str) -> None:
            warnings.append(
                Finding(rule, number, line.get("connection"), line.get("client"), message)
            )

        key = line.get("key")
        version = line.get("version", 0)
        connection = (line.get("peer"), line.get("connection"))
        if connection not in self._connections:
            self._connections.add(connection)
            if key != API_VERSIONS and isinstance(version, int) and version > 0:
                warn(
                    "no-api-versions",
                    f"connection {line.get('connection')} began with {line.get('api')} "
                    f"v{version} without asking ApiVersions first: the client guessed the "
                    "version, and a broker that does not serve it closes the connection",
                )
        request, response = line.get("request") or {}, line.get("response") or {}
        if key == PRODUCE:
            for message in self._produce(request, response):
                warn("sequence-gap", message)
        elif key in (JOIN_GROUP, SYNC_GROUP):
            group = request.get("group_id")
            if isinstance(group, str) and response.get("error_code") == 0:
                self._joined_groups.add(group)
        elif key == OFFSET_COMMIT:
            group = request.get("group_id")
            generation = request.get("generation_id_or_member_epoch", -1)
            if group in self._joined_groups and generation == -1:
                warn(
                    "commit-without-generation",
                    f"OffsetCommit for group {group!r} with generation -1, while the group "
                    "has members: it bypasses the group's fencing and can overwrite their "
                    "commits; commit as a member (with its generation and member id)",
                )
        return warnings

    def _produce(self, request: dict[str, Any], response: dict[str, Any]) -> list[str]:
        errors: dict[tuple[str, int], int] = {}
        for topic in response.get("responses") or []:
            name = topic.get("name") or topic.get("topic_id") or ""
            for part in topic.get("partition_responses") or []:
                errors[(name, part.get("index"))] = part.get("error_code", 0)
        found: list[str] = []
        for topic in request.get("topic_data") or []:
            name = topic.get("name") or topic.get("topic_id") or ""
            for part in topic.get("partition_data") or []:
                index = part.get("index")
                records = part.get("records") or {}
                for batch in records.get("batches") or []:
                    message = self._batch(name, index, batch, errors.get((name, index)))
                    if message:
                        found.append(message)
        return found

    def _batch(self, topic: str, partition: int, batch: dict[str, Any], error: int | None) -> str:
        producer, epoch = batch.get("producer_id", -1), batch.get("producer_epoch", -1)
        sequence = batch.get("base_sequence", -1)
        if producer is None or producer < 0 or sequence is None or sequence < 0:
            return ""
        key = (producer, epoch, topic, partition)
        expected = self._next_sequence.get(key)
        message = ""
        if expected is not None and sequence > expected:
            message = (
                f"producer {producer} (epoch {epoch}) on {topic}-{partition} sent sequence "
                f"{sequence} after {expected - 1}: {sequence - expected} sequence number(s) "
                "skipped, so a batch was lost or reordered"
            )
        if error == 0 and (expected is None or sequence >= expected):
            self._next_sequence[key] = sequence + int(batch.get("records", 0))
        return message

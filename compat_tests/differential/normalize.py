"""Normalizing recorded responses so that Kafka's and millpond's can be compared field by field.

Only values that legitimately differ between two correct brokers are replaced; each rule below
says why. Everything else, error codes and messages included, is compared as it is.

Identifiers are replaced by placeholders numbered in order of first appearance within one
sequence's steps on one broker (``<topic-id-1>``, ``<topic-id-2>``, ...), not by one constant:
the same id appearing in two responses (CreateTopics' id, then Metadata's, then a Fetch by that
id) must map to the same placeholder on both sides, so the *relations* between ids are still
checked while their random values are not.

The rules, by field name (to_data() keys are the schema's field names):

- ``error_message`` (non-empty) -> ``<message>``: the wording is prose each implementation
  writes in its own words (millpond does not copy Kafka's); clients act on the error code. Null
  and empty messages stay, so whether a message is sent at all is still compared.
- ``throttle_time_ms`` -> 0: quota throttling depends on timing, and millpond has no quotas.
- ``cluster_id`` -> ``<cluster-id>``: random per formatted cluster.
- ``topic_id`` -> ``<topic-id-N>`` (the all-zero id stays): random per created topic.
- node ids (``node_id``, ``leader_id``, ``controller_id``, ``broker_id`` and the replica
  lists ``replica_nodes``, ``isr_nodes``, ``offline_replicas``, ...) -> ``<node-N>``: each
  broker's configured ``node.id``; both are one-node clusters, so the relation "this is the
  one node" is what must agree. -1 and 0 stay: both brokers run as node 1, and 0 is what
  to_data() shows for a node field outside its versions (FindCoordinator v4's top level).
- ``host`` / ``port`` -> ``<host>`` / ``<port>``: the listeners differ by construction. Endpoint
  ``listener`` / ``security_protocol`` names stay.
- ``log_append_time_ms`` (when not -1), and a LogAppendTime batch's timestamps -> ``<time>``:
  the broker's wall clock at append. CreateTime timestamps are set by the sequence and stay.
- ``producer_id`` (>= 0; also in record batches and ``ongoing_txn_producer_id``) ->
  ``<producer-id-N>``: ids come from blocks each broker allocates; other tests in the session
  take ids from the same brokers. Epochs and sequences stay.
- ``session_id`` (Fetch, non-zero) -> ``<fetch-session-N>``: random per fetch session.
- ``member_id`` and JoinGroup's ``leader`` (non-empty) -> ``<member-id-N>``: the coordinator
  makes a member id up (Kafka: the client id or group instance id, a dash and a random UUID).
  A sequence records each member's id (its MEMBER_ID_REQUIRED or first JoinGroup answer)
  before a member list names it, so the numbering does not depend on the order of a list.
- ``log_dir`` -> ``<log-dir-N>`` (numbered as first seen), ``total_bytes`` / ``usable_bytes``
  (>= 0) -> ``<bytes>``: the brokers' data directories and their file systems. Partition
  sizes stay: both store the same batches byte for byte.
- ``records`` (bytes) -> the batches decoded: every v2 header field, each record's offset,
  timestamp, key, value and headers. The CRC is replaced by whether it checks: it covers only
  what the producer wrote (and LogAppendTime), so comparing the decoded fields says more than
  comparing checksums. An incomplete batch at the end of a fetched partition (Kafka slices
  segment files by bytes, millpond leaves a batch that does not fit out whole) is dropped:
  consumers discard such a tail, so clients cannot tell the two apart.
- ApiVersions: ``api_keys`` keep only the APIs millpond serves (Kafka 4.4 serves many more,
  consumer groups, transactions, ACLs... not yet in millpond); the ranges of those must agree.
  Features (``supported_features``, ``finalized_features``, ``finalized_features_epoch``) are
  replaced by ``<features>``: millpond deliberately finalizes none yet (see
  broker/handlers/api_versions.py), which keeps Java clients on paths it serves.
- Lists Kafka builds from hash maps (DeleteTopics' results, which it even shuffles on purpose;
  DeleteRecords' and DescribeLogDirs' topics and partitions; Metadata's brokers and topics;
  CreatePartitions' results, where Kafka lists topics its broker found missing first;
  DescribeConfigs' entries; a group's members in JoinGroup and DescribeGroups; DeleteGroups'
  results; OffsetFetch's topics and partitions, which Kafka lists from hash maps when it
  answers "every committed offset") are sorted by name / index / id on both sides: their
  order carries no meaning. (CreateTopics' configs stay in order: Kafka sorts them by name.)
- A step may name *volatile* fields, values the broker makes up that the sequence knows
  about (a LogAppendTime topic's max timestamp in ListOffsets): ``<volatile>``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from compat_tests.differential.runner import Step
from millpond.wire.records import iter_batches
from millpond.wire.records.timestamp_type import TimestampType

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
NODE_FIELDS = frozenset({"node_id", "leader_id", "controller_id", "broker_id"})
NODE_LIST_FIELDS = frozenset(
    {
        "replica_nodes",
        "isr_nodes",
        "offline_replicas",
        "eligible_leader_replicas",
        "last_known_elr",
    }
)
# (API name, list field) -> the fields that order its elements.
UNORDERED: dict[tuple[str, str], tuple[str, ...]] = {
    ("DeleteTopics", "responses"): ("name",),
    ("DeleteRecords", "topics"): ("name",),
    ("DeleteRecords", "partitions"): ("partition_index",),
    ("DescribeLogDirs", "topics"): ("name",),
    ("DescribeLogDirs", "partitions"): ("partition_index",),
    ("Metadata", "brokers"): ("node_id",),
    ("Metadata", "topics"): ("name",),
    ("CreatePartitions", "results"): ("name",),
    ("DescribeConfigs", "configs"): ("name",),
    ("JoinGroup", "members"): ("member_id",),
    ("DescribeGroups", "members"): ("member_id",),
    ("DeleteGroups", "results"): ("group_id",),
    ("OffsetFetch", "topics"): ("name",),
    ("OffsetFetch", "partitions"): ("partition_index",),
}


class Normalizer:
    """Normalizes the steps of one sequence run on one broker (placeholders are numbered
    per run, so create one per run)."""

    def __init__(self, served_api_keys: Iterable[int] | None = None) -> None:
        self.served_api_keys = None if served_api_keys is None else frozenset(served_api_keys)
        self._ids: dict[str, dict[Any, str]] = {}
        self._volatile: frozenset[str] = frozenset()

    def placeholder(self, kind: str, value: Any) -> str:
        table = self._ids.setdefault(kind, {})
        if value not in table:
            table[value] = f"<{kind}-{len(table) + 1}>"
        return table[value]

    def steps(self, steps: Iterable[Step]) -> list[dict[str, Any]]:
        return [self.step(s) for s in steps]

    def step(self, step: Step) -> dict[str, Any]:
        self._volatile = frozenset(step.volatile)
        response = self.value(step.api, "", step.response)
        if step.api == "ApiVersions" and isinstance(response, dict):
            response = self._api_versions(response)
        return {"step": step.label, "api": f"{step.api} v{step.version}", "response": response}

    def value(self, api: str, key: str, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: self.field(api, k, v) for k, v in value.items()}
        if isinstance(value, list):
            items = [self.value(api, key, v) for v in value]
            order = UNORDERED.get((api, key))
            if order is not None:
                items.sort(key=lambda item: tuple(str(item.get(f)) for f in order))
            return items
        return value

    def field(self, api: str, key: str, value: Any) -> Any:
        if key in self._volatile:
            return "<volatile>"
        if key == "error_message" and value:
            return "<message>"
        if key == "throttle_time_ms":
            return 0
        if key == "cluster_id" and value is not None:
            return "<cluster-id>"
        if key == "topic_id" and isinstance(value, str) and value != ZERO_UUID:
            return self.placeholder("topic-id", value)
        if key in NODE_FIELDS and isinstance(value, int) and value > 0:
            return self.placeholder("node", value)
        if key in NODE_LIST_FIELDS and isinstance(value, list):
            return [self.placeholder("node", v) if v > 0 else v for v in value]
        if key == "host" and value:
            return "<host>"
        if key == "port" and isinstance(value, int) and value > 0:
            return "<port>"
        if key == "log_append_time_ms" and value != -1:
            return "<time>"
        if key in ("producer_id", "ongoing_txn_producer_id") and isinstance(value, int):
            return self.placeholder("producer-id", value) if value >= 0 else value
        if key == "session_id" and value:
            return self.placeholder("fetch-session", value)
        if (key == "member_id" or (key == "leader" and api == "JoinGroup")) and value:
            return self.placeholder("member-id", value)
        if key == "log_dir" and value:
            return self.placeholder("log-dir", value)
        if key in ("total_bytes", "usable_bytes") and isinstance(value, int) and value >= 0:
            return "<bytes>"
        if key == "records" and isinstance(value, bytes | bytearray):
            return self.records(bytes(value))
        return self.value(api, key, value)

    def records(self, data: bytes) -> Any:
        batches: list[dict[str, Any]] = []
        try:
            for batch in iter_batches(data, allow_truncated_tail=True):
                log_append = batch.timestamp_type is TimestampType.LOG_APPEND_TIME
                records = [
                    {
                        "offset": r.offset,
                        "timestamp": "<time>" if log_append else r.timestamp,
                        "key": r.key,
                        "value": r.value,
                        "headers": [list(h) for h in r.headers],
                    }
                    for r in batch.records()
                ]
                pid = batch.producer_id
                batches.append(
                    {
                        "base_offset": batch.base_offset,
                        "batch_length": batch.batch_length,
                        "partition_leader_epoch": batch.partition_leader_epoch,
                        "magic": batch.magic,
                        "crc_ok": batch.is_valid(),
                        "attributes": batch.attributes,
                        "last_offset_delta": batch.last_offset_delta,
                        "base_timestamp": "<time>" if log_append else batch.base_timestamp,
                        "max_timestamp": "<time>" if log_append else batch.max_timestamp,
                        "producer_id": self.placeholder("producer-id", pid) if pid >= 0 else pid,
                        "producer_epoch": batch.producer_epoch,
                        "base_sequence": batch.base_sequence,
                        "records": records,
                    }
                )
        except Exception as exc:  # noqa: BLE001 (undecodable bytes are compared as they are)
            return {"undecodable": f"{type(exc).__name__}: {exc}", "bytes": data}
        return batches

    def _api_versions(self, response: dict[str, Any]) -> dict[str, Any]:
        out = dict(response)
        if self.served_api_keys is not None:
            out["api_keys"] = [
                k for k in response.get("api_keys", []) if k["api_key"] in self.served_api_keys
            ]
        for key in ("supported_features", "finalized_features", "finalized_features_epoch"):
            if key in out:
                out[key] = "<features>"
        return out


def normalize(steps: Iterable[Step], served_api_keys: Iterable[int] | None = None) -> list[Any]:
    """One run's steps, normalized (a fresh :class:`Normalizer`)."""
    return Normalizer(served_api_keys).steps(steps)

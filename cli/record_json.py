"""Records of Kafka's internal topics as Kafka's kafka-dump-log shows them: JSON in the
shape of Kafka's generated JSON converters (field names in the specs' camelCase, bytes in
base64, uuids in Kafka's base64 form, tagged fields only when set).

- ``__consumer_offsets`` (``--offsets-decoder``): a key starts with its type (the
  coordinator record's api key), a value with its version: ``{"type": "1", "data":
  {...}}`` and ``{"version": "4", "data": {...}}``; a consumer group's members show their
  subscription and assignment decoded; a deleted key's value is ``<DELETE>``.
- ``__transaction_state`` (``--transaction-log-decoder``): the same shape; a
  transaction's status by its name.
- ``__cluster_metadata`` (``--cluster-metadata-decoder``): each value is a framed metadata
  record, ``{"type": "TOPIC_RECORD", "version": 0, "data": {...}}``.
- KRaft's control records (leader changes, the kraft.version, the voter set), which the
  tool always decodes.
"""

from __future__ import annotations

import base64
import json
import struct
from functools import cache
from typing import Any

from millpond.controller.record_serde import decode_metadata_record
from millpond.wire import DecodeError, Message, Struct
from millpond.wire.api import load_message_class
from millpond.wire.generated.data.consumer_protocol_assignment import (
    ConsumerProtocolAssignment,
)
from millpond.wire.generated.data.consumer_protocol_subscription import (
    ConsumerProtocolSubscription,
)
from millpond.wire.generated.data.k_raft_version_record import KRaftVersionRecord
from millpond.wire.generated.data.leader_change_message import LeaderChangeMessage
from millpond.wire.generated.data.snapshot_footer_record import SnapshotFooterRecord
from millpond.wire.generated.data.snapshot_header_record import SnapshotHeaderRecord
from millpond.wire.generated.data.voters_record import VotersRecord
from millpond.wire.generated.group_coordinator import SPECS as GROUP_SPECS
from millpond.wire.generated.transaction_coordinator import SPECS as TRANSACTION_SPECS
from millpond.wire.message import Field, uuid_to_str
from millpond.wire.primitives import DECODE_FAILURES

_INT16 = struct.Struct(">h")
#: KRaft's control record types: how the tool labels each, and its message.
_CONTROL: dict[int, tuple[str, type[Message]]] = {
    2: ("LeaderChange:", LeaderChangeMessage),
    3: ("SnapshotHeader", SnapshotHeaderRecord),
    4: ("SnapshotFooter", SnapshotFooterRecord),
    5: ("KRaftVersion", KRaftVersionRecord),
    6: ("KRaftVoters", VotersRecord),
}
#: GroupMetadataValue's member fields that hold consumer protocol messages.
_CONSUMER_PROTOCOL: dict[str, type[Message]] = {
    "subscription": ConsumerProtocolSubscription,
    "assignment": ConsumerProtocolAssignment,
}


#: The coordinators' logs: their records' specs by the topic they live in.
_LOGS = {"offsets": GROUP_SPECS, "transactions": TRANSACTION_SPECS}
#: TransactionLogValue's status as Kafka's tool names it (TransactionState).
TRANSACTION_STATES = (
    "Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort",
    "Dead", "PrepareEpochFence",
)  # fmt: skip


@cache
def _classes(log: str) -> dict[tuple[str, int], type[Message]]:
    """``(coordinator-key | coordinator-value, api key) -> message class`` of one log."""
    return {
        (spec.type, spec.api_key): load_message_class(spec.module, spec.name)
        for spec in _LOGS[log]
        if spec.api_key is not None
    }


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def kafka_json(message: Message | Struct, version: int, consumer: bool = False) -> dict[str, Any]:
    """``message`` at ``version`` as Kafka's JSON converters write it; ``consumer``: decode
    the subscription and assignment bytes of a consumer group's members."""
    out: dict[str, Any] = {}
    for field in message._FIELDS:
        if not field.present(version):
            continue
        value = getattr(message, field.name)
        if field.tagged_at(version) and value == _default(field, version):
            continue
        if consumer and field.name in _CONSUMER_PROTOCOL and value is not None:
            decoded = _versioned(_CONSUMER_PROTOCOL[field.name], bytes(value))
            if decoded is not None:
                out[_camel(field.name)] = kafka_json(decoded[0], decoded[1])
                continue
        out[_camel(field.name)] = _value(field.kind, field.element, value, version, consumer)
    return out


def _default(field: Field, version: int) -> Any:
    """A field's default as its converter compares it: a non-nullable array's is empty."""
    if field.kind == "array" and field.default is None and not field.nullable_at(version):
        return []
    return field.default


def _value(kind: str, element: str | None, value: Any, version: int, consumer: bool) -> Any:
    if value is None:
        return None
    if kind == "struct":
        return kafka_json(value, version, consumer)
    if kind == "array":
        assert element is not None
        return [_value(element, None, v, version, consumer) for v in value]
    if kind == "uuid":
        return uuid_to_str(value)
    if kind in ("bytes", "records"):
        return base64.b64encode(bytes(value)).decode()
    return value


def _versioned(cls: type[Message], data: bytes) -> tuple[Message, int] | None:
    """A message behind its int16 version, read whole at that version; None if it isn't."""
    if len(data) < 2:
        return None
    (version,) = _INT16.unpack_from(data)
    if not cls.supports(version):
        return None
    try:
        message, end = cls.read(data, 2, version)
    except (DecodeError, *DECODE_FAILURES):
        return None
    return (message, version) if end == len(data) else None


def _dumps(data: Any) -> str:
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False)


def decode_coordinator_record(log: str, key: bytes | None, value: bytes | None) -> tuple[str, str]:
    """``(key, payload)`` texts of one record of ``__consumer_offsets`` (``log`` "offsets")
    or ``__transaction_state`` ("transactions")."""
    if key is None or len(key) < 2:
        return "null", "<UNKNOWN>"
    (record_type,) = _INT16.unpack_from(key)
    key_class = _classes(log).get(("coordinator-key", record_type))
    decoded_key = _versioned_key(key_class, key) if key_class else None
    if decoded_key is None:
        return f"unknown::version={record_type}", "<UNKNOWN>"
    key_text = _dumps({"type": str(record_type), "data": kafka_json(decoded_key, 0)})
    if value is None:
        return key_text, "<DELETE>"
    value_class = _classes(log).get(("coordinator-value", record_type))
    decoded = _versioned(value_class, value) if value_class else None
    if decoded is None:
        return key_text, "<UNKNOWN>"
    message, version = decoded
    consumer = getattr(message, "protocol_type", None) == "consumer"
    data = kafka_json(message, version, consumer)
    status = data.get("transactionStatus")
    if log == "transactions" and isinstance(status, int) and 0 <= status < len(TRANSACTION_STATES):
        data["transactionStatus"] = TRANSACTION_STATES[status]
    return key_text, _dumps({"version": str(version), "data": data})


def _versioned_key(cls: type[Message], key: bytes) -> Message | None:
    try:
        message, end = cls.read(key, 2, 0)
    except (DecodeError, *DECODE_FAILURES):
        return None
    return message if end == len(key) else None


def decode_metadata_value(value: bytes | None) -> str | None:
    """A ``__cluster_metadata`` record's value as JSON; None if it is not one."""
    try:
        record = decode_metadata_record(value)
    except DecodeError:
        return None
    name = record.message.NAME
    kind = "".join(f"_{c}" if c.isupper() and i else c for i, c in enumerate(name)).upper()
    data = kafka_json(record.message, record.version)
    return _dumps({"type": kind, "version": record.version, "data": data})


def decode_control(control_type: int, value: bytes | None) -> str | None:
    """A KRaft control record as the tool prints it (``KRaftVersion {...}``); None for a
    type it is not, or a value that does not decode."""
    known = _CONTROL.get(control_type)
    if known is None or value is None or len(value) < 2:
        return None
    label, cls = known
    (version,) = _INT16.unpack_from(value)  # the message's own first field
    if not cls.supports(version):
        return None
    try:
        message, end = cls.read(value, 0, version)
    except (DecodeError, *DECODE_FAILURES):
        return None
    if end != len(value):
        return None
    return f"{label} {_dumps(kafka_json(message, version))}"

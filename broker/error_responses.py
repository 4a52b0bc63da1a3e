"""The answer refusing a request as a whole: the request's own response type, every
topic, partition, resource or key it named carrying the error, as Kafka builds it (its
``AbstractRequest.getErrorResponse``). Injected faults answer with it, and so does a
controller asked for an operation while it is not the active one (NOT_CONTROLLER).

APIs whose response has a top-level error code get it there; those that report errors
per topic or partition are built below. An API with neither (its errors live in
structures a generic answer cannot fill) cannot take an error rule: :func:`check`
refuses it when the rule is made, not when a request arrives.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast

from millpond.broker.control.faults import FaultError
from millpond.wire.api import APIS
from millpond.wire.message import Message, Struct

MESSAGE = "injected by millpond's fault injection"

#: (request, error code, version, error message) -> the refusing response.
Builder = Callable[[Any, int, int, str], Message]

#: API key -> (request topics, request partitions, its partition index field, response
#: topics, response partitions, their index field): the per-partition APIs.
_PARTITIONED: dict[int, tuple[str, str, str, str, str, str]] = {
    0: ("topic_data", "partition_data", "index", "responses", "partition_responses", "index"),
    1: ("topics", "partitions", "partition", "responses", "partitions", "partition_index"),
    2: ("topics", "partitions", "partition_index", "topics", "partitions", "partition_index"),
    8: ("topics", "partitions", "partition_index", "topics", "partitions", "partition_index"),
}
#: Fields of an erroneous partition that differ from the generated defaults.
_PARTITION_EXTRA: dict[int, dict[str, Any]] = {
    0: {"base_offset": -1},
    1: {"high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1, "records": b""},
    2: {"timestamp": -1, "offset": -1},
    8: {},
}


def _field(cls: type[Struct], name: str) -> Any:
    for f in cls._FIELDS:
        if f.name == name:
            return f
    raise KeyError(name)


def _element(cls: type[Struct], name: str) -> Any:
    """The struct class of a field (typed Any: the generic code builds it by keyword)."""
    struct = _field(cls, name).struct
    assert struct is not None
    return struct


def _make(cls: type[Message], **fields: Any) -> Message:
    made: Message = cast(Any, cls)(**fields)
    return made


def _has(cls: type[Struct], name: str, version: int) -> bool:
    return any(f.name == name and f.present(version) for f in cls._FIELDS)


def _partitioned(key: int, request: Any, code: int, version: int, message: str) -> Message:
    req_topics, req_parts, req_index, topics, parts, index = _PARTITIONED[key]
    response = APIS[key].response_class
    topic_cls = _element(response, topics)
    part_cls = _element(topic_cls, parts)
    extra = dict(_PARTITION_EXTRA[key])
    if _has(part_cls, "error_message", version):
        extra["error_message"] = message
    out = []
    for topic in getattr(request, req_topics):
        name_field = "topic" if hasattr(topic, "topic") else "name"
        topic_kwargs = {name_field: getattr(topic, name_field)}
        if hasattr(topic, "topic_id"):
            topic_kwargs["topic_id"] = topic.topic_id
        partitions = [
            part_cls(**{index: getattr(p, req_index), "error_code": code}, **extra)
            for p in getattr(topic, req_parts)
        ]
        out.append(topic_cls(**topic_kwargs, **{parts: partitions}))
    return _make(response, **{topics: out})


def _find_coordinator(request: Any, code: int, version: int, message: str) -> Message:
    response = APIS[10].response_class
    if version < 4:
        kwargs: dict[str, Any] = {"error_code": code, "node_id": -1, "host": "", "port": -1}
        if version >= 1:
            kwargs["error_message"] = message
        return _make(response, **kwargs)
    coordinator = _element(response, "coordinators")
    return _make(
        response,
        coordinators=[
            coordinator(key=k, error_code=code, error_message=message, node_id=-1, port=-1)
            for k in request.coordinator_keys
        ],
    )


def _offset_fetch(request: Any, code: int, version: int, message: str) -> Message:
    response = APIS[9].response_class
    if version >= 8:
        group = _element(response, "groups")
        return _make(
            response, groups=[group(group_id=g.group_id, error_code=code) for g in request.groups]
        )
    if version >= 2:
        return _make(response, error_code=code)
    topic = _element(response, "topics")
    partition = _element(topic, "partitions")
    return _make(
        response,
        topics=[
            topic(
                name=t.name,
                partitions=[
                    partition(partition_index=i, error_code=code) for i in t.partition_indexes
                ],
            )
            for t in request.topics or []
        ],
    )


def _topic_results(key: int, results: str) -> Builder:
    """CreateTopics, DeleteTopics and CreatePartitions: one result per named topic."""

    def build(request: Any, code: int, version: int, message: str) -> Message:
        response = APIS[key].response_class
        result = _element(response, results)
        extra = {"error_message": message} if _has(result, "error_message", version) else {}
        if key == 20 and version < 6:
            names = list(request.topic_names)
        else:
            names = [t.name for t in request.topics]
        return _make(
            response, **{results: [result(name=n, error_code=code, **extra) for n in names]}
        )

    return build


def _elect_leaders(request: Any, code: int, version: int, message: str) -> Message:
    """ElectLeaders: the error at the top (v1+) and for every partition named."""
    response = APIS[43].response_class
    topic = _element(response, "replica_election_results")
    partition = _element(topic, "partition_result")
    return _make(
        response,
        **({"error_code": code} if version >= 1 else {}),
        replica_election_results=[
            topic(
                topic=t.topic,
                partition_result=[
                    partition(partition_id=i, error_code=code, error_message=message)
                    for i in t.partitions
                ],
            )
            for t in request.topic_partitions or []
        ],
    )


def _alter_partition_reassignments(request: Any, code: int, version: int, message: str) -> Message:
    """AlterPartitionReassignments: the error at the top and for every partition named."""
    response = APIS[45].response_class
    topic = _element(response, "responses")
    partition = _element(topic, "partitions")
    return _make(
        response,
        error_code=code,
        error_message=message,
        responses=[
            topic(
                name=t.name,
                partitions=[
                    partition(
                        partition_index=p.partition_index, error_code=code, error_message=message
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
    )


def _resource_results(key: int) -> Builder:
    """AlterConfigs and IncrementalAlterConfigs: one result per named resource."""

    def build(request: Any, code: int, version: int, message: str) -> Message:
        response = APIS[key].response_class
        result = _element(response, "responses")
        return _make(
            response,
            responses=[
                result(
                    error_code=code,
                    error_message=message,
                    resource_type=r.resource_type,
                    resource_name=r.resource_name,
                )
                for r in request.resources
            ],
        )

    return build


_BUILDERS: dict[int, Builder] = {
    **{key: functools.partial(_partitioned, key) for key in _PARTITIONED},
    9: _offset_fetch,
    10: _find_coordinator,
    19: _topic_results(19, "topics"),
    20: _topic_results(20, "responses"),
    33: _resource_results(33),
    37: _topic_results(37, "results"),
    43: _elect_leaders,
    44: _resource_results(44),
    45: _alter_partition_reassignments,
}


def _top_level(api_key: int) -> bool:
    return any(f.name == "error_code" for f in APIS[api_key].response_class._FIELDS)


def check(api_key: int) -> None:
    """Raise :class:`FaultError` if an error rule cannot be answered for this API."""
    if api_key not in _BUILDERS and not _top_level(api_key):
        raise FaultError(
            f"{APIS[api_key].name} has no error code millpond can inject (its errors live "
            "in per-item results); use a delay, drop or close rule for it"
        )


def error_response(
    api_key: int, version: int, request: Any, code: int, message: str = MESSAGE
) -> Message | None:
    """The response of ``request`` (an ``api_key`` request at ``version``) refusing it
    with ``code`` (and ``message`` where the response carries one); None when that
    version has no field for it (the caller closes the connection instead, the one
    refusal every version understands)."""
    builder = _BUILDERS.get(api_key)
    if builder is not None:
        return builder(request, code, version, message)
    response = APIS[api_key].response_class
    if not _has(response, "error_code", version):
        return None
    kwargs: dict[str, Any] = {"error_code": code}
    if _has(response, "error_message", version):
        kwargs["error_message"] = message
    return _make(response, **kwargs)

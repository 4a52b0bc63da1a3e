"""Configs as records: IncrementalAlterConfigs and AlterConfigs over ConfigRecords.

A config belongs to a resource (:class:`~millpond.controller.image.ConfigResource`):
a topic, a broker by id, or the cluster default (the BROKER resource named "").
Changes become ConfigRecords, one per key that actually changes (a null value deletes
the key), as Kafka's ConfigurationControlManager writes them.

IncrementalAlterConfigs operations, per key, as in Kafka: SET (0) sets the value,
DELETE (1) removes the key, APPEND (2) and SUBTRACT (3) add or remove items of a
comma-separated LIST config (only LIST configs accept them). AlterConfigs (the legacy
API) replaces a resource's whole set: keys left out are deleted.

Topic configs are validated as a whole after the change, each key by its row of
:mod:`millpond.storage.topic_configs` (unknown keys and bad values are INVALID_CONFIG);
broker configs are stored as given (the broker validates what it
reads). Pure functions of the image.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import IntEnum
from typing import NamedTuple

from millpond.controller.image import ConfigResource, ConfigResourceType, MetadataImage
from millpond.controller.record_serde import ApiMessageAndVersion, with_version
from millpond.controller.results import NO_ERROR, ApiError, ControllerResult
from millpond.storage.config import ConfigError, LogConfig
from millpond.storage.config_def import ConfigType
from millpond.storage.topic_configs import TOPIC_CONFIGS
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.metadata.config_record import ConfigRecord

__all__ = [
    "AlterConfigOp",
    "AlterConfigsResource",
    "AlterableConfig",
    "alter_configs",
    "incremental_alter_configs",
    "validate_topic_configs",
]

#: Topic configs of Kafka's LIST type (the only ones APPEND/SUBTRACT may touch).
TOPIC_LIST_CONFIGS = frozenset(
    name for name, row in TOPIC_CONFIGS.items() if row.type is ConfigType.LIST
)


class AlterConfigOp(IntEnum):
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class AlterableConfig(NamedTuple):
    name: str
    op: int
    value: str | None


class AlterConfigsResource(NamedTuple):
    resource_type: int
    resource_name: str
    #: For incremental_alter_configs: AlterableConfig ops; for alter_configs the ``op``
    #: is ignored and the configs are the resource's complete new set.
    configs: Sequence[AlterableConfig]


def validate_topic_configs(configs: Mapping[str, str]) -> ApiError:
    """INVALID_CONFIG when a topic config set has an unknown key or a bad value (each key
    checked by its row in :mod:`millpond.storage.topic_configs`, then the log's settings
    built from them)."""
    try:
        LogConfig.from_properties(configs)
    except ConfigError as exc:
        return ApiError(ErrorCode.INVALID_CONFIG, f"Invalid value for configuration {exc}")
    return NO_ERROR


def _check_resource(image: MetadataImage, resource: ConfigResource) -> ApiError:
    if resource.type == ConfigResourceType.TOPIC:
        if not resource.name:
            return ApiError(ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed.")
        if resource.name not in image.topic_ids_by_name:
            return ApiError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                f"The topic '{resource.name}' does not exist.",
            )
        return NO_ERROR
    if resource.type == ConfigResourceType.BROKER:
        if resource.name and not resource.name.lstrip("-").isdigit():
            return ApiError(
                ErrorCode.INVALID_REQUEST,
                f"Illegal non-integral BROKER resource type name {resource.name}",
            )
        return NO_ERROR
    return ApiError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type {resource.type}")


def _duplicate_keys(configs: Sequence[AlterableConfig]) -> bool:
    names = [c.name for c in configs]
    return len(names) != len(set(names))


#: Topic config defaults, where APPEND and SUBTRACT start when the topic does not set the
#: key (Kafka starts from the config definition's default, e.g. ``delete`` for
#: cleanup.policy, so APPEND compact gives ``delete,compact``).
_TOPIC_DEFAULTS = {name: row.default or "" for name, row in TOPIC_CONFIGS.items()}


def bootstrap_records(min_insync_replicas: int = 1) -> list[ApiMessageAndVersion]:
    """The cluster-wide default a fresh Kafka 4.4 cluster writes with its bootstrap
    (eligible leader replicas need a cluster-level ``min.insync.replicas``, KIP-966): the
    active controller's own ``min.insync.replicas``, so topics describe it with the source
    DYNAMIC_DEFAULT_BROKER_CONFIG, as on Kafka."""
    record = ConfigRecord(
        resource_type=ConfigResourceType.BROKER,
        resource_name="",
        name="min.insync.replicas",
        value=str(min_insync_replicas),
    )
    return [with_version(record)]


def _is_list(resource: ConfigResource, key: str) -> bool:
    return resource.type == ConfigResourceType.TOPIC and key in TOPIC_LIST_CONFIGS


def _incremental(
    resource: ConfigResource, current: Mapping[str, str], ops: Sequence[AlterableConfig]
) -> dict[str, str] | ApiError:
    new = dict(current)
    for op in ops:
        if op.op == AlterConfigOp.SET:
            if op.value is None:
                return ApiError(
                    ErrorCode.INVALID_CONFIG, f"Null value not supported for : {op.name}"
                )
            new[op.name] = op.value
        elif op.op == AlterConfigOp.DELETE:
            new.pop(op.name, None)
        elif op.op in (AlterConfigOp.APPEND, AlterConfigOp.SUBTRACT):
            verb = AlterConfigOp(op.op).name
            if not _is_list(resource, op.name):
                return ApiError(
                    ErrorCode.INVALID_CONFIG,
                    f"Can't {verb} to key {op.name} because its type is not LIST.",
                )
            current_value = new.get(op.name)
            if current_value is None:  # not set on the resource: start from the default
                current_value = _TOPIC_DEFAULTS.get(op.name, "")
            items = [v for v in current_value.split(",") if v]
            values = [v.strip() for v in (op.value or "").split(",") if v.strip()]
            if op.op == AlterConfigOp.APPEND:
                items += [v for v in values if v not in items]
            else:
                items = [v for v in items if v not in values]
            new[op.name] = ",".join(items)
        else:
            return ApiError(ErrorCode.INVALID_REQUEST, f"Unknown alter configs op type {op.op}")
    return new


def _records(
    resource: ConfigResource, current: Mapping[str, str], new: Mapping[str, str]
) -> list[ApiMessageAndVersion]:
    def record(name: str, value: str | None) -> ApiMessageAndVersion:
        return with_version(
            ConfigRecord(
                resource_type=resource.type,
                resource_name=resource.name,
                name=name,
                value=value,
            )
        )

    out = [record(k, v) for k, v in new.items() if current.get(k) != v]
    out += [record(k, None) for k in current if k not in new]
    return out


def _alter(
    image: MetadataImage,
    resources: Sequence[AlterConfigsResource],
    validate_only: bool,
    incremental: bool,
) -> ControllerResult[dict[ConfigResource, ApiError]]:
    results: dict[ConfigResource, ApiError] = {}
    records: list[ApiMessageAndVersion] = []
    for request in resources:
        resource = ConfigResource(request.resource_type, request.resource_name)
        error = _check_resource(image, resource)
        if error.is_success and _duplicate_keys(request.configs):
            error = ApiError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
        if error.is_failure:
            results[resource] = error
            continue
        current = image.config(resource)
        new: dict[str, str] | ApiError
        if incremental:
            new = _incremental(resource, current, request.configs)
        else:
            new = {}
            for c in request.configs:
                if c.value is None:
                    new = ApiError(
                        ErrorCode.INVALID_REQUEST, f"Null value not supported for : {c.name}"
                    )
                    break
                new[c.name] = c.value
        if not isinstance(new, ApiError) and resource.type == ConfigResourceType.TOPIC:
            error = validate_topic_configs(new)
            if error.is_failure:
                new = error
        if isinstance(new, ApiError):
            results[resource] = new
            continue
        results[resource] = NO_ERROR
        records += _records(resource, current, new)
    return ControllerResult(() if validate_only else tuple(records), results)


def incremental_alter_configs(
    image: MetadataImage, resources: Sequence[AlterConfigsResource], *, validate_only: bool
) -> ControllerResult[dict[ConfigResource, ApiError]]:
    """IncrementalAlterConfigs: per resource, its error (NONE on success)."""
    return _alter(image, resources, validate_only, incremental=True)


def alter_configs(
    image: MetadataImage, resources: Sequence[AlterConfigsResource], *, validate_only: bool
) -> ControllerResult[dict[ConfigResource, ApiError]]:
    """AlterConfigs (legacy): each resource's configs replaced by the given set."""
    return _alter(image, resources, validate_only, incremental=False)

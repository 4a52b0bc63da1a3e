"""Topics and partitions: CreateTopics, DeleteTopics and CreatePartitions as records.

Pure functions of the current :class:`~millpond.controller.image.MetadataImage`: each
returns a :class:`~millpond.controller.results.ControllerResult` whose records (TopicRecord,
PartitionRecord, ConfigRecord, RemoveTopicRecord) make the change, and per-topic
answers with Kafka's error codes and messages. Nothing here touches the log.

Placement follows Kafka's rules at the scale we have: replicas go to *usable* brokers
(registered, unfenced, not shutting down), striped round-robin from a random start so
topics created together do not all lead on one broker; the first replica leads and the
ISR is every replica (all usable). A manual assignment keeps its order; its ISR is its
usable replicas. New partitions start at leader epoch 0 and partition epoch 0.

Validation order per topic, as Kafka's controller checks it: the topic name
(Topic.validate), existence, a '.'/'_' collision, the partition shape (manual
assignment or partition count and replication factor, then placement), then configs
(every value parsed with :meth:`LogConfig.from_properties`, unknown keys refused).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from millpond.controller.config_control import validate_topic_configs
from millpond.controller.image import ConfigResourceType, MetadataImage, PartitionRegistration
from millpond.controller.image_records import partition_record
from millpond.controller.record_serde import ApiMessageAndVersion, with_version
from millpond.controller.results import NO_ERROR, ApiError, ControllerResult
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.metadata.config_record import ConfigRecord
from millpond.wire.generated.metadata.remove_topic_record import RemoveTopicRecord
from millpond.wire.generated.metadata.topic_record import TopicRecord

__all__ = [
    "CreatableReplicaAssignment",
    "CreatableTopic",
    "CreatePartitionsResult",
    "CreatePartitionsTopic",
    "CreateTopicResult",
    "DeleteTopicResult",
    "create_partitions",
    "create_topics",
    "delete_topics",
    "validate_manual_assignment",
    "validate_topic_name",
]

MAX_NAME_LENGTH = 249
ZERO_UUID = bytes(16)
#: Kafka's ``MAX_PARTITIONS_PER_BATCH``: the most partitions one CreateTopics may ask for,
#: checked before anything else (more have run Kafka's controller out of memory).
MAX_PARTITIONS_PER_BATCH = 10_000
#: Kafka's ``MAX_RECORDS_PER_USER_OP``: the most metadata records one operation may write
#: (a topic is one record, plus one per partition and one per config).
MAX_RECORDS_PER_USER_OP = 10_000
TOO_MANY_PARTITIONS = ApiError(
    ErrorCode.POLICY_VIOLATION, "Excessively large number of partitions per request."
)
TOO_MANY_RECORDS = ApiError(
    ErrorCode.POLICY_VIOLATION, "Unable to perform excessively large batch operation."
)
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True)
class CreatableReplicaAssignment:
    partition_index: int
    broker_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class CreatableTopic:
    """One topic of a CreateTopics request; -1 means the broker default."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: Sequence[CreatableReplicaAssignment] = ()
    configs: Mapping[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CreateTopicResult:
    name: str
    error: ApiError
    topic_id: bytes = ZERO_UUID
    num_partitions: int = -1
    replication_factor: int = -1
    #: The topic's config overrides as created (the broker adds defaults to describe).
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DeleteTopicResult:
    name: str | None
    topic_id: bytes
    error: ApiError


@dataclass(frozen=True, slots=True)
class CreatePartitionsTopic:
    name: str
    count: int
    #: One replica list per new partition, or None to let the controller place them.
    assignments: Sequence[Sequence[int]] | None = None


@dataclass(frozen=True, slots=True)
class CreatePartitionsResult:
    name: str
    error: ApiError


# -- names --------------------------------------------------------------------------------


def validate_topic_name(name: str) -> ApiError:
    """Kafka's Topic.validate, as INVALID_TOPIC_EXCEPTION with its messages."""
    if not name:
        return _invalid_topic("Topic name is illegal, it can't be empty")
    if name in (".", ".."):
        return _invalid_topic('Topic name cannot be "." or ".."')
    if len(name) > MAX_NAME_LENGTH:
        return _invalid_topic(
            f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} characters, "
            f"topic name: {name}"
        )
    if _LEGAL.fullmatch(name) is None:
        return _invalid_topic(
            f'Topic name "{name}" is illegal, it contains a character other than ASCII '
            "alphanumerics, '.', '_' and '-'"
        )
    return NO_ERROR


def _invalid_topic(message: str) -> ApiError:
    return ApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, message)


def _collision(image: MetadataImage, name: str) -> str | None:
    """An existing topic whose name equals ``name`` once '.' is read as '_' (their
    metric names would collide)."""
    if "." not in name and "_" not in name:
        return None
    key = name.replace(".", "_")
    clashing = [
        other
        for other in image.topic_ids_by_name
        if other != name and other.replace(".", "_") == key
    ]
    return min(clashing) if clashing else None


# -- placement ----------------------------------------------------------------------------


def _place(
    image: MetadataImage,
    start_partition: int,
    count: int,
    replication_factor: int,
    rng: random.Random,
) -> list[tuple[int, ...]] | ApiError:
    usable = image.usable_brokers()
    if replication_factor > len(usable):
        # Kafka's placer: too few registered brokers first, then none unfenced.
        if image.brokers and not usable and replication_factor <= len(image.brokers):
            reason = "All brokers are currently fenced."
        else:
            known = len(image.brokers) if replication_factor > len(image.brokers) else len(usable)
            reason = (
                f"The target replication factor of {replication_factor} cannot be reached "
                f"because only {known} broker(s) are registered."
            )
        return ApiError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Unable to replicate the partition {replication_factor} time(s): {reason}",
        )
    start = rng.randrange(len(usable))
    return [
        tuple(usable[(start + p + i) % len(usable)] for i in range(replication_factor))
        for p in range(start_partition, start_partition + count)
    ]


def validate_manual_assignment(
    image: MetadataImage, replicas: Sequence[int], expected_rf: int | None = None
) -> ApiError:
    """Kafka's validateManualPartitionAssignment: a replica list an operator chose (at
    topic creation, for new partitions, or as a reassignment's target) names each
    registered broker once, ``expected_rf`` of them when given."""
    if not replicas:
        return ApiError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes an empty replica list.",
        )
    seen: set[int] = set()
    for broker_id in sorted(replicas):
        if broker_id not in image.brokers:
            return ApiError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes broker {broker_id}, but no such "
                "broker is registered.",
            )
        if broker_id in seen:
            return ApiError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes the broker {broker_id} more than once.",
            )
        seen.add(broker_id)
    if expected_rf is not None and len(replicas) != expected_rf:
        return ApiError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"The manual partition assignment includes a partition with {len(replicas)} "
            "replica(s), but this is not consistent with previous partitions, which have "
            f"{expected_rf} replica(s).",
        )
    return NO_ERROR


def _check_manual(
    image: MetadataImage, partition: int, replicas: Sequence[int], expected_rf: int | None
) -> ApiError:
    error = validate_manual_assignment(image, replicas, expected_rf)
    if error.is_failure:
        return error
    usable = set(image.usable_brokers())
    if not any(r in usable for r in replicas):
        return ApiError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"All brokers specified in the manual partition assignment for partition "
            f"{partition} are fenced or in controlled shutdown.",
        )
    return NO_ERROR


def _registration(image: MetadataImage, replicas: Sequence[int]) -> PartitionRegistration:
    usable = set(image.usable_brokers())
    isr = tuple(r for r in replicas if r in usable)
    return PartitionRegistration(
        replicas=tuple(replicas), isr=isr, leader=isr[0], leader_epoch=0, partition_epoch=0
    )


# -- CreateTopics -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TopicDefaults:
    """The broker defaults behind -1 (``num.partitions``, ``default.replication.factor``)."""

    num_partitions: int = 1
    replication_factor: int = 1


def _topic_shape(
    image: MetadataImage, topic: CreatableTopic, defaults: TopicDefaults, rng: random.Random
) -> list[PartitionRegistration] | ApiError:
    if topic.assignments:
        if topic.replication_factor != -1:
            return ApiError(
                ErrorCode.INVALID_REQUEST,
                "A manual partition assignment was specified, but replication factor was not "
                "set to -1.",
            )
        if topic.num_partitions != -1:
            return ApiError(
                ErrorCode.INVALID_REQUEST,
                "A manual partition assignment was specified, but numPartitions was not set to -1.",
            )
        by_index: dict[int, tuple[int, ...]] = {}
        expected_rf: int | None = None
        for a in topic.assignments:
            if a.partition_index in by_index:
                return ApiError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Found multiple manual partition assignments for partition "
                    f"{a.partition_index}",
                )
            error = _check_manual(image, a.partition_index, a.broker_ids, expected_rf)
            if error.is_failure:
                return error
            expected_rf = len(a.broker_ids)
            by_index[a.partition_index] = tuple(a.broker_ids)
        if sorted(by_index) != list(range(len(by_index))):
            return ApiError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "partitions should be a consecutive 0-based integer sequence",
            )
        return [_registration(image, by_index[i]) for i in range(len(by_index))]
    if topic.replication_factor < -1 or topic.replication_factor == 0:
        return ApiError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        )
    if topic.num_partitions < -1 or topic.num_partitions == 0:
        return ApiError(
            ErrorCode.INVALID_PARTITIONS,
            "Number of partitions was set to an invalid non-positive value.",
        )
    count = defaults.num_partitions if topic.num_partitions == -1 else topic.num_partitions
    rf = defaults.replication_factor if topic.replication_factor == -1 else topic.replication_factor
    placed = _place(image, 0, count, rf, rng)
    if isinstance(placed, ApiError):
        return placed
    return [_registration(image, replicas) for replicas in placed]


def _new_topic_id(image: MetadataImage, taken: set[bytes], rng: random.Random) -> bytes:
    """A random version-4 UUID, never the zero or the metadata topic's reserved ids."""
    while True:
        raw = bytearray(rng.getrandbits(128).to_bytes(16, "big"))
        raw[6] = (raw[6] & 0x0F) | 0x40
        raw[8] = (raw[8] & 0x3F) | 0x80
        topic_id = bytes(raw)
        # Kafka reserves the all-zero id and the one with only its last bit set.
        if topic_id in (ZERO_UUID, bytes(15) + b"\x01"):
            continue
        if topic_id not in image.topics_by_id and topic_id not in taken:
            return topic_id


def create_topics(
    image: MetadataImage,
    topics: Sequence[CreatableTopic],
    *,
    validate_only: bool,
    rng: random.Random,
    defaults: TopicDefaults | None = None,
) -> ControllerResult[list[CreateTopicResult]]:
    """CreateTopics: one result per distinct name, in request order. A request over
    Kafka's limits fails as a whole, every topic answered with the same error (in
    validation too), as Kafka's controller fails the operation."""
    defaults = defaults or TopicDefaults()
    if _partitions_asked(topics, defaults) > MAX_PARTITIONS_PER_BATCH:
        return ControllerResult(
            (), [CreateTopicResult(t.name, TOO_MANY_PARTITIONS) for t in topics]
        )
    counts: dict[str, int] = {}
    for t in topics:
        counts[t.name] = counts.get(t.name, 0) + 1
    results: list[CreateTopicResult] = []
    records: list[ApiMessageAndVersion] = []
    taken: set[bytes] = set()
    answered: set[str] = set()
    for topic in topics:
        if topic.name in answered:
            continue
        answered.add(topic.name)
        if counts[topic.name] > 1:
            error = ApiError(ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
            results.append(CreateTopicResult(topic.name, error))
            continue
        result, new_records = _create_topic(image, topic, defaults, rng, taken)
        results.append(result)
        records.extend(new_records)
    if len(records) > MAX_RECORDS_PER_USER_OP:
        return ControllerResult((), [CreateTopicResult(t.name, TOO_MANY_RECORDS) for t in topics])
    return ControllerResult(() if validate_only else tuple(records), results)


def _partitions_asked(topics: Sequence[CreatableTopic], defaults: TopicDefaults) -> int:
    """An upper bound of the partitions a CreateTopics would create (Kafka's count: the
    default for -1, nothing for other counts below 1, the assignments when given)."""
    total = 0
    for topic in topics:
        if topic.assignments:
            total += len(topic.assignments)
        elif topic.num_partitions == -1:
            total += defaults.num_partitions
        elif topic.num_partitions > 0:
            total += topic.num_partitions
    return total


def _create_topic(
    image: MetadataImage,
    topic: CreatableTopic,
    defaults: TopicDefaults,
    rng: random.Random,
    taken: set[bytes],
) -> tuple[CreateTopicResult, list[ApiMessageAndVersion]]:
    name = topic.name
    error = validate_topic_name(name)
    if error.is_success and name in image.topic_ids_by_name:
        error = ApiError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
    if error.is_success and (other := _collision(image, name)) is not None:
        error = _invalid_topic(f"Topic '{name}' collides with existing topic: {other}")
    if error.is_failure:
        return CreateTopicResult(name, error), []
    shape = _topic_shape(image, topic, defaults, rng)
    if isinstance(shape, ApiError):
        return CreateTopicResult(name, shape), []
    configs: dict[str, str] = {}
    for key, value in topic.configs.items():
        if value is None:
            error = ApiError(
                ErrorCode.INVALID_CONFIG, f"Null value not supported for topic configs: {key}"
            )
            return CreateTopicResult(name, error), []
        configs[key] = value
    error = validate_topic_configs(configs)
    if error.is_failure:
        return CreateTopicResult(name, error), []
    topic_id = _new_topic_id(image, taken, rng)
    taken.add(topic_id)
    records = [with_version(TopicRecord(name=name, topic_id=topic_id))]
    records += [
        with_version(
            ConfigRecord(
                resource_type=ConfigResourceType.TOPIC, resource_name=name, name=k, value=v
            )
        )
        for k, v in configs.items()
    ]
    records += [with_version(partition_record(topic_id, i, p)) for i, p in enumerate(shape)]
    result = CreateTopicResult(
        name, NO_ERROR, topic_id, len(shape), len(shape[0].replicas), dict(configs)
    )
    return result, records


# -- DeleteTopics -------------------------------------------------------------------------


def delete_topics(
    image: MetadataImage, names: Sequence[str] = (), topic_ids: Sequence[bytes] = ()
) -> ControllerResult[list[DeleteTopicResult]]:
    """DeleteTopics by names and/or ids: a RemoveTopicRecord per existing topic."""
    results: list[DeleteTopicResult] = []
    records: list[ApiMessageAndVersion] = []
    removing: set[bytes] = set()

    def remove(name: str | None, topic_id: bytes) -> None:
        if topic_id not in removing:
            removing.add(topic_id)
            records.append(with_version(RemoveTopicRecord(topic_id=topic_id)))
        results.append(DeleteTopicResult(name, topic_id, NO_ERROR))

    for name in _unique(names, results, lambda n: DeleteTopicResult(n, ZERO_UUID, _DUP_NAME)):
        found = image.topic_ids_by_name.get(name)
        if found is None:
            error = ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            results.append(DeleteTopicResult(name, ZERO_UUID, error))
        else:
            remove(name, found)
    for topic_id in _unique(topic_ids, results, lambda i: DeleteTopicResult(None, i, _DUP_ID)):
        topic = image.topic_by_id(topic_id)
        if topic is None:
            results.append(DeleteTopicResult(None, topic_id, ApiError(ErrorCode.UNKNOWN_TOPIC_ID)))
        else:
            remove(topic.name, topic_id)
    return ControllerResult(tuple(records), results)


_DUP_NAME = ApiError(ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
_DUP_ID = ApiError(ErrorCode.INVALID_REQUEST, "Duplicate topic id.")


def _unique(
    keys: Sequence[K], results: list[DeleteTopicResult], duplicate: Callable[[K], DeleteTopicResult]
) -> list[K]:
    """Keys that occur once; each duplicated key gets one INVALID_REQUEST result."""
    counts: dict[K, int] = {}
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
    for key, n in counts.items():
        if n > 1:
            results.append(duplicate(key))
    return [key for key, n in counts.items() if n == 1]


# -- CreatePartitions ---------------------------------------------------------------------


def create_partitions(
    image: MetadataImage,
    topics: Sequence[CreatePartitionsTopic],
    *,
    validate_only: bool,
    rng: random.Random,
) -> ControllerResult[list[CreatePartitionsResult]]:
    """CreatePartitions: grow topics to ``count`` partitions (never shrink). Over Kafka's
    bounds (10,000 new partitions, one record each, or 10,000 topics) the request fails
    as a whole, every topic answered with the same error (in validation too), as Kafka
    4.4's controller fails the operation."""
    results: list[CreatePartitionsResult] = []
    records: list[ApiMessageAndVersion] = []
    for request in topics:
        error, new = _create_partitions(image, request, rng)
        results.append(CreatePartitionsResult(request.name, error))
        records.extend(new)
    if len(records) > MAX_RECORDS_PER_USER_OP or len(results) > MAX_RECORDS_PER_USER_OP:
        return ControllerResult(
            (), [CreatePartitionsResult(t.name, TOO_MANY_RECORDS) for t in topics]
        )
    return ControllerResult(() if validate_only else tuple(records), results)


def _create_partitions(
    image: MetadataImage, request: CreatePartitionsTopic, rng: random.Random
) -> tuple[ApiError, list[ApiMessageAndVersion]]:
    topic = image.topic(request.name)
    if topic is None:
        return ApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), []
    current = len(topic.partitions)
    if request.count < current:
        return ApiError(
            ErrorCode.INVALID_PARTITIONS,
            f"The topic {request.name} currently has {current} partition(s); "
            f"{request.count} would not be an increase.",
        ), []
    if request.count == current:
        return ApiError(
            ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s)."
        ), []
    additional = request.count - current
    rf = len(topic.partitions[0].replicas) if topic.partitions else 1
    if request.assignments is not None:
        if len(request.assignments) != additional:
            return ApiError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Attempted to add {additional} additional partition(s), but only "
                f"{len(request.assignments)} assignment(s) were specified.",
            ), []
        for i, replicas in enumerate(request.assignments):
            error = _check_manual(image, current + i, replicas, rf)
            if error.is_failure:
                return error, []
        placed: list[tuple[int, ...]] | ApiError = [tuple(r) for r in request.assignments]
    else:
        placed = _place(image, current, additional, rf, rng)
    if isinstance(placed, ApiError):
        return placed, []
    records = [
        with_version(partition_record(topic.topic_id, current + i, _registration(image, r)))
        for i, r in enumerate(placed)
    ]
    return NO_ERROR, records

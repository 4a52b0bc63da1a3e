"""AlterReplicaLogDirs (key 34), v1-2: move partitions between this broker's log.dirs.

Behaviour, as Apache Kafka 4.4's ReplicaManager.alterReplicaLogDirs:
- The request maps each partition to a directory (a partition named twice: the last
  one wins). Each is judged on its own, in this order:
  INVALID_TOPIC_EXCEPTION when the future log's directory name would pass 255
  characters; LOG_DIR_NOT_FOUND when the path is not one of ``log.dirs`` (as absolute
  paths, compared as strings); KAFKA_STORAGE_ERROR when the partition is offline. The
  directory then becomes the partition's preferred one, so a partition that does not
  exist yet is created there later; a partition the metadata does not have answers
  UNKNOWN_TOPIC_OR_PARTITION, one another broker leads REPLICA_NOT_AVAILABLE.
- Otherwise NONE: a log already in that directory stays; a move to another directory
  than the one in progress drops it; else a ``-future`` log is created there, filled
  from the current log in the background (the broker's maintenance) and swapped in
  once it has caught up. DescribeLogDirs shows it meanwhile (``is_future_key``).
- Results are grouped by topic, in the order the request first names them.

Not implemented: authorization (Kafka asks ALTER on the cluster); cordoned directories
(KIP-1066) and offline directories (a directory here never goes offline as a whole).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.alter_replica_log_dirs_request import AlterReplicaLogDirsRequest
from millpond.wire.generated.api.alter_replica_log_dirs_response import (
    AlterReplicaLogDirPartitionResult,
    AlterReplicaLogDirsResponse,
    AlterReplicaLogDirTopicResult,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer

#: The longest directory name a file system takes (Kafka's check, KAFKA-4893).
MAX_DIR_NAME = 255
#: ``.<32 hex digits>-future`` after ``<topic>-<partition>``.
_FUTURE_SUFFIX_LENGTH = 1 + 32 + len("-future")


def handle(
    broker: BrokerServer, ctx: RequestContext, request: AlterReplicaLogDirsRequest
) -> AlterReplicaLogDirsResponse:
    wanted: dict[tuple[str, int], str] = {}
    for log_dir in request.dirs:
        for named in log_dir.topics:
            for partition in named.partitions:
                wanted.pop((named.name, partition), None)  # the last one named wins
                wanted[(named.name, partition)] = log_dir.path
    by_topic: dict[str, list[AlterReplicaLogDirPartitionResult]] = {
        named.name: [] for log_dir in request.dirs for named in log_dir.topics
    }
    for (topic, partition), path in wanted.items():
        code = alter(broker, topic, partition, path)
        by_topic[topic].append(
            AlterReplicaLogDirPartitionResult(partition_index=partition, error_code=code)
        )
    if broker.log_manager.moving():
        broker.maintenance.wake_moves()
    return AlterReplicaLogDirsResponse(
        results=[
            AlterReplicaLogDirTopicResult(topic_name=name, partitions=parts)
            for name, parts in by_topic.items()
            if parts
        ]
    )


def alter(broker: BrokerServer, topic: str, partition: int, path: str) -> ErrorCode:
    """One partition's move to ``path`` (see the module docstring)."""
    manager = broker.log_manager
    if len(f"{topic}-{partition}") + _FUTURE_SUFFIX_LENGTH > MAX_DIR_NAME:
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    log_dir = next((d for d in manager.log_dirs if os.path.abspath(d) == path), None)
    if log_dir is None:
        return ErrorCode.LOG_DIR_NOT_FOUND
    if (topic, partition) in manager.offline:
        return ErrorCode.KAFKA_STORAGE_ERROR
    manager.prefer_log_dir(topic, partition, log_dir)
    image_topic = broker.image.topic(topic)
    registration = None if image_topic is None else image_topic.partitions.get(partition)
    if image_topic is None or registration is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if registration.leader != broker.node_id:
        return ErrorCode.REPLICA_NOT_AVAILABLE
    try:
        broker.replicas.log(image_topic, partition)  # created in log_dir if it was not yet
        manager.alter_log_dir(topic, partition, log_dir)
    except OSError:
        return ErrorCode.KAFKA_STORAGE_ERROR
    return ErrorCode.NONE

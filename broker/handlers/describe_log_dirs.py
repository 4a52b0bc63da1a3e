"""DescribeLogDirs (key 35), v1-5: this broker's log directories and what they hold.

Behaviour, as Apache Kafka 4.4:
- One result per configured log directory (absolute path, in ``log.dirs`` order),
  error NONE, listing each topic with the partitions asked for (``topics`` null: every
  hosted partition; an empty list: none) and their size in bytes (all segments),
  offset lag 0. A partition moving to another directory (AlterReplicaLogDirs) is also
  listed there, with ``is_future_key`` true and, as offset lag, how far its future log
  is behind the current one. Topics with no listed partition are left out; partitions
  whose log is offline are left out.
- v4+: total and usable bytes of the directory's file system (``os.statvfs``; -1 when
  it cannot be read, the schema's "unknown"). v5: ``is_cordoned`` false.

Version notes: v1 changes only throttling; v2 is flexible; v3 adds the top-level error
code; v4 adds total/usable bytes (KIP-827); v5 adds is_cordoned (KIP-1066).
Not implemented: authorization.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.describe_log_dirs_request import DescribeLogDirsRequest
from millpond.wire.generated.api.describe_log_dirs_response import (
    DescribeLogDirsPartition,
    DescribeLogDirsResponse,
    DescribeLogDirsResult,
    DescribeLogDirsTopic,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer


def disk_space(path: str) -> tuple[int, int]:
    """(total, usable) bytes of the file system holding ``path``; (-1, -1) if unknown."""
    try:
        st = os.statvfs(path)
    except OSError:
        return -1, -1
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize


def handle(
    broker: BrokerServer, ctx: RequestContext, request: DescribeLogDirsRequest
) -> DescribeLogDirsResponse:
    manager = broker.log_manager
    wanted = (
        None
        if request.topics is None
        else {(t.topic, p) for t in request.topics for p in t.partitions}
    )
    by_dir: dict[str, dict[str, list[DescribeLogDirsPartition]]] = {d: {} for d in manager.log_dirs}
    for topic, partition in manager.partitions():
        if wanted is not None and (topic, partition) not in wanted:
            continue
        log_dir = manager.log_dir_of(topic, partition)
        if log_dir is None or (topic, partition) in manager.offline:
            continue
        try:
            log = manager.get_log(topic, partition)
        except OSError:
            continue
        if log is None:
            continue
        by_dir[log_dir].setdefault(topic, []).append(
            DescribeLogDirsPartition(
                partition_index=partition, partition_size=log.size, offset_lag=0
            )
        )
        future = manager.future_log(topic, partition)
        future_dir = manager.future_log_dir_of(topic, partition)
        if future is not None and future_dir is not None:
            by_dir[future_dir].setdefault(topic, []).append(
                DescribeLogDirsPartition(
                    partition_index=partition,
                    partition_size=future.size,
                    offset_lag=max(0, log.log_end_offset - future.log_end_offset),
                    is_future_key=True,
                )
            )
    results = []
    for log_dir, topics in by_dir.items():
        total, usable = disk_space(log_dir)
        results.append(
            DescribeLogDirsResult(
                error_code=ErrorCode.NONE,
                log_dir=os.path.abspath(log_dir),
                topics=[DescribeLogDirsTopic(name=n, partitions=ps) for n, ps in topics.items()],
                total_bytes=total,
                usable_bytes=usable,
            )
        )
    return DescribeLogDirsResponse(error_code=ErrorCode.NONE, results=results)

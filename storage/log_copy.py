"""Copying a partition's log into its future log, a step at a time, as Kafka's
ReplicaAlterLogDirsThread does when a replica moves between log directories.

The future log fetches from the current one as a follower fetches from its leader: whole
batches from its own log end, up to ``max_bytes`` per step (``replica.fetch.max.bytes``,
1 MiB), appended with their offsets, leader epochs and timestamps kept. An empty future
log starts at the current log start offset; when that offset falls inside a batch (after
DeleteRecords) the future log restarts at the batch's base offset and its log start is
then advanced, as Kafka's follower does. After each step the future log takes the
current log's high watermark and log start offset.

Sans-I/O: both logs come in, nothing here touches a file but through them.
"""

from __future__ import annotations

from millpond.storage.log import Log
from millpond.wire.records import iter_batches

#: Kafka's replica.fetch.max.bytes default: what one step copies at most.
COPY_STEP_BYTES = 1_048_576


def copy_step(current: Log, future: Log, max_bytes: int = COPY_STEP_BYTES) -> bool:
    """Copy the next batches of ``current`` into ``future``; True when ``future`` has
    caught up (its log end is the current log's)."""
    if future.log_end_offset == future.log_start_offset < current.log_start_offset:
        future.truncate_fully_and_start_at(current.log_start_offset)
    if future.log_end_offset < current.log_start_offset or (
        future.log_end_offset > current.log_end_offset
    ):
        # Behind the current log's start (retention ran meanwhile) or past its end
        # (truncated): start again, as a follower out of range does.
        future.truncate_fully_and_start_at(current.log_start_offset)
    if future.log_end_offset == current.log_end_offset:
        _follow(current, future)
        return True
    data = current.read(future.log_end_offset, max_bytes).records.read()
    if data:
        first = next(iter_batches(data))
        if first.base_offset < future.log_end_offset == future.log_start_offset:
            future.truncate_fully_and_start_at(first.base_offset)
        future.append(data, assign_offsets=False)
    _follow(current, future)
    return future.log_end_offset == current.log_end_offset


def _follow(current: Log, future: Log) -> None:
    future.update_high_watermark(min(current.high_watermark, future.log_end_offset))
    if current.log_start_offset > future.log_start_offset:
        future.delete_records(min(current.log_start_offset, future.high_watermark))

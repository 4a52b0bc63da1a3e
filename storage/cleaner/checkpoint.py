"""The log directory's ``cleaner-offset-checkpoint``: where each log's dirty section begins.

After a cleaning is applied, its log's entry becomes the cleaning's end offset (the
first offset the offset map did not reach); a log without an entry is dirty from its
log start offset. Kafka also rewrites an entry that fell below the log start offset
(retention under ``compact,delete``) or past the log end (truncation), which
:func:`~millpond.storage.cleaner.selection.cleanable_range` reports as
``reset_checkpoint``; and drops the entry of a deleted partition.

The file is shared by every partition of the log directory, so each update reads,
changes and atomically rewrites it. Call from one thread (the event loop): concurrent
updates of one file would lose each other's entries.
"""

from __future__ import annotations

from millpond.storage.checkpoints import read_offset_checkpoint, write_offset_checkpoint
from millpond.storage.fs import FileSystem, join
from millpond.storage.names import CLEANER_OFFSET_CHECKPOINT_FILE

TopicPartition = tuple[str, int]


class CleanerCheckpoint:
    """``cleaner-offset-checkpoint`` of one log directory."""

    def __init__(self, fs: FileSystem, log_dir: str) -> None:
        self._fs = fs
        self.path = join(log_dir, CLEANER_OFFSET_CHECKPOINT_FILE)

    def read(self) -> dict[TopicPartition, int]:
        return read_offset_checkpoint(self._fs, self.path)

    def get(self, partition: TopicPartition) -> int | None:
        return self.read().get(partition)

    def update(self, partition: TopicPartition, offset: int) -> None:
        entries = self.read()
        if entries.get(partition) != offset:
            entries[partition] = offset
            write_offset_checkpoint(self._fs, self.path, entries)

    def remove(self, partition: TopicPartition) -> None:
        entries = self.read()
        if entries.pop(partition, None) is not None:
            write_offset_checkpoint(self._fs, self.path, entries)

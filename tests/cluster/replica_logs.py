"""What each replica's files hold after a run, and whether the replicas agree where
they must (I10): below the high watermark, every in-sync replica holds the records the
consumers read. Read from the brokers' data directories once every node has stopped."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from pathlib import Path

from millpond.wire.records.batch import iter_batches

#: partition -> offset -> value, as one replica's segment files hold them.
ReplicaLog = dict[int, dict[int, int]]


def read_replica(data_dir: Path, topic: str) -> ReplicaLog:
    """A broker's records of ``topic``, from its segment files."""
    records: ReplicaLog = {}
    for partition_dir in data_dir.glob(f"{topic}-*"):
        partition = int(partition_dir.name.rpartition("-")[2])
        found = records.setdefault(partition, {})
        for segment in sorted(partition_dir.glob("*.log")):
            for batch in iter_batches(segment.read_bytes(), allow_truncated_tail=True):
                if batch.is_control:
                    continue
                for record in batch.records():
                    if record.value is not None:
                        found[record.offset] = int(record.value)
    return records


def check_agreement(
    logs: Mapping[int, ReplicaLog],
    read: Mapping[int, Mapping[int, int]],
    ends: Mapping[int, int],
    isrs: Mapping[int, Collection[int]],
) -> list[str]:
    """Each in-sync replica of a partition holds, below the partition's high watermark
    ``ends``, exactly the records the final read of the partition returned (``read``:
    partition -> offset -> value), no more and no fewer."""
    violations = []
    for partition, end in sorted(ends.items()):
        expected = {o: v for o, v in read.get(partition, {}).items() if o < end}
        for node in sorted(isrs[partition]):
            held = logs.get(node, {}).get(partition, {})
            below = {o: v for o, v in held.items() if o < end}
            if below == expected:
                continue
            missing = sorted(expected.keys() - below.keys())
            extra = sorted(below.keys() - expected.keys())
            differ = sorted(o for o in expected.keys() & below.keys() if expected[o] != below[o])
            violations.append(
                f"partition {partition}: in-sync broker {node} disagrees with the final read "
                f"below the high watermark {end}: missing offsets {missing[:5]} "
                f"({len(missing)}), extra {extra[:5]} ({len(extra)}), different values at "
                f"{differ[:5]} ({len(differ)})"
            )
    return violations

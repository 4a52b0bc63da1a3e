"""Differential sequences for brokers on two log directories (JBOD): AlterReplicaLogDirs
and what DescribeLogDirs shows around it. They run against their own pair of brokers
(``jbod_reference_kafka``, ``jbod_millpond_bootstrap``), fresh for the module.

Each side's directories are read from its own DescribeLogDirs (unrecorded) and named A and
B in ``log.dirs`` order. Where Kafka answers in hash order (AlterReplicaLogDirs' results,
DescribeLogDirs' topics and partitions) the recorded answer is sorted; a move's end is
waited for with a bounded poll of DescribeLogDirs.
"""

from __future__ import annotations

import time
from typing import Any

from compat_tests.differential.runner import SequenceFn, Session
from compat_tests.differential.sequences import batch, create_quiet, produce
from millpond.wire.generated.api.alter_replica_log_dirs_request import (
    AlterReplicaLogDir,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirTopic,
)
from millpond.wire.generated.api.describe_log_dirs_request import (
    DescribableLogDirTopic,
    DescribeLogDirsRequest,
)

SEQUENCES: dict[str, SequenceFn] = {}
MOVE_TIMEOUT = 30.0
MOVE_PAUSE = 0.05


def sequence(fn: SequenceFn) -> SequenceFn:
    SEQUENCES[fn.__name__.replace("_", "-")] = fn
    return fn


def log_dirs(s: Session) -> list[str]:
    """The broker's log directories, in the order it reports them (``log.dirs``')."""
    response = s.request(DescribeLogDirsRequest(topics=[]), 4)
    return [r.log_dir for r in response.results]


def alter(
    s: Session, label: str, moves: list[tuple[str, str, list[int]]], version: int = 2
) -> None:
    """AlterReplicaLogDirs of ``(path, topic, partitions)``, recorded with its results sorted."""
    request = AlterReplicaLogDirsRequest(
        dirs=[
            AlterReplicaLogDir(
                path=path, topics=[AlterReplicaLogDirTopic(name=topic, partitions=partitions)]
            )
            for path, topic, partitions in moves
        ]
    )
    data = s.request(request, version).to_data()
    for result in data["results"]:
        result["partitions"].sort(key=lambda p: p["partition_index"])
    data["results"].sort(key=lambda r: r["topic_name"])
    s.record(label, "AlterReplicaLogDirs", version, data)


def placement(s: Session, topics: list[str], dirs: list[str]) -> dict[str, Any]:
    """DescribeLogDirs of ``topics``, sorted, each directory named by its place in ``dirs``."""
    wanted = [DescribableLogDirTopic(topic=s.topic(t), partitions=list(range(8))) for t in topics]
    data: dict[str, Any] = s.request(DescribeLogDirsRequest(topics=wanted), 4).to_data()
    for result in data["results"]:
        result["log_dir"] = "AB"[dirs.index(result["log_dir"])]
        result["total_bytes"] = result["usable_bytes"] = "<bytes>"
        for topic in result["topics"]:
            topic["partitions"].sort(key=lambda p: p["partition_index"])
        result["topics"].sort(key=lambda t: t["name"])
    return data


def settled(s: Session, label: str, topics: list[str], dirs: list[str]) -> None:
    """Record DescribeLogDirs once no replica of ``topics`` is moving, waiting at most
    MOVE_TIMEOUT: a moving replica is listed twice (the future one flagged, except for a
    moment of Kafka's swap, when both copies show unflagged)."""
    deadline = time.monotonic() + MOVE_TIMEOUT
    while True:
        data = placement(s, topics, dirs)
        listed = [
            (t["name"], p["partition_index"])
            for r in data["results"] for t in r["topics"] for p in t["partitions"]
        ]  # fmt: skip
        if len(listed) == len(set(listed)) or time.monotonic() > deadline:
            break
        time.sleep(MOVE_PAUSE)
    s.record(label, "DescribeLogDirs", 4, data)


@sequence
def new_partitions_spread_over_log_dirs(s: Session) -> None:
    # Each new log goes to the directory holding the fewest (the first on a tie), so five
    # new partitions on empty directories make three and two. Which partition goes where
    # is not compared: Kafka creates a new topic's logs in hash order of their partitions
    # (millpond at each partition's first use). First of the module: what the other
    # sequences leave behind would be counted too.
    a, b = log_dirs(s)
    create_quiet(s, "spread", 5)
    for partition in range(5):
        produce(s, "spread", batch(1), partition=partition, label=f"produce p{partition}")
    data = placement(s, ["spread"], [a, b])
    counts = {r["log_dir"]: sum(len(t["partitions"]) for t in r["topics"]) for r in data["results"]}
    s.record("logs per directory", "DescribeLogDirs", 4, {"counts": counts})


@sequence
def alter_replica_log_dirs(s: Session) -> None:
    a, b = log_dirs(s)
    dirs = [a, b]
    create_quiet(s, "m", 3)
    for partition in range(3):
        produce(s, "m", batch(3 + partition), partition=partition, label=f"produce p{partition}")
    alter(
        s,
        "errors",
        [
            ("/no/such/dir", s.topic("m"), [0]),
            (b + "/", s.topic("m"), [1]),
            ("relative", s.topic("m"), [2]),
            (b, s.topic("nope"), [0]),
            (b, s.topic("m"), [9]),
            (b, s.topic("x" * 220), [0]),
        ],
    )
    # Every partition to a place of its own choosing: where each was first put may differ
    # (Kafka creates logs with the topic, millpond at first use).
    alter(s, "moves", [(b, s.topic("m"), [0, 2]), (a, s.topic("m"), [1])], version=1)
    settled(s, "after the moves", ["m"], dirs)
    alter(s, "where they are", [(b, s.topic("m"), [0]), (a, s.topic("m"), [1])])
    produce(s, "m", batch(2, first=3), partition=0, label="produce to the moved p0")
    settled(s, "the moved log grows", ["m"], dirs)
    # Back again: the log moves a second time.
    alter(s, "p0 back", [(a, s.topic("m"), [0])])
    settled(s, "p0 back in A", ["m"], dirs)
    # Named before it exists: the partition is created where it was sent.
    # (A holds two logs, B one: placement by count alone would choose B.)
    alter(s, "before the topic exists", [(a, s.topic("later"), [0])])
    create_quiet(s, "later", 1)
    produce(s, "later", batch(1), label="produce to later")
    settled(s, "later in A", ["later"], dirs)


#: In the order defined (the brokers are shared by the module's sequences).
ALL: list[tuple[str, SequenceFn]] = list(SEQUENCES.items())

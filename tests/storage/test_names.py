from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from millpond.storage.names import (
    EXTRA_SUFFIXES,
    FILE_SUFFIXES,
    MAX_OFFSET,
    PartitionDir,
    SegmentFileName,
    marked_partition_dir_name,
    parse_partition_dir,
    parse_partition_dir_name,
    parse_segment_file_name,
    partition_dir_name,
    segment_file_name,
)

# Kafka's legal topic characters; its topics are at most 249 characters long.
topics = st.text(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", min_size=1, max_size=249
).filter(lambda t: t not in (".", ".."))
partitions = st.integers(0, 2**31 - 1)
unique_ids = st.binary(min_size=16, max_size=16).map(bytes.hex)


def test_segment_file_names_are_twenty_digits() -> None:
    assert segment_file_name(0, ".log") == "00000000000000000000.log"
    assert segment_file_name(368769, ".index") == "00000000000000368769.index"
    assert segment_file_name(368769, ".timeindex") == "00000000000000368769.timeindex"
    assert segment_file_name(5, ".txnindex") == "00000000000000000005.txnindex"
    assert segment_file_name(5, ".snapshot") == "00000000000000000005.snapshot"
    assert segment_file_name(MAX_OFFSET, ".log") == "09223372036854775807.log"
    assert segment_file_name(7, ".log", ".deleted") == "00000000000000000007.log.deleted"
    assert segment_file_name(7, ".index", ".swap") == "00000000000000000007.index.swap"


@pytest.mark.parametrize(
    ("offset", "suffix", "extra"),
    [(-1, ".log", ""), (MAX_OFFSET + 1, ".log", ""), (0, ".idx", ""), (0, ".log", ".tmp")],
)
def test_segment_file_name_refuses(offset: int, suffix: str, extra: str) -> None:
    with pytest.raises(ValueError):
        segment_file_name(offset, suffix, extra)


@given(
    st.integers(0, MAX_OFFSET),
    st.sampled_from(FILE_SUFFIXES),
    st.sampled_from(("", *EXTRA_SUFFIXES)),
)
def test_segment_file_name_round_trip(offset: int, suffix: str, extra: str) -> None:
    name = segment_file_name(offset, suffix, extra)
    assert parse_segment_file_name(name) == SegmentFileName(offset, suffix, extra)
    assert (
        sorted(
            [name, segment_file_name(offset + 1, suffix, extra)] if offset < MAX_OFFSET else [name]
        )[0]
        == name
    )


@pytest.mark.parametrize(
    "name",
    [
        "leader-epoch-checkpoint",
        "partition.metadata",
        "0.log",  # not written by Kafka: offsets always have 20 digits
        "00000000000000000000.log.tmp",
        "00000000000000000000.snapshot.tmp",
        "00000000000000000000.logx",
        "0000000000000000000a.log",
        "99999999999999999999.log",  # beyond Long.MAX_VALUE
        "00000000000000000000.log.deleted.swap",
        "x00000000000000000000.log",
    ],
)
def test_parse_segment_file_name_rejects(name: str) -> None:
    assert parse_segment_file_name(name) is None


def test_partition_dir_names() -> None:
    assert partition_dir_name("orders", 3) == "orders-3"
    assert partition_dir_name("my.topic-name", 12) == "my.topic-name-12"
    assert parse_partition_dir_name("my.topic-name-12") == ("my.topic-name", 12)
    assert parse_partition_dir_name("__consumer_offsets-49") == ("__consumer_offsets", 49)
    assert parse_partition_dir_name("a-b-c-0") == ("a-b-c", 0)


@pytest.mark.parametrize(
    "name",
    [
        "orders",
        "orders-",
        "-3",
        "orders-x",
        "remote-log-index-cache",
        ".lock",
        "a b-1",
        "t-99999999999",
        "t-+3",
    ],
)
def test_not_partition_dirs(name: str) -> None:
    assert parse_partition_dir_name(name) is None
    assert parse_partition_dir(name) is None


def test_marked_partition_dirs() -> None:
    uid = "0123456789abcdef0123456789abcdef"
    assert marked_partition_dir_name("orders", 3, "delete", uid) == f"orders-3.{uid}-delete"
    assert parse_partition_dir(f"orders-3.{uid}-delete") == PartitionDir("orders", 3, "delete")
    assert parse_partition_dir(f"my.t-1-3.{uid}-future") == PartitionDir("my.t-1", 3, "future")
    assert parse_partition_dir(f"orders-3.{uid}-stray") == PartitionDir("orders", 3, "stray")
    assert parse_partition_dir("orders-3") == PartitionDir("orders", 3, "")
    for kind in ("delete", "future", "stray"):
        assert parse_partition_dir_name(f"orders-3.{uid}-{kind}") is None
    with pytest.raises(ValueError):
        marked_partition_dir_name("orders", 3, "gone", uid)
    with pytest.raises(ValueError):
        marked_partition_dir_name("orders", 3, "delete", "not-hex")


def test_long_topics_are_cut_short_in_delete_and_stray_names() -> None:
    uid = "f" * 32
    topic = "t" * 249
    deleted = marked_partition_dir_name(topic, 2147483647, "delete", uid)
    assert len(deleted) == 255
    assert deleted.endswith(f"-2147483647.{uid}-delete")
    stray = parse_partition_dir(marked_partition_dir_name(topic, 1, "stray", uid))
    assert stray is not None and topic.startswith(stray.topic) and stray.partition == 1
    # A future directory keeps the whole topic: it becomes the partition's directory.
    assert marked_partition_dir_name(topic, 0, "future", uid) == f"{topic}-0.{uid}-future"


@pytest.mark.parametrize(
    ("topic", "partition"), [("", 0), ("a b", 0), ("a/b", 0), ("..", 0), ("t", -1), ("t", 2**31)]
)
def test_partition_dir_name_refuses(topic: str, partition: int) -> None:
    with pytest.raises(ValueError):
        partition_dir_name(topic, partition)


@given(topics, partitions)
def test_partition_dir_round_trip(topic: str, partition: int) -> None:
    assert parse_partition_dir_name(partition_dir_name(topic, partition)) == (topic, partition)


@given(topics, partitions, st.sampled_from(("delete", "future", "stray")), unique_ids)
def test_marked_partition_dir_round_trip(topic: str, partition: int, kind: str, uid: str) -> None:
    name = marked_partition_dir_name(topic, partition, kind, uid)
    assert len(name) <= 255 or kind == "future"
    parsed = parse_partition_dir(name)
    assert parsed is not None
    assert (parsed.partition, parsed.kind) == (partition, kind)
    assert topic.startswith(parsed.topic) and (parsed.topic == topic or kind != "future")

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from millpond.storage.checkpoints import (
    CheckpointError,
    MetaProperties,
    format_properties,
    java_date_utc,
    parse_properties,
    parse_uuid,
    read_leader_epoch_checkpoint,
    read_meta_properties,
    read_offset_checkpoint,
    read_partition_metadata,
    write_leader_epoch_checkpoint,
    write_meta_properties,
    write_offset_checkpoint,
    write_partition_metadata,
)
from millpond.storage.fs import FileSystem, MemFileSystem, OsFileSystem, join

from .file_helpers import raw

ROOT = "/data"
TOPIC_ID = bytes(range(16))
TOPIC_ID_TEXT = "AAECAwQFBgcICQoLDA0ODw"  # URL-safe base64 of 00 01 .. 0f, no padding
FAULTY_OPERATIONS = ("open", "truncate", "append", "sync", "rename", "sync_dir")

topics = st.text(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", min_size=1, max_size=40
)
offset_maps = st.dictionaries(
    st.tuples(topics, st.integers(0, 2**31 - 1)), st.integers(-(2**63), 2**63 - 1), max_size=20
)


def mem() -> MemFileSystem:
    fs = MemFileSystem()
    fs.makedirs(ROOT)
    return fs


def put(fs: FileSystem, path: str, data: bytes) -> None:
    handle = fs.open(path, create=True)
    handle.truncate(0)
    handle.append(data)
    handle.sync()
    handle.close()


# -- offset checkpoints ---------------------------------------------------------------------


def test_offset_checkpoint_bytes() -> None:
    fs = mem()
    path = join(ROOT, "recovery-point-offset-checkpoint")
    write_offset_checkpoint(
        fs, path, {("orders", 1): 998, ("orders", 0): 1200, ("__consumer_offsets", 12): 0}
    )
    assert raw(fs, path) == b"0\n3\n__consumer_offsets 12 0\norders 0 1200\norders 1 998\n"
    assert read_offset_checkpoint(fs, path) == {
        ("orders", 0): 1200,
        ("orders", 1): 998,
        ("__consumer_offsets", 12): 0,
    }


def test_empty_offset_checkpoint_bytes() -> None:
    fs = mem()
    path = join(ROOT, "cleaner-offset-checkpoint")
    write_offset_checkpoint(fs, path, {})
    assert raw(fs, path) == b"0\n0\n"
    assert read_offset_checkpoint(fs, path) == {}


@given(offset_maps)
def test_offset_checkpoint_round_trip(offsets: dict[tuple[str, int], int]) -> None:
    fs = mem()
    path = join(ROOT, "log-start-offset-checkpoint")
    write_offset_checkpoint(fs, path, offsets)
    assert read_offset_checkpoint(fs, path) == offsets


def test_offset_checkpoint_on_a_real_disk(tmp_path: Path) -> None:
    fs = OsFileSystem()
    path = str(tmp_path / "replication-offset-checkpoint")
    write_offset_checkpoint(fs, path, {("t", 0): 7})
    assert (tmp_path / "replication-offset-checkpoint").read_bytes() == b"0\n1\nt 0 7\n"
    assert read_offset_checkpoint(fs, path) == {("t", 0): 7}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["replication-offset-checkpoint"]


@pytest.mark.parametrize(
    "data",
    [
        b"",  # Kafka creates the file empty before its first write
        b"0\n",  # a header cut after the version reads as empty in Kafka too
        b"0\r\n2\r\nt 0 5\r\nu 3 -1\r\n",
        b"0\n2\nt\t0   5\nu 3 -1",  # any whitespace between fields, no final newline
        b"0\n2\nt 0 5 \nu 3 -1\n",  # trailing whitespace is dropped by Java's split
        b"0\n3\nt 0 6\nt 0 5\nu 3 -1\n",  # the last of a repeated partition wins
    ],
)
def test_offset_checkpoint_reads_what_kafka_reads(data: bytes) -> None:
    fs = mem()
    path = join(ROOT, "recovery-point-offset-checkpoint")
    put(fs, path, data)
    offsets = read_offset_checkpoint(fs, path)
    assert offsets in ({}, {("t", 0): 5, ("u", 3): -1})


def test_missing_offset_checkpoint_is_empty() -> None:
    assert read_offset_checkpoint(mem(), join(ROOT, "recovery-point-offset-checkpoint")) == {}


@pytest.mark.parametrize(
    ("data", "line", "words"),
    [
        (b"1\n0\n", 1, "version 1"),
        (b"x\n0\n", 1, "version"),
        (b"0\ntwo\n", 2, "entry count"),
        (b"0\n1\nt 0\n", 3, "2 fields"),
        (b"0\n1\nt 0 5 6\n", 3, "4 fields"),
        (b"0\n1\n t 0 5\n", 3, "fields"),  # leading whitespace: Java's split yields an empty topic
        (b"0\n1\nt zero 5\n", 3, "partition"),
        (b"0\n1\nt 0 5.5\n", 3, "offset"),
        (b"0\n1\nt 0 9223372036854775808\n", 3, "out of range"),
        (b"0\n1\nt 2147483648 0\n", 3, "out of range"),
        (b"0\n2\nt 0 5\n\n", 4, "0 fields"),
        (b"0\n2\nt 0 5\n", None, "1 entries, the header says 2"),
        (b"0\n1\nt 0 5\nt 1 5\n", None, "2 entries, the header says 1"),
        (b"0\n1\nt\xff 0 5\n", None, "utf-8"),
        (b"0\n1\nt 0 \xd9\xa3\n", 3, "offset"),  # a non-ASCII digit is not a number
    ],
)
def test_malformed_offset_checkpoint(data: bytes, line: int | None, words: str) -> None:
    fs = mem()
    path = join(ROOT, "recovery-point-offset-checkpoint")
    put(fs, path, data)
    with pytest.raises(CheckpointError) as info:
        read_offset_checkpoint(fs, path)
    assert info.value.path == path and info.value.line == line
    assert path in str(info.value) and words in str(info.value)
    if line is not None:
        assert f"line {line}" in str(info.value)


@pytest.mark.parametrize(
    "offsets", [{("a b", 0): 1}, {("", 0): 1}, {("t", -1): 1}, {("t", 0): 2**63}, {("t\n", 0): 1}]
)
def test_offset_checkpoint_refuses_what_it_cannot_write(
    offsets: dict[tuple[str, int], int],
) -> None:
    with pytest.raises(ValueError):
        write_offset_checkpoint(mem(), join(ROOT, "x"), offsets)


# -- atomicity (all writers share write_atomic; each file kind is checked) --------------------


def _writers() -> list[
    tuple[str, Callable[[FileSystem, int], None], Callable[[FileSystem], object]]
]:
    offsets = join(ROOT, "recovery-point-offset-checkpoint")
    epochs = join(ROOT, "p-0", "leader-epoch-checkpoint")
    meta = join(ROOT, "meta.properties")
    return [
        (
            "offsets",
            lambda fs, n: write_offset_checkpoint(
                fs, offsets, {("t", p): n * 1000 + p for p in range(50)}
            ),
            lambda fs: read_offset_checkpoint(fs, offsets),
        ),
        (
            "epochs",
            lambda fs, n: write_leader_epoch_checkpoint(
                fs, epochs, [(e, n * 100 + e) for e in range(n + 1)]
            ),
            lambda fs: read_leader_epoch_checkpoint(fs, epochs),
        ),
        (
            "partition.metadata",
            lambda fs, n: write_partition_metadata(fs, join(ROOT, "p-0"), bytes([n + 1]) * 16),
            lambda fs: read_partition_metadata(fs, join(ROOT, "p-0")),
        ),
        (
            "meta.properties",
            lambda fs, n: write_meta_properties(fs, meta, MetaProperties(1, "c" * (n + 1), n)),
            lambda fs: read_meta_properties(fs, meta),
        ),
    ]


@pytest.mark.parametrize("operation", FAULTY_OPERATIONS)
@pytest.mark.parametrize("torn", [False, True])
@pytest.mark.parametrize("writer", _writers(), ids=lambda w: w[0])
def test_failed_write_leaves_old_or_new(
    writer: tuple[str, Callable[[FileSystem, int], None], Callable[[FileSystem], object]],
    operation: str,
    torn: bool,
) -> None:
    _, write, read = writer
    fs = mem()
    fs.makedirs(join(ROOT, "p-0"))
    expected = []
    for n in (1, 2):
        fresh = mem()
        fresh.makedirs(join(ROOT, "p-0"))
        write(fresh, n)
        expected.append(read(fresh))
    write(fs, 1)
    fs.fail_next(operation, path_contains="/")
    try:
        write(fs, 2)
    except OSError:
        pass
    else:
        pytest.fail(f"the {operation} fault did not fire")
    assert read(fs) in expected
    fs.crash(random.Random(7), torn=torn)
    assert read(fs) in expected
    # The next write succeeds over whatever the failed one left behind.
    write(fs, 2)
    fs.crash(random.Random(8), torn=torn)
    assert read(fs) == expected[1]


@pytest.mark.parametrize("seed", range(20))
def test_crash_right_after_a_write_keeps_it(seed: int) -> None:
    fs = mem()
    path = join(ROOT, "recovery-point-offset-checkpoint")
    write_offset_checkpoint(fs, path, {("t", 0): 1})
    write_offset_checkpoint(fs, path, {("t", 0): 2})
    fs.crash(random.Random(seed), torn=True)
    assert read_offset_checkpoint(fs, path) == {("t", 0): 2}


# -- leader-epoch-checkpoint ----------------------------------------------------------------


def test_leader_epoch_checkpoint_bytes() -> None:
    fs = mem()
    path = join(ROOT, "leader-epoch-checkpoint")
    write_leader_epoch_checkpoint(fs, path, [(0, 0), (3, 100), (4, 2**62)])
    assert raw(fs, path) == b"0\n3\n0 0\n3 100\n4 4611686018427387904\n"
    assert read_leader_epoch_checkpoint(fs, path) == [(0, 0), (3, 100), (4, 2**62)]


@pytest.mark.parametrize(
    ("data", "line"),
    [
        (b"0\n1\n3\n", 3),
        (b"0\n1\n3 100 1\n", 3),
        (b"0\n1\n2147483648 0\n", 3),
        (b"2\n0\n", 1),
        (b"0\n2\n1 1\n", None),
    ],
)
def test_malformed_leader_epoch_checkpoint(data: bytes, line: int | None) -> None:
    fs = mem()
    path = join(ROOT, "leader-epoch-checkpoint")
    put(fs, path, data)
    with pytest.raises(CheckpointError) as info:
        read_leader_epoch_checkpoint(fs, path)
    assert info.value.line == line and path in str(info.value)


# -- partition.metadata ---------------------------------------------------------------------


def test_partition_metadata_bytes() -> None:
    fs = mem()
    write_partition_metadata(fs, ROOT, TOPIC_ID)
    assert (
        raw(fs, join(ROOT, "partition.metadata"))
        == f"version: 0\ntopic_id: {TOPIC_ID_TEXT}".encode()
    )
    assert read_partition_metadata(fs, ROOT) == TOPIC_ID


@given(st.binary(min_size=16, max_size=16).filter(any))
def test_partition_metadata_round_trip(topic_id: bytes) -> None:
    fs = mem()
    write_partition_metadata(fs, ROOT, topic_id)
    assert read_partition_metadata(fs, ROOT) == topic_id


@pytest.mark.parametrize(
    "text",
    [
        f"version: 0\ntopic_id: {TOPIC_ID_TEXT}\n",
        f"version:   0\r\ntopic_id:\t{TOPIC_ID_TEXT}",
        # Kafka reads newer versions too (for downgrades) and ignores further lines.
        f"version: 1\ntopic_id: {TOPIC_ID_TEXT}\nsomething: else\n",
        f"version: 0\ntopic_id: {TOPIC_ID_TEXT}==",
    ],
)
def test_partition_metadata_reads_what_kafka_reads(text: str) -> None:
    fs = mem()
    put(fs, join(ROOT, "partition.metadata"), text.encode())
    assert read_partition_metadata(fs, ROOT) == TOPIC_ID


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("", 1),
        ("version: 0", 2),
        ("version:0\ntopic_id: AAECAwQFBgcICQoLDA0ODw", 1),
        ("version: -1\ntopic_id: AAECAwQFBgcICQoLDA0ODw", 1),
        ("version: zero\ntopic_id: AAECAwQFBgcICQoLDA0ODw", 1),
        ("topic_id: AAECAwQFBgcICQoLDA0ODw\nversion: 0", 1),
        ("version: 0\ntopic: AAECAwQFBgcICQoLDA0ODw", 2),
        ("version: 0\ntopic_id: AAECAwQFBgcICQoLDA0OD", 2),
        ("version: 0\ntopic_id: AAECAwQFBgcICQoLDA0OD!", 2),
        ("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", 2),  # the zero Uuid
    ],
)
def test_malformed_partition_metadata(text: str, line: int) -> None:
    fs = mem()
    path = join(ROOT, "partition.metadata")
    put(fs, path, text.encode())
    with pytest.raises(CheckpointError) as info:
        read_partition_metadata(fs, ROOT)
    assert info.value.line == line and path in str(info.value)


def test_partition_metadata_refuses_zero_or_short_ids() -> None:
    for topic_id in (bytes(16), b"short"):
        with pytest.raises(ValueError):
            write_partition_metadata(mem(), ROOT, topic_id)


def test_missing_partition_metadata() -> None:
    with pytest.raises(FileNotFoundError):
        read_partition_metadata(mem(), ROOT)


def test_parse_uuid() -> None:
    assert parse_uuid(TOPIC_ID_TEXT) == TOPIC_ID
    for bad in (
        "",
        TOPIC_ID_TEXT + "A",
        "AAECAwQFBgcICQoLDA0OD/",
        "AAECAwQFBgcICQoLDA0OD+",
        " " + TOPIC_ID_TEXT,
    ):
        with pytest.raises(ValueError):
            parse_uuid(bad)


# -- meta.properties ------------------------------------------------------------------------

DIRECTORY_ID = bytes.fromhex("6d9d1bd7e9e04a4c8c8e0f1f2e3d4c5b")


def test_java_date() -> None:
    assert java_date_utc(0) == "Thu Jan 01 00:00:00 UTC 1970"
    assert java_date_utc(1_700_000_000_999) == "Tue Nov 14 22:13:20 UTC 2023"
    assert java_date_utc(951_782_400_000) == "Tue Feb 29 00:00:00 UTC 2000"


def test_meta_properties_bytes() -> None:
    fs = mem()
    path = join(ROOT, "meta.properties")
    meta = MetaProperties(1, "J8u3mQ4DRuK1Qm2n9Xn3bA", 1, DIRECTORY_ID)
    write_meta_properties(fs, path, meta, written_at_ms=1_700_000_000_000)
    assert raw(fs, path) == (
        b"#\n#Tue Nov 14 22:13:20 UTC 2023\n"
        b"cluster.id=J8u3mQ4DRuK1Qm2n9Xn3bA\ndirectory.id=bZ0b1-ngSkyMjg8fLj1MWw\nnode.id=1\nversion=1\n"
    )
    assert read_meta_properties(fs, path) == meta
    write_meta_properties(fs, path, MetaProperties(1, "c", 2))
    assert raw(fs, path) == b"#\ncluster.id=c\nnode.id=2\nversion=1\n"


def test_meta_properties_as_java_8_to_17_wrote_it() -> None:
    fs = mem()
    path = join(ROOT, "meta.properties")
    text = (
        "#\n#Wed Feb 21 10:47:17 UTC 2024\n"
        "node.id=3\ndirectory.id=bZ0b1-ngSkyMjg8fLj1MWw\nversion=1\ncluster.id=J8u3mQ4DRuK1Qm2n9Xn3bA\n"
    )
    put(fs, path, text.encode())
    assert read_meta_properties(fs, path) == MetaProperties(
        1, "J8u3mQ4DRuK1Qm2n9Xn3bA", 3, DIRECTORY_ID
    )


def test_meta_properties_version_0() -> None:
    fs = mem()
    path = join(ROOT, "meta.properties")
    put(fs, path, b"version=0\nbroker.id=7\ncluster.id=abc\n")
    assert read_meta_properties(fs, path) == MetaProperties(0, "abc", 7)
    put(fs, path, b"#no version: defaults to 0\n")
    assert read_meta_properties(fs, path) == MetaProperties(0)
    write_meta_properties(fs, path, MetaProperties(0, "abc", 7))
    assert raw(fs, path) == b"#\nbroker.id=7\ncluster.id=abc\nversion=0\n"


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("version=1\ncluster.id=c\n", "no node.id"),
        ("version=1\nnode.id=1\n", "no cluster.id"),
        ("version=2\nnode.id=1\ncluster.id=c\n", "unknown version 2"),
        ("version=one\n", "version"),
        ("version=1\nnode.id=x\ncluster.id=c\n", "node.id"),
        ("version=1\nnode.id=1\ncluster.id=c\ndirectory.id=nope\n", "Uuid"),
        ("version=1\nnode.id=1\ncluster.id=c\\u00zz\n", "\\uxxxx"),
    ],
)
def test_malformed_meta_properties(text: str, words: str) -> None:
    fs = mem()
    path = join(ROOT, "meta.properties")
    put(fs, path, text.encode())
    with pytest.raises(CheckpointError) as info:
        read_meta_properties(fs, path)
    assert path in str(info.value) and words in str(info.value)


def test_java_properties_syntax() -> None:
    text = (
        "# comment\n! another\n\n"
        "  a = 1\n"
        "b:2\n"
        "c 3\n"
        "d=\\ lead\\tand\\u0041\\\n"
        "     continued\n"
        "e\\=f=g\\:h\n"
        "#x=not a comment when continued? no: a comment\n"
        "f=\\\\\n"
        "g=1\n"
        "g=2\n"
        "h\n"
        "i=\\uD83D\\uDE00\n"
    )
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "d": " lead\tandAcontinued",
        "e=f": "g:h",
        "f": "\\",
        "g": "2",
        "h": "",
        "i": "\U0001f600",
    }


@given(st.dictionaries(st.text(min_size=1, max_size=8), st.text(max_size=8), max_size=6))
def test_properties_round_trip(props: dict[str, str]) -> None:
    assert parse_properties(format_properties(props, 0).decode("ascii")) == props


def test_properties_escapes_as_java_does() -> None:
    assert format_properties({"a b": " x=y:#! z\t\\", "k": "é"}) == (
        b"#\na\\ b=\\ x\\=y\\:\\#\\! z\\t\\\\\nk=\\u00E9\n"
    )

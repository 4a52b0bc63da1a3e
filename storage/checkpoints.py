"""Kafka's small text files of a log directory, read strictly and written atomically.

Every writer goes through :func:`~millpond.storage.fs.write_atomic` (write ``<name>.tmp``,
fsync, rename over, fsync the directory), so a crash leaves the old file or the new one,
never a mix; a leftover ``.tmp`` is ignored by every reader. Text is UTF-8 with ``\\n``
line ends (what Kafka writes on Linux); readers accept ``\\n``, ``\\r\\n`` and ``\\r``, as
Java's line readers do. A malformed file raises :class:`CheckpointError`, naming the file
and, where there is one, the line.

Offset checkpoints (``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
``replication-offset-checkpoint``, ``cleaner-offset-checkpoint``; one per log dir)::

    0                 version
    2                 number of entries
    orders 0 1200     topic, partition, offset: one entry a line, single spaces
    orders 1 998

``leader-epoch-checkpoint`` (one per partition directory) has the same frame with
``epoch start_offset`` entries, in epoch order. Readers split entries on runs of
whitespace, as Kafka does; an empty file (Kafka creates one before its first write) or a
missing file reads as no entries.

``partition.metadata`` (one per partition directory) is two lines and no final newline::

    version: 0
    topic_id: <topic id, URL-safe base64 without padding>

``meta.properties`` (one per log dir) is a Java properties file; KRaft writes version 1
with ``cluster.id``, ``node.id`` and ``directory.id``. We write what Java's
``Properties.store`` writes from Java 18 on: an empty comment, a date comment, then the
keys in sorted order (earlier Javas use hash order; readers do not care). Unlike Java we
write a non-ASCII character as a ``\\uXXXX`` escape, because Kafka reads this file as
ISO-8859-1 and would garble raw UTF-8.
"""

from __future__ import annotations

import base64
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, NamedTuple, TypeVar

from millpond.storage.fs import FileSystem, join, write_atomic
from millpond.storage.names import PARTITION_METADATA_FILE
from millpond.wire.message import uuid_to_str

T = TypeVar("T")

OFFSET_CHECKPOINT_VERSION: Final = 0
LEADER_EPOCH_CHECKPOINT_VERSION: Final = 0
PARTITION_METADATA_VERSION: Final = 0

_INT32: Final = (-(1 << 31), (1 << 31) - 1)
_INT64: Final = (-(1 << 63), (1 << 63) - 1)
_JAVA_INT = re.compile(r"[+-]?[0-9]+")
_JAVA_SPACE = re.compile(r"[ \t\n\x0b\f\r]+")
"""Java's ``\\s``: ASCII whitespace only."""
_LINE_END = re.compile(r"\r\n|\r|\n")


class CheckpointError(Exception):
    """A checkpoint, ``partition.metadata`` or ``meta.properties`` file we cannot read."""

    def __init__(self, path: str, problem: str, line: int | None = None) -> None:
        where = path if line is None else f"{path}, line {line}"
        super().__init__(f"malformed file {where}: {problem}")
        self.path = path
        self.problem = problem
        self.line = line


# -- shared plumbing ------------------------------------------------------------------------


def _read_bytes(fs: FileSystem, path: str) -> bytes:
    handle = fs.open(path)
    try:
        return handle.read_at(0, handle.size())
    finally:
        handle.close()


def _read_text(fs: FileSystem, path: str, encoding: str = "utf-8") -> str:
    data = _read_bytes(fs, path)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise CheckpointError(
            path, f"not {encoding} text ({exc.reason} at byte {exc.start})"
        ) from None


def _lines(text: str) -> list[str]:
    """Lines as Java's ``readLine`` returns them: a final line end adds no empty line."""
    lines = _LINE_END.split(text)
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _check(value: int, bounds: tuple[int, int], what: str) -> int:
    if not bounds[0] <= value <= bounds[1]:
        raise ValueError(f"{what} {value} is out of range")
    return value


def _parse_int(text: str, bounds: tuple[int, int], what: str) -> int:
    """A decimal integer as Java's ``parseInt``/``parseLong`` reads it (ASCII digits)."""
    if _JAVA_INT.fullmatch(text) is None:
        raise ValueError(f"{what} {text!r} is not a number")
    return _check(int(text), bounds, what)


def _fields(line: str) -> list[str]:
    """Java's ``Pattern.split`` on ``\\s+``: a leading separator gives an empty first
    field (so the line is malformed), trailing separators give nothing."""
    parts = _JAVA_SPACE.split(line)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _read_checkpoint(
    fs: FileSystem, path: str, version: int, parse_entry: Callable[[list[str]], T]
) -> list[T]:
    try:
        lines = _lines(_read_text(fs, path))
    except FileNotFoundError:
        return []
    if not lines:
        return []
    try:
        found_version = _parse_int(lines[0], _INT32, "version")
    except ValueError as exc:
        raise CheckpointError(path, str(exc), 1) from None
    if found_version != version:
        raise CheckpointError(path, f"version {found_version}, expected {version}", 1)
    if len(lines) == 1:
        return []
    try:
        expected = _parse_int(lines[1], _INT32, "entry count")
    except ValueError as exc:
        raise CheckpointError(path, str(exc), 2) from None
    entries = []
    for number, line in enumerate(lines[2:], start=3):
        try:
            entries.append(parse_entry(_fields(line)))
        except ValueError as exc:
            raise CheckpointError(path, f"{exc}: {line!r}", number) from None
    if len(entries) != expected:
        raise CheckpointError(path, f"{len(entries)} entries, the header says {expected}")
    return entries


def _format_checkpoint(version: int, entries: list[str]) -> bytes:
    return "".join(f"{line}\n" for line in [str(version), str(len(entries)), *entries]).encode()


# -- offset checkpoints ---------------------------------------------------------------------


def _parse_offset_entry(fields: list[str]) -> tuple[tuple[str, int], int]:
    if len(fields) != 3:
        raise ValueError(f"{len(fields)} fields, expected topic, partition and offset")
    topic, partition, offset = fields
    if not topic:
        raise ValueError("empty topic")
    return (topic, _parse_int(partition, _INT32, "partition")), _parse_int(offset, _INT64, "offset")


def format_offset_checkpoint(offsets: Mapping[tuple[str, int], int]) -> bytes:
    """The file's bytes; entries sorted by topic and partition, so equal maps give equal
    files (Kafka writes hash order, which no reader depends on)."""
    lines = []
    for (topic, partition), offset in sorted(offsets.items()):
        if not topic or _JAVA_SPACE.search(topic):
            raise ValueError(f"topic {topic!r} cannot be written to an offset checkpoint")
        _check(partition, (0, _INT32[1]), "partition")
        _check(offset, _INT64, "offset")
        lines.append(f"{topic} {partition} {offset}")
    return _format_checkpoint(OFFSET_CHECKPOINT_VERSION, lines)


def read_offset_checkpoint(fs: FileSystem, path: str) -> dict[tuple[str, int], int]:
    """``{(topic, partition): offset}``; empty for a missing or empty file. A partition
    listed twice keeps its last offset, as Kafka's map does."""
    return dict(_read_checkpoint(fs, path, OFFSET_CHECKPOINT_VERSION, _parse_offset_entry))


def write_offset_checkpoint(
    fs: FileSystem, path: str, offsets: Mapping[tuple[str, int], int]
) -> None:
    write_atomic(fs, path, format_offset_checkpoint(offsets))


# -- leader-epoch-checkpoint ----------------------------------------------------------------


def _parse_epoch_entry(fields: list[str]) -> tuple[int, int]:
    if len(fields) != 2:
        raise ValueError(f"{len(fields)} fields, expected epoch and start offset")
    return _parse_int(fields[0], _INT32, "epoch"), _parse_int(fields[1], _INT64, "start offset")


def format_leader_epoch_checkpoint(entries: Iterable[tuple[int, int]]) -> bytes:
    lines = []
    for epoch, start_offset in entries:
        _check(epoch, _INT32, "epoch")
        _check(start_offset, _INT64, "start offset")
        lines.append(f"{epoch} {start_offset}")
    return _format_checkpoint(LEADER_EPOCH_CHECKPOINT_VERSION, lines)


def read_leader_epoch_checkpoint(fs: FileSystem, path: str) -> list[tuple[int, int]]:
    """``[(epoch, start_offset), ...]`` in file order; empty for a missing or empty file.
    Ordering is :class:`~millpond.storage.leader_epochs.LeaderEpochCache`'s business."""
    return _read_checkpoint(fs, path, LEADER_EPOCH_CHECKPOINT_VERSION, _parse_epoch_entry)


def write_leader_epoch_checkpoint(
    fs: FileSystem, path: str, entries: Iterable[tuple[int, int]]
) -> None:
    write_atomic(fs, path, format_leader_epoch_checkpoint(entries))


# -- Kafka Uuids in text --------------------------------------------------------------------

_UUID_TEXT = re.compile(r"[A-Za-z0-9_-]{22}(==)?")


def parse_uuid(text: str) -> bytes:
    """A Kafka Uuid from its text form (URL-safe base64 of 16 bytes, padding optional),
    strictly: any character outside the alphabet is an error."""
    if _UUID_TEXT.fullmatch(text) is None:
        raise ValueError(f"{text!r} is not a Kafka Uuid (22 URL-safe base64 characters)")
    return base64.urlsafe_b64decode(text[:22] + "==")


# -- partition.metadata ---------------------------------------------------------------------


def format_partition_metadata(topic_id: bytes) -> bytes:
    if len(topic_id) != 16 or topic_id == bytes(16):
        raise ValueError("a topic id is 16 bytes and not all zero")
    return f"version: {PARTITION_METADATA_VERSION}\ntopic_id: {uuid_to_str(topic_id)}".encode()


def read_partition_metadata(fs: FileSystem, partition_dir: str) -> bytes:
    """The 16-byte topic id. Versions above 0 are read as 0 (Kafka reads them so, for
    downgrades); a missing file raises FileNotFoundError."""
    path = join(partition_dir, PARTITION_METADATA_FILE)
    lines = _lines(_read_text(fs, path))
    values = []
    for number, key in enumerate(("version", "topic_id"), start=1):
        if len(lines) < number:
            raise CheckpointError(path, f"no {key} line", number)
        parts = re.split(r":[ \t\n\x0b\f\r]+", lines[number - 1], maxsplit=1)
        if len(parts) != 2 or parts[0] != key:
            raise CheckpointError(
                path, f"expected '{key}: ...', found {lines[number - 1]!r}", number
            )
        values.append(parts[1])
    try:
        version = _parse_int(values[0], _INT32, "version")
    except ValueError as exc:
        raise CheckpointError(path, str(exc), 1) from None
    if version < PARTITION_METADATA_VERSION:
        raise CheckpointError(path, f"unknown version {version}", 1)
    try:
        topic_id = parse_uuid(values[1])
    except ValueError as exc:
        raise CheckpointError(path, str(exc), 2) from None
    if topic_id == bytes(16):
        raise CheckpointError(path, "the topic id is the zero Uuid", 2)
    return topic_id


def write_partition_metadata(fs: FileSystem, partition_dir: str, topic_id: bytes) -> None:
    write_atomic(
        fs, join(partition_dir, PARTITION_METADATA_FILE), format_partition_metadata(topic_id)
    )


# -- meta.properties ------------------------------------------------------------------------


class _MetaFields(NamedTuple):
    version: int
    cluster_id: str | None
    node_id: int | None
    directory_id: bytes | None


class MetaProperties(_MetaFields):
    """The identity of a log directory. Version 1 (KRaft) requires ``cluster_id`` and
    ``node_id``; version 0 (ZooKeeper era) stored the node id as ``broker.id``."""

    __slots__ = ()

    def __new__(
        cls,
        version: int = 1,
        cluster_id: str | None = None,
        node_id: int | None = None,
        directory_id: bytes | None = None,
    ) -> MetaProperties:
        if version not in (0, 1):
            raise ValueError(f"meta.properties has no version {version}")
        if version == 1 and (cluster_id is None or node_id is None):
            raise ValueError("meta.properties version 1 needs cluster.id and node.id")
        if node_id is not None:
            _check(node_id, _INT32, "node.id")
        if directory_id is not None and len(directory_id) != 16:
            raise ValueError("directory.id is a 16-byte Uuid")
        return super().__new__(cls, version, cluster_id, node_id, directory_id)

    def _replace(self, **changes: Any) -> MetaProperties:
        """A copy with ``changes``, validated as a new one is."""
        return MetaProperties(*super()._replace(**changes))

    def to_properties(self) -> dict[str, str]:
        props = {"version": str(self.version)}
        if self.cluster_id is not None:
            props["cluster.id"] = self.cluster_id
        if self.node_id is not None:
            props["broker.id" if self.version == 0 else "node.id"] = str(self.node_id)
        if self.directory_id is not None:
            props["directory.id"] = uuid_to_str(self.directory_id)
        return props


_DAYS: Final = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS: Final = (
    "Jan",
    "Feb",
    "Mar",
    "Apr",
    "May",
    "Jun",
    "Jul",
    "Aug",
    "Sep",
    "Oct",
    "Nov",
    "Dec",
)


def java_date_utc(epoch_ms: int) -> str:
    """``java.util.Date.toString()`` in UTC, e.g. ``Thu Jan 01 00:00:00 UTC 1970``: the
    date comment ``Properties.store`` writes."""
    t = time.gmtime(epoch_ms // 1000)
    return (
        f"{_DAYS[t.tm_wday]} {_MONTHS[t.tm_mon - 1]} {t.tm_mday:02d} "
        f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d} UTC {t.tm_year}"
    )


def _escape_property(text: str, *, is_key: bool) -> str:
    out = []
    for i, char in enumerate(text):
        if char == " ":
            out.append("\\ " if is_key or i == 0 else " ")
        elif char in "\\=:#!":
            out.append("\\" + char)
        elif char in "\t\n\r\f":
            out.append("\\" + "tnrf"["\t\n\r\f".index(char)])
        elif " " < char <= "~":
            out.append(char)
        else:
            encoded = char.encode("utf-16-be")  # Java escapes UTF-16 code units
            for j in range(0, len(encoded), 2):
                out.append(f"\\u{int.from_bytes(encoded[j : j + 2]):04X}")
    return "".join(out)


def format_properties(props: Mapping[str, str], written_at_ms: int | None = None) -> bytes:
    """A Java properties file as ``Properties.store(writer, "")`` writes it (Java 18+
    order); without ``written_at_ms`` the date comment is left out."""
    lines = ["#"]
    if written_at_ms is not None:
        lines.append("#" + java_date_utc(written_at_ms))
    for key in sorted(props):
        lines.append(
            f"{_escape_property(key, is_key=True)}={_escape_property(props[key], is_key=False)}"
        )
    return "".join(f"{line}\n" for line in lines).encode("ascii")


_PROPERTY_SPACE: Final = " \t\f"
_PROPERTY_ESCAPES: Final = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> Iterable[str]:
    """Join continuation lines (an odd number of trailing backslashes) and drop blank
    and comment lines, as ``Properties.load`` does."""
    pending: str | None = None
    for natural in _LINE_END.split(text):
        stripped = natural.lstrip(_PROPERTY_SPACE)
        if pending is None and (not stripped or stripped[0] in "#!"):
            continue
        line = stripped if pending is None else pending + stripped
        backslashes = len(line) - len(line.rstrip("\\"))
        if backslashes % 2:
            pending = line[:-1]
            continue
        pending = None
        yield line
    if pending:
        yield pending


def _unescape_property(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        char = text[i]
        i += 1
        if char != "\\" or i == len(text):
            out.append(char)
            continue
        char = text[i]
        i += 1
        if char == "u":
            digits = text[i : i + 4]
            if re.fullmatch(r"[0-9A-Fa-f]{4}", digits) is None:
                raise ValueError(f"malformed \\uxxxx escape {text[i - 2 : i + 4]!r}")
            out.append(chr(int(digits, 16)))
            i += 4
        else:
            out.append(_PROPERTY_ESCAPES.get(char, char))
    # Surrogate pairs written as two \u escapes become one character.
    return "".join(out).encode("utf-16", "surrogatepass").decode("utf-16")


def parse_properties(text: str) -> dict[str, str]:
    """A Java properties file (``Properties.load``): ``key=value``, ``key: value`` or
    ``key value``, with escapes and continuation lines; the last duplicate wins."""
    props: dict[str, str] = {}
    for line in _logical_lines(text):
        i, escaped = 0, False
        while i < len(line):
            char = line[i]
            if not escaped and (char in "=:" or char in _PROPERTY_SPACE):
                break
            escaped = char == "\\" and not escaped
            i += 1
        key, rest = line[:i], line[i:]
        rest = rest.lstrip(_PROPERTY_SPACE)
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(_PROPERTY_SPACE)
        props[_unescape_property(key)] = _unescape_property(rest)
    return props


def read_meta_properties(fs: FileSystem, path: str) -> MetaProperties:
    """Read ``meta.properties`` (ISO-8859-1, as Kafka reads it); keys other than
    version, cluster.id, node.id/broker.id and directory.id are ignored, as Kafka does."""
    text = _read_text(fs, path, "latin-1")
    try:
        props = parse_properties(text)
    except ValueError as exc:
        raise CheckpointError(path, str(exc)) from None
    try:
        version = _parse_int(props.get("version", "0"), _INT32, "version")
        if version not in (0, 1):
            raise ValueError(f"unknown version {version}")
        id_key = "broker.id" if version == 0 else "node.id"
        node_text = props.get(id_key)
        if node_text is None and version == 1:
            raise ValueError("no node.id")
        node_id = None if node_text is None else _parse_int(node_text, _INT32, id_key)
        if version == 1 and "cluster.id" not in props:
            raise ValueError("no cluster.id")
        directory_text = props.get("directory.id")
        directory_id = None if directory_text is None else parse_uuid(directory_text)
        return MetaProperties(version, props.get("cluster.id"), node_id, directory_id)
    except ValueError as exc:
        raise CheckpointError(path, str(exc)) from None


def write_meta_properties(
    fs: FileSystem, path: str, meta: MetaProperties, *, written_at_ms: int | None = None
) -> None:
    """Write ``meta.properties``; pass the clock's ``now_ms()`` as ``written_at_ms`` for
    the date comment Kafka writes (storage never reads the clock itself)."""
    write_atomic(fs, path, format_properties(meta.to_properties(), written_at_ms))

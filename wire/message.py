"""The base classes of generated messages, and what the generator records about fields.

Every generated struct is a slotted :class:`Struct`; every top-level message (request,
response, header, stored record) is a :class:`Message` with versioned ``encode`` and
``decode``. :class:`Field` metadata serves the generic paths only (equality, ``repr``,
conversion to plain data, test strategies); the generated readers and writers never
consult it.
"""

from __future__ import annotations

import base64
import operator
from collections.abc import Callable, Iterator
from typing import Any, ClassVar, NamedTuple, Self

from millpond.wire.exceptions import DecodeError, EncodeError
from millpond.wire.primitives import DECODE_FAILURES, ENCODE_FAILURES, Buffer, TaggedFields
from millpond.wire.splice import records_bytes, records_size


class Field(NamedTuple):
    """What the generator knew about one field, for the generic code paths
    (equality, conversion to data, test strategies); the hot paths never read it."""

    name: str
    kind: str
    """bool, int8, int16, uint16, int32, uint32, int64, float64, uuid, string, bytes,
    records, struct, or array."""
    element: str | None
    """For arrays: the element kind (a primitive kind name, or 'struct')."""
    struct: type[Struct] | None
    versions: tuple[int, int]
    nullable: tuple[int, int] | None
    tagged: tuple[int, int] | None
    tag: int | None
    default: Any
    flexible: tuple[int, int] | None
    """Field-level flexible versions, when they override the message's."""

    def present(self, version: int) -> bool:
        return self.versions[0] <= version <= self.versions[1]

    def nullable_at(self, version: int) -> bool:
        return self.nullable is not None and self.nullable[0] <= version <= self.nullable[1]

    def tagged_at(self, version: int) -> bool:
        return self.tagged is not None and self.tagged[0] <= version <= self.tagged[1]


_MISSING: Any = object()
_EQ_KEYS: dict[type[Struct], Callable[[Any], Any]] = {}
"""Per class, a getter of all its slot values as one tuple (built on first comparison)."""
EMPTY: Any = type("EmptyDefault", (), {"__repr__": lambda self: "EMPTY"})()
"""Constructor default for array and struct fields: a fresh empty value per instance."""


def uuid_to_str(value: bytes) -> str:
    """Kafka's text form of a Uuid: URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(value).decode("ascii").rstrip("=")


def uuid_from_str(text: str) -> bytes:
    value = base64.urlsafe_b64decode(text + "==")
    if len(value) != 16:
        raise ValueError(f"{text!r} is not a Kafka Uuid")
    return value


class Struct:
    """Base of every generated struct: a slotted record of fields."""

    __slots__ = ("unknown_tagged_fields",)
    _FIELDS: ClassVar[tuple[Field, ...]] = ()
    unknown_tagged_fields: TaggedFields

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        key = _EQ_KEYS.get(type(self))
        if key is None:
            key = _EQ_KEYS[type(self)] = operator.attrgetter(*self._slot_names())
        # One C-level getter and a tuple comparison instead of a generator of getattr
        # calls: equality of default structs is on the hot path of tagged-field writers.
        result: bool = key(self) == key(other)
        return result

    __hash__ = None  # type: ignore[assignment]

    @classmethod
    def _slot_names(cls) -> Iterator[str]:
        for f in cls._FIELDS:
            yield f.name
        yield "unknown_tagged_fields"

    def __repr__(self) -> str:
        parts = []
        for f in self._FIELDS:
            value = getattr(self, f.name)
            if f.kind == "records" and value is not None:
                parts.append(f"{f.name}=<{records_size(value)} bytes of records>")
            else:
                parts.append(f"{f.name}={value!r}")
        if self.unknown_tagged_fields:
            parts.append(f"unknown_tagged_fields={self.unknown_tagged_fields!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def to_data(self) -> dict[str, Any]:
        """Plain Python data (dicts, lists, str, int, bytes) for display and JSON."""
        out: dict[str, Any] = {}
        for f in self._FIELDS:
            out[f.name] = _value_to_data(f.kind, f.element, getattr(self, f.name))
        if self.unknown_tagged_fields:
            out["unknown_tagged_fields"] = [
                {"tag": tag, "data": data} for tag, data in self.unknown_tagged_fields
            ]
        return out


def _value_to_data(kind: str, element: str | None, value: Any) -> Any:
    if value is None:
        return None
    if kind == "struct":
        return value.to_data()
    if kind == "array":
        assert element is not None
        return [_value_to_data(element, None, v) for v in value]
    if kind == "uuid":
        return uuid_to_str(value)
    if kind == "records":
        return records_bytes(value)
    return value


Reader = Callable[[Buffer, int], tuple[Any, int]]
Writer = Callable[[Any, bytearray], None]


class Message(Struct):
    """Base of every top-level generated message (request, response, record, header)."""

    __slots__ = ()
    NAME: ClassVar[str]
    API_KEY: ClassVar[int | None] = None
    TYPE: ClassVar[str]
    VALID_VERSIONS: ClassVar[tuple[int, int] | None]
    FLEXIBLE_VERSIONS: ClassVar[tuple[int, int] | None]
    _READERS: ClassVar[tuple[Reader | None, ...]] = ()
    _WRITERS: ClassVar[tuple[Writer | None, ...]] = ()

    @classmethod
    def is_flexible(cls, version: int) -> bool:
        flexible = cls.FLEXIBLE_VERSIONS
        return flexible is not None and flexible[0] <= version <= flexible[1]

    @classmethod
    def supports(cls, version: int) -> bool:
        valid = cls.VALID_VERSIONS
        return valid is not None and valid[0] <= version <= valid[1]

    @classmethod
    def read(cls, buf: Buffer, pos: int, version: int) -> tuple[Self, int]:
        """Read one message at ``pos``; may raise the low-level errors of
        :data:`DECODE_FAILURES` on malformed input (use :meth:`decode` at the edge)."""
        reader = cls._READERS[version] if 0 <= version < len(cls._READERS) else None
        if reader is None:
            raise DecodeError(f"{cls.NAME} has no version {version}")
        result: tuple[Self, int] = reader(buf, pos)
        return result

    def write(self, w: bytearray, version: int) -> None:
        writers = self._WRITERS
        writer = writers[version] if 0 <= version < len(writers) else None
        if writer is None:
            raise EncodeError(f"{self.NAME} has no version {version}")
        writer(self, w)

    @classmethod
    def decode(cls, data: Buffer, version: int) -> Self:
        """Decode exactly ``data`` as this message at ``version``.

        Raises :class:`DecodeError`, and nothing else, on malformed input.
        """
        try:
            obj, pos = cls.read(data, 0, version)
        except DecodeError:
            raise
        except DECODE_FAILURES as exc:
            raise DecodeError(f"malformed {cls.NAME} v{version}: {exc}") from exc
        if pos != len(data):
            raise DecodeError(f"{len(data) - pos} trailing bytes after {cls.NAME} v{version}")
        return obj

    def encode(self, version: int) -> bytes:
        """Encode at ``version``; raises :class:`EncodeError` when a value does not fit."""
        w = bytearray()
        try:
            self.write(w, version)
        except EncodeError:
            raise
        except ENCODE_FAILURES as exc:
            raise EncodeError(f"cannot encode {self.NAME} v{version}: {exc}") from exc
        return bytes(w)


class SpecInfo(NamedTuple):
    """One generated message, as listed in its package's ``SPECS`` table."""

    name: str
    module: str
    type: str
    api_key: int | None
    valid_versions: tuple[int, int] | None
    flexible_versions: tuple[int, int] | None
    listeners: tuple[str, ...]
    latest_version_unstable: bool

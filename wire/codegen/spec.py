"""Kafka's JSON message specs, loaded into a small typed model.

The specs are JSON with whole-line ``//`` comments; Kafka describes the language in
``clients/src/main/resources/common/message/README.md`` of its source tree. This module
knows the spec language: version ranges, field types, nullable, tagged and flexible
versions, defaults, and common structs. It knows nothing about jars, which
:mod:`millpond.wire.codegen.jars` reads, nor about Python code, which
:mod:`millpond.wire.codegen.emit` writes.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

MAX_VERSION = 0x7FFF
PRIMITIVES = frozenset(
    {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "uuid"}
)
VARIABLE = frozenset({"string", "bytes", "records"})
_COMMENT = re.compile(r"^\s*//.*$", re.MULTILINE)


@dataclass(frozen=True)
class Versions:
    """An inclusive version range; ``empty`` for "none"."""

    low: int
    high: int

    @classmethod
    def parse(cls, text: str | None, default: Versions | None = None) -> Versions:
        if text is None:
            if default is None:
                raise ValueError("a version range is required")
            return default
        text = text.strip()
        if text == "none":
            return EMPTY
        if text.endswith("+"):
            return cls(int(text[:-1]), MAX_VERSION)
        if "-" in text:
            low, high = text.split("-")
            return cls(int(low), int(high))
        return cls(int(text), int(text))

    @property
    def empty(self) -> bool:
        return self.low > self.high

    def __contains__(self, version: int) -> bool:
        return self.low <= version <= self.high

    def as_tuple(self) -> tuple[int, int] | None:
        return None if self.empty else (self.low, self.high)


EMPTY = Versions(1, 0)


@dataclass
class FieldSpec:
    name: str
    type: str
    versions: Versions
    nullable: Versions
    tagged: Versions
    tag: int | None
    default: Any
    about: str
    flexible_override: Versions | None
    ignorable: bool
    struct: StructSpec | None = None  # resolved for struct and struct-array types

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.struct is not None


@dataclass
class StructSpec:
    name: str
    fields: list[FieldSpec] = field(default_factory=list)


@dataclass
class MessageSpec:
    source: str
    name: str
    type: str
    api_key: int | None
    valid: Versions
    flexible: Versions
    listeners: tuple[str, ...]
    latest_unstable: bool
    root: StructSpec
    structs: dict[str, StructSpec]


def load_json(text: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_COMMENT.sub("", text))
    return data


def _parse_field(raw: dict[str, Any], structs: dict[str, StructSpec]) -> FieldSpec:
    tagged = Versions.parse(raw.get("taggedVersions"), EMPTY)
    versions = Versions.parse(raw.get("versions"), tagged if not tagged.empty else None)
    override = raw.get("flexibleVersions")
    spec = FieldSpec(
        name=raw["name"],
        type=raw["type"],
        versions=versions,
        nullable=Versions.parse(raw.get("nullableVersions"), EMPTY),
        tagged=tagged,
        tag=raw.get("tag"),
        # A JSON null default means the same as the string "null".
        default="null" if "default" in raw and raw["default"] is None else raw.get("default"),
        about=raw.get("about", ""),
        flexible_override=None if override is None else Versions.parse(override),
        ignorable=bool(raw.get("ignorable", False)),
    )
    if "fields" in raw:
        sub = StructSpec(spec.element_type, [_parse_field(f, structs) for f in raw["fields"]])
        if sub.name in structs:
            raise ValueError(f"struct {sub.name} defined twice")
        structs[sub.name] = sub
    return spec


def _resolve(struct: StructSpec, structs: dict[str, StructSpec]) -> None:
    for f in struct.fields:
        element = f.element_type
        if element in PRIMITIVES or element in VARIABLE:
            continue
        if element not in structs:
            raise ValueError(f"unknown type {f.type} of field {struct.name}.{f.name}")
        f.struct = structs[element]


def load_message(source: str, text: str) -> MessageSpec:
    """One spec's ``text``; ``source`` says where it came from."""
    raw = load_json(text)
    structs: dict[str, StructSpec] = {}
    for common in raw.get("commonStructs", []):
        cs = StructSpec(common["name"])
        structs[cs.name] = cs
        cs.fields = [_parse_field(f, structs) for f in common["fields"]]
    root = StructSpec(raw["name"], [_parse_field(f, structs) for f in raw.get("fields", [])])
    for s in [root, *structs.values()]:
        _resolve(s, structs)
    return MessageSpec(
        source=source,
        name=raw["name"],
        type=raw["type"],
        api_key=raw.get("apiKey"),
        valid=Versions.parse(raw.get("validVersions"), EMPTY),
        flexible=Versions.parse(raw.get("flexibleVersions"), EMPTY),
        listeners=tuple(raw.get("listeners", ())),
        latest_unstable=bool(raw.get("latestVersionUnstable", False)),
        root=root,
        structs=structs,
    )

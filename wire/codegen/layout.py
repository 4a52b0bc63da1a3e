"""Wire layouts: which versions of a struct share one byte layout.

A struct's bytes at version ``v`` depend on which of its fields are present, whether
each is tagged, compact (flexible) or nullable at ``v``, and on the layouts of the
structs nested in it. Versions with equal layouts share one generated reader and
writer, so the generated code is straight-line (no version tests at run time) and
still small. Only (struct, version) pairs reachable from the message root are laid
out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from millpond.wire.codegen.spec import FieldSpec, MessageSpec, StructSpec, Versions

FIXED_CODES = {
    "bool": "?",
    "int8": "b",
    "int16": "h",
    "uint16": "H",
    "int32": "i",
    "uint32": "I",
    "int64": "q",
    "float64": "d",
    "uuid": "16s",
}
FIXED_SIZES = {
    "bool": 1,
    "int8": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "uint32": 4,
    "int64": 8,
    "float64": 8,
    "uuid": 16,
}


@dataclass(frozen=True)
class FieldLayout:
    """How one field is on the wire at some version."""

    spec: FieldSpec
    mode: str  # "absent", "regular" or "tagged"
    compact: bool
    nullable: bool
    nested: str | None  # function suffix of the nested struct's layout


@dataclass
class StructLayout:
    struct: StructSpec
    suffix: str  # e.g. "MetadataResponsePartition_v7"
    versions: list[int]
    flexible: bool
    fields: list[FieldLayout]


@dataclass
class MessageLayouts:
    """Every reachable layout of every struct of one message."""

    spec: MessageSpec
    by_struct: dict[str, list[StructLayout]] = field(default_factory=dict)
    # (struct name, version) -> layout
    at: dict[tuple[str, int], StructLayout] = field(default_factory=dict)


def _compact(f: FieldSpec, flexible: Versions, version: int) -> bool:
    versions = f.flexible_override if f.flexible_override is not None else flexible
    return version in versions


def compute(spec: MessageSpec) -> MessageLayouts:
    result = MessageLayouts(spec)
    signatures: dict[str, dict[tuple[object, ...], StructLayout]] = {}

    def visit(struct: StructSpec, version: int) -> StructLayout:
        known = result.at.get((struct.name, version))
        if known is not None:
            return known
        flexible = version in spec.flexible
        fields: list[FieldLayout] = []
        for f in struct.fields:
            if version not in f.versions:
                fields.append(FieldLayout(f, "absent", False, False, None))
                continue
            tagged = flexible and version in f.tagged
            nested = visit(f.struct, version).suffix if f.struct is not None else None
            fields.append(
                FieldLayout(
                    f,
                    "tagged" if tagged else "regular",
                    tagged or _compact(f, spec.flexible, version),
                    version in f.nullable,
                    nested,
                )
            )
        signature = (
            flexible,
            tuple((fl.mode, fl.compact, fl.nullable, fl.nested) for fl in fields),
        )
        per_struct = signatures.setdefault(struct.name, {})
        layout = per_struct.get(signature)
        if layout is None:
            layout = StructLayout(struct, f"{struct.name}_v{version}", [], flexible, fields)
            per_struct[signature] = layout
            result.by_struct.setdefault(struct.name, []).append(layout)
        layout.versions.append(version)
        result.at[(struct.name, version)] = layout
        return layout

    if not spec.valid.empty:
        for version in range(spec.valid.low, spec.valid.high + 1):
            visit(spec.root, version)
    return result

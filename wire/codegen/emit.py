"""Render one spec as one Python module of generated code.

For every struct of a message the module has a slotted class, and for every wire
layout (see :mod:`millpond.wire.codegen.layout`) one reader and one writer function.
Readers unpack runs of consecutive fixed-width fields with one precompiled
``struct.Struct``; everything variable goes through :mod:`millpond.wire.primitives`.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable

from millpond.wire.codegen.layout import (
    FIXED_CODES,
    FIXED_SIZES,
    FieldLayout,
    MessageLayouts,
    StructLayout,
    compute,
)
from millpond.wire.codegen.spec import PRIMITIVES, FieldSpec, MessageSpec, StructSpec

_PY_TYPES = {
    "bool": "bool",
    "int8": "int",
    "int16": "int",
    "uint16": "int",
    "int32": "int",
    "uint32": "int",
    "int64": "int",
    "float64": "float",
    "uuid": "bytes",
    "string": "str",
    "bytes": "bytes",
    "records": "_p.Buffer",
}
_NAME_LETTERS = {
    "bool": "o",
    "int8": "b",
    "int16": "h",
    "uint16": "H",
    "int32": "i",
    "uint32": "I",
    "int64": "q",
    "float64": "d",
    "uuid": "u",
}


def snake(name: str) -> str:
    """CamelCase spec names to snake_case attribute names."""
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", name)
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()
    return s + "_" if keyword.iskeyword(s) else s


def _nullable_anywhere(f: FieldSpec) -> bool:
    return not f.nullable.empty


def py_type(f: FieldSpec) -> str:
    if f.is_array:
        element = f.element_type
        inner = f.struct.name if f.struct is not None else _PY_TYPES[element]
        base = f"list[{inner}]"
    elif f.struct is not None:
        base = f.struct.name
    else:
        base = _PY_TYPES[f.type]
    nullable = _nullable_anywhere(f) or (f.type == "records")
    return f"{base} | None" if nullable else base


def _default_is_null(f: FieldSpec) -> bool:
    return isinstance(f.default, str) and f.default.strip() == "null"


def default_literal(f: FieldSpec) -> str:
    """The Python expression of a field's default (fresh objects for mutable ones)."""
    raw = f.default
    if f.type == "records" or _default_is_null(f):
        return "None"
    if f.is_array:
        return "[]"
    if f.struct is not None:
        return f"{f.struct.name}()"
    t = f.type
    if t == "bool":
        return "True" if str(raw).strip().lower() == "true" else "False"
    if t in ("int8", "int16", "uint16", "int32", "uint32", "int64"):
        return str(_parse_int(raw)) if raw not in (None, "") else "0"
    if t == "float64":
        return repr(float(raw)) if raw not in (None, "") else "0.0"
    if t == "uuid":
        return "_p.ZERO_UUID"
    if t == "string":
        return repr(str(raw)) if raw is not None else "''"
    if t == "bytes":
        return "b''"
    raise ValueError(f"no default for type {t}")


def _parse_int(raw: object) -> int:
    if isinstance(raw, int):
        return raw
    text = str(raw).strip()
    if text.lower().startswith(("0x", "-0x")):
        return int(text, 16)
    return int(text)


def _init_param_default(f: FieldSpec) -> str:
    literal = default_literal(f)
    return "EMPTY" if literal == "[]" or literal.endswith("()") else literal


class _Module:
    """Accumulates the lines of one generated module and its struct constants."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.structs: dict[str, str] = {}  # name -> format
        self.defaults: set[str] = set()  # struct classes with a module-level default

    def default_instance(self, struct: str) -> str:
        """Name of a module-level default instance of ``struct`` (emitted after classes)."""
        self.defaults.add(struct)
        return f"_D_{struct}"

    def struct_const(self, types: list[str]) -> str:
        name = "_S_" + "".join(_NAME_LETTERS[t] for t in types)
        self.structs[name] = ">" + "".join(FIXED_CODES[t] for t in types)
        return name

    def add(self, lines: Iterable[str]) -> None:
        self.lines.extend(lines)


def _read_helper(kind: str, compact: bool, nullable: bool) -> str:
    if kind == "records":
        return "_p.read_compact_records" if compact else "_p.read_records"
    name = ("compact_" if compact else "") + ("nullable_" if nullable else "") + kind
    return f"_p.read_{name}"


def _write_helper(kind: str, compact: bool, nullable: bool) -> str:
    if kind == "records":
        kind, nullable = "bytes", True
    name = ("compact_" if compact else "") + ("nullable_" if nullable else "") + kind
    return f"_p.write_{name}"


def _array_len_reader(compact: bool, nullable: bool) -> str:
    return "_p.read_" + ("compact_" if compact else "") + ("nullable_" if nullable else "")


def _read_field(m: _Module, fl: FieldLayout, target: str, indent: str) -> list[str]:
    """Lines reading one regular or tagged field into ``target``."""
    f = fl.spec
    out: list[str] = []
    if f.is_array:
        element = f.element_type
        if element in PRIMITIVES and element != "uuid" and fl.compact and not fl.nullable:
            # The common case (replica lists, partition ids): length and elements in one call.
            code, size = FIXED_CODES[element], FIXED_SIZES[element]
            call = f"_p.read_compact_fixed_array(buf, pos, {code!r}, {size})"
            return [f"{indent}{target}, pos = {call}"]
        out.append(
            f"{indent}n, pos = {_array_len_reader(fl.compact, fl.nullable)}array_len(buf, pos)"
        )
        body = indent
        if fl.nullable:
            out.append(f"{indent}if n < 0:")
            out.append(f"{indent}    {target} = None")
            out.append(f"{indent}else:")
            body = indent + "    "
        element = f.element_type
        if element in PRIMITIVES and element != "uuid":
            code, size = FIXED_CODES[element], FIXED_SIZES[element]
            out.append(f"{body}{target}, pos = _p.read_fixed_array(buf, pos, n, {code!r}, {size})")
            return out
        if element == "uuid":
            out.append(f"{body}{target}, pos = _p.read_uuid_array(buf, pos, n)")
            return out
        if fl.nested is not None:
            call = f"_r_{fl.nested}(buf, pos)"
        else:
            call = f"{_read_helper(element, fl.compact, False)}(buf, pos)"
        out.append(f"{body}a = []")
        out.append(f"{body}for _ in range(n):")
        out.append(f"{body}    e, pos = {call}")
        out.append(f"{body}    a.append(e)")
        out.append(f"{body}{target} = a")
        return out
    if fl.nested is not None:
        body = indent
        if fl.nullable:
            out.append(f"{indent}present, pos = _p.read_struct_marker(buf, pos)")
            out.append(f"{indent}if not present:")
            out.append(f"{indent}    {target} = None")
            out.append(f"{indent}else:")
            body = indent + "    "
        out.append(f"{body}{target}, pos = _r_{fl.nested}(buf, pos)")
        return out
    if f.type in FIXED_CODES:
        s = m.struct_const([f.type])
        out.append(f"{indent}{target} = {s}.unpack_from(buf, pos)[0]")
        out.append(f"{indent}pos += {FIXED_SIZES[f.type]}")
        return out
    out.append(f"{indent}{target}, pos = {_read_helper(f.type, fl.compact, fl.nullable)}(buf, pos)")
    return out


def _write_field(m: _Module, fl: FieldLayout, value: str, w: str, indent: str) -> list[str]:
    """Lines writing ``value`` (an expression evaluated once) for one field to ``w``."""
    f = fl.spec
    out: list[str] = []
    if f.is_array:
        out.append(f"{indent}a = {value}")
        body = indent
        if fl.nullable:
            out.append(f"{indent}if a is None:")
            null = f"{w}.append(0)" if fl.compact else f"{w} += b'\\xff\\xff\\xff\\xff'"
            out.append(f"{indent}    {null}")
            out.append(f"{indent}else:")
            body = indent + "    "
        prefix = "compact_" if fl.compact else ""
        element = f.element_type
        if element in PRIMITIVES and element != "uuid" and fl.compact:
            out.append(f"{body}_p.write_compact_fixed_array({w}, a, {FIXED_CODES[element]!r})")
            return out
        out.append(f"{body}_p.write_{prefix}array_len({w}, len(a))")
        if element in PRIMITIVES and element != "uuid":
            out.append(f"{body}_p.write_fixed_array({w}, a, {FIXED_CODES[element]!r})")
        elif element == "uuid":
            out.append(f"{body}_p.write_uuid_array({w}, a)")
        elif fl.nested is not None:
            out.append(f"{body}for e in a:")
            out.append(f"{body}    _w_{fl.nested}(e, {w})")
        else:
            out.append(f"{body}for e in a:")
            out.append(f"{body}    {_write_helper(element, fl.compact, False)}({w}, e)")
        return out
    if fl.nested is not None:
        if fl.nullable:
            out.append(f"{indent}s = {value}")
            out.append(f"{indent}if s is None:")
            out.append(f"{indent}    {w}.append(255)")
            out.append(f"{indent}else:")
            out.append(f"{indent}    {w}.append(1)")
            out.append(f"{indent}    _w_{fl.nested}(s, {w})")
        else:
            out.append(f"{indent}_w_{fl.nested}({value}, {w})")
        return out
    if f.type in FIXED_CODES:
        s = m.struct_const([f.type])
        out.append(f"{indent}{w} += {s}.pack({value})")
        return out
    out.append(f"{indent}{_write_helper(f.type, fl.compact, fl.nullable)}({w}, {value})")
    return out


def _runs(fields: list[FieldLayout]) -> list[list[FieldLayout]]:
    """Group regular fields so that consecutive fixed-width ones form one run."""
    runs: list[list[FieldLayout]] = []
    for fl in fields:
        if fl.mode != "regular":
            continue
        fixed = fl.spec.type in FIXED_CODES
        if fixed and runs and runs[-1][0].spec.type in FIXED_CODES:
            runs[-1].append(fl)
        else:
            runs.append([fl])
    return runs


def _non_default_test(m: _Module, fl: FieldLayout, attr: str) -> str:
    f = fl.spec
    literal = default_literal(f)
    if literal == "None":
        return f"{attr} is not None"
    if f.is_array:
        return f"{attr} is None or len({attr}) > 0"
    if f.struct is not None:
        # Compare with one module-level default instance (never handed out, so never
        # mutated) instead of constructing a fresh default on every write.
        return f"{attr} != {m.default_instance(f.struct.name)}"
    return f"{attr} != {literal}"


def _version_text(versions: list[int]) -> str:
    if len(versions) == 1:
        return f"version {versions[0]}"
    if versions == list(range(versions[0], versions[-1] + 1)):
        return f"versions {versions[0]}-{versions[-1]}"
    return "versions " + ", ".join(map(str, versions))


def _emit_reader(m: _Module, layout: StructLayout) -> list[str]:
    cls = layout.struct.name
    name = layout.suffix
    out = [f"def _r_{name}(buf, pos):", f"    o = _new({cls})"]
    for fl in layout.fields:
        if fl.mode != "regular":
            out.append(f"    o.{snake(fl.spec.name)} = {default_literal(fl.spec)}")
    out.append("    o.unknown_tagged_fields = ()")
    for run in _runs(layout.fields):
        first = run[0]
        if first.spec.type in FIXED_CODES:
            s = m.struct_const([fl.spec.type for fl in run])
            targets = ", ".join(f"o.{snake(fl.spec.name)}" for fl in run)
            size = sum(FIXED_SIZES[fl.spec.type] for fl in run)
            out.append(f"    {targets}, = {s}.unpack_from(buf, pos)")
            out.append(f"    pos += {size}")
        else:
            out.extend(_read_field(m, first, f"o.{snake(first.spec.name)}", "    "))
    if layout.flexible:
        out.append("    if buf[pos] == 0:")
        out.append("        pos += 1")
        out.append("    else:")
        out.append(f"        pos = _p.read_tagged_fields(buf, pos, o, _T_{name})")
    out.append("    return o, pos")
    tagged = [fl for fl in layout.fields if fl.mode == "tagged"]
    if layout.flexible:
        entries = []
        for fl in tagged:
            fn = f"_t_{name}_{fl.spec.tag}"
            entries.append(f"{fl.spec.tag}: {fn}")
            out.append("")
            out.append("")
            out.append(f"def {fn}(o, buf, pos):")
            out.extend(_read_field(m, fl, f"o.{snake(fl.spec.name)}", "    "))
            out.append("    return pos")
        out.append("")
        out.append("")
        out.append(f"_T_{name} = {{{', '.join(entries)}}}")
    return out


def _emit_writer(m: _Module, layout: StructLayout) -> list[str]:
    out = [f"def _w_{layout.suffix}(o, w):"]
    versions = _version_text(layout.versions)
    for fl in layout.fields:
        # As Kafka does: a value that this version cannot carry is an error, unless the
        # spec marks the field ignorable (losing it is harmless).
        if fl.mode == "absent" and not fl.spec.ignorable:
            attr = f"o.{snake(fl.spec.name)}"
            message = f"{layout.struct.name}.{snake(fl.spec.name)} cannot be sent at {versions}"
            out.append(f"    if {_non_default_test(m, fl, attr)}:")
            out.append(f"        raise _p.EncodeError({message + '; leave it at its default'!r})")
    for run in _runs(layout.fields):
        first = run[0]
        if first.spec.type in FIXED_CODES:
            s = m.struct_const([fl.spec.type for fl in run])
            values = ", ".join(f"o.{snake(fl.spec.name)}" for fl in run)
            out.append(f"    w += {s}.pack({values})")
        else:
            out.extend(_write_field(m, first, f"o.{snake(first.spec.name)}", "w", "    "))
    if layout.flexible:
        tagged = sorted(
            (fl for fl in layout.fields if fl.mode == "tagged"), key=lambda fl: fl.spec.tag or 0
        )
        if not tagged:
            out.append("    _p.write_no_tagged_fields(w, o.unknown_tagged_fields)")
        else:
            out.append("    tags = []")
            for fl in tagged:
                attr = f"o.{snake(fl.spec.name)}"
                out.append(f"    if {_non_default_test(m, fl, attr)}:")
                out.append("        t = bytearray()")
                out.extend(_write_field(m, fl, attr, "t", "        "))
                out.append(f"        tags.append(({fl.spec.tag}, t))")
            out.append("    _p.write_tagged_fields(w, tags, o.unknown_tagged_fields)")
    if len(out) == 1:
        out.append("    pass")
    return out


def _field_meta(f: FieldSpec, structs: dict[str, StructSpec]) -> str:
    kind = "array" if f.is_array else ("struct" if f.struct is not None else f.type)
    element = None
    if f.is_array:
        element = "struct" if f.struct is not None else f.element_type
    struct = f.struct.name if f.struct is not None else "None"
    default = default_literal(f)
    default_expr = "None" if default == "[]" or default.endswith("()") else default
    return (
        f"Field({snake(f.name)!r}, {kind!r}, {element!r}, {struct}, "
        f"{f.versions.as_tuple()!r}, {f.nullable.as_tuple()!r}, {f.tagged.as_tuple()!r}, "
        f"{f.tag!r}, {default_expr}, "
        f"{None if f.flexible_override is None else f.flexible_override.as_tuple()!r})"
    )


def _emit_class(spec: MessageSpec, struct: StructSpec, top: bool) -> list[str]:
    base = "Message" if top else "Struct"
    names = [snake(f.name) for f in struct.fields]
    out = [f"class {struct.name}({base}):"]
    doc = f"{spec.name}" if top else f"Part of {spec.name}."
    out.append(f'    """{doc}"""')
    out.append("")
    slots = "".join(f"{n!r}, " for n in names)
    out.append(f"    __slots__ = ({slots})")
    if top:
        out.append(f"    NAME = {spec.name!r}")
        out.append(f"    API_KEY = {spec.api_key!r}")
        out.append(f"    TYPE = {spec.type!r}")
        out.append(f"    VALID_VERSIONS = {spec.valid.as_tuple()!r}")
        out.append(f"    FLEXIBLE_VERSIONS = {spec.flexible.as_tuple()!r}")
    for f in struct.fields:
        about = " ".join(f.about.split())
        if about:
            out.append(f"    #: {about}")
        out.append(f"    {snake(f.name)}: {py_type(f)}")
    params = ["self", "*"]
    for f in struct.fields:
        params.append(f"{snake(f.name)}: {py_type(f)} = {_init_param_default(f)}")
    params.append("unknown_tagged_fields: _p.TaggedFields = ()")
    out.append("")
    out.append("    def __init__(")
    out.extend(f"        {p}," for p in params)
    out.append("    ) -> None:")
    for f in struct.fields:
        n = snake(f.name)
        literal = default_literal(f)
        if literal == "[]" or literal.endswith("()"):
            out.append(f"        self.{n} = {literal} if {n} is EMPTY else {n}")
        else:
            out.append(f"        self.{n} = {n}")
    out.append("        self.unknown_tagged_fields = unknown_tagged_fields")
    return out


HEADER = '''"""Generated by ``python -m millpond.wire.codegen`` from {source}; do not edit."""

# ruff: noqa
# fmt: off
from __future__ import annotations

from struct import Struct as _Struct

from millpond.wire import primitives as _p
from millpond.wire.primitives import EMPTY, Field, Message, Struct

_new = object.__new__
'''


def render(spec: MessageSpec, source: str) -> str:
    layouts: MessageLayouts = compute(spec)
    m = _Module()
    structs = [spec.root, *spec.structs.values()]
    body: list[str] = []
    for struct in structs:
        body.append("")
        body.append("")
        body.extend(_emit_class(spec, struct, struct is spec.root))
    for struct in structs:
        for layout in layouts.by_struct.get(struct.name, []):
            body.append("")
            body.append("")
            body.extend(_emit_reader(m, layout))
            body.append("")
            body.append("")
            body.extend(_emit_writer(m, layout))
    body.append("")
    body.append("")
    all_structs = {s.name: s for s in structs}
    for struct in structs:
        metas = "".join(f"\n    {_field_meta(f, all_structs)}," for f in struct.fields)
        body.append(f"{struct.name}._FIELDS = ({metas}\n)")
    if not spec.valid.empty:
        high = spec.valid.high
        readers, writers = [], []
        for v in range(high + 1):
            found = layouts.at.get((spec.root.name, v))
            readers.append(f"_r_{found.suffix}" if found else "None")
            writers.append(f"_w_{found.suffix}" if found else "None")
        body.append(f"{spec.root.name}._READERS = ({', '.join(readers)},)")
        body.append(f"{spec.root.name}._WRITERS = ({', '.join(writers)},)")
    body.extend(f"_D_{name} = {name}()" for name in sorted(m.defaults))
    consts = [f"{name} = _Struct({fmt!r})" for name, fmt in sorted(m.structs.items())]
    return HEADER.format(source=source) + "\n".join(consts) + "\n" + "\n".join(body) + "\n"

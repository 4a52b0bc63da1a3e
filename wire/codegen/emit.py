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
from millpond.wire.primitives import SHORT_ARRAY

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
        self.default_keys: dict[str, list[str]] = {}  # struct class -> its slot names
        self.arrays: dict[str, str] = {}  # name -> struct code of short fixed arrays

    def default_instance(self, struct: str) -> str:
        """Name of a module-level default instance of ``struct`` (emitted after classes)."""
        self.defaults.add(struct)
        return f"_D_{struct}"

    def default_key(self, struct: StructSpec) -> tuple[str, str]:
        """Names of a module-level ``attrgetter`` of all the slots of ``struct`` and of
        its value on the default instance: ``K(x) != V`` is ``x != default`` for an
        ``x`` of exactly that class, without a Python-level ``__eq__`` call."""
        self.default_instance(struct.name)
        names = [snake(f.name) for f in struct.fields] + ["unknown_tagged_fields"]
        self.default_keys[struct.name] = names
        return f"_K_{struct.name}", f"_V_{struct.name}"

    def array_const(self, element: str) -> str:
        """Name of the tuple of precompiled structs of short arrays of ``element``."""
        name = "_A_" + _NAME_LETTERS[element]
        self.arrays[name] = FIXED_CODES[element]
        return name

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
        return "_p.write_compact_records" if compact else "_p.write_records"
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
            # The common case (replica lists, partition ids): a one-byte length and a short
            # array, unpacked inline with a precompiled struct (a truncated one raises
            # struct.error); anything else goes through the helper, which checks it all.
            code, size = FIXED_CODES[element], FIXED_SIZES[element]
            call = f"_p.read_compact_fixed_array(buf, pos, {code!r}, {size})"
            short = f"{m.array_const(element)}[n].unpack_from(buf, pos + 1)"
            return [
                f"{indent}n = buf[pos] - 1",
                f"{indent}if 0 <= n < {SHORT_ARRAY}:",
                f"{indent}    {target} = list({short})",
                f"{indent}    pos += 1 + {size} * n",
                f"{indent}else:",
                f"{indent}    {target}, pos = {call}",
            ]
        length = f"{_array_len_reader(fl.compact, fl.nullable)}array_len(buf, pos)"
        if fl.compact:
            # A one-byte length (up to 126 elements) that the frame can hold: inline.
            out.append(f"{indent}n = buf[pos]")
            out.append(f"{indent}if 0 < n < 0x80 and n <= len(buf) - pos:")
            out.append(f"{indent}    pos += 1")
            out.append(f"{indent}    n -= 1")
            out.append(f"{indent}else:")
            out.append(f"{indent}    n, pos = {length}")
        else:
            out.append(f"{indent}n, pos = {length}")
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
            out.append(f"{body}n = len(a)")
            out.append(f"{body}if n < {SHORT_ARRAY}:")
            out.append(f"{body}    {w}.append(n + 1)")
            out.append(f"{body}    {w} += {m.array_const(element)}[n].pack(*a)")
            out.append(f"{body}else:")
            out.append(f"{body}    _p.write_compact_fixed_array({w}, a, {FIXED_CODES[element]!r})")
            return out
        if fl.compact:
            # A one-byte length (up to 126 elements): inline.
            out.append(f"{body}n = len(a)")
            out.append(f"{body}if n < 0x7F:")
            out.append(f"{body}    {w}.append(n + 1)")
            out.append(f"{body}else:")
            out.append(f"{body}    _p.write_compact_array_len({w}, n)")
        else:
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
        # ``attr != default``, where the default is one module-level instance (never
        # handed out, so never mutated): Struct.__eq__ refuses other classes, and compares
        # all slots as one tuple; done here with a module-level attrgetter and the
        # default's precomputed tuple, without a Python-level __eq__ call.
        key, value = m.default_key(f.struct)
        return f"type({attr}) is not {f.struct.name} or {key}({attr}) != {value}"
    return f"{attr} != {literal}"


def _version_text(versions: list[int]) -> str:
    if len(versions) == 1:
        return f"version {versions[0]}"
    if versions == list(range(versions[0], versions[-1] + 1)):
        return f"versions {versions[0]}-{versions[-1]}"
    return "versions " + ", ".join(map(str, versions))


def _default_lines(f: FieldSpec, target: str, indent: str) -> list[str]:
    """``target = <f's default>``. A default struct whose own defaults are all literals
    is built inline, as the readers build structs (``_new`` and slot stores), which
    saves its keyword-argument ``__init__`` call (tagged structs: once per element)."""
    literal = default_literal(f)
    struct = f.struct
    if (
        f.is_array
        or struct is None
        or literal != f"{struct.name}()"
        or any(default_literal(g).endswith("()") for g in struct.fields)
    ):
        return [f"{indent}{target} = {literal}"]
    lines = [f"{indent}d = _new({struct.name})"]
    lines += [f"{indent}d.{snake(g.name)} = {default_literal(g)}" for g in struct.fields]
    lines += [f"{indent}d.unknown_tagged_fields = ()", f"{indent}{target} = d"]
    return lines


def _emit_reader(m: _Module, layout: StructLayout) -> list[str]:
    cls = layout.struct.name
    name = layout.suffix
    out = [f"def _r_{name}(buf, pos):", f"    o = _new({cls})"]
    for fl in layout.fields:
        if fl.mode != "regular":
            out.extend(_default_lines(fl.spec, f"o.{snake(fl.spec.name)}", "    "))
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
            out.append("    if o.unknown_tagged_fields:")
            out.append("        _p.write_no_tagged_fields(w, o.unknown_tagged_fields)")
            out.append("    else:")
            out.append("        w.append(0)")
        else:
            out.append("    tags = []")
            for fl in tagged:
                attr = f"o.{snake(fl.spec.name)}"
                out.append(f"    if {_non_default_test(m, fl, attr)}:")
                out.append("        t = bytearray()")
                out.extend(_write_field(m, fl, attr, "t", "        "))
                out.append(f"        tags.append(({fl.spec.tag}, t))")
            out.append("    if tags or o.unknown_tagged_fields:")
            out.append("        _p.write_tagged_fields(w, tags, o.unknown_tagged_fields)")
            out.append("    else:")
            out.append("        w.append(0)")
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

from operator import attrgetter as _attrgetter
from struct import Struct as _Struct

from millpond.wire import primitives as _p
from millpond.wire.message import EMPTY, Field, Message, Struct

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
    for name, slots in sorted(m.default_keys.items()):
        body.append(f"_K_{name} = _attrgetter({', '.join(map(repr, slots))})")
        body.append(f"_V_{name} = _K_{name}(_D_{name})")
    consts = [f"{name} = _Struct({fmt!r})" for name, fmt in sorted(m.structs.items())]
    consts += [f"{name} = _p.ARRAY_STRUCTS[{code!r}]" for name, code in sorted(m.arrays.items())]
    return HEADER.format(source=source) + "\n".join(consts) + "\n" + "\n".join(body) + "\n"

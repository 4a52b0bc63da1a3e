"""Test helpers: every generated message, and hypothesis strategies for their values."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from typing import Any

from hypothesis import strategies as st

from millpond.wire.generated import PACKAGES
from millpond.wire.message import Field, Message, SpecInfo, Struct

INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
UNKNOWN_TAGS = range(1000, 1010)


def all_specs() -> Iterator[tuple[SpecInfo, type[Message]]]:
    for package in PACKAGES:
        module = importlib.import_module(f"millpond.wire.generated.{package}")
        for info in module.SPECS:
            cls = getattr(importlib.import_module(info.module), info.name)
            yield info, cls


def all_message_versions() -> list[tuple[type[Message], int]]:
    pairs: list[tuple[type[Message], int]] = []
    for info, cls in all_specs():
        if info.valid_versions is None:
            continue
        low, high = info.valid_versions
        pairs.extend((cls, v) for v in range(low, high + 1))
    return pairs


def _scalar(kind: str) -> st.SearchStrategy[Any]:
    if kind == "bool":
        return st.booleans()
    if kind in INT_RANGES:
        low, high = INT_RANGES[kind]
        return st.integers(low, high)
    if kind == "float64":
        return st.floats(allow_nan=False)
    if kind == "uuid":
        return st.binary(min_size=16, max_size=16)
    if kind == "string":
        return st.text(max_size=12)
    if kind in ("bytes", "records"):
        return st.binary(max_size=24)
    raise AssertionError(kind)


def _field_value(f: Field, version: int, flexible: bool) -> st.SearchStrategy[Any]:
    if f.kind == "struct":
        assert f.struct is not None
        value = struct_values(f.struct, version, flexible)
    elif f.kind == "array":
        if f.element == "struct":
            assert f.struct is not None
            element = struct_values(f.struct, version, flexible)
        else:
            assert f.element is not None
            element = _scalar(f.element)
        value = st.lists(element, max_size=3)
    else:
        value = _scalar(f.kind)
    if f.nullable_at(version):
        return st.none() | value
    return value


def struct_values(cls: type[Struct], version: int, flexible: bool) -> st.SearchStrategy[Any]:
    """Instances of ``cls`` whose every field that exists at ``version`` is random."""
    kwargs: dict[str, st.SearchStrategy[Any]] = {
        f.name: _field_value(f, version, flexible) for f in cls._FIELDS if f.present(version)
    }
    if flexible:
        kwargs["unknown_tagged_fields"] = st.lists(
            st.tuples(st.sampled_from(UNKNOWN_TAGS), st.binary(max_size=8)),
            max_size=2,
            unique_by=lambda item: item[0],
        ).map(lambda items: tuple(sorted(items)))
    return st.builds(cls, **kwargs)

"""Comparing two normalized runs field by field, and printing them side by side.

    diffs = diff(kafka_steps, millpond_steps)        # [Difference(path, left, right), ...]
    assert_same(kafka_steps, millpond_steps, "unknown-topic")   # AssertionError with a report

A path names where two values differ, e.g. ``[2].response.topics[0].partitions[1].error_code``
(step 2 of the sequence). Dicts are compared key by key (a key on one side only is a
difference); lists whose elements all carry a unique ``name`` (or ``partition_index``) element by
that key (``configs[name=retention.ms].value``; an entry on one side only is one difference, and
a different order of the common entries is one more); other lists element by element (a length
difference is reported once, then the common elements are compared); everything else with
``==`` and the same type (``0`` is not ``False``).

The report lists every difference, then each step that differs as two columns of indented JSON,
Kafka on the left, millpond on the right, with ``|`` between lines that differ and ``<`` / ``>``
for lines only one side has.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

MISSING = "<missing>"
COLUMN = 78
MAX_LISTED = 30


@dataclass(frozen=True)
class Difference:
    path: str
    left: Any
    right: Any

    def __str__(self) -> str:
        return f"{self.path}: {_short(self.left)} != {_short(self.right)}"


def _short(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def diff(left: Any, right: Any, path: str = "") -> list[Difference]:
    """Every place where ``left`` and ``right`` differ, with its path."""
    if isinstance(left, dict) and isinstance(right, dict):
        out: list[Difference] = []
        for key in [*left, *(k for k in right if k not in left)]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in right:
                out.append(Difference(sub, left[key], MISSING))
            elif key not in left:
                out.append(Difference(sub, MISSING, right[key]))
            else:
                out.extend(diff(left[key], right[key], sub))
        return out
    if isinstance(left, list) and isinstance(right, list):
        keyed = _keyed(left, right)
        if keyed is not None:
            return keyed(path)
        out = []
        if len(left) != len(right):
            out.append(Difference(f"{path} (length)", len(left), len(right)))
        for i, (a, b) in enumerate(zip(left, right, strict=False)):
            out.extend(diff(a, b, f"{path}[{i}]"))
        return out
    if type(left) is not type(right) or left != right:
        return [Difference(path, left, right)]
    return []


KEYS = ("name", "partition_index")


def _keyed(left: list[Any], right: list[Any]) -> Callable[[str], list[Difference]] | None:
    """Lists of named elements (configs, topics) are compared element by name, so one missing
    entry is one difference rather than a shift of every entry after it. None when the
    elements are not all dicts with one unique key field."""
    for key in KEYS:
        if all(isinstance(e, dict) and key in e for e in [*left, *right]):
            lkeys = [e[key] for e in left]
            rkeys = [e[key] for e in right]
            if len(set(map(repr, lkeys))) == len(lkeys) and len(set(map(repr, rkeys))) == len(
                rkeys
            ):
                break
    else:
        return None

    def compare(path: str) -> list[Difference]:
        out: list[Difference] = []
        by_right = {repr(e[key]): e for e in right}
        by_left = {repr(e[key]): e for e in left}
        for e in left:
            sub = f"{path}[{key}={e[key]}]"
            other = by_right.get(repr(e[key]))
            out += [Difference(sub, e, MISSING)] if other is None else diff(e, other, sub)
        out += [
            Difference(f"{path}[{key}={e[key]}]", MISSING, e)
            for e in right
            if repr(e[key]) not in by_left
        ]
        common_l = [k for k in lkeys if repr(k) in by_right]
        common_r = [k for k in rkeys if repr(k) in by_left]
        if common_l != common_r:
            out.append(Difference(f"{path} (order of {key})", common_l, common_r))
        return out

    return compare


def _json_lines(value: Any) -> list[str]:
    return json.dumps(value, indent=1, default=_jsonable).splitlines()


def _jsonable(value: Any) -> Any:
    if isinstance(value, bytes | bytearray):
        return f"bytes:{bytes(value).hex()}" if len(value) <= 48 else f"bytes[{len(value)}]"
    return repr(value)


def _cell(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "~"


def side_by_side(
    left: Any, right: Any, left_title: str = "kafka", right_title: str = "millpond"
) -> str:
    """``left`` and ``right`` as indented JSON in two columns, differing lines marked."""
    a, b = _json_lines(left), _json_lines(right)
    width = COLUMN
    rows = [f"{_cell(left_title, width):<{width}}   {right_title}", "-" * (2 * width + 3)]
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            for x, y in zip(a[i1:i2], b[j1:j2], strict=True):
                rows.append(f"{_cell(x, width):<{width}}   {_cell(y, width)}")
            continue
        left_part, right_part = a[i1:i2], b[j1:j2]
        for k in range(max(len(left_part), len(right_part))):
            lx = left_part[k] if k < len(left_part) else None
            ry = right_part[k] if k < len(right_part) else None
            mark = "|" if lx is not None and ry is not None else ("<" if ry is None else ">")
            rows.append(f"{_cell(lx or '', width):<{width}} {mark} {_cell(ry or '', width)}")
    return "\n".join(rows)


def report(
    name: str, left: Sequence[Any], right: Sequence[Any], diffs: Sequence[Difference]
) -> str:
    """The mismatch report: the differences, then every differing step side by side."""
    lines = [f"sequence {name!r}: {len(diffs)} normalized field(s) differ (kafka != millpond)"]
    lines += [f"  {d}" for d in diffs[:MAX_LISTED]]
    if len(diffs) > MAX_LISTED:
        lines.append(f"  ... and {len(diffs) - MAX_LISTED} more")
    steps = {_step_of(d.path) for d in diffs}
    if None in steps or any(i >= len(left) or i >= len(right) for i in steps if i is not None):
        return "\n".join([*lines, "", "whole runs:", side_by_side(list(left), list(right))])
    for index in sorted(i for i in steps if i is not None):
        lines += ["", f"step [{index}]:", side_by_side(left[index], right[index])]
    return "\n".join(lines)


def _step_of(path: str) -> int | None:
    if path.startswith("[") and "]" in path:
        try:
            return int(path[1 : path.index("]")])
        except ValueError:
            return None
    return None


def assert_same(left: Sequence[Any], right: Sequence[Any], name: str) -> None:
    """Raise AssertionError with the side-by-side report when the runs differ."""
    diffs = diff(list(left), list(right))
    if diffs:
        raise AssertionError(report(name, left, right, diffs))

"""What the commands print: aligned tables for people, JSON for scripts, and a progress
bar on stderr that appears only when a person is watching (stderr is a terminal)."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

Row = dict[str, Any]


def add_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=["table", "json"],
        default="table",
        help="table for people (default), json for scripts",
    )


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list | tuple):
        return ",".join(_cell(v) for v in value)
    return str(value)


def table(rows: Sequence[Row], columns: Sequence[str], out: TextIO | None = None) -> None:
    """Print ``rows`` under upper-case headings, one column per key, left aligned."""
    out = out or sys.stdout
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]
    heads = [c.upper().replace("_", "-") for c in columns]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(heads)]
    for line in [heads, *cells]:
        out.write("  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip() + "\n")


def blank_line() -> None:
    sys.stdout.write("\n")


def emit_json(data: Any, out: TextIO | None = None) -> None:
    (out or sys.stdout).write(json.dumps(data, indent=2, sort_keys=False) + "\n")


def emit(
    args: argparse.Namespace, rows: Sequence[Row], columns: Sequence[str], data: Any = None
) -> None:
    """``rows`` as a table, or ``data`` (default: the rows) as JSON with ``--format json``."""
    if args.format == "json":
        emit_json(list(rows) if data is None else data)
    else:
        table(rows, columns)


def text(value: bytes | None) -> str | None:
    """Bytes shown as text: UTF-8, with undecodable bytes escaped rather than lost."""
    return None if value is None else value.decode("utf-8", "backslashreplace")


class Progress:
    """A one-line progress bar on stderr, redrawn at most 10 times a second; silent when
    stderr is not a terminal, so scripts and logs never see it."""

    def __init__(self, total: int | None, label: str, unit: str = "records") -> None:
        self.total = total
        self.label = label
        self.unit = unit
        self.done = 0
        #: Whether it draws at all; a caller may turn it off (never on).
        self.enabled = sys.stderr.isatty()
        self._start = time.monotonic()
        self._drawn = 0.0

    def advance(self, n: int, extra: str = "") -> None:
        self.done += n
        now = time.monotonic()
        if self.enabled and now - self._drawn >= 0.1:
            self._drawn = now
            self._draw(now, extra)

    def _draw(self, now: float, extra: str) -> None:
        rate = self.done / max(now - self._start, 1e-9)
        status = f" {self.done:,} {self.unit} {rate:,.0f}/s {extra}".rstrip()
        width = shutil.get_terminal_size((80, 24)).columns
        bar = ""
        if self.total:
            room = max(10, width - len(self.label) - len(status) - 10)
            filled = int(room * min(self.done / self.total, 1.0))
            bar = f" [{'#' * filled}{'.' * (room - filled)}] {100 * self.done // self.total:3d}%"
        sys.stderr.write(f"\r{self.label}{bar}{status}"[:width].ljust(width - 1))
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled:
            self._draw(time.monotonic(), "")
            sys.stderr.write("\n")
            sys.stderr.flush()

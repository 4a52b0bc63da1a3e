"""bench/throughput.py's quick run against millpond, Apache Kafka 4.4 and Tansu, so the benchmark
command cannot rot. It checks what the run wrote (every figure's row, a number in millpond's and
Kafka's cells, a PNG), never how fast anything was: benchmarks are not timed assertions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bench.throughput import QUICK_SIZES, ROWS, row_label

pytestmark = pytest.mark.compat

ROOT = Path(__file__).resolve().parent.parent
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_quick_run_writes_every_row_and_the_plot(tmp_path: Path) -> None:
    command = [sys.executable, str(ROOT / "bench" / "throughput.py"), "--quick"]
    done = subprocess.run(
        [*command, "--out", str(tmp_path)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-4000:]
    report = (tmp_path / "RESULTS.md").read_text()
    header = next(line for line in report.splitlines() if line.startswith("| figure |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    assert columns[2:5] == ["millpond", "kafka", "tansu"], header
    for row in ROWS:
        label = row_label(row, QUICK_SIZES)
        lines = [line for line in report.splitlines() if line.startswith(f"| {label} (")]
        assert any(f"| {row.unit} |" in line for line in lines), f"no row {label!r}"
        line = next(line for line in lines if f"| {row.unit} |" in line)
        cells = dict(zip(columns, (c.strip() for c in line.strip("|").split("|")), strict=True))
        for broker in ("millpond", "kafka"):  # Tansu may lack a feature: n/a (why) is fine
            assert not cells[broker].startswith("n/a"), f"{label}: {broker} {cells[broker]}"
    assert (tmp_path / "throughput.png").read_bytes().startswith(PNG_SIGNATURE)


def test_quick_run_against_a_baseline_commit_fills_both_columns(tmp_path: Path) -> None:
    """``--baseline REF``: this checkout and commit REF side by side, a ratio per figure."""
    command = [
        sys.executable, str(ROOT / "bench" / "throughput.py"), "--quick", "--only", "millpond",
        "--baseline", "HEAD", "--workload", "produce", "--out", str(tmp_path),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-4000:]
    report = (tmp_path / "RESULTS.md").read_text()
    assert "side by side" in report
    header = next(line for line in report.splitlines() if line.startswith("| figure |"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    assert columns[2:] == ["millpond", "millpond@HEAD", "millpond / millpond@HEAD"], header
    for row in ROWS:
        if not (row.key.startswith("produce-") or row.key == "perf-produce"):
            continue
        label = row_label(row, QUICK_SIZES)
        line = next(
            line
            for line in report.splitlines()
            if line.startswith(f"| {label} (") and f"| {row.unit} |" in line
        )
        cells = [c.strip() for c in line.strip("|").split("|")]
        for cell in cells[2:]:  # both columns and their ratio are numbers
            assert float(cell.replace(",", "")) > 0, line

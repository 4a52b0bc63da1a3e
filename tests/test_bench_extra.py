"""``pip install -e '.[bench]'`` is enough for bench/: every script loads with the packages
only the ``test`` extra brings (pytest among them) made unimportable."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_LOADER = """
import pathlib, runpy, sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None
for path in sorted(pathlib.Path("bench").glob("*.py")):
    sys.path.insert(0, str(path.parent))
    runpy.run_path(str(path), run_name="bench_load")  # imports only: no main()
    sys.path.pop(0)
"""


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[\[<>=!~ ;]", r, maxsplit=1)[0].lower() for r in requirements}


def _test_only_modules() -> list[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    test_only = _names(extras["test"]) - _names(extras["bench"]) - _names(project["dependencies"])
    modules = [
        module
        for module, dists in packages_distributions().items()
        if any(d.lower() in test_only for d in dists) and not module.startswith("_")
    ]
    return sorted({*modules, "_pytest"})


def test_every_bench_script_loads_without_the_test_extra() -> None:
    blocked = _test_only_modules()
    assert "pytest" in blocked and "hypothesis" in blocked
    result = subprocess.run(
        [sys.executable, "-c", _LOADER, ",".join(blocked)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]

"""A clone in any directory regenerates on its own, with nothing beside it.

The repository's tracked files (``git ls-files``) are copied into a fresh directory with
nothing beside them, and the copy's own generator checks the copy's ``wire/generated/``
against Kafka 4.4.0's jars, its only input.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Imports the copy's generator, not the installed one: ``millpond``'s subpackages are the
# copy's root directories, as the package's layout maps them.
_BOOTSTRAP = """
import runpy, sys, types
copy = sys.argv[1]
package = types.ModuleType("millpond")
package.__path__ = [copy]
sys.modules["millpond"] = package
import millpond.wire.codegen.jars as jars
print(jars.__file__)
sys.argv = ["codegen", "--check"]
runpy.run_module("millpond.wire.codegen", run_name="__main__")
"""


def _copy_tracked_files(destination: Path) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if not source.is_symlink() and not source.exists():
            continue  # deleted in the work tree, not yet committed
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target, follow_symlinks=False)


def _check(copy: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _BOOTSTRAP, str(copy)],
        cwd=copy.parent,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_a_copy_without_shared_checks_its_generated_code(tmp_path: Path) -> None:
    copy = tmp_path.resolve() / "millpond"
    _copy_tracked_files(copy)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["millpond"]

    result = _check(copy)
    assert result.returncode == 0, result.stdout + result.stderr
    assert Path(result.stdout.splitlines()[0]).is_relative_to(copy)

    # The check reads the copy's output: one edited generated file makes it fail.
    edited = copy / "wire" / "generated" / "api" / "produce_request.py"
    edited.write_text(edited.read_text() + "# edited\n")
    result = _check(copy)
    assert result.returncode == 1
    assert f"stale: {edited}" in result.stderr

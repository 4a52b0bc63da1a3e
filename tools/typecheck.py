"""``mypy --strict`` over the whole repository: ``python -m tools.typecheck [mypy options]``.

millpond's layers sit at the repository root and install as ``millpond.wire``,
``millpond.broker`` and so on through setuptools' ``package-dir``. mypy finds modules by
walking directories and does not run the import hook an editable install relies on, so
it would see ``millpond/`` without its subpackages. This lays out the package as it is
installed, in a tree of symbolic links under ``.mypy_cache/tree`` (never in the
repository itself), runs mypy there, and prints each file by its path in the repository.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TREE = REPO / ".mypy_cache" / "tree"
#: What mypy checks besides the package: the repository's own tests, tools and benches.
OTHER_ROOTS = ("tests", "tools", "bench", "compat_tests")


def package_dirs() -> dict[str, str]:
    """``package-dir`` from pyproject.toml: package name -> folder in the repository."""
    with (REPO / "pyproject.toml").open("rb") as f:
        mapping: dict[str, str] = tomllib.load(f)["tool"]["setuptools"]["package-dir"]
    return mapping


def _link(link: Path, target: Path) -> None:
    if link.is_symlink() and link.readlink() == target:
        return
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(target, target_is_directory=target.is_dir())


def build_tree() -> None:
    """The installed layout, as links: ``millpond/<entry>`` for each entry of the top-level
    package's folder, ``millpond/<layer>`` for each mapped subpackage, and the other roots
    beside it (so mypy's package roots are all inside the tree)."""
    mapping = package_dirs()
    top = TREE / "millpond"
    top.mkdir(parents=True, exist_ok=True)
    wanted: set[str] = set()
    for entry in (REPO / mapping["millpond"]).iterdir():
        if entry.name != "__pycache__":
            _link(top / entry.name, entry)
            wanted.add(entry.name)
    for package, folder in mapping.items():
        parent, _, name = package.rpartition(".")
        if parent == "millpond":
            _link(top / name, REPO / folder)
            wanted.add(name)
    for stale in top.iterdir():
        if stale.name not in wanted:
            stale.unlink()
    for root in OTHER_ROOTS:
        if (REPO / root).is_dir():
            _link(TREE / root, REPO / root)


def repository_path(line: str, mapping: dict[str, str]) -> str:
    """mypy's ``millpond/wire/x.py:3: ...`` as ``wire/x.py:3: ...``."""
    for package, folder in mapping.items():
        prefix = package.replace(".", "/") + "/"
        if package != "millpond" and line.startswith(prefix):
            return folder + "/" + line[len(prefix) :]
    return line


def main(argv: list[str]) -> int:
    build_tree()
    roots = ["millpond", *(root for root in OTHER_ROOTS if (REPO / root).is_dir())]
    command = [
        sys.executable, "-m", "mypy",
        "--config-file", str(REPO / "pyproject.toml"),
        "--cache-dir", str(REPO / ".mypy_cache"),
        *argv, *roots,
    ]  # fmt: skip
    env = {**os.environ, "MYPY_FORCE_COLOR": "0"}
    result = subprocess.run(command, cwd=TREE, capture_output=True, text=True, check=False, env=env)
    mapping = package_dirs()
    for line in result.stdout.splitlines():
        print(repository_path(line, mapping))
    sys.stderr.write(result.stderr)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

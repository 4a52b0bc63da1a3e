"""The package as it installs: the layers at the root become ``millpond.*`` through
setuptools' package-dir, with no links in the repository and no top-level ``wire``."""

from __future__ import annotations

import importlib
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _setuptools() -> dict[str, object]:
    with (REPO / "pyproject.toml").open("rb") as f:
        config: dict[str, object] = tomllib.load(f)["tool"]["setuptools"]
    return config


def test_every_package_folder_is_listed() -> None:
    """A wheel holds only the listed packages (an editable install would hide a missing
    one), so each folder with an ``__init__.py`` must be named in ``packages``."""
    config = _setuptools()
    mapping = config["package-dir"]
    assert isinstance(mapping, dict)
    found = set()
    for package, folder in mapping.items():
        for init in (REPO / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(REPO / folder).parts
            found.add(".".join([package, *parts]))
    assert sorted(found) == sorted(config["packages"])  # type: ignore[call-overload]


def test_the_repository_has_no_symbolic_links() -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-s"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    links = [line.split("\t")[1] for line in listed.splitlines() if line.startswith("120000")]
    assert links == []


def test_layers_import_as_millpond_subpackages_only() -> None:
    wire = importlib.import_module("millpond.wire")
    assert Path(wire.__file__ or "") == REPO / "wire" / "__init__.py"
    with pytest.raises(ImportError, match="import millpond.broker instead"):
        importlib.import_module("broker")


def test_the_install_alone_provides_the_package(tmp_path: Path) -> None:
    """Outside the repository, with nothing of it on sys.path (-P), millpond imports from
    its installation and the folder names do not."""
    probe = (
        "import importlib.util, millpond.broker.node, millpond.cli\n"
        "print(millpond.broker.node.__file__)\n"
        "print([importlib.util.find_spec(n) for n in ('wire', 'broker', 'storage')])\n"
    )
    result = subprocess.run(
        [sys.executable, "-P", "-c", probe], cwd=tmp_path, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    node_file, specs = result.stdout.splitlines()
    assert Path(node_file) == REPO / "broker" / "node.py"
    assert specs == "[None, None, None]"

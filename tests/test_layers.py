"""The layer rules, as contracts over every import of millpond's own code.

Dependencies point downwards: broker -> controller, storage, wire; controller -> storage,
wire; storage -> wire; wire -> nothing of ours. The command-line tools are clients of the
protocol (cli -> controller, storage, wire: record decoders and file names for dump-log,
never the broker); ``millpond.testing`` embeds a broker; the entry point ``millpond``
itself may use everything. Every import counts: at module level, inside functions (the
lazy ones that keep start-up lean) and under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]

#: Layer -> the layers its modules may import (itself included).
ALLOWED: Mapping[str, frozenset[str]] = {
    "wire": frozenset({"wire"}),
    "storage": frozenset({"storage", "wire"}),
    "controller": frozenset({"controller", "storage", "wire"}),
    "broker": frozenset({"broker", "controller", "storage", "wire"}),
    "cli": frozenset({"cli", "controller", "storage", "wire"}),
    "testing": frozenset({"testing", "broker", "controller", "storage", "wire"}),
    "millpond": frozenset(
        {"millpond", "testing", "broker", "controller", "storage", "wire", "cli"}
    ),
}
#: Names that are folders of this repository but never part of the package.
NOT_PACKAGES = frozenset({"tests", "compat_tests", "tools", "bench", "examples"})


class Import(NamedTuple):
    path: Path
    line: int
    module: str  # the importing module
    target: str  # the module named by the import, resolved


def layer_of(module: str) -> str | None:
    """``millpond.broker.node`` -> ``broker``; ``millpond.__main__`` -> ``millpond``;
    None for anything not ours."""
    parts = module.split(".")
    if parts[0] != "millpond":
        return None
    if len(parts) == 1 or parts[1] not in ALLOWED or parts[1] == "millpond":
        return "millpond"
    return parts[1]


def modules(repo: Path) -> Iterator[tuple[str, Path]]:
    """(module name, file) for every module of the package, as pyproject's package-dir
    lays it out."""
    with (repo / "pyproject.toml").open("rb") as f:
        mapping: dict[str, str] = tomllib.load(f)["tool"]["setuptools"]["package-dir"]
    for package, folder in mapping.items():
        base = repo / folder
        for file in sorted(base.rglob("*.py")):
            relative = file.relative_to(base).with_suffix("").parts
            inner = [part for part in relative if part != "__init__"]
            yield ".".join([package, *inner]), file


def imports(module: str, file: Path) -> Iterator[Import]:
    """Every import in the file, relative ones resolved against the module's package."""
    tree = ast.parse(file.read_text(), str(file))
    package = module if file.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(file, node.lineno, module, alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            yield Import(file, node.lineno, module, target)
            for alias in node.names:  # ``from millpond import broker`` imports millpond.broker
                candidate = f"{target}.{alias.name}"
                if target == "millpond" and layer_of(candidate) != "millpond":
                    yield Import(file, node.lineno, module, candidate)


def violations(repo: Path) -> list[str]:
    found = []
    for module, file in modules(repo):
        source_layer = layer_of(module)
        assert source_layer is not None
        for imp in imports(module, file):
            top = imp.target.split(".")[0]
            where = f"{imp.path.relative_to(repo)}:{imp.line}"
            if top in ALLOWED and top != "millpond" or top in NOT_PACKAGES:
                found.append(
                    f"{where} imports {imp.target!r} by its folder name: "
                    f"import millpond.{imp.target} (the installed package) instead"
                    if top in ALLOWED
                    else f"{where} imports {imp.target!r}, which is not part of the package"
                )
                continue
            target_layer = layer_of(imp.target)
            if imp.target == "millpond":  # the top-level package itself (its __version__)
                continue
            if target_layer is None or target_layer in ALLOWED[source_layer]:
                continue
            allowed = ", ".join(sorted(ALLOWED[source_layer]))
            found.append(
                f"{where}: {module} ({source_layer}) imports {imp.target} ({target_layer}); "
                f"{source_layer} may import only {allowed}"
            )
    return found


#: Violations still being removed, each exactly as reported; the test fails when one is
#: gone but still listed, so the list only shrinks.
KNOWN: frozenset[str] = frozenset()


def test_every_import_follows_the_layer_rules() -> None:
    found = violations(REPO)
    assert [v for v in found if v not in KNOWN] == []
    assert sorted(KNOWN - set(found)) == [], "fixed: remove these from KNOWN"


def _tiny_repo(root: Path, files: Mapping[str, str]) -> Path:
    (root / "pyproject.toml").write_text(
        "[tool.setuptools.package-dir]\n"
        'millpond = "millpond"\n"millpond.wire" = "wire"\n"millpond.storage" = "storage"\n'
        '"millpond.broker" = "broker"\n'
    )
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_check_finds_an_upward_import(tmp_path: Path) -> None:
    repo = _tiny_repo(
        tmp_path,
        {
            "millpond/__init__.py": "",
            "wire/__init__.py": "",
            "wire/codec.py": "def f() -> None:\n    from millpond.broker.node import Broker\n",
            "storage/__init__.py": "from millpond.wire import codec\n",
            "storage/log.py": "from ..broker import node\n",
            "broker/__init__.py": "from millpond.storage import log\n",
            "broker/node.py": "",
        },
    )
    found = violations(repo)
    assert len(found) == 2, found
    assert found[0].startswith("wire/codec.py:2: millpond.wire.codec (wire) imports")
    assert "storage may import only storage, wire" in found[1]


def test_the_check_finds_folder_name_imports(tmp_path: Path) -> None:
    repo = _tiny_repo(
        tmp_path,
        {
            "millpond/__init__.py": "",
            "wire/__init__.py": "",
            "broker/__init__.py": "import wire.codec\nfrom tests import helpers\n",
        },
    )
    found = violations(repo)
    assert found == [
        "broker/__init__.py:1 imports 'wire.codec' by its folder name: import "
        "millpond.wire.codec (the installed package) instead",
        "broker/__init__.py:2 imports 'tests', which is not part of the package",
    ]

"""What every test session shares: the layers import only as millpond's subpackages.

pytest puts the repository root on ``sys.path`` so the test packages (``tests``,
``compat_tests``) and the tools and benches they use import by name. The layers at the
root (``wire/``, ``storage/``, ``controller/``, ``broker/``, ``cli/``) are installed as
``millpond.wire`` and so on; imported by their folder names they would load a second,
separate copy of every module (two ``ErrorCode`` enums, two ``Broker`` classes). That
import is refused here, with the name to use instead.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent
LAYERS = frozenset({"wire", "storage", "controller", "broker", "cli"})


class LayerFolderImports(MetaPathFinder):
    """Refuses ``import wire`` (and the other layers) when it would load the folder at the
    repository root; a third-party package of the same name still imports."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if path is not None or fullname not in LAYERS:
            return None
        spec = PathFinder.find_spec(fullname)
        if spec is not None and spec.origin and Path(spec.origin).is_relative_to(ROOT):
            raise ImportError(
                f"{fullname!r} is the folder {ROOT / fullname}, which installs as "
                f"millpond.{fullname}: import millpond.{fullname} instead",
                name=fullname,
            )
        return None


if not any(isinstance(finder, LayerFolderImports) for finder in sys.meta_path):
    sys.meta_path.insert(0, LayerFolderImports())

"""What every test session shares: the layers import only as millpond's subpackages.

pytest puts the repository root on ``sys.path`` so the test packages (``tests``,
``compat_tests``) and the tools and benches they use import by name. The layers at the
root (``wire/``, ``storage/``, ``controller/``, ``broker/``, ``cli/``) are installed as
``millpond.wire`` and so on; imported by their folder names they would load a second,
separate copy of every module (two ``ErrorCode`` enums, two ``Broker`` classes). That
import is refused here, with the name to use instead.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec, PathFinder
from pathlib import Path
from types import ModuleType
from typing import Any

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


def _close_failed_kafka_python_connects() -> None:
    """kafka-python 3.0.12, a test client, leaves the socket of a refused connection
    open (``KafkaNetSocket.connect`` raises without closing it). A test whose client
    reaches for a broker it just killed would then fail on whichever later test the
    collector happens to find that socket in. Closing it where it fails keeps
    ``filterwarnings = error`` meaning that millpond's own sockets are never leaked."""
    try:
        from kafka.net.inet import KafkaNetSocket  # noqa: PLC0415 (only if installed)
    except ImportError:
        return
    if getattr(KafkaNetSocket.connect, "closes_on_failure", False):
        return
    opened = KafkaNetSocket.socket
    connect = KafkaNetSocket.connect

    async def closing_connect(self: Any, net: Any, addrinfo: Any, *args: Any, **kw: Any) -> Any:
        made: list[Any] = []

        def tracked(*a: Any, **k: Any) -> Any:
            sock = opened(self, *a, **k)
            made.append(sock)
            return sock

        self.socket = tracked
        try:
            return await connect(self, net, addrinfo, *args, **kw)
        except BaseException:
            for sock in made:
                sock.close()
            raise
        finally:
            del self.socket

    closing_connect.closes_on_failure = True  # type: ignore[attr-defined]
    KafkaNetSocket.connect = closing_connect  # type: ignore[method-assign]


_close_failed_kafka_python_connects()


def _import_every_millpond_module() -> None:
    """Embedded brokers run in threads, and millpond imports some modules lazily (to
    keep ``millpond serve`` quick to start). Under pytest every millpond module loads
    through the assertion rewriter (millpond's distribution registers a pytest plugin),
    whose AST conversion CPython 3.11 does not guard across threads: a lazy import in a
    node thread while the main thread rewrites a test module fails with ``SystemError:
    AST constructor recursion depth mismatch``. Importing them all here, in the main
    thread before any test runs, leaves nothing for a thread to import."""
    for top in ("millpond", *(f"millpond.{layer}" for layer in sorted(LAYERS))):
        package = importlib.import_module(top)
        for module in pkgutil.walk_packages(package.__path__, f"{top}."):
            importlib.import_module(module.name)


_import_every_millpond_module()

"""CRC-32C (Castagnoli), the record batch checksum, from the ``crc32c`` package's
hardware-accelerated extension.

The package's ``__init__`` reads its own version through ``importlib.metadata`` and
imports its command line (``argparse``): a quarter of the broker's start-up imports and
about 3 MB of resident memory, for nothing the broker uses. So the extension module is
loaded on its own; should the package ever ship it differently, the package is imported
as usual.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import cast

Buffer = bytes | bytearray | memoryview
Checksum = Callable[..., int]


def _load() -> Checksum:
    package = importlib.util.find_spec("crc32c")
    locations = package.submodule_search_locations if package is not None else None
    for location in locations or ():
        for path in sorted(Path(location).glob("_crc32c.*.so")):
            spec = importlib.util.spec_from_file_location("crc32c._crc32c", path)
            if spec is None or spec.loader is None:
                continue
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return cast(Checksum, module.crc32c)
    from crc32c import crc32c as packaged  # noqa: PLC0415 (the extension was not found)

    return cast(Checksum, packaged)


crc32c: Checksum = _load()
"""``crc32c(data, value=0) -> int``: the checksum of ``data``, continuing from ``value``."""

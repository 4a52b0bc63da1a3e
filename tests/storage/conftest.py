"""Fixtures shared by the storage tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from millpond.storage.fs import FileSystem, MemFileSystem, OsFileSystem


@pytest.fixture(params=["os", "mem"])
def fs_root(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[FileSystem, str]:
    """Each test twice: on the real file system in a temporary directory, and on a
    :class:`MemFileSystem` under ``/data``."""
    if request.param == "os":
        return OsFileSystem(), str(tmp_path)
    fs = MemFileSystem()
    fs.makedirs("/data")
    return fs, "/data"

"""Shared helpers for tests that look at files directly: whole-file reads and writes
behind the storage engine's back, and a :class:`~millpond.storage.fs.File` wrapper."""

from __future__ import annotations

from millpond.storage.fs import Buffer, File, FileSystem, MemFileSystem, join


def mem_path(name: str) -> tuple[MemFileSystem, str]:
    """A fresh in-memory file system and the path of ``name`` in its directory ``/d``."""
    fs = MemFileSystem()
    fs.makedirs("/d")
    return fs, join("/d", name)


def raw(fs: FileSystem, path: str) -> bytes:
    """The file's bytes as they are now."""
    handle = fs.open(path)
    try:
        return handle.read_at(0, handle.size())
    finally:
        handle.close()


def write_raw(fs: FileSystem, path: str, data: bytes) -> None:
    """Replace the file's bytes with ``data`` (creating it)."""
    handle = fs.open(path, create=True)
    handle.truncate(0)
    handle.append(data)
    handle.close()


class FileWrapper:
    """A :class:`File` that passes every call to ``inner``: subclasses override the calls
    they watch."""

    def __init__(self, inner: File) -> None:
        self._inner = inner

    @property
    def path(self) -> str:
        return self._inner.path

    def size(self) -> int:
        return self._inner.size()

    def append(self, data: Buffer) -> None:
        self._inner.append(data)

    def read_at(self, position: int, size: int) -> bytes:
        return self._inner.read_at(position, size)

    def truncate(self, size: int) -> None:
        self._inner.truncate(size)

    def sync(self) -> None:
        self._inner.sync()

    def close(self) -> None:
        self._inner.close()

    def fileno(self) -> int | None:
        return self._inner.fileno()

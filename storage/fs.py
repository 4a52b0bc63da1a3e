"""Files, injected: the storage engine touches disk only through a :class:`FileSystem`.

:class:`OsFileSystem` is the real one (positional reads, appends, fsync, atomic
rename). :class:`MemFileSystem` keeps files in memory and remembers which bytes were
synced, so tests can fail a chosen write or fsync, or "crash" and lose what was never
synced (optionally leaving a torn tail), all without a disk or a sleep.

Files are append-only plus truncate: that is all Kafka's segment, index and checkpoint
formats need (checkpoints are rewritten whole with :func:`write_atomic`).
"""

from __future__ import annotations

import os
import random
import weakref
from collections.abc import Callable
from typing import Protocol

Buffer = bytes | bytearray | memoryview


class File(Protocol):
    """An open file: append at the end, read anywhere, truncate, sync."""

    @property
    def path(self) -> str: ...

    def size(self) -> int: ...

    def append(self, data: Buffer) -> None: ...

    def read_at(self, position: int, size: int) -> bytes:
        """Up to ``size`` bytes from ``position`` (fewer at the end of the file)."""
        ...

    def truncate(self, size: int) -> None: ...

    def sync(self) -> None:
        """Make everything appended so far durable (fsync)."""
        ...

    def close(self) -> None: ...

    def fileno(self) -> int | None:
        """The OS file descriptor, for sendfile; None when the file is not an OS file."""
        ...


class FileSystem(Protocol):
    def open(self, path: str, *, create: bool = False) -> File:
        """Open for reading and appending; FileNotFoundError unless ``create``."""
        ...

    def exists(self, path: str) -> bool: ...

    def is_dir(self, path: str) -> bool: ...

    def listdir(self, path: str) -> list[str]: ...

    def makedirs(self, path: str) -> None:
        """Create ``path`` and its parents; no error if it exists."""
        ...

    def rename(self, src: str, dst: str) -> None:
        """Atomically move ``src`` to ``dst``, replacing ``dst``."""
        ...

    def remove(self, path: str) -> None: ...

    def remove_tree(self, path: str) -> None: ...

    def sync_dir(self, path: str) -> None:
        """Make the directory's entries (creations, renames, removals) durable."""
        ...

    def file_size(self, path: str) -> int: ...


def join(*parts: str) -> str:
    return "/".join(p.rstrip("/") if i == 0 else p.strip("/") for i, p in enumerate(parts))


def parent(path: str) -> str:
    head, _, _ = path.rstrip("/").rpartition("/")
    return head or "/"


def write_atomic(fs: FileSystem, path: str, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves the old or the new file,
    never a mix: write a temporary file, sync it, rename it over, sync the directory."""
    tmp = path + ".tmp"
    handle = fs.open(tmp, create=True)
    try:
        handle.truncate(0)
        handle.append(data)
        handle.sync()
    finally:
        handle.close()
    fs.rename(tmp, path)
    fs.sync_dir(parent(path))


# -- the real file system ----------------------------------------------------------------


class OsFile:
    """An OS file opened read-write; appends with pwrite at the tracked end."""

    __slots__ = ("__weakref__", "_fd", "_path", "_size")

    def __init__(self, path: str, create: bool) -> None:
        flags = os.O_RDWR | (os.O_CREAT if create else 0)
        self._fd = os.open(path, flags, 0o644)
        self._path = path
        self._size = os.fstat(self._fd).st_size

    @property
    def path(self) -> str:
        return self._path

    def size(self) -> int:
        return self._size

    def append(self, data: Buffer) -> None:
        written = os.pwrite(self._fd, data, self._size)
        self._size += written
        if written < len(data):  # a short write: rare (a signal, a disk about to fill)
            view = memoryview(data).cast("B")[written:]
            while view:
                written = os.pwrite(self._fd, view, self._size)
                self._size += written
                view = view[written:]

    def read_at(self, position: int, size: int) -> bytes:
        return os.pread(self._fd, size, position)

    def truncate(self, size: int) -> None:
        os.ftruncate(self._fd, size)
        self._size = size

    def sync(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def fileno(self) -> int | None:
        return self._fd


class OsFileSystem:
    def __init__(self) -> None:
        #: The files opened here and not yet closed (closed ones drop out with them).
        self._open: weakref.WeakSet[OsFile] = weakref.WeakSet()

    def open(self, path: str, *, create: bool = False) -> File:
        file = OsFile(path, create)
        self._open.add(file)
        return file

    def abandon_open_files(self) -> int:
        """Close every file still open, writing nothing first: what a process killed
        with ``kill -9`` leaves (for crash tests in one process). How many there were."""
        files = [f for f in list(self._open) if f.fileno() not in (None, -1)]
        for file in files:
            file.close()
        self._open = weakref.WeakSet()
        return len(files)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def is_dir(self, path: str) -> bool:
        return os.path.isdir(path)

    def listdir(self, path: str) -> list[str]:
        return sorted(os.listdir(path))

    def makedirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)

    def rename(self, src: str, dst: str) -> None:
        os.replace(src, dst)

    def remove(self, path: str) -> None:
        os.unlink(path)

    def remove_tree(self, path: str) -> None:
        import shutil  # noqa: PLC0415 (deleting a partition only)

        shutil.rmtree(path)

    def sync_dir(self, path: str) -> None:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def file_size(self, path: str) -> int:
        return os.stat(path).st_size


# -- the in-memory file system with faults -------------------------------------------------


class _MemData:
    __slots__ = ("content", "synced")

    def __init__(self) -> None:
        self.content = bytearray()
        self.synced = b""


class _Fault:
    __slots__ = ("error", "matches", "operation")

    def __init__(self, operation: str, matches: Callable[[str], bool], error: OSError) -> None:
        self.operation = operation
        self.matches = matches
        self.error = error


class MemFile:
    __slots__ = ("_data", "_fs", "_path", "_closed")

    def __init__(self, fs: MemFileSystem, path: str, data: _MemData) -> None:
        self._fs = fs
        self._path = path
        self._data = data
        self._closed = False

    @property
    def path(self) -> str:
        return self._path

    def size(self) -> int:
        return len(self._data.content)

    def append(self, data: Buffer) -> None:
        self._fs._maybe_fail("append", self._path)
        self._data.content += data

    def read_at(self, position: int, size: int) -> bytes:
        self._fs._maybe_fail("read", self._path)
        return bytes(self._data.content[position : position + size])

    def truncate(self, size: int) -> None:
        self._fs._maybe_fail("truncate", self._path)
        content = self._data.content
        if size < len(content):
            del content[size:]
        else:
            content += bytes(size - len(content))

    def sync(self) -> None:
        self._fs._maybe_fail("sync", self._path)
        self._data.synced = bytes(self._data.content)

    def close(self) -> None:
        self._closed = True

    def fileno(self) -> int | None:
        return None


class MemFileSystem:
    """Files in memory, with injected faults and crashes.

    Durability model: file contents are durable up to the last ``sync``; directory
    changes (create, rename, remove) are durable at once. :meth:`crash` drops every
    unsynced byte, except that with ``torn=True`` a random prefix of each file's
    unsynced tail survives, as a power cut in the middle of writeback leaves it.
    """

    def __init__(self) -> None:
        self._files: dict[str, _MemData] = {}
        self._dirs: set[str] = {"/"}
        self._faults: list[_Fault] = []

    # faults

    def fail_next(
        self, operation: str, path_contains: str = "", error: OSError | None = None
    ) -> None:
        """Make the next ``operation`` (append, read, truncate, sync, open, rename,
        remove, sync_dir) on a path containing ``path_contains`` raise ``error``."""
        self._faults.append(
            _Fault(
                operation,
                lambda path: path_contains in path,
                error or OSError(5, f"injected {operation} failure"),
            )
        )

    def _maybe_fail(self, operation: str, path: str) -> None:
        for i, fault in enumerate(self._faults):
            if fault.operation == operation and fault.matches(path):
                del self._faults[i]
                raise fault.error

    def crash(self, rng: random.Random | None = None, *, torn: bool = False) -> None:
        """Lose what was never synced (see the class docstring)."""
        rng = rng or random.Random(0)  # noqa: S311 (fault simulation, not security)
        for data in self._files.values():
            synced = data.synced
            content = data.content
            if torn and len(content) > len(synced) and content[: len(synced)] == synced:
                keep = rng.randint(len(synced), len(content))
                data.content = bytearray(content[:keep])
            else:
                data.content = bytearray(synced)
            data.synced = bytes(data.content)  # what survived is on disk now

    # the FileSystem protocol

    def _check_parent(self, path: str) -> None:
        if parent(path) not in self._dirs:
            raise FileNotFoundError(2, "no such directory", parent(path))

    def open(self, path: str, *, create: bool = False) -> File:
        self._maybe_fail("open", path)
        data = self._files.get(path)
        if data is None:
            if not create:
                raise FileNotFoundError(2, "no such file", path)
            self._check_parent(path)
            data = self._files[path] = _MemData()
        return MemFile(self, path, data)

    def exists(self, path: str) -> bool:
        return path in self._files or path in self._dirs

    def is_dir(self, path: str) -> bool:
        return path in self._dirs

    def listdir(self, path: str) -> list[str]:
        if path not in self._dirs:
            raise FileNotFoundError(2, "no such directory", path)
        prefix = path.rstrip("/") + "/"
        names = {
            p[len(prefix) :]
            for p in [*self._files, *self._dirs]
            if p.startswith(prefix) and "/" not in p[len(prefix) :] and p != path
        }
        return sorted(names)

    def makedirs(self, path: str) -> None:
        parts = path.strip("/").split("/")
        for i in range(1, len(parts) + 1):
            self._dirs.add("/" + "/".join(parts[:i]))

    def rename(self, src: str, dst: str) -> None:
        self._maybe_fail("rename", src)
        if src in self._files:
            self._check_parent(dst)
            self._files[dst] = self._files.pop(src)
            return
        if src in self._dirs:
            moved = {p for p in self._dirs if p == src or p.startswith(src + "/")}
            for p in moved:
                self._dirs.discard(p)
                self._dirs.add(dst + p[len(src) :])
            for p in [p for p in self._files if p.startswith(src + "/")]:
                self._files[dst + p[len(src) :]] = self._files.pop(p)
            return
        raise FileNotFoundError(2, "no such file", src)

    def remove(self, path: str) -> None:
        self._maybe_fail("remove", path)
        if self._files.pop(path, None) is None:
            raise FileNotFoundError(2, "no such file", path)

    def remove_tree(self, path: str) -> None:
        for p in [p for p in self._files if p.startswith(path + "/")]:
            del self._files[p]
        for p in [p for p in self._dirs if p == path or p.startswith(path + "/")]:
            self._dirs.discard(p)

    def sync_dir(self, path: str) -> None:
        self._maybe_fail("sync_dir", path)

    def file_size(self, path: str) -> int:
        data = self._files.get(path)
        if data is None:
            raise FileNotFoundError(2, "no such file", path)
        return len(data.content)

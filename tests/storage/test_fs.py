from __future__ import annotations

import random

import pytest

from millpond.storage.clock import ManualClock, SystemClock
from millpond.storage.fs import FileSystem, MemFileSystem, join, write_atomic


def test_append_read_truncate(fs_root: tuple[FileSystem, str]) -> None:
    fs, root = fs_root
    path = join(root, "00000000000000000000.log")
    f = fs.open(path, create=True)
    f.append(b"hello ")
    f.append(memoryview(b"world"))
    assert f.size() == 11 == fs.file_size(path)
    assert f.read_at(6, 100) == b"world"
    f.truncate(5)
    assert f.read_at(0, 100) == b"hello"
    f.sync()
    f.close()
    assert fs.listdir(root) == ["00000000000000000000.log"]
    with pytest.raises(FileNotFoundError):
        fs.open(join(root, "missing"))


def test_write_atomic_replaces_whole_file(fs_root: tuple[FileSystem, str]) -> None:
    fs, root = fs_root
    path = join(root, "recovery-point-offset-checkpoint")
    write_atomic(fs, path, b"0\n0\n")
    write_atomic(fs, path, b"0\n1\nt 0 5\n")
    f = fs.open(path)
    assert f.read_at(0, 100) == b"0\n1\nt 0 5\n"
    assert fs.listdir(root) == ["recovery-point-offset-checkpoint"]


def test_rename_and_remove_tree(fs_root: tuple[FileSystem, str]) -> None:
    fs, root = fs_root
    fs.makedirs(join(root, "t-0"))
    fs.open(join(root, "t-0", "a.log"), create=True).close()
    fs.rename(join(root, "t-0"), join(root, "t-0.abc-delete"))
    assert fs.listdir(join(root, "t-0.abc-delete")) == ["a.log"]
    fs.remove_tree(join(root, "t-0.abc-delete"))
    assert fs.listdir(root) == []


def test_crash_loses_unsynced_bytes() -> None:
    fs = MemFileSystem()
    fs.makedirs("/d")
    f = fs.open("/d/x", create=True)
    f.append(b"durable")
    f.sync()
    f.append(b"-volatile")
    fs.crash()
    assert fs.open("/d/x").read_at(0, 100) == b"durable"


def test_torn_crash_keeps_a_prefix_of_the_unsynced_tail() -> None:
    seen = set()
    for seed in range(30):
        fs = MemFileSystem()
        fs.makedirs("/d")
        f = fs.open("/d/x", create=True)
        f.append(b"ab")
        f.sync()
        f.append(b"cdefgh")
        fs.crash(random.Random(seed), torn=True)
        data = fs.open("/d/x").read_at(0, 100)
        assert b"abcdefgh".startswith(data) and data.startswith(b"ab")
        seen.add(len(data))
    assert len(seen) > 3


def test_injected_failures_hit_once() -> None:
    fs = MemFileSystem()
    fs.makedirs("/d")
    f = fs.open("/d/x.log", create=True)
    fs.fail_next("sync", ".log")
    f.append(b"a")
    with pytest.raises(OSError, match="injected sync"):
        f.sync()
    f.sync()
    fs.fail_next("append")
    with pytest.raises(OSError):
        f.append(b"b")
    assert f.read_at(0, 10) == b"a"


def test_clocks() -> None:
    clock = ManualClock(1000)
    clock.advance(5)
    assert (clock.now_ms(), clock.monotonic_ms()) == (1005, 5)
    clock.set_now_ms(10)
    assert (clock.now_ms(), clock.monotonic_ms()) == (10, 5)
    with pytest.raises(ValueError):
        clock.advance(-1)
    real = SystemClock()
    assert real.now_ms() > 1_600_000_000_000
    assert real.monotonic_ms() >= 0

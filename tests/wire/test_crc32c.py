"""The checksum the broker loads straight from the crc32c extension: the same function as
the package's, without the package's import cost (tests/test_startup_imports.py)."""

from __future__ import annotations

import os

import crc32c as packaged

from millpond.wire.crc32c import crc32c


def test_the_check_value_and_the_package_agree() -> None:
    assert crc32c(b"123456789") == 0xE3069283  # CRC-32C's standard check value
    for size in (0, 1, 7, 64, 4096, 100_003):
        data = os.urandom(size)
        assert crc32c(data) == packaged.crc32c(data)
        assert crc32c(data[size // 2 :], crc32c(data[: size // 2])) == packaged.crc32c(data)
    assert crc32c(memoryview(b"abc")) == packaged.crc32c(b"abc")

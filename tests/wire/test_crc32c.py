"""The checksum the broker loads straight from the crc32c extension: the same function as
the package's, without the package's import cost (asserted in a fresh interpreter)."""

from __future__ import annotations

import os
import subprocess
import sys

import crc32c as packaged

from millpond.wire.crc32c import crc32c


def test_the_check_value_and_the_package_agree() -> None:
    assert crc32c(b"123456789") == 0xE3069283  # CRC-32C's standard check value
    for size in (0, 1, 7, 64, 4096, 100_003):
        data = os.urandom(size)
        assert crc32c(data) == packaged.crc32c(data)
        assert crc32c(data[size // 2 :], crc32c(data[: size // 2])) == packaged.crc32c(data)
    assert crc32c(memoryview(b"abc")) == packaged.crc32c(b"abc")


def test_a_broker_start_loads_neither_codecs_nor_the_http_server() -> None:
    """What a broker that serves no compressed batch and no control endpoint need not pay
    for at start-up (memory and import time)."""
    deferred = ["cramjam", "xxhash", "crc32c", "http.server", "importlib.metadata"]
    code = (
        "import sys, millpond.broker.node, millpond.__main__\n"
        f"print([m for m in {deferred!r} if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert out.strip() == "[]"

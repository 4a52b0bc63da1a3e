"""franz-go and sarama against millpond and Apache Kafka 4.4: SCENARIOS.md's ``produce-consume``
through the Go drivers of ``compat_tests/go`` (keyed records with headers to a 3-partition topic,
read back by partition from the beginning and from a timestamp).

The drivers are built with ``go build`` into ``~/.cache/millpond/go-bin/<hash>`` (never into the
repository), keyed by a hash of the Go toolchain version and every source of
``compat_tests/go``, so a rerun with unchanged sources builds nothing. The modules come from
the Go module proxy (``.ci/run`` runs ``go mod download`` first); a missing Go toolchain fails
the tests, it never skips them."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from compat_tests.harness import check_produce_consume, create_topic, run_driver

pytestmark = pytest.mark.compat

GO_DIR = Path(__file__).parent / "go"
DRIVERS = ("driver_franz", "driver_sarama")
BUILD_TIMEOUT = 600.0
PARTITIONS = 3


def _cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "millpond" / "go-bin"


def _sources_hash(go: str) -> str:
    """The Go toolchain's version and every file go build reads from compat_tests/go."""
    digest = hashlib.sha256()
    version = subprocess.run(
        [go, "version"], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    digest.update(version.encode())
    files = sorted(
        p
        for p in GO_DIR.rglob("*")
        if p.is_file() and (p.suffix == ".go" or p.name in ("go.mod", "go.sum"))
    )
    for path in files:
        digest.update(str(path.relative_to(GO_DIR)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


@pytest.fixture(scope="module")
def go_drivers() -> dict[str, Path]:
    """The built drivers by name, built once per source hash (atomically: a directory is
    renamed into place only when every binary in it was built)."""
    go = shutil.which("go")
    if go is None:
        pytest.fail(
            "the Go toolchain (`go`) is not on PATH: the franz-go and sarama compat tests "
            "need Go 1.26+ (and the Go module proxy, or a warm module cache)",
            pytrace=False,
        )
    out_dir = _cache_root() / _sources_hash(go)
    binaries = {name: out_dir / name for name in DRIVERS}
    if all(b.is_file() for b in binaries.values()):
        return binaries
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".build-", dir=out_dir.parent))
    try:
        env = {**os.environ, "GOFLAGS": "-mod=readonly"}
        build = subprocess.run(
            [go, "build", "-o", str(staging), *(f"./{name}" for name in DRIVERS)],
            cwd=GO_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=BUILD_TIMEOUT,
            check=False,
        )
        if build.returncode != 0:
            pytest.fail(
                f"go build of the Go drivers failed ({build.returncode}):\n"
                f"{build.stdout}{build.stderr}",
                pytrace=False,
            )
        try:
            staging.rename(out_dir)
        except OSError:  # built meanwhile by another run: keep that one
            if not all(b.is_file() for b in binaries.values()):
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return binaries


CASES = [
    # franz-go's defaults (idempotent, acks=all, snappy falling back to none), then zstd.
    pytest.param(
        "driver_franz",
        None,
        id="franz-go-default-snappy",
        marks=pytest.mark.compat_matrix("franz-go", "produce-consume/snappy"),
    ),
    pytest.param(
        "driver_franz",
        "zstd",
        id="franz-go-zstd",
        marks=pytest.mark.compat_matrix("franz-go", "produce-consume/zstd"),
    ),
    # sarama (Config.Version 4.0): none, then lz4.
    pytest.param(
        "driver_sarama",
        "none",
        id="sarama-none",
        marks=pytest.mark.compat_matrix("sarama", "produce-consume/none"),
    ),
    pytest.param(
        "driver_sarama",
        "lz4",
        id="sarama-lz4",
        marks=pytest.mark.compat_matrix("sarama", "produce-consume/lz4"),
    ),
]


@pytest.mark.parametrize(("driver", "compression"), CASES)
def test_produce_consume(
    go_drivers: dict[str, Path], broker_bootstrap: str, driver: str, compression: str | None
) -> None:
    topic = f"go-{driver.removeprefix('driver_')}-{compression or 'default'}"
    create_topic(broker_bootstrap, topic, PARTITIONS)
    command = [
        str(go_drivers[driver]),
        "produce-consume",
        "--bootstrap",
        broker_bootstrap,
        "--topic",
        topic,
        "--partitions",
        str(PARTITIONS),
    ]
    if compression is not None:
        command += ["--compression", compression]
    check_produce_consume(run_driver(command))

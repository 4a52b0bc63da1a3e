"""docker/: no Docker engine runs here, so the image's own pieces are checked outside it:
the Dockerfile is linted, the package builds as the image installs it, and the image's
entrypoint and healthcheck run for real."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def test_dockerfile_passes_hadolint() -> None:
    result = subprocess.run(
        [str(BIN / "hadolint"), "--no-color", str(REPO / "docker" / "Dockerfile")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_package_builds_as_the_image_installs_it(tmp_path: Path) -> None:
    # The image runs `pip install .`: the wheel must carry every layer under millpond/.
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            str(tmp_path),
            str(REPO),
        ],
        check=True,
        capture_output=True,
    )
    [wheel] = tmp_path.glob("millpond-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for module in (
        "wire/__init__.py",
        "wire/generated/api/produce_request.py",
        "storage/log.py",
        "controller/controller.py",
        "broker/node.py",
        "__main__.py",
    ):
        assert f"millpond/{module}" in names, module
    assert not any(n.startswith(("wire/", "storage/", "broker/", "tests/")) for n in names)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_entrypoint_and_healthcheck_run(tmp_path: Path) -> None:
    port = _free_port()
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "MILLPOND_DATA_DIR": str(tmp_path),
        "MILLPOND_LISTENERS": f"PLAINTEXT://127.0.0.1:{port}",
        "MILLPOND_ADVERTISED_LISTENERS": f"PLAINTEXT://127.0.0.1:{port}",
    }
    proc = subprocess.Popen(
        [str(REPO / "docker" / "entrypoint.sh"), "--override", "num.partitions=2"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert f"listening on 127.0.0.1:{port}" in proc.stdout.readline()
        health = subprocess.run(
            [str(BIN / "millpond"), "ping", "--bootstrap-server", f"127.0.0.1:{port}"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert health.returncode == 0, health.stderr
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    down = subprocess.run(
        [str(BIN / "millpond"), "ping", "--bootstrap-server", f"127.0.0.1:{port}"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert down.returncode == 1

"""Record what real Apache Kafka releases advertise in ApiVersions, and how they refuse a
version they do not serve: the facts behind ``millpond.emulate`` (millpond.broker.emulation).

    .venv/bin/python -m tools.capture.api_versions --out tests/broker/golden/api_versions

For each release (default: 3.9.1, 4.0.2 and the reference 4.4.0) it resolves the broker's jars
from Maven Central (tools/capture/releases/pom.xml; 4.4.0 through compat_tests/kafka/install.sh)
into ``~/.cache/millpond/kafka-<version>/lib``, formats a one-node KRaft directory with the
same server.properties the compat tests give Kafka 4.4, starts it on loopback, and sends it
hand-built probes over plain sockets, one connection each:

- ApiVersions v0 and v3 (and v4 where the release knows it): the answers are kept byte for
  byte (response header v0 and body, no size prefix) as ``<release>/api_versions_v<N>.bin``;
- ApiVersions at a version one above the release's own maximum and at v127: how the release
  answers a newer client (KIP-511), kept as ``api_versions_v<N>.bin`` too;
- Metadata and ListOffsets one version above the release's maximum (where the 4.x specs
  define it), and Produce v2 (advertised by 4.x, but refused): whether the release answers
  or closes the connection.

``<release>/index.json`` lists every probe, what was sent (hex) and what came back. Not run by
CI: it needs Java 17, Maven and Maven Central, and takes about a minute per release. The
captured bytes are facts about those releases; millpond's tests decode them with
millpond.wire, so CI needs no Kafka of these versions.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from compat_tests.kafka.reference import (
    KAFKA_VERSION,
    TOOLS_LOG4J,
    Ports,
    api_versions_ok,
    install,
    kafka_classpath,
    server_properties,
)
from millpond.wire import APIS, RequestHeader, decode_response, encode_request
from millpond.wire.generated.api.api_versions_request import ApiVersionsRequest
from millpond.wire.generated.api.api_versions_response import ApiVersionsResponse
from millpond.wire.generated.api.list_offsets_request import ListOffsetsRequest
from millpond.wire.generated.api.metadata_request import MetadataRequest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
RELEASE_POM = HERE / "releases" / "pom.xml"
RELEASES = ("3.9.1", "4.0.2", KAFKA_VERSION)
#: ApiVersions' maximum in each release, to aim a probe just above it.
API_VERSIONS_MAX = {"3.9": 4, "4.0": 4, "4.4": 5}
#: Metadata and ListOffsets are probed one version above the release's maximum.
ABOVE_MAX_PROBES = (3, 2)
READY_TIMEOUT_S = 120.0
PROBE_TIMEOUT_S = 10.0


def release_classpath(version: str) -> str:
    """The broker's jars for ``version``, resolved from Maven Central on first use."""
    if version == KAFKA_VERSION:
        install()
        return kafka_classpath()
    lib = Path.home() / ".cache" / "millpond" / f"kafka-{version}" / "lib"
    if not any(lib.glob("kafka_2.13-*.jar")):
        tmp = Path(tempfile.mkdtemp(prefix="lib.", dir=lib.parent.parent))
        subprocess.run(
            ["mvn", "-q", "-B", "-f", str(RELEASE_POM), "dependency:copy-dependencies",
             f"-Dkafka.version={version}", "-DincludeScope=runtime", f"-DoutputDirectory={tmp}"],
            check=True,
            timeout=900,
        )  # fmt: skip
        lib.parent.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(lib, ignore_errors=True)
        tmp.rename(lib)
    return os.pathsep.join(str(j) for j in sorted(lib.glob("*.jar")))


def _java(classpath: str, main_class: str, *args: str) -> list[str]:
    return [
        "java", "-Xmx512m", "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={TOOLS_LOG4J}", "-cp", classpath, main_class, *args,
    ]  # fmt: skip


def api_versions_frame(version: int, correlation_id: int) -> bytes:
    """ApiVersions with client id "probe" naming its software (v3+). Versions past the 4.x
    specs are hand-built: header v2, then the v3 body (a broker reads only the header)."""
    if version <= 5:
        header = RequestHeader(
            request_api_key=18, request_api_version=version, correlation_id=correlation_id,
            client_id="probe",
        )  # fmt: skip
        body = ApiVersionsRequest(
            client_software_name="millpond-probe", client_software_version="1.0"
        )
        return encode_request(header, body)
    head = struct.pack(">hhih", 18, version, correlation_id, 5) + b"probe" + b"\x00"
    return head + b"\x0fmillpond-probe" + b"\x041.0" + b"\x00"


def produce_v2_frame(correlation_id: int) -> bytes:
    """Produce v2 with acks=1, timeout 1000 ms and no topics (the 4.x specs start at v3)."""
    return (
        struct.pack(">hhih", 0, 2, correlation_id, 5) + b"probe" + struct.pack(">hii", 1, 1000, 0)
    )


def above_max_frame(api_key: int, version: int, correlation_id: int) -> bytes:
    """A well-formed request (empty topic list) at a version the 4.x specs define."""
    header = RequestHeader(
        request_api_key=api_key, request_api_version=version, correlation_id=correlation_id,
        client_id="probe",
    )  # fmt: skip
    body = MetadataRequest(topics=[]) if api_key == 3 else ListOffsetsRequest(topics=[])
    return encode_request(header, body)


def exchange(port: int, frame: bytes) -> bytes | None:
    """Send one frame on a new connection: the answer (no size prefix), or None when the
    broker closes the connection without answering."""
    with socket.create_connection(("127.0.0.1", port), timeout=PROBE_TIMEOUT_S) as s:
        s.sendall(struct.pack(">i", len(frame)) + frame)
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack_from(">i", data)[0]:
            chunk = s.recv(65536)
            if not chunk:
                return None
            data += chunk
        return data[4:]


def probes(minor: str, advertised: dict[int, int]) -> list[tuple[str, int, int, bytes]]:
    """(name, api key, version, frame) for one release line; ``advertised`` maps each API
    key to the release's maximum (from its ApiVersions v0 answer)."""
    top = API_VERSIONS_MAX[minor]
    versions = sorted({0, 3, top, top + 1, 127})
    out = [(f"api_versions_v{v}", 18, v, api_versions_frame(v, 100 + v)) for v in versions]
    for key in ABOVE_MAX_PROBES:
        v = advertised[key] + 1
        if APIS[key].supports(v):  # only a version we can encode
            out.append((f"{APIS[key].name.lower()}_v{v}", key, v, above_max_frame(key, v, 200)))
    out.append(("produce_v2", 0, 2, produce_v2_frame(300)))
    return out


def capture(version: str, out: Path, work: Path) -> None:
    minor = ".".join(version.split(".")[:2])
    classpath = release_classpath(version)
    ports = Ports.loopback()
    props = work / "server.properties"
    props.write_text(server_properties(ports, work / "data", {}))
    cluster_id = "bWlsbHBvbmQtZW11bGF0ZQ"  # 16 bytes, base64url: any fixed id will do
    subprocess.run(
        _java(classpath, "kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}",
              "-c", str(props), "--standalone"),
        check=True, timeout=120, capture_output=True,
    )  # fmt: skip
    log = (work / "kafka.log").open("wb")
    proc = subprocess.Popen(
        _java(classpath, "kafka.Kafka", str(props)), stdout=log, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not api_versions_ok(ports.plaintext):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Kafka {version} did not start; see {work / 'kafka.log'}")
            time.sleep(0.5)
        time.sleep(2)  # let the broker's features settle before we read them
        target = out / f"kafka-{version}"
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        first = exchange(ports.plaintext, api_versions_frame(0, 1))
        assert first is not None
        _, answer_v0 = decode_response(first, 18, 0)
        assert isinstance(answer_v0, ApiVersionsResponse)
        advertised = {k.api_key: k.max_version for k in answer_v0.api_keys}
        index = []
        for name, key, v, frame in probes(minor, advertised):
            answer = exchange(ports.plaintext, frame)
            entry: dict[str, object] = {
                "probe": name, "api_key": key, "api_version": v, "request": frame.hex(),
                "outcome": "closed" if answer is None else "answered",
            }  # fmt: skip
            if answer is not None and key == 18:
                (target / f"{name}.bin").write_bytes(answer)
                entry["file"] = f"{name}.bin"
            elif answer is not None:
                entry["response"] = answer.hex()
            index.append(entry)
            print(f"kafka {version}: {name}: {entry['outcome']}", flush=True)
        (target / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "tests/broker/golden/api_versions")
    parser.add_argument("--release", action="append", help="e.g. 3.9.1 (repeatable)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="millpond-api-versions-") as tmp:
        for version in args.release or RELEASES:
            work = Path(tmp) / version
            work.mkdir()
            try:
                capture(version, args.out, work)
            except Exception:
                print(f"--- {work / 'kafka.log'}", file=sys.stderr)
                log = work / "kafka.log"
                if log.exists():
                    print(log.read_text(errors="replace")[-4000:], file=sys.stderr)
                raise
    return 0


if __name__ == "__main__":
    sys.exit(main())

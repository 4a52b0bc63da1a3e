"""Record golden protocol bytes: real clients talking to a real Apache Kafka 4.4 broker.

    .venv/bin/python -m tools.capture.run --out tests/wire/golden

Builds each driver, starts Kafka and the recording proxy, runs the drivers one after another
(each connection is labelled with the driver running when it opened), stops everything, even on
errors, and writes tests/wire/golden/<client>/ plus a README. Not run by CI: it needs Maven
Central, npm, PyPI and the Go proxy, and takes a few minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from compat_tests.kafka.reference import (
    KAFKA_VERSION,
    Ports,
    free_port,
    install,
    kafka_classpath,
    start_broker,
)
from tools.capture import goldens
from tools.capture.apis import api_name
from tools.capture.proxy import Frame, RecordingProxy

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
BROKER_LABEL = "kafka-broker"
IGNORED_LABEL = "unlabelled"  # connections opened while no driver runs
DRIVER_TIMEOUT_S = 300


def run(cmd: list[str], timeout: float, cwd: Path | None = None) -> None:
    """A build step: must succeed within timeout."""
    print("$", " ".join(c if len(c) < 100 else c[:60] + "..." for c in cmd), flush=True)
    subprocess.run(cmd, check=True, timeout=timeout, cwd=cwd)


@dataclass
class Driver:
    """A client program: how to build it, and the command that runs it against a bootstrap."""

    label: str
    build: Callable[[str, Path], None]
    command: Callable[[str, Path, str], list[str]]


def build_java(cp: str, work: Path) -> None:
    """Compile the Java driver and the broker's telemetry sink (always: the broker needs it)."""
    sources = [str(p) for p in sorted((HERE / "driver_java").glob("*.java"))]
    run(["javac", "-nowarn", "-d", str(work / "java-classes"), "-cp", cp, *sources], timeout=300)


def build_kafkajs(cp: str, work: Path) -> None:
    run(["npm", "ci", "--no-audit", "--no-fund"], timeout=300, cwd=HERE)


def build_franz(cp: str, work: Path) -> None:
    run(
        ["go", "build", "-o", str(work / "driver_franz"), "."],
        timeout=600,
        cwd=HERE / "driver_franz",
    )


def no_build(cp: str, work: Path) -> None:
    """The Python drivers need only the `capture` extras installed in the venv."""


DRIVERS = [
    Driver(
        "java",
        no_build,
        lambda cp, work, bs: [
            "java",
            "-Xmx256m",
            "-cp",
            f"{cp}{os.pathsep}{work / 'java-classes'}",
            "CaptureDriver",
            bs,
        ],
    ),
    Driver(
        "confluent-kafka",
        no_build,
        lambda cp, work, bs: [sys.executable, "-m", "tools.capture.driver_confluent", bs],
    ),
    Driver(
        "kafka-python",
        no_build,
        lambda cp, work, bs: [sys.executable, "-m", "tools.capture.driver_kafka_python", bs],
    ),
    Driver(
        "kafkajs", build_kafkajs, lambda cp, work, bs: ["node", str(HERE / "driver_kafkajs.js"), bs]
    ),
    Driver("franz-go", build_franz, lambda cp, work, bs: [str(work / "driver_franz"), bs]),
]


def run_driver(cmd: list[str], log: Path) -> int:
    """Run a driver in its own process group, killing the group if it overstays."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            return proc.wait(timeout=DRIVER_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
            return -9
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


def capture(drivers: list[Driver], work: Path) -> tuple[list[Frame], dict[str, int]]:
    """Start proxy and broker, run the drivers, stop both; return every frame recorded."""
    install()  # Kafka's jars from Maven Central, unless already there
    cp = kafka_classpath()
    build_java(cp, work)
    for d in drivers:
        d.build(cp, work)
    proxy = RecordingProxy()
    proxy.start()
    statuses: dict[str, int] = {}
    try:
        bind = Ports(free_port(), free_port(), free_port(), 0, 0, 0)
        ports = Ports(
            bind.plaintext,
            bind.internal,
            bind.controller,
            proxy.listen(bind.plaintext),
            proxy.listen(bind.internal, BROKER_LABEL),
            proxy.listen(bind.controller, BROKER_LABEL),
        )
        reporter = {"metric.reporters": "TelemetrySink"}
        t0 = time.monotonic()
        with start_broker(
            work / "kafka", ports=ports, config=reporter, extra_classpath=[work / "java-classes"]
        ) as broker:
            print(f"kafka ready in {time.monotonic() - t0:.1f}s", flush=True)
            bootstrap = broker.bootstrap
            for d in drivers:
                proxy.label = d.label
                t0 = time.monotonic()
                rc = run_driver(d.command(cp, work, bootstrap), work / f"{d.label}.log")
                statuses[d.label] = rc
                print(
                    f"driver {d.label}: exit {rc} in {time.monotonic() - t0:.1f}s "
                    f"(log {work / (d.label + '.log')})",
                    flush=True,
                )
            proxy.label = IGNORED_LABEL
    finally:
        proxy.stop()
    return [f for f in proxy.frames if f.label != IGNORED_LABEL], statuses


def coverage(out: Path) -> str:
    """A markdown table of every client's goldens under out (not only this run's drivers)."""
    lines = ["| client | API keys: versions | files |", "| --- | --- | --- |"]
    all_keys: set[int] = set()
    for index in sorted(out.glob("*/index.json")):
        entries = json.loads(index.read_text())
        versions: dict[int, set[int]] = defaultdict(set)
        for e in entries:
            versions[e["api_key"]].add(e["api_version"])
        all_keys |= versions.keys()
        apis = ", ".join(
            f"{api_name(k)}({k}) v{'/'.join(map(str, sorted(v)))}"
            for k, v in sorted(versions.items())
        )
        lines.append(f"| {index.parent.name} ({len(versions)} keys) | {apis} | {len(entries)} |")
    lines.append("")
    lines.append(f"Distinct API keys over all clients: {len(all_keys)}.")
    return "\n".join(lines)


README = """\
# Golden protocol bytes

Frames recorded by `tools/capture` between real Kafka clients and a real Apache Kafka
{kafka} broker (KRaft, combined mode, one node, loopback). Requests are what each client sent;
responses are what Kafka {kafka} answered. Each `.bin` file is one frame **without** its 4-byte
size prefix (request header + body, or response header + body). `<client>/index.json` lists
`file`, `kind`, `api_key`, `api_version`, `correlation_id` and `connection` (a proxy connection
id; a request and its response share `connection` and `correlation_id`).

At most {per_group} exchanges are kept per (client, API key, version), preferring ones that carry
record batches of a codec or batch type not kept yet; frames over 64 KiB are left out.

Clients:
- `java`: Apache Kafka `kafka-clients` {kafka} (producer, transactional producer, classic and
  KIP-848 consumers, share consumer, Admin)
- `confluent-kafka`: confluent-kafka-python 2.16.1 (librdkafka {librdkafka})
- `kafka-python`: kafka-python 3.0.12
- `kafkajs`: kafkajs 2.2.4 (npm)
- `franz-go`: github.com/twmb/franz-go v1.22.3 with pkg/kadm v1.20.0
- `kafka-broker`: the Kafka {kafka} broker itself as a client, on its inter-broker and
  controller channels (broker registration and heartbeats, transaction markers, ...)

The broker runs with an authorizer (`StandardAuthorizer`, `User:ANONYMOUS` as super user) so
the ACL APIs answer for real, and with a no-op client-telemetry reporter
(`tools/capture/driver_java/TelemetrySink.java`) so it offers GetTelemetrySubscriptions and
PushTelemetry; the Java driver adds a client-metrics subscription that later clients also pick up.
Some frames are error answers on purpose (for example DescribeDelegationToken over PLAINTEXT).

Regenerate from the repository root (needs Java 17, Maven, Node.js with npm and Go, plus Maven
Central, npm, PyPI and the Go proxy; about two minutes):

    .venv/bin/pip install -e '.[capture]'
    .venv/bin/python -m tools.capture.run --out tests/wire/golden

Kafka's jars go to `~/.cache/millpond/kafka-4.4` (or `$MILLPOND_KAFKA_CACHE`); driver logs, the
broker log and `frames.tsv` (every frame seen, kept or not) go to a temporary directory that the
run prints.

Values differ between runs (ids, timestamps, UUIDs), so a refresh rewrites every file.

## Coverage of this capture

{coverage}
"""


def librdkafka_version() -> str:
    try:
        import confluent_kafka

        return str(confluent_kafka.libversion()[0])
    except ImportError:
        return "?"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "tests/wire/golden")
    parser.add_argument("--only", nargs="*", help="driver labels to run (default: all)")
    parser.add_argument("--keep-work", action="store_true", help="keep the broker's work dir")
    args = parser.parse_args(argv)
    drivers = [d for d in DRIVERS if not args.only or d.label in args.only]
    work = Path(tempfile.mkdtemp(prefix="millpond-capture-"))
    try:
        frames, statuses = capture(drivers, work)
    finally:
        if not args.keep_work:
            shutil.rmtree(work / "kafka" / "data", ignore_errors=True)
    with (work / "frames.tsv").open("w") as log:  # every frame, for debugging a capture
        for f in frames:
            kinds = sorted(goldens.batch_kinds(f.payload))
            print(
                f.seq,
                f.label,
                f.connection,
                f.kind,
                api_name(f.api_key),
                f.api_version,
                f.correlation_id,
                f.size,
                kinds,
                sep="\t",
                file=log,
            )
    goldens.write(goldens.select(frames), args.out)
    table = coverage(args.out)
    (args.out / "README.md").write_text(
        README.format(
            kafka=KAFKA_VERSION,
            per_group=goldens.PER_GROUP,
            librdkafka=librdkafka_version(),
            coverage=table,
        )
    )
    print(table)
    print(f"logs in {work}")
    failed = {k: v for k, v in statuses.items() if v != 0}
    if failed:
        print(f"drivers that failed: {failed}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

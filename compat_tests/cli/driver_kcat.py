"""kcat driver of ../SCENARIOS.md: ``python driver_kcat.py produce-consume ...`` runs Debian's
``kcat`` (librdkafka underneath) and turns what it prints into the contract's JSON lines; several
scenarios joined with ``--`` run one after the other (contract.run_all). kcat has no admin API,
so it runs ``produce-consume``, ``acks``, ``large`` and the ``unknown-topic`` step of ``errors``.

kcat's producer takes a key delimiter (``-K``) and headers (``-H name=value``) that apply to every
record of one run, and it stamps records with the wall clock: it has no option for a record's
timestamp. So each record of ``produce-consume`` is produced by its own ``kcat -P`` run (its own
``h1`` header) and keeps the time kcat gave it, which is later than ``start_ts``; the replay
threshold is the timestamp record ``count // 2`` got, which this driver prints as
``{"event": "threshold", "timestamp": ts}`` (the harness checks with ``exact_timestamps=False``).
Consuming is ``kcat -C`` with ``-e`` and an ``-f`` format string: every partition from
``-o beginning``, then each partition holding more than one record (``kcat -Q`` tells its latest
offset) from ``-o 1``, then every partition from ``-o s@<ts>``.

kcat reports a failed delivery by librdkafka's description of the error ("Broker: Message size
too large"); the driver turns a broker error's description back into Kafka's error number with
the table of librdkafka's own descriptions (through confluent-kafka's KafkaError), and a local
one ("Local: ...") into no number. ``MILLPOND_DRIVER_DEBUG=1`` adds librdkafka's
``-d protocol,broker`` log to stderr.
"""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make compat_tests importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from compat_tests.python.contract import (  # noqa: E402
    ACKS_COUNT,
    ACKS_PRODUCERS,
    LARGE_KEY,
    LARGE_LIMIT,
    LARGE_NEAR,
    LARGE_OVER,
    MAX_WAIT,
    Args,
    emit,
    emit_acks_record,
    emit_error,
    emit_large_record,
    emit_produced,
    large_value,
    parse_runs,
    record,
    run_all,
)

KCAT = os.environ.get("KCAT", "kcat")
# partition, offset, timestamp, key length (-1: null), key, value length, value, headers (n=v,..)
FORMAT = "%p\\t%o\\t%T\\t%K\\t%k\\t%S\\t%s\\t%h\\n"
DELIVERED = re.compile(r"Message delivered to partition (-?\d+) \(offset (-?\d+)\)")
FAILED = re.compile(r"Delivery failed for message: (.*)")
# kcat reads its input in lines no longer than message.max.bytes: raised for ``large``.
LIMITS = [
    f"message.max.bytes={LARGE_LIMIT}",
    f"fetch.message.max.bytes={LARGE_LIMIT}",
    f"fetch.max.bytes={LARGE_LIMIT}",
    f"receive.message.max.bytes={LARGE_LIMIT + 1024}",
]


def _common(args: Args, topic: str | None = None, *config: str) -> list[str]:
    command = [KCAT, "-b", args.bootstrap, "-t", topic or args.topic, "-m", "30"]
    for setting in config:
        command += ["-X", setting]
    if os.environ.get("MILLPOND_DRIVER_DEBUG"):
        command += ["-d", "protocol,broker"]
    return command


def _run(
    command: list[str], stdin: bytes = b"", *, check: bool = True
) -> subprocess.CompletedProcess[bytes]:
    result = subprocess.run(
        command, input=stdin, capture_output=True, timeout=MAX_WAIT, check=False
    )
    if os.environ.get("MILLPOND_DRIVER_DEBUG"):
        sys.stderr.write(result.stderr.decode(errors="replace"))
    if check and result.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command)} exited {result.returncode}:\n"
            f"{result.stderr.decode(errors='replace')}{result.stdout[:2000]!r}"
        )
    return result


@functools.cache
def _broker_errors() -> dict[str, int]:
    """librdkafka's description of every broker error (Kafka's numbers) -> the number."""
    from confluent_kafka import KafkaError

    return {KafkaError(code).str(): code for code in range(-1, 200)}


def _code(description: str) -> int | None:
    """Kafka's error number of a delivery failure kcat printed; None for librdkafka's own."""
    if description.startswith("Local:"):
        return None
    code = _broker_errors().get(description)
    if code is None:
        raise RuntimeError(f"kcat reported an error this driver cannot number: {description!r}")
    return code


def _produce(command: list[str], lines: bytes) -> tuple[list[tuple[int, int]], list[str]]:
    """Run ``kcat -P`` (``-v -v``: delivery reports on stderr) on ``lines``: the (partition,
    offset) of every delivered record and the description of every failed one."""
    result = _run([*command, "-P", "-K", "\\t", "-v", "-v"], lines, check=False)
    stderr = result.stderr.decode(errors="replace")
    delivered = [(int(p), int(o)) for p, o in DELIVERED.findall(stderr)]
    failed = FAILED.findall(stderr)
    if result.returncode != 0 and not failed:
        raise RuntimeError(f"{' '.join(command)} -P exited {result.returncode}:\n{stderr}")
    return delivered, failed


# --- produce-consume ---------------------------------------------------------------------------


def produce(args: Args) -> None:
    for i in range(args.count):
        r = record(i, args.start_ts)
        command = [*_common(args), "-c", "1"]
        for name, value in r.headers:
            command += ["-H", f"{name}={value.decode()}"]
        if args.compression != "none":
            command += ["-X", f"compression.codec={args.compression}"]
        delivered, failed = _produce(command, r.key + b"\t" + r.value + b"\n")
        if failed or len(delivered) != 1:
            raise RuntimeError(f"record {i}: delivered {delivered}, failed {failed}")
        emit_produced(i, *delivered[0])


def _parse_headers(text: str) -> list[list[str | None]]:
    if not text:
        return []
    headers: list[list[str | None]] = []
    for item in text.split(","):
        name, _, value = item.partition("=")
        headers.append([name, value])
    return headers


def consume(
    args: Args, phase: str, offset: str, partition: int | None = None
) -> list[dict[str, Any]]:
    command = [*_common(args), "-C", "-o", offset, "-e", "-f", FORMAT]
    if partition is not None:
        command += ["-p", str(partition)]
    records = []
    for line in _run(command).stdout.decode().splitlines():
        fields = line.split("\t")
        if len(fields) != 8:
            raise RuntimeError(f"unexpected kcat -C line {line!r}")
        p, o, ts, key_len, key, value_len, value, headers = fields
        event: dict[str, Any] = {
            "event": "record",
            "phase": phase,
            "partition": int(p),
            "offset": int(o),
            "key": None if int(key_len) < 0 else key,
            "value": None if int(value_len) < 0 else value,
            "headers": _parse_headers(headers),
            "timestamp": int(ts),
        }
        emit(event)
        records.append(event)
    return records


def latest_offsets(args: Args) -> dict[int, int]:
    """Every partition's latest offset (``kcat -Q``, timestamp -1)."""
    command = [KCAT, "-b", args.bootstrap, "-Q", "-J"]
    for p in range(args.partitions):
        command += ["-t", f"{args.topic}:{p}:-1"]
    found = json.loads(_run(command).stdout)[args.topic]
    return {int(p): int(v["offset"]) for p, v in found.items() if p.isdigit()}


def produce_consume(args: Args) -> None:
    produce(args)
    records = consume(args, "beginning", "beginning")
    for p, latest in sorted(latest_offsets(args).items()):
        if latest > 1:
            consume(args, "from_offset", "1", p)
    middle = f"value-{args.count // 2}"
    threshold = next((r["timestamp"] for r in records if r["value"] == middle), None)
    if threshold is None:
        raise RuntimeError(f"record {middle!r} was not read back: no replay threshold")
    emit({"event": "threshold", "timestamp": threshold})
    consume(args, "from_timestamp", f"s@{threshold}")


# --- acks --------------------------------------------------------------------------------------


def acks(args: Args) -> None:
    for spec in ACKS_PRODUCERS:
        config = [
            f"acks={'all' if spec.acks == -1 else spec.acks}",
            f"enable.idempotence={str(spec.idempotent).lower()}",
        ]
        command = [*_common(args, None, *config), "-p", str(spec.partition)]
        lines = b"".join(spec.key(i) + b"\t" + spec.value(i) + b"\n" for i in range(ACKS_COUNT))
        delivered, failed = _produce(command, lines)
        if failed or len(delivered) != ACKS_COUNT:
            raise RuntimeError(f"{spec.name}: delivered {delivered}, failed {failed}")
        for i, (partition, offset) in enumerate(delivered):
            # acks=0: librdkafka reports no offset (a negative logical one, -1001 or -1000)
            emit(
                {
                    "event": "produced",
                    "producer": spec.name,
                    "i": i,
                    "partition": partition,
                    "offset": offset if offset >= 0 else -1,
                }
            )
    command = [*_common(args), "-C", "-o", "beginning", "-e", "-f", "%p\\t%o\\t%s\\n"]
    for line in _run(command).stdout.decode().splitlines():
        p, o, value = line.split("\t")
        emit_acks_record(int(p), int(o), value.encode())


# --- large -------------------------------------------------------------------------------------


def large(args: Args) -> None:
    command = [*_common(args, None, *LIMITS), "-p", "0"]
    for step, size in (("near-limit", LARGE_NEAR), ("over-limit", LARGE_OVER)):
        delivered, failed = _produce(command, LARGE_KEY + b"\t" + large_value(size) + b"\n")
        if step == "near-limit":
            if failed or len(delivered) != 1:
                raise RuntimeError(f"near-limit: delivered {delivered}, failed {failed}")
            partition, offset = delivered[0]
            emit({"event": "produced", "step": step, "partition": partition, "offset": offset})
        else:
            if not failed:
                raise RuntimeError(f"over-limit: the broker accepted it at {delivered}")
            emit_error(step, _code(failed[0]), failed[0])
    reader = [*_common(args, None, *LIMITS), "-C", "-p", "0", "-o", "beginning", "-e"]
    output = _run([*reader, "-f", "%o\\t%s\\n"]).stdout
    for line in output.split(b"\n"):
        if line:
            at, _, value = line.partition(b"\t")
            emit_large_record(int(at), value)


# --- errors ------------------------------------------------------------------------------------


def errors(args: Args) -> None:
    command = _common(args, f"{args.topic}-missing", "message.timeout.ms=5000")
    delivered, failed = _produce(command, b"\tlost\n")
    if not failed:
        raise RuntimeError(f"unknown-topic: a record to a missing topic was delivered: {delivered}")
    emit_error("unknown-topic", _code(failed[0]), failed[0])


SCENARIOS = {
    "produce-consume": produce_consume,
    "acks": acks,
    "large": large,
    "errors": errors,
}


def main() -> int:
    return run_all(parse_runs(scenarios=list(SCENARIOS)), SCENARIOS)


if __name__ == "__main__":
    raise SystemExit(main())

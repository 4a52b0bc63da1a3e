"""kcat driver of ../SCENARIOS.md: ``python driver_kcat.py produce-consume ...`` runs Debian's
``kcat`` (librdkafka underneath) and turns what it prints into the contract's JSON lines.

kcat's producer takes a key delimiter (``-K``) and headers (``-H name=value``) that apply to every
record of one run, and it stamps records with the wall clock: it has no option for a record's
timestamp. So each record is produced by its own ``kcat -P`` run (its own ``h1`` header) and keeps
the time kcat gave it, which is later than ``start_ts``; the replay threshold is the timestamp
record ``count // 2`` got, which this driver prints as ``{"event": "threshold", "timestamp": ts}``
(the harness checks with ``exact_timestamps=False``). Consuming is ``kcat -C`` over every
partition, ``-o beginning`` then ``-o s@<ts>``, with ``-e`` and an ``-f`` format string.
``MILLPOND_DRIVER_DEBUG=1`` adds librdkafka's ``-d protocol,broker`` log to stderr.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make compat_tests importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from compat_tests.python.contract import (  # noqa: E402
    MAX_WAIT,
    Args,
    emit,
    emit_produced,
    parse_args,
    record,
)

KCAT = os.environ.get("KCAT", "kcat")
# partition, offset, timestamp, key length (-1: null), key, value length, value, headers (n=v,..)
FORMAT = "%p\\t%o\\t%T\\t%K\\t%k\\t%S\\t%s\\t%h\\n"
DELIVERED = re.compile(r"Message delivered to partition (-?\d+) \(offset (-?\d+)\)")


def _common(args: Args) -> list[str]:
    command = [KCAT, "-b", args.bootstrap, "-t", args.topic, "-m", "30"]
    if os.environ.get("MILLPOND_DRIVER_DEBUG"):
        command += ["-d", "protocol,broker"]
    return command


def _run(command: list[str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        command, input=stdin, capture_output=True, text=True, timeout=MAX_WAIT, check=False
    )
    if os.environ.get("MILLPOND_DRIVER_DEBUG"):
        sys.stderr.write(result.stderr)
    if result.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command)} exited {result.returncode}:\n{result.stderr}{result.stdout}"
        )
    return result


def produce(args: Args) -> None:
    for i in range(args.count):
        r = record(i, args.start_ts)
        command = [*_common(args), "-P", "-K", "\\t", "-v", "-v", "-c", "1"]
        for name, value in r.headers:
            command += ["-H", f"{name}={value.decode()}"]
        if args.compression != "none":
            command += ["-X", f"compression.codec={args.compression}"]
        result = _run(command, f"{r.key.decode()}\t{r.value.decode()}\n")
        found = DELIVERED.search(result.stderr)
        if found is None:
            raise RuntimeError(
                f"kcat -P printed no delivery report for record {i}:\n{result.stderr}"
            )
        emit_produced(i, int(found[1]), int(found[2]))


def _parse_headers(text: str) -> list[list[str | None]]:
    if not text:
        return []
    headers: list[list[str | None]] = []
    for item in text.split(","):
        name, _, value = item.partition("=")
        headers.append([name, value])
    return headers


def consume(args: Args, phase: str, offset: str) -> list[dict[str, Any]]:
    command = [*_common(args), "-C", "-o", offset, "-e", "-f", FORMAT]
    records = []
    for line in _run(command).stdout.splitlines():
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


def main() -> int:
    args = parse_args()
    produce(args)
    records = consume(args, "beginning", "beginning")
    middle = f"value-{args.count // 2}"
    threshold = next((r["timestamp"] for r in records if r["value"] == middle), None)
    if threshold is None:
        sys.stderr.write(f"record {middle!r} was not read back: no replay threshold\n")
        return 1
    emit({"event": "threshold", "timestamp": threshold})
    consume(args, "from_timestamp", f"s@{threshold}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

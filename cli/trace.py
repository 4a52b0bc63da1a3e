"""``millpond trace FILE``: read a protocol trace (``millpond serve --trace FILE`` or the
``millpond.trace.file`` config), one request per line for people, filtered by API,
client, connection or errors; ``-v`` adds the decoded request and response, ``--format
json`` passes the chosen lines on as JSON lines, and ``--lint`` reports protocol misuse
(:mod:`millpond.cli.trace_lint`), exiting 1 when it finds any."""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from collections.abc import Iterator
from typing import Any

from millpond.cli.errors import CliError
from millpond.cli.trace_lint import Linter


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = commands.add_parser(
        "trace",
        help="read, filter and lint a protocol trace file",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("file", help="a trace file ('-' for stdin)")
    parser.add_argument("--api", action="append", default=[], help="only this API (repeatable)")
    parser.add_argument("--client", help="only requests with this client id")
    parser.add_argument("--connection", type=int, help="only this connection number")
    parser.add_argument(
        "--errors", action="store_true", help="only requests answered with an error or closed"
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show each decoded request and response"
    )
    parser.add_argument(
        "--lint", action="store_true", help="report protocol misuse; exit 1 if there is any"
    )
    parser.add_argument("--format", choices=["text", "json"], default="text")
    parser.set_defaults(run=run)


def _lines(path: str) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        stream = sys.stdin if path == "-" else open(path, encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        raise CliError(
            f"cannot read {path}: {exc.strerror}",
            "pass a file written by `millpond serve --trace FILE`",
        ) from None
    with stream:
        for number, raw in enumerate(stream, 1):
            if not raw.strip():
                continue
            try:
                line = json.loads(raw)
            except ValueError as exc:
                sys.stderr.write(f"millpond trace: {path}:{number}: skipped, not JSON ({exc})\n")
                continue
            if not isinstance(line, dict) or "api" not in line:
                sys.stderr.write(f"millpond trace: {path}:{number}: skipped, not a trace line\n")
                continue
            yield number, line


def error_codes(data: Any) -> set[int]:
    """Every non-zero ``error_code`` anywhere in a decoded response."""
    found: set[int] = set()
    if isinstance(data, dict):
        for name, value in data.items():
            if name == "error_code" and isinstance(value, int) and value:
                found.add(value)
            else:
                found |= error_codes(value)
    elif isinstance(data, list):
        for item in data:
            found |= error_codes(item)
    return found


def _chosen(args: argparse.Namespace, line: dict[str, Any]) -> bool:
    apis = {a.lower() for a in args.api}
    if apis and str(line.get("api", "")).lower() not in apis and str(line.get("key")) not in apis:
        return False
    if args.client is not None and line.get("client") != args.client:
        return False
    if args.connection is not None and line.get("connection") != args.connection:
        return False
    return not args.errors or (
        line.get("outcome") == "closed" or bool(error_codes(line.get("response")))
    )


def _text(line: dict[str, Any]) -> str:
    from millpond.wire.errors import error_name

    stamp = datetime.datetime.fromtimestamp(line.get("ts", 0) / 1000, tz=datetime.UTC)
    errors = sorted(error_codes(line.get("response")))
    failed = f"  errors: {', '.join(error_name(e) for e in errors)}" if errors else ""
    latency = line.get("latency_us", 0) / 1000
    return (
        f"{stamp:%H:%M:%S}.{stamp.microsecond // 1000:03d}  conn {line.get('connection')}  "
        f"{line.get('client')!s:<20} {line.get('api')} v{line.get('version')}  "
        f"#{line.get('correlation_id')}  {latency:.1f} ms  {line.get('outcome')}{failed}"
    )


def run(args: argparse.Namespace) -> int:
    linter = Linter() if args.lint else None
    findings = []
    shown = 0
    for number, line in _lines(args.file):
        if linter is not None:
            findings.extend(linter.feed(number, line))
        if not _chosen(args, line):
            continue
        shown += 1
        if args.format == "json":
            sys.stdout.write(json.dumps(line) + "\n")
            continue
        if linter is not None and not args.verbose:
            continue  # --lint alone: just the findings
        sys.stdout.write(_text(line) + "\n")
        if args.verbose:
            for part in ("request", "response"):
                body = json.dumps(line.get(part), indent=2).replace("\n", "\n    ")
                sys.stdout.write(f"  {part}:\n    {body}\n")
    if linter is None:
        return 0
    for finding in findings:
        if args.format == "json":
            sys.stdout.write(json.dumps({"lint": finding.to_data()}) + "\n")
        else:
            sys.stdout.write(
                f"line {finding.line}: {finding.rule}: client {finding.client!r}: "
                f"{finding.message}\n"
            )
    if args.format == "text":
        sys.stdout.write(f"{len(findings)} finding(s) in {shown} request(s)\n")
    return 1 if findings else 0

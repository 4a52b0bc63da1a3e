"""The ``millpond`` tools that talk to a cluster (any Kafka broker) or read its files.

Each module registers one command group on the ``millpond`` parser; :func:`run` runs the
chosen command and turns a :class:`CliError` into a message and an exit code, so a
user's mistake never ends in a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from millpond.cli.client import DEFAULT_BOOTSTRAP, Client
from millpond.cli.errors import CliError
from millpond.cli.output import add_format

Command = Callable[[argparse.Namespace], int]


def add_connection(parser: argparse.ArgumentParser, output: bool = True) -> None:
    """The options every command that talks to a broker takes."""
    parser.add_argument(
        "--bootstrap-server",
        default=DEFAULT_BOOTSTRAP,
        metavar="HOST:PORT",
        help=f"a broker of the cluster, or a comma-separated list (default {DEFAULT_BOOTSTRAP})",
    )
    parser.add_argument(
        "--timeout-ms",
        type=int,
        default=30000,
        metavar="MS",
        help="how long to wait for each answer (default 30000)",
    )
    if output:
        add_format(parser)


def add_command(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    summary: str,
    doc: str | None,
) -> argparse.ArgumentParser:
    """A command whose ``--help`` shows its module docstring as written (paragraphs kept)."""
    return commands.add_parser(
        name, help=summary, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )


def connect(args: argparse.Namespace) -> Client:
    return Client(args.bootstrap_server, args.timeout_ms)


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from millpond.cli import bench, cluster, consume, dump_log, group, produce, topic, trace

    for module in (topic, produce, consume, group, cluster, dump_log, bench, trace):
        module.register(commands)


def run(args: argparse.Namespace) -> int:
    command: Command = args.run
    try:
        return command(args)
    except CliError as exc:
        sys.stderr.write(f"millpond {args.command}: error: {exc.what}\n")
        if exc.hint:
            sys.stderr.write(f"  hint: {exc.hint}\n")
        return exc.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("\ninterrupted\n")
        return 130
    except BrokenPipeError:  # `millpond consume ... | head`: the reader is gone, stop quietly
        sys.stderr.close()
        return 0

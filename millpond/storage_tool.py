"""``millpond storage format|random-uuid``: prepare a node's directories, as Kafka's
kafka-storage tool does.

``format`` writes ``meta.properties`` (the cluster id, the node id and a directory id of
its own) into every directory of ``log.dirs`` and into ``metadata.log.dir``, so that the
nodes of one cluster agree on its id before they first start. A single node needs no
format step (``millpond serve`` makes up an id on first start); every node of a quorum of
several does, with one id for all of them: make it with ``random-uuid``. A directory
already formatted for another cluster or node is refused, as a node would refuse it.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import random
import sys

# The tools' error type, imported when a command runs: building the parser for `millpond
# serve` loads none of the tools.

_HINT_ID = "make one with `millpond storage random-uuid` and give every node of the cluster it"


def _cluster_id(text: str) -> str:
    """Kafka's form of a cluster id: a UUID in URL-safe base64 without padding."""
    from millpond.cli.errors import CliError

    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 16 or len(text) != 22:
        raise CliError(f"cluster id {text!r} is not a base64 UUID (22 characters)", _HINT_ID)
    return text


def _format(args: argparse.Namespace) -> int:
    from millpond.broker.config import ConfigError, load_config
    from millpond.cli.errors import CliError
    from millpond.storage.clock import SystemClock
    from millpond.storage.fs import OsFileSystem
    from millpond.storage.log_dirs import LogDirError, ensure_meta_properties

    cluster_id = _cluster_id(args.cluster_id)
    try:
        config, _ = load_config(args.config, args.override)
    except (ConfigError, OSError) as exc:
        raise CliError(str(exc), "fix the configuration, then format again") from None
    fs = OsFileSystem()
    for directory in dict.fromkeys([config.metadata_log_dir, *config.log_dirs]):
        fs.makedirs(directory)
        try:
            ensure_meta_properties(fs, directory, cluster_id, config.node_id, SystemClock())
        except LogDirError as exc:
            raise CliError(
                str(exc), "format a new directory, or remove this one's data first"
            ) from None
        sys.stdout.write(f"Formatted {directory} for cluster {cluster_id}, node {config.node_id}\n")
    return 0


def _random_uuid(args: argparse.Namespace) -> int:
    from millpond.broker.node import new_cluster_id

    sys.stdout.write(new_cluster_id(random.SystemRandom()) + "\n")
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    storage = commands.add_parser(
        "storage",
        help="format a node's directories",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = storage.add_subparsers(dest="action", required=True)
    fmt = actions.add_parser("format", help="write meta.properties into every data directory")
    fmt.add_argument("-t", "--cluster-id", required=True, metavar="ID")
    fmt.add_argument("-c", "--config", metavar="FILE", help="the node's server.properties")
    fmt.add_argument(
        "--override",
        metavar="KEY=VALUE",
        action="append",
        default=[],
        help="set one property, after the file (repeatable)",
    )
    fmt.set_defaults(run=_format)
    uuid = actions.add_parser("random-uuid", help="print a new cluster id")
    uuid.set_defaults(run=_random_uuid)

"""``millpond storage format|random-uuid``: prepare a node's directories, as Kafka's
kafka-storage tool does.

``format`` writes ``meta.properties`` (the cluster id, the node id and a directory id of
its own) into every directory of ``log.dirs`` and into ``metadata.log.dir``, so that the
nodes of one cluster agree on its id before they first start. A single node needs no
format step (``millpond serve`` makes up an id on first start); every node of a quorum of
several does, with one id for all of them: make it with ``random-uuid``. A directory
already formatted for another cluster or node is refused, as a node would refuse it.

A controller of a dynamic quorum (``controller.quorum.bootstrap.servers`` set,
``controller.quorum.voters`` not) is also given its first voters: ``--standalone`` (this
node alone), ``--initial-controllers ID@HOST:PORT:DIRECTORY_ID,...`` or
``--no-initial-controllers`` (a controller to be added later with
``kafka-metadata-quorum add-controller``).
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
    from millpond.quorum_format import QuorumFormatError, initial_voters, write_bootstrap
    from millpond.storage.checkpoints import (
        MetaProperties,
        read_meta_properties,
        write_meta_properties,
    )
    from millpond.storage.clock import SystemClock
    from millpond.storage.fs import OsFileSystem, join
    from millpond.storage.log_dirs import LogDirError, ensure_meta_properties
    from millpond.storage.uuids import random_uuid4

    cluster_id = _cluster_id(args.cluster_id)
    try:
        config, _ = load_config(args.config, args.override)
    except (ConfigError, OSError) as exc:
        raise CliError(str(exc), "fix the configuration, then format again") from None
    fs = OsFileSystem()
    clock = SystemClock()
    metadata_meta = join(config.metadata_log_dir, "meta.properties")
    held = read_meta_properties(fs, metadata_meta) if fs.exists(metadata_meta) else None
    try:
        seed = initial_voters(
            config,
            standalone=args.standalone,
            initial_controllers=args.initial_controllers,
            no_initial_controllers=args.no_initial_controllers,
            directory_id=(held and held.directory_id) or random_uuid4(),
        )
    except QuorumFormatError as exc:
        raise CliError(str(exc), "run format again with the right flags") from None
    for directory in dict.fromkeys([config.metadata_log_dir, *config.log_dirs]):
        fs.makedirs(directory)
        path = join(directory, "meta.properties")
        pinned = seed.directory_id if seed and directory == config.metadata_log_dir else None
        if pinned is not None and not fs.exists(path):
            meta = MetaProperties(1, cluster_id, config.node_id, pinned)
            write_meta_properties(fs, path, meta, written_at_ms=clock.now_ms())
        try:
            meta = ensure_meta_properties(fs, directory, cluster_id, config.node_id, clock)
            if pinned is not None and meta.directory_id != pinned:
                raise LogDirError(
                    f"{path}: directory.id does not match the one --initial-controllers "
                    "gives this node"
                )
        except LogDirError as exc:
            raise CliError(
                str(exc), "format a new directory, or remove this one's data first"
            ) from None
        sys.stdout.write(f"Formatted {directory} for cluster {cluster_id}, node {config.node_id}\n")
    if seed is not None:
        try:
            write_bootstrap(fs, config.metadata_log_dir, clock, seed.voters)
        except QuorumFormatError as exc:
            raise CliError(
                str(exc), "format a new directory, or remove this one's data first"
            ) from None
        ids = ", ".join(str(i) for i in sorted(seed.voters.ids))
        sys.stdout.write(f"Wrote the first voters of the quorum: {ids}\n")
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
    seed = fmt.add_mutually_exclusive_group()
    seed.add_argument(
        "-s", "--standalone", action="store_true", help="this controller is the first voter"
    )
    seed.add_argument(
        "-I",
        "--initial-controllers",
        metavar="ID@HOST:PORT:DIRECTORY_ID,...",
        help="the first voters, this node among them",
    )
    seed.add_argument(
        "-N",
        "--no-initial-controllers",
        action="store_true",
        help="a controller that joins an existing quorum once it is added",
    )
    fmt.set_defaults(run=_format)
    uuid = actions.add_parser("random-uuid", help="print a new cluster id")
    uuid.set_defaults(run=_random_uuid)

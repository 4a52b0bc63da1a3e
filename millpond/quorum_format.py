"""The first voters of a dynamic quorum (KIP-853), as ``storage format`` writes them.

Kafka's ``kafka-storage format`` seeds a controller of a dynamic quorum (one named by
``controller.quorum.bootstrap.servers``, not ``controller.quorum.voters``) in one of
three ways, and so does ``millpond storage format``:

- ``--standalone``: this controller alone is the first voter; more join later
  (``kafka-metadata-quorum add-controller``);
- ``--initial-controllers ID@HOST:PORT:DIRECTORY_ID,...``: the first voters, this node
  among them, each with the directory id its metadata log directory is formatted with;
- ``--no-initial-controllers``: no voters here; the node follows the quorum as an
  observer until it is added.

The voters go into the metadata log's bootstrap checkpoint (offset 0, epoch 0: a
KRaftVersionRecord at kraft.version 1, the VotersRecord, and the bootstrap
metadata.version) beside ``meta.properties``: the same files Kafka 4.4 writes, so either
implementation starts on them.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, NamedTuple

from millpond.controller import feature_control
from millpond.controller.metadata_log import open_metadata_log
from millpond.controller.raft.keys import Endpoint, ReplicaKey, Voter, VoterSet
from millpond.controller.record_serde import encode_metadata_record
from millpond.storage.checkpoints import parse_uuid

if TYPE_CHECKING:
    from millpond.broker.config import BrokerConfig
    from millpond.storage.clock import Clock
    from millpond.storage.fs import FileSystem

__all__ = ["InitialVoters", "QuorumFormatError", "initial_voters", "write_bootstrap"]

_CONTROLLER = re.compile(r"([0-9]+)@\[?([^\[\]@]+?)\]?:([0-9]+):([A-Za-z0-9_-]{22})")


class QuorumFormatError(ValueError):
    """Flags and configuration that do not describe a quorum; the message says why."""


class InitialVoters(NamedTuple):
    voters: VoterSet
    #: The directory id this node's metadata log directory takes (None: a new one).
    directory_id: bytes | None


def _local_endpoints(config: BrokerConfig) -> tuple[Endpoint, ...]:
    names = config.controller_listener_names
    advertised = {a.name: a for a in config.advertised_listeners}
    found = []
    for listener in config.listeners:
        if listener.name in names:
            shown = advertised.get(listener.name, listener)
            wildcard = shown.host in ("", "::") or shown.host == "0.0.0.0"  # noqa: S104
            found.append(
                Endpoint(listener.name, "localhost" if wildcard else shown.host, shown.port)
            )
    return tuple(found)


def initial_voters(
    config: BrokerConfig,
    *,
    standalone: bool,
    initial_controllers: str | None,
    no_initial_controllers: bool,
    directory_id: bytes,
) -> InitialVoters | None:
    """The voters to write for this node's flags (None: nothing to write), or
    :class:`QuorumFormatError`. ``directory_id``: the one ``--standalone`` names."""
    chosen = [
        flag
        for flag, given in (
            ("--standalone", standalone),
            ("--initial-controllers", initial_controllers is not None),
            ("--no-initial-controllers", no_initial_controllers),
        )
        if given
    ]
    controller = "controller" in config.process_roles
    static = bool(config.get("controller.quorum.voters"))
    if chosen and not controller:
        raise QuorumFormatError(
            f"{chosen[0]} seeds a controller, and this node's process.roles has no "
            "controller: leave the flag out for a broker"
        )
    if chosen and static:
        raise QuorumFormatError(
            f"{chosen[0]} seeds a dynamic quorum, but controller.quorum.voters names a "
            "static one: leave the flag out, or unset controller.quorum.voters and set "
            "controller.quorum.bootstrap.servers"
        )
    if not chosen:
        if controller and not static and config.get("controller.quorum.bootstrap.servers"):
            raise QuorumFormatError(
                "controller.quorum.voters is not set on this controller, so its quorum is "
                "dynamic: give one of --standalone (the first controller), "
                "--initial-controllers (the first voters) or --no-initial-controllers (a "
                "controller that will be added)"
            )
        return None
    if no_initial_controllers:
        return None
    if standalone:
        endpoints = _local_endpoints(config)
        if not endpoints:
            raise QuorumFormatError(
                "--standalone names this node's controller listener as the first voter, "
                "and it has none: list one in listeners under a name of "
                "controller.listener.names"
            )
        key = ReplicaKey(config.node_id, directory_id)
        return InitialVoters(VoterSet([Voter(key, endpoints)]), directory_id)
    assert initial_controllers is not None
    return _parse_initial(config, initial_controllers)


def _parse_initial(config: BrokerConfig, text: str) -> InitialVoters:
    listener = (config.controller_listener_names or ("CONTROLLER",))[0]
    voters: list[Voter] = []
    for entry in text.split(","):
        match = _CONTROLLER.fullmatch(entry.strip())
        if match is None:
            raise QuorumFormatError(
                f"--initial-controllers entry {entry!r} is not ID@HOST:PORT:DIRECTORY_ID "
                "(a directory id is 22 characters: make one with `millpond storage "
                "random-uuid`)"
            )
        node_id, host, port, directory = match.groups()
        key = ReplicaKey(int(node_id), parse_uuid(directory))
        if any(v.key.id == key.id for v in voters):
            raise QuorumFormatError(f"--initial-controllers names node {node_id} twice")
        voters.append(Voter(key, (Endpoint(listener, host, int(port)),)))
    own = next((v for v in voters if v.key.id == config.node_id), None)
    if own is None:
        raise QuorumFormatError(
            f"--initial-controllers does not name this node (node.id {config.node_id}); "
            "list every first voter, this one among them"
        )
    return InitialVoters(VoterSet(voters), own.key.directory_id)


def write_bootstrap(
    fs: FileSystem, metadata_log_dir: str, clock: Clock, voters: VoterSet | None
) -> None:
    """Write the bootstrap checkpoint: ``voters`` and the bootstrap metadata.version."""
    log = open_metadata_log(fs, metadata_log_dir, clock, None)
    try:
        if log.end_offset > 0 or log.snapshots():
            raise QuorumFormatError(
                f"{metadata_log_dir} holds a metadata log already: format a new directory"
            )
        records = feature_control.bootstrap_records()
        log.write_bootstrap_checkpoint(voters, [encode_metadata_record(r) for r in records])
    finally:
        log.log.close()

"""The metadata quorum a node's ``controller.quorum.*`` settings describe.

``controller.quorum.voters`` names a static voter set (``kraft.version`` 0), each voter
reached at its ``id@host:port`` through the first of ``controller.listener.names``, as
Kafka's ``QuorumConfig`` reads it. Unset, the node is the one voter of its own quorum
(the zero-config single node). The timers and limits carry over to the Raft core as
Kafka's names mean them. :func:`node_properties` writes the settings of a node of such
a quorum, for the tools and test rigs that start several on one machine.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence

from millpond.broker.config_defs_listeners import Listener, strs
from millpond.controller.raft.config import RaftConfig
from millpond.controller.raft.keys import (
    STATIC_KRAFT_VERSIONS,
    Endpoint,
    ReplicaKey,
    Voter,
    VoterSet,
)
from millpond.storage.config_def import ConfigError, Value

__all__ = [
    "bootstrap_servers",
    "parse_bootstrap_servers",
    "parse_voters",
    "raft_config",
    "static_voters",
]

_VOTER = re.compile(r"(-?[0-9]+)@\[?([^\[\]@]*)\]?:([0-9]+)")
_HOST_PORT = re.compile(r"\[?([^\[\]@]*)\]?:([0-9]+)")
_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})
#: The listener name a voter's endpoint carries when no controller listener is named.
_DEFAULT_LISTENER = "CONTROLLER"


def parse_voters(entries: Sequence[str]) -> dict[int, tuple[str, int]]:
    """``id@host:port`` entries by node id; ConfigError naming the bad entry."""
    found: dict[int, tuple[str, int]] = {}
    for entry in entries:
        match = _VOTER.fullmatch(entry)
        if match is None or not match.group(2):
            raise ConfigError(
                "controller.quorum.voters",
                ",".join(entries),
                f"entry {entry!r} is not ID@HOST:PORT (for example 1@localhost:9093)",
            )
        node_id = int(match.group(1))
        if node_id < 0 or node_id in found:
            raise ConfigError(
                "controller.quorum.voters",
                ",".join(entries),
                f"voter id {node_id} is {'negative' if node_id < 0 else 'named twice'}; "
                "give each voter its own non-negative node.id",
            )
        found[node_id] = (match.group(2), int(match.group(3)))
    return found


def parse_bootstrap_servers(entries: Sequence[str]) -> list[tuple[str, int]]:
    """``host:port`` entries of ``controller.quorum.bootstrap.servers``; ConfigError
    naming the bad entry."""
    found = []
    for entry in entries:
        match = _HOST_PORT.fullmatch(entry)
        if match is None or not match.group(1):
            raise ConfigError(
                "controller.quorum.bootstrap.servers",
                ",".join(entries),
                f"entry {entry!r} is not HOST:PORT (for example localhost:9093)",
            )
        found.append((match.group(1), int(match.group(2))))
    return found


def bootstrap_servers(
    values: Mapping[str, Value], listeners: Sequence[Listener], controller_names: Sequence[str]
) -> list[tuple[str, int]]:
    """The controllers ``controller.quorum.bootstrap.servers`` names, less this node's
    own controller listeners (Kafka's single-node configs name the node itself)."""
    own = [
        (listener.host, listener.port)
        for listener in listeners
        if listener.name in controller_names
    ]

    def is_own(host: str, port: int) -> bool:
        return any(
            port == p and (h == host or {h or "localhost", host} <= _LOOPBACK) for h, p in own
        )

    entries = parse_bootstrap_servers(strs(values["controller.quorum.bootstrap.servers"]))
    return [(host, port) for host, port in entries if not is_own(host, port)]


def static_voters(values: Mapping[str, Value], controller_names: Sequence[str]) -> VoterSet | None:
    """The voter set ``controller.quorum.voters`` names, or None when it is unset."""
    voters = parse_voters(strs(values["controller.quorum.voters"]))
    if not voters:
        return None
    listener = controller_names[0] if controller_names else _DEFAULT_LISTENER
    return VoterSet(
        Voter(ReplicaKey(node_id), (Endpoint(listener, host, port),), STATIC_KRAFT_VERSIONS)
        for node_id, (host, port) in voters.items()
    )


def raft_config(values: Mapping[str, Value], kraft_version: int = 0) -> RaftConfig:
    """The Raft core's settings; the cluster id is the node's (meta.properties)."""

    def num(key: str) -> int:
        value = values[key]
        assert isinstance(value, int)
        return value

    return RaftConfig(
        election_timeout_ms=num("controller.quorum.election.timeout.ms"),
        fetch_timeout_ms=num("controller.quorum.fetch.timeout.ms"),
        election_backoff_max_ms=num("controller.quorum.election.backoff.max.ms"),
        request_timeout_ms=num("controller.quorum.request.timeout.ms"),
        retry_backoff_ms=num("controller.quorum.retry.backoff.ms"),
        fetch_max_bytes=num("controller.quorum.fetch.max.bytes"),
        fetch_snapshot_max_bytes=num("controller.quorum.fetch.snapshot.max.bytes"),
        kraft_version=kraft_version,
    )


def node_properties(
    node_id: int,
    roles: str,
    host: str,
    ports: tuple[int, int],
    voters: str,
    data_dir: str | os.PathLike[str],
    extra: Mapping[str, object] | None = None,
) -> dict[str, str]:
    """A node of a static quorum: ``roles`` on ``host``, its broker listener on ``ports[0]``
    and its controller listener on ``ports[1]`` (where the roles have them); ``voters`` is
    ``controller.quorum.voters``."""
    listeners = []
    if "broker" in roles:
        listeners.append(f"PLAINTEXT://{host}:{ports[0]}")
    if "controller" in roles:
        listeners.append(f"CONTROLLER://{host}:{ports[1]}")
    props = {
        "node.id": str(node_id),
        "process.roles": roles,
        "listeners": ",".join(listeners),
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.quorum.voters": voters,
        "log.dirs": str(data_dir),
        **{k: str(v) for k, v in (extra or {}).items()},
    }
    if "broker" in roles:
        props["advertised.listeners"] = f"PLAINTEXT://{host}:{ports[0]}"
    return props

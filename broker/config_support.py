"""Kafka settings for what a one-process millpond does not do yet: accepted where the value
describes what runs, refused at start-up otherwise.

A setting accepted without effect is a trap: a broker told to authenticate or to join a
quorum would start and silently do neither. So each of these either describes what millpond
runs (one process that is broker and controller, a quorum of one voter that is this node,
PLAINTEXT listeners, no authorizer, the classic group protocol) or the broker refuses to
start, with an error naming the key and the value given, what millpond supports so far and
what to set instead:

- ``process.roles``: both roles (combined mode); a broker-only or controller-only process
  is refused.
- ``controller.quorum.voters``: unset, or one voter, this node (``node.id@host:port``).
- ``controller.quorum.bootstrap.servers``: unset, or entries naming this node's controller
  listeners (by port), as Kafka's own ``config/server.properties`` sets it.
- ``authorizer.class.name``: unset or empty (every request is allowed).
- ``cordoned.log.dirs``: unset or empty (every log dir takes new partitions).
- ``ssl.*`` and ``sasl.*`` (also under ``listener.name.NAME.``): not set at all.
- ``listeners``: every listener PLAINTEXT, controller listeners included; the
  ``listener.security.protocol.map`` may still list SSL and SASL names that no listener
  uses (Kafka's default map and its ``config/server.properties`` do).
- ``security.inter.broker.protocol``: PLAINTEXT.
- ``group.coordinator.rebalance.protocols``: ``classic`` (checked by its row's validator).

DescribeConfigs reports these keys as Kafka does; only the values that run are possible.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from millpond.broker.config_defs_listeners import Listener, strs
from millpond.storage.config_def import ConfigError, Value, to_kafka_string

__all__ = ["check_supported"]

_VOTER = re.compile(r"(-?[0-9]+)@\[?([^\[\]@]*)\]?:([0-9]+)")
_HOST_PORT = re.compile(r"\[?([^\[\]]*)\]?:([0-9]+)")
_SECURITY = re.compile(r"(ssl|sasl)\.|listener\.name\.[^.]+\.(.+\.)?(ssl|sasl)\.")


def _refuse(
    key: str, given: str | None, supported: str, instead: str, *, hide: bool = False
) -> ConfigError:
    return ConfigError(key, given, f"millpond {supported} so far; {instead}", hide=hide)


def check_supported(
    values: Mapping[str, Value],
    static: Mapping[str, str],
    listeners: Sequence[Listener],
    controller_names: Sequence[str],
) -> None:
    """Raise :class:`ConfigError` for the first setting that asks for what millpond does
    not do yet (see the module's docstring)."""
    roles = strs(values["process.roles"])
    if set(roles) != {"broker", "controller"}:
        raise _refuse(
            "process.roles",
            ",".join(roles),
            "runs only in combined mode (one process that is broker and controller)",
            "set process.roles=broker,controller or leave it unset",
        )
    node_id = values["node.id"]
    voters = strs(values["controller.quorum.voters"])
    if voters:
        match = _VOTER.fullmatch(voters[0]) if len(voters) == 1 else None
        if match is None or int(match.group(1)) != node_id:
            raise _refuse(
                "controller.quorum.voters",
                ",".join(voters),
                f"runs only a quorum of one voter, this node (node.id {node_id})",
                f"leave it unset or set it to {node_id}@HOST:PORT",
            )
    controller_ports = {
        listener.port for listener in listeners if listener.name in controller_names
    }
    servers = strs(values["controller.quorum.bootstrap.servers"])
    for server in servers:
        found = _HOST_PORT.fullmatch(server)
        if found is None or int(found.group(2)) not in controller_ports:
            raise _refuse(
                "controller.quorum.bootstrap.servers",
                ",".join(servers),
                "runs only a quorum of this node alone",
                "leave it unset or name this node's controller listener (one of "
                f"controller.listener.names: {', '.join(controller_names) or 'none set'})",
            )
    authorizer = values["authorizer.class.name"]
    if authorizer:
        raise _refuse(
            "authorizer.class.name",
            str(authorizer),
            "has no authorizer (every request is allowed)",
            "remove authorizer.class.name",
        )
    cordoned = strs(values["cordoned.log.dirs"])
    if cordoned:
        raise _refuse(
            "cordoned.log.dirs",
            ",".join(cordoned),
            "places new partitions on every directory of log.dirs (none is cordoned)",
            "remove cordoned.log.dirs",
        )
    for key in static:
        if _SECURITY.match(key):
            raise _refuse(
                key,
                static[key],
                "has no TLS or SASL (PLAINTEXT listeners only)",
                f"remove {key}",
                hide=True,
            )
    for listener in listeners:
        if listener.security_protocol != "PLAINTEXT":
            raise _refuse(
                "listeners",
                to_kafka_string(values["listeners"]),
                "serves only PLAINTEXT listeners",
                f"map listener {listener.name} to PLAINTEXT in "
                "listener.security.protocol.map, or remove it",
            )
    protocol = values["security.inter.broker.protocol"]
    # With inter.broker.listener.name set too, the broker refuses the pair anyway.
    if protocol != "PLAINTEXT" and values["inter.broker.listener.name"] is None:
        raise _refuse(
            "security.inter.broker.protocol",
            str(protocol),
            "speaks only PLAINTEXT",
            "set it to PLAINTEXT or leave it unset",
        )

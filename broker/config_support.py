"""Kafka settings for what a one-process millpond does not do yet: accepted where the value
describes what runs, refused at start-up otherwise.

A setting accepted without effect is a trap: a broker told to authenticate or to join a
quorum would start and silently do neither. So each of these either describes what millpond
runs (one process that is broker and controller, a quorum of one voter that is this node,
PLAINTEXT listeners, no authorizer, the classic group protocol) or the broker refuses to
start, with an error naming the key and the value given, what millpond supports so far and
what to set instead:

- ``process.roles``: both roles (combined mode), the broker role alone (following a
  static quorum of other nodes), or the controller role alone (a voter of a static
  quorum, serving controller listeners only).
- ``controller.quorum.voters``: unset, or a static voter set that includes this node;
  with more than one voter, this node's entry is one of its controller listeners.
- ``controller.quorum.bootstrap.servers``: the controllers of a dynamic quorum (KIP-853),
  used when ``controller.quorum.voters`` is unset (setting both, with other nodes in
  each, is refused: which one names the quorum would be a guess).
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
from millpond.broker.quorum_config import bootstrap_servers, parse_voters
from millpond.storage.config_def import ConfigError, Value, to_kafka_string

__all__ = ["check_supported"]

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
    roles = set(strs(values["process.roles"]))
    voters_text = to_kafka_string(values["controller.quorum.voters"]) or ""
    voters = parse_voters(strs(values["controller.quorum.voters"]))
    node_id = values["node.id"]
    assert isinstance(node_id, int)
    controller_ports = {
        listener.port for listener in listeners if listener.name in controller_names
    }
    others = bootstrap_servers(values, listeners, controller_names)
    if voters and others:
        raise ConfigError(
            "controller.quorum.bootstrap.servers",
            to_kafka_string(values["controller.quorum.bootstrap.servers"]),
            "names other controllers while controller.quorum.voters names a static quorum;"
            " set one of the two (voters for a static quorum, bootstrap servers for a "
            "dynamic one)",
        )
    dynamic = not voters and bool(strs(values["controller.quorum.bootstrap.servers"]))
    if roles == {"broker"}:
        _check_broker_only(
            node_id, voters, voters_text, controller_names, controller_ports, dynamic=dynamic
        )
        _check_security(values, static, listeners)
        return
    if others and not controller_ports:
        raise ConfigError(
            "controller.listener.names",
            ",".join(controller_names),
            "a controller of a quorum of several serves its peers on a controller listener:"
            " list one in listeners under a name of controller.listener.names",
        )
    if roles == {"controller"}:
        _check_controller_only(voters, voters_text, listeners, controller_names, dynamic=dynamic)
    if voters and node_id not in voters:
        raise ConfigError(
            "controller.quorum.voters",
            voters_text,
            f"this node (node.id {node_id}) is a controller, so it must be one of the "
            f"voters: add {node_id}@HOST:PORT, its controller listener",
        )
    if len(voters) > 1 and voters[node_id][1] not in controller_ports:
        raise ConfigError(
            "controller.quorum.voters",
            voters_text,
            f"voter {node_id} (this node) listens on port {voters[node_id][1]}, which none of"
            " its controller listeners uses; list it in listeners under a name of "
            f"controller.listener.names ({', '.join(controller_names) or 'none set'})",
        )
    _check_security(values, static, listeners)


def _check_broker_only(
    node_id: int,
    voters: Mapping[int, tuple[str, int]],
    voters_text: str,
    controller_names: Sequence[str],
    controller_ports: set[int],
    *,
    dynamic: bool,
) -> None:
    """A broker-only node follows a quorum of other nodes, named by its voters or found
    through its bootstrap servers (``dynamic``)."""
    if not voters and not dynamic:
        raise ConfigError(
            "controller.quorum.voters",
            voters_text,
            "a broker-only node (process.roles=broker) needs the quorum it follows: list "
            "its controllers as ID@HOST:PORT, or set controller.quorum.bootstrap.servers "
            "to them (HOST:PORT)",
        )
    if node_id in voters:
        raise ConfigError(
            "controller.quorum.voters",
            voters_text,
            f"this node (node.id {node_id}) is a broker only, so it cannot be a voter; "
            "give it a node.id no voter has, or the controller role too",
        )
    if not controller_names or controller_ports:
        raise ConfigError(
            "controller.listener.names",
            ",".join(controller_names),
            "a broker-only node names the controllers' listener here (to reach them) and "
            "lists none of its own in listeners",
        )


def _check_controller_only(
    voters: Mapping[int, tuple[str, int]],
    voters_text: str,
    listeners: Sequence[Listener],
    controller_names: Sequence[str],
    *,
    dynamic: bool,
) -> None:
    """A controller-only node is a voter (or a voter to be) of a quorum it serves on
    controller listeners only."""
    if not voters and not dynamic:
        raise ConfigError(
            "controller.quorum.voters",
            voters_text,
            "a controller-only node (process.roles=controller) is a voter of a quorum: "
            "list every voter as ID@HOST:PORT, this node among them, or set "
            "controller.quorum.bootstrap.servers (HOST:PORT) for a dynamic quorum",
        )
    others = [str(x) for x in listeners if x.name not in controller_names]
    if others:
        raise ConfigError(
            "listeners",
            ",".join(str(x) for x in listeners),
            f"a controller-only node serves controller listeners only, not {', '.join(others)}"
            "; name its listeners in controller.listener.names, or give it the broker role",
        )


def _check_security(
    values: Mapping[str, Value], static: Mapping[str, str], listeners: Sequence[Listener]
) -> None:
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

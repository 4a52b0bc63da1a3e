"""Listener lists (``listeners``, ``advertised.listeners``) and the security protocol map,
parsed as Kafka parses them: ``NAME://host:port`` entries, names upper-cased, an empty
host for every interface, IPv6 hosts in brackets, each name mapped to its protocol by
``listener.security.protocol.map``."""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Mapping, Sequence
from typing import NamedTuple

from millpond.broker.config_defs import SECURITY_PROTOCOLS, ConfigError, Value


def strs(value: Value) -> tuple[str, ...]:
    """A LIST value (None for a null default) as a tuple of strings."""
    return tuple(value) if isinstance(value, tuple) else ()


UNROUTABLE = "0.0.0.0"  # noqa: S104 (compared against, never bound)
_LISTENER = re.compile(r"(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")


class Listener(NamedTuple):
    """One ``NAME://host:port`` entry. ``host`` is ``""`` for Kafka's wildcard (every
    interface: ``PLAINTEXT://:9092``); ``0.0.0.0`` and ``::`` are kept as written."""

    name: str
    host: str
    port: int
    security_protocol: str

    @property
    def bind_host(self) -> str | None:
        """The host to bind: None (every interface) for the wildcard."""
        return self.host or None

    def resolved(self) -> Listener:
        """The listener as advertised: a wildcard host becomes this machine's fully
        qualified name, as Kafka advertises the local canonical host name."""
        return self if self.host else self._replace(host=socket.getfqdn())

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


def protocol_map(values: dict[str, Value], static: Mapping[str, str]) -> dict[str, str]:
    key = "listener.security.protocol.map"
    text = str(values[key])
    out: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        protocol = protocol.strip().upper()
        if not sep or not name.strip() or protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(
                key,
                text,
                f"entries must be NAME:PROTOCOL with PROTOCOL one "
                f"of {', '.join(SECURITY_PROTOCOLS)}",
            )
        out[name.strip().upper()] = protocol
    if key not in static:  # Kafka maps controller listeners to PLAINTEXT implicitly
        controllers = strs(values["controller.listener.names"])
        names = [e.partition(":")[0].upper() for e in strs(values["listeners"])]
        if not any(n in ("SSL", "SASL_SSL", "SASL_PLAINTEXT") for n in (*controllers, *names)):
            for name in controllers:
                out.setdefault(name.upper(), "PLAINTEXT")
    return out


def parse_listeners(
    key: str, entries: Sequence[str], protocols: Mapping[str, str], distinct_ports: bool
) -> tuple[Listener, ...]:
    shown = ",".join(entries)
    out: list[Listener] = []
    for entry in entries:
        match = _LISTENER.fullmatch(entry)
        if match is None:
            raise ConfigError(key, shown, f"{entry!r} is not NAME://host:port")
        name, host, port = match.group(1).upper(), match.group(2), int(match.group(3))
        if not 0 <= port <= 65535:
            raise ConfigError(key, shown, f"port {port} of {entry!r} is not in 0..65535")
        if name not in protocols:
            raise ConfigError(
                key,
                shown,
                f"no security protocol defined for listener "
                f"{name} in listener.security.protocol.map",
            )
        out.append(Listener(name, host, port, protocols[name]))
    if len({listener.name for listener in out}) != len(out):
        raise ConfigError(key, shown, "each listener must have a different name")
    if distinct_ports:
        by_port: dict[int, list[Listener]] = {}
        for listener in out:
            if listener.port:
                by_port.setdefault(listener.port, []).append(listener)
        for group in by_port.values():
            if len(group) > 1 and not _ipv4_and_ipv6(group):
                raise ConfigError(
                    key,
                    shown,
                    "each listener must have a different port, "
                    "unless one is an IPv4 and the other an IPv6 address",
                )
    return tuple(out)


def _ipv4_and_ipv6(group: Sequence[Listener]) -> bool:
    try:
        versions = sorted(ipaddress.ip_address(listener.host).version for listener in group)
    except ValueError:
        return False
    return versions == [4, 6]

"""Every Kafka configuration millpond knows, under Kafka's names: the broker table and the
topic table, the topic configs' broker synonyms, and how unknown keys are classified.

The building blocks and the topic configs are the storage layer's
(:mod:`millpond.storage.config_def`, :mod:`millpond.storage.topic_configs`); the broker's
rows live in sibling modules (``config_defs_server``, ``config_defs_log``,
``config_defs_coord``); this module is the one to import.
"""

from __future__ import annotations

import enum

from millpond.broker.config_defs_coord import COORDINATOR_CONFIGS
from millpond.broker.config_defs_log import LOG_CONFIGS, TOPIC_SYNONYMS
from millpond.broker.config_defs_server import (
    DEFAULT_LISTENERS,
    DEFAULT_SECURITY_PROTOCOL_MAP,
    SECURITY_PROTOCOLS,
    SERVER_CONFIGS,
)
from millpond.storage.config_def import (
    LONG_MAX,
    ConfigDefinition,
    ConfigError,
    ConfigType,
    Importance,
    Value,
    at_least,
    default_value,
    define,
    parse_list,
    parse_value,
    to_kafka_string,
)
from millpond.storage.topic_configs import TOPIC_CONFIGS

__all__ = [
    "DYNAMIC_ONLY_BROKER_CONFIGS",
    "BROKER_CONFIGS",
    "DEFAULT_LISTENERS",
    "DEFAULT_SECURITY_PROTOCOL_MAP",
    "SECURITY_PROTOCOLS",
    "TOPIC_CONFIGS",
    "TOPIC_SYNONYMS",
    "UNSUPPORTED_PREFIXES",
    "ConfigDefinition",
    "ConfigError",
    "ConfigSource",
    "ConfigType",
    "Importance",
    "Value",
    "broker_synonyms",
    "default_value",
    "parse_list",
    "parse_value",
    "to_kafka_string",
    "unknown_key_warning",
]


class ConfigSource(enum.IntEnum):
    """Where a value comes from, numbered as DescribeConfigsResponse.ConfigSource."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


def _merge(*tables: dict[str, ConfigDefinition]) -> dict[str, ConfigDefinition]:
    out: dict[str, ConfigDefinition] = {}
    for part in tables:
        for name, row in part.items():
            if name in out:
                raise AssertionError(f"broker config {name} defined twice")
            out[name] = row
    return dict(sorted(out.items()))


#: Every broker config millpond knows, by name (sorted).
BROKER_CONFIGS: dict[str, ConfigDefinition] = _merge(
    SERVER_CONFIGS, LOG_CONFIGS, COORDINATOR_CONFIGS
)

#: Kafka's dynamic-only broker configs (DynamicConfig.Broker): set with
#: IncrementalAlterConfigs on a broker (or the cluster default), never in a properties
#: file, and described only when set.
DYNAMIC_ONLY_BROKER_CONFIGS: dict[str, ConfigDefinition] = {
    row.name: row
    for row in (
        define("leader.replication.throttled.rate", ConfigType.LONG, LONG_MAX, Importance.MEDIUM,
               "Bytes per second a leader sends to its out-of-sync followers of the "
               "partitions a topic's leader.replication.throttled.replicas names.",
               at_least(0), used=True, dynamic=True),
        define("follower.replication.throttled.rate", ConfigType.LONG, LONG_MAX,
               Importance.MEDIUM,
               "Bytes per second a follower fetches for its out-of-sync replicas of the "
               "partitions a topic's follower.replication.throttled.replicas names.",
               at_least(0), used=True, dynamic=True),
    )
}  # fmt: skip

#: Kafka setting families millpond does not implement (TLS, SASL, per-listener
#: overrides, tiered storage plug-ins, share and streams groups, ...): a key under one of
#: these is reported as unsupported rather than unknown.
UNSUPPORTED_PREFIXES = (
    "ssl.",
    "sasl.",
    "listener.name.",
    "principal.builder.",
    "security.providers",
    "connections.max.reauth.ms",
    "delegation.token.",
    "super.users",
    "allow.everyone.if.no.acl.found",
    "remote.log.",
    "remote.fetch.",
    "remote.list.offsets.",
    "rlmm.",
    "rsm.",
    "group.share.",
    "group.streams.",
    "share.",
    "errors.deadletterqueue.",
    "client.telemetry.",
    "metadata.log.",
    "controller.quorum.",
    "zookeeper.",
    "confluent.",
    "log.message.format.version",
    "inter.broker.protocol.version",
)

_LOG_ROLL = ("log.roll.ms", "log.roll.hours")
_LOG_ROLL_JITTER = ("log.roll.jitter.ms", "log.roll.jitter.hours")
_LOG_RETENTION = ("log.retention.ms", "log.retention.minutes", "log.retention.hours")
_LOG_FLUSH = ("log.flush.interval.ms", "log.flush.scheduler.interval.ms")


def broker_synonyms(name: str) -> tuple[str, ...]:
    """The broker configs that share a meaning with ``name``, highest precedence first
    (Kafka's ``DynamicBrokerConfig.brokerConfigSynonyms``); just ``(name,)`` for most."""
    for group in (_LOG_ROLL, _LOG_ROLL_JITTER, _LOG_RETENTION):
        if name in group:
            return group
    if name == _LOG_FLUSH[0]:
        return _LOG_FLUSH
    return (name,)


def unknown_key_warning(key: str) -> str:
    """The warning for a key that is not in :data:`BROKER_CONFIGS`."""
    if key in TOPIC_CONFIGS:
        synonyms = TOPIC_SYNONYMS.get(key)
        hint = f"; the broker-wide default is {synonyms[0][0]}" if synonyms else ""
        return f"{key} is a topic config, not a broker config; ignored{hint}"
    if key.startswith(UNSUPPORTED_PREFIXES):
        return f"{key} is a Kafka setting millpond does not support yet; ignored"
    return f"unknown config {key}; ignored"

"""What DescribeConfigs answers for a broker or a topic, as Kafka builds it.

A value's synonyms are listed layer by layer: dynamic per-broker values, dynamic
cluster-wide defaults, the static configuration (file and overrides) and the built-in
defaults; inside each layer in the synonyms' order of precedence. The entry's source is
the first synonym's source (DEFAULT_CONFIG when there is none). As Kafka does, the list
starts at the described name itself: for a topic, that is the first broker synonym, so a
topic's ``retention.ms`` lists no broker synonyms unless ``log.retention.ms`` itself is
set somewhere (``log.retention.hours`` alone still sets the value, silently).

The dynamic layers are parameters for now; they will come from the metadata image.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from millpond.broker.config_defs import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    TOPIC_SYNONYMS,
    ConfigSource,
    ConfigType,
    broker_synonyms,
    to_kafka_string,
)
from millpond.storage.topic_configs import parse_topic_configs

if TYPE_CHECKING:
    from millpond.broker.config import BrokerConfig

_EMPTY: Mapping[str, str] = {}


@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    """One config of a described resource (DescribeConfigsResourceResult's fields)."""

    name: str
    value: str | None
    source: ConfigSource
    is_sensitive: bool
    read_only: bool
    synonyms: tuple[ConfigSynonym, ...]
    type: ConfigType
    documentation: str | None

    def to_wire(self) -> Any:
        """The generated DescribeConfigsResourceResult for this entry."""
        from millpond.wire.generated.api import describe_configs_response as wire

        return wire.DescribeConfigsResourceResult(
            name=self.name,
            value=self.value,
            read_only=self.read_only,
            config_source=int(self.source),
            is_sensitive=self.is_sensitive,
            synonyms=[
                wire.DescribeConfigsSynonym(name=s.name, value=s.value, source=int(s.source))
                for s in self.synonyms
            ],
            config_type=int(self.type),
            documentation=self.documentation,
        )


def _layers(
    config: BrokerConfig, dynamic: Mapping[str, str], dynamic_default: Mapping[str, str]
) -> Iterator[tuple[ConfigSource, Mapping[str, str | None]]]:
    yield ConfigSource.DYNAMIC_BROKER_CONFIG, dynamic
    yield ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, dynamic_default
    yield ConfigSource.STATIC_BROKER_CONFIG, config.static
    defaults = {n: config.default_of(n) for n in BROKER_CONFIGS}
    yield ConfigSource.DEFAULT_CONFIG, {n: v for n, v in defaults.items() if v is not None}


def _synonyms(
    name: str,
    config: BrokerConfig,
    sensitive: bool,
    dynamic: Mapping[str, str],
    dynamic_default: Mapping[str, str],
) -> list[ConfigSynonym]:
    found: list[ConfigSynonym] = []
    names = broker_synonyms(name)
    for source, layer in _layers(config, dynamic, dynamic_default):
        for synonym in names:
            if synonym in layer:
                value = None if sensitive else layer[synonym]
                found.append(ConfigSynonym(synonym, value, source))
    while found and found[0].name != name:  # Kafka starts the list at the name itself
        found.pop(0)
    return found


def _wanted(keys: Collection[str] | None, name: str) -> bool:
    return not keys or name in keys


def describe(
    config: BrokerConfig,
    keys: Collection[str] | None = None,
    *,
    include_synonyms: bool = True,
    include_documentation: bool = True,
    dynamic: Mapping[str, str] = _EMPTY,
    dynamic_default: Mapping[str, str] = _EMPTY,
) -> list[ConfigEntry]:
    """The broker resource: every broker config (or those in ``keys``; unknown names are
    left out, as Kafka does), then keys of the static configuration millpond does not
    know, which Kafka reports as sensitive values of unknown type."""
    entries: list[ConfigEntry] = []
    for name, definition in BROKER_CONFIGS.items():
        if not _wanted(keys, name):
            continue
        sensitive = definition.sensitive
        synonyms = _synonyms(name, config, sensitive, dynamic, dynamic_default)
        if name in dynamic:
            value: str | None = dynamic[name]
        elif name in dynamic_default:
            value = dynamic_default[name]
        else:
            value = to_kafka_string(config.get(name))
        entries.append(
            ConfigEntry(
                name=name,
                value=None if sensitive else value,
                source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
                is_sensitive=sensitive,
                read_only=not definition.dynamic,
                synonyms=tuple(synonyms) if include_synonyms else (),
                type=definition.type,
                documentation=definition.documentation if include_documentation else None,
            )
        )
    for name in config.static:
        if name in BROKER_CONFIGS or not _wanted(keys, name):
            continue
        synonym = ConfigSynonym(name, None, ConfigSource.STATIC_BROKER_CONFIG)
        entries.append(
            ConfigEntry(
                name=name,
                value=None,
                source=ConfigSource.STATIC_BROKER_CONFIG,
                is_sensitive=True,
                read_only=True,
                synonyms=(synonym,) if include_synonyms else (),
                type=ConfigType.UNKNOWN,
                documentation=None,
            )
        )
    return entries


def validate_topic_configs(props: Mapping[str, str]) -> dict[str, str]:
    """Check topic configs (CreateTopics, AlterConfigs): every key must be a topic config
    and every value valid for it. Returns the values as Kafka renders them (trimmed,
    canonical); raises :class:`ConfigError` naming the first bad key."""
    parsed = parse_topic_configs(props)
    return {key: to_kafka_string(value) or "" for key, value in parsed.items()}


def describe_topic(
    topic_configs: Mapping[str, str],
    config: BrokerConfig,
    keys: Collection[str] | None = None,
    *,
    include_synonyms: bool = True,
    include_documentation: bool = True,
    dynamic: Mapping[str, str] = _EMPTY,
    dynamic_default: Mapping[str, str] = _EMPTY,
) -> list[ConfigEntry]:
    """A topic resource: every topic config (or those in ``keys``) with its effective
    value: the topic's own (TOPIC_CONFIG), else the broker's synonyms, else the default."""
    own = validate_topic_configs(topic_configs)
    broker = config.topic_defaults()
    entries: list[ConfigEntry] = []
    for name, definition in TOPIC_CONFIGS.items():
        if not _wanted(keys, name):
            continue
        sensitive = definition.sensitive
        synonyms: list[ConfigSynonym] = []
        if name in own:
            synonyms.append(ConfigSynonym(name, own[name], ConfigSource.TOPIC_CONFIG))
        if name in TOPIC_SYNONYMS:
            first = TOPIC_SYNONYMS[name][0][0]
            synonyms += _synonyms(first, config, sensitive, dynamic, dynamic_default)
        value = own.get(name, broker.get(name, definition.default))
        entries.append(
            ConfigEntry(
                name=name,
                value=None if sensitive else value,
                source=synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG,
                is_sensitive=sensitive,
                read_only=False,
                synonyms=tuple(synonyms) if include_synonyms else (),
                type=definition.type,
                documentation=definition.documentation if include_documentation else None,
            )
        )
    return entries

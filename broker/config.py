"""The broker's configuration, read as ``kafka-server-start`` reads it.

``load_config(path, overrides)`` reads a Java properties file (``server.properties``) and
then the ``--override key=value`` arguments, which win. Keys are Kafka's, with Kafka's
units and ranges (:mod:`millpond.broker.config_defs`); a value Kafka would refuse raises
:class:`ConfigError` naming the key, the value and what is allowed; keys millpond does not
know come back as warnings, never as output.

Settings for what a one-process millpond does not do yet (other roles, a larger quorum,
TLS, SASL, an authorizer, other group protocols) are refused unless they describe what
runs (:mod:`millpond.broker.config_support`).

Defaults are Kafka's except where a one-process broker needs its own: the listener is
``PLAINTEXT://127.0.0.1:9092`` (loopback only unless told otherwise), ``node.id`` is 1,
``process.roles`` is ``broker,controller``, ``group.coordinator.rebalance.protocols`` is
``classic``, the internal topics' replication factors are
1, and the data directory is :data:`DEFAULT_DATA_DIR` (or ``$MILLPOND_DATA_DIR``).

What DescribeConfigs answers is built in :mod:`millpond.broker.config_defs_describe`,
which loads with the first DescribeConfigs, not at start-up.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

from millpond.broker.config_defs import (
    BROKER_CONFIGS,
    TOPIC_SYNONYMS,
    ConfigError,
    Value,
    default_value,
    parse_value,
    to_kafka_string,
    unknown_key_warning,
)
from millpond.broker.config_defs_listeners import (
    UNROUTABLE,
    Listener,
    parse_listeners,
    protocol_map,
    strs,
)
from millpond.broker.config_defs_log import DEFAULT_DATA_DIR
from millpond.broker.config_defs_properties import (
    decode_properties,
    parse_override,
    parse_properties,
)
from millpond.broker.config_support import check_supported
from millpond.storage.config import LogConfig
from millpond.storage.topic_configs import TOPIC_CONFIGS

__all__ = [
    "DATA_DIR_ENV",
    "DEFAULT_DATA_DIR",
    "BrokerConfig",
    "ConfigError",
    "Listener",
    "build_config",
    "default_data_dir",
    "load_config",
]

#: The environment variable that moves the default data directory.
DATA_DIR_ENV = "MILLPOND_DATA_DIR"


def default_data_dir(env: Mapping[str, str] | None = None) -> str:
    """``$MILLPOND_DATA_DIR`` if set and not empty, else :data:`DEFAULT_DATA_DIR`, as an
    absolute path."""
    environ = os.environ if env is None else env
    chosen = environ.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR
    if chosen.startswith("~"):
        home = environ.get("HOME") or str(Path.home())
        chosen = home + chosen[1:]
    return str(Path(chosen).absolute())


class BrokerConfig(NamedTuple):
    """What the broker reads, typed. Field ``a_b_c`` is Kafka's ``a.b.c`` unless noted;
    :meth:`get` returns any known key's typed value, defaults included."""

    node_id: int
    process_roles: tuple[str, ...]
    #: Every listener, controller listeners included, in the order given.
    listeners: tuple[Listener, ...]
    #: The broker listeners clients are told about (controller listeners left out).
    advertised_listeners: tuple[Listener, ...]
    controller_listener_names: tuple[str, ...]
    inter_broker_listener_name: str
    #: ``log.dirs``, or ``log.dir`` when that is not set.
    log_dirs: tuple[str, ...]
    #: ``metadata.log.dir``, or the first log directory.
    metadata_log_dir: str
    broker_rack: str | None
    num_partitions: int
    default_replication_factor: int
    auto_create_topics_enable: bool
    delete_topic_enable: bool
    socket_request_max_bytes: int
    socket_listen_backlog_size: int
    connections_max_idle_ms: int
    message_max_bytes: int
    min_insync_replicas: int
    fetch_max_bytes: int
    max_incremental_fetch_session_cache_slots: int
    log_retention_check_interval_ms: int
    log_flush_offset_checkpoint_interval_ms: int
    log_flush_start_offset_checkpoint_interval_ms: int
    log_cleaner_enable: bool
    log_cleaner_threads: int
    log_cleaner_backoff_ms: int
    log_cleaner_dedupe_buffer_size: int
    log_cleaner_io_buffer_size: int
    log_cleaner_io_buffer_load_factor: float
    replica_lag_time_max_ms: int
    replica_high_watermark_checkpoint_interval_ms: int
    offsets_topic_num_partitions: int
    offsets_topic_replication_factor: int
    offsets_topic_segment_bytes: int
    offset_metadata_max_bytes: int
    offsets_retention_minutes: int
    offsets_retention_check_interval_ms: int
    group_initial_rebalance_delay_ms: int
    group_min_session_timeout_ms: int
    group_max_session_timeout_ms: int
    group_max_size: int
    transaction_state_log_num_partitions: int
    transaction_state_log_replication_factor: int
    transaction_state_log_min_isr: int
    transaction_state_log_segment_bytes: int
    transaction_max_timeout_ms: int
    transactional_id_expiration_ms: int
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int
    transaction_remove_expired_transaction_cleanup_interval_ms: int
    producer_id_expiration_ms: int
    #: The static configuration as given (file, then overrides; raw strings): the
    #: STATIC_BROKER_CONFIG layer of DescribeConfigs, unknown keys included.
    static: Mapping[str, str] = MappingProxyType({})
    #: Every known key's typed value, defaults included.
    values: Mapping[str, Value] = MappingProxyType({})
    #: The default ``log.dir`` that applied (see :func:`default_data_dir`).
    default_log_dir: str = ""

    def get(self, key: str) -> Value:
        """The typed value of a known key; KeyError for an unknown one."""
        return self.values[key]

    def get_int(self, key: str, default: int) -> int:
        """The value of an integer key; ``default`` for an unknown key or one not set."""
        value = self.values.get(key)
        return value if isinstance(value, int) else default

    def default_of(self, key: str) -> str | None:
        """The default of ``key`` as DescribeConfigs reports it."""
        if key == "log.dir":
            return self.default_log_dir
        return BROKER_CONFIGS[key].default

    def topic_defaults(self) -> dict[str, str]:
        """The broker-level defaults of topic configs, to overlay on LogConfig: for each
        topic config with broker synonyms, the first synonym that is set, else the first
        with a default, converted to the topic config's unit."""
        out: dict[str, str] = {}
        for topic_key, synonyms in TOPIC_SYNONYMS.items():
            chosen = next((s for s in synonyms if s[0] in self.static), None)
            if chosen is None:
                chosen = next(s for s in synonyms if self.values[s[0]] is not None)
            name, factor = chosen
            value = self.values[name]
            if factor != 1 and isinstance(value, int):
                value *= factor
            if topic_key == "retention.ms" and isinstance(value, int) and value < 0:
                value = -1
            out[topic_key] = to_kafka_string(value) or ""
        return out

    def log_config(self, topic_configs: Mapping[str, str] | None = None) -> LogConfig:
        """The LogConfig of a topic: its own configs over the broker's topic defaults."""
        base = {k: v for k, v in self.topic_defaults().items() if k in TOPIC_CONFIGS}
        base.update({k: v for k, v in (topic_configs or {}).items() if k in TOPIC_CONFIGS})
        return LogConfig.from_properties(base)


_DERIVED_FIELDS = {
    "listeners",
    "advertised_listeners",
    "controller_listener_names",
    "inter_broker_listener_name",
    "log_dirs",
    "metadata_log_dir",
    "process_roles",
}
_SIMPLE_FIELDS = tuple(
    name
    for name in BrokerConfig._fields
    if name.replace("_", ".") in BROKER_CONFIGS and name not in _DERIVED_FIELDS
)


def _check(ok: bool, key: str, values: Mapping[str, Value], reason: str) -> None:
    if not ok:
        raise ConfigError(key, to_kafka_string(values.get(key)), reason)


def build_config(
    props: Mapping[str, str], env: Mapping[str, str] | None = None
) -> tuple[BrokerConfig, list[str]]:
    """A :class:`BrokerConfig` from Kafka properties (already merged), and the warnings
    about keys it ignores. Raises :class:`ConfigError` for any invalid value."""
    warnings: list[str] = []
    static = dict(props)
    if "node.id" in static and "broker.id" not in static:  # Kafka fills in the alias
        static["broker.id"] = static["node.id"]
    elif "broker.id" in static and "node.id" not in static:
        static["node.id"] = static["broker.id"]
    values: dict[str, Value] = {name: default_value(d) for name, d in BROKER_CONFIGS.items()}
    values["log.dir"] = (data_dir := default_data_dir(env),)
    for key, raw in static.items():
        definition = BROKER_CONFIGS.get(key)
        if definition is None:
            warnings.append(unknown_key_warning(key))
            continue
        values[key] = parse_value(definition, raw)
    if "broker.id" not in static:
        values["broker.id"] = values["node.id"]
    _check(
        values["node.id"] == values["broker.id"],
        "broker.id",
        values,
        "node.id and broker.id must be equal (broker.id is deprecated)",
    )

    protocols = protocol_map(values, static)
    listeners = parse_listeners("listeners", strs(values["listeners"]), protocols, True)
    controller_names = tuple(n.upper() for n in strs(values["controller.listener.names"]))
    check_supported(values, static, listeners, controller_names)
    advertised_key = "advertised.listeners" if values["advertised.listeners"] else "listeners"
    advertised_all = (
        parse_listeners(advertised_key, strs(values[advertised_key]), protocols, False)
        if advertised_key == "advertised.listeners"
        else listeners
    )
    advertised = tuple(a for a in advertised_all if a.name not in controller_names)
    roles = strs(values["process.roles"])
    if "broker" in roles:
        _check(
            bool(advertised),
            advertised_key,
            values,
            "there must be at least one broker listener that is not a controller listener",
        )
        names = {listener.name for listener in listeners}
        _check(
            {a.name for a in advertised} <= names,
            "advertised.listeners",
            values,
            f"listener names must be among those of listeners ({', '.join(sorted(names))})",
        )
    for listener in advertised_all:
        _check(
            listener.host != UNROUTABLE,
            advertised_key,
            values,
            "cannot advertise the non-routable address 0.0.0.0; set advertised.listeners "
            "to an address clients can reach",
        )
    inter_broker = values["inter.broker.listener.name"]
    if inter_broker is not None:
        _check(
            "security.inter.broker.protocol" not in static,
            "inter.broker.listener.name",
            values,
            "set only one of inter.broker.listener.name and security.inter.broker.protocol",
        )
        inter_broker = str(inter_broker).upper()
    else:
        inter_broker = str(values["security.inter.broker.protocol"])
    if "broker" in roles:
        key = "inter.broker.listener.name"
        _check(
            inter_broker in {a.name for a in advertised},
            key,
            values | {key: inter_broker},
            "must name an advertised broker listener",
        )

    log_dirs = strs(values["log.dirs"]) or strs(values["log.dir"])
    _validate_relations(values)
    config = BrokerConfig(
        **{name: values[name.replace("_", ".")] for name in _SIMPLE_FIELDS},  # type: ignore[arg-type]
        listeners=listeners,
        advertised_listeners=advertised,
        controller_listener_names=controller_names,
        inter_broker_listener_name=inter_broker,
        log_dirs=log_dirs,
        metadata_log_dir=str(values["metadata.log.dir"] or log_dirs[0]),
        process_roles=roles,
        static=MappingProxyType(static),
        values=MappingProxyType(values),
        default_log_dir=data_dir,
    )
    config.log_config()  # the storage layer's own checks, with the key named
    return config, warnings


def _validate_relations(values: Mapping[str, Value]) -> None:
    def num(key: str) -> int:
        value = values[key]
        assert isinstance(value, int)
        return value

    retention_key = next(
        k
        for k in ("log.retention.ms", "log.retention.minutes", "log.retention.hours")
        if values[k] is not None
    )
    factor = {"log.retention.ms": 1, "log.retention.minutes": 60_000}.get(retention_key, 3_600_000)
    retention = num(retention_key) * factor
    _check(
        retention >= 1 or retention < 0,
        retention_key,
        values,
        "retention must be -1 (unlimited) or at least 1 ms",
    )
    if values["log.roll.ms"] is not None:
        _check(num("log.roll.ms") >= 1, "log.roll.ms", values, "must be at least 1")
    if values["log.roll.jitter.ms"] is not None:
        _check(num("log.roll.jitter.ms") >= 0, "log.roll.jitter.ms", values, "must be at least 0")
    queued = num("queued.max.request.bytes")
    _check(
        queued <= 0 or queued >= num("socket.request.max.bytes"),
        "queued.max.request.bytes",
        values,
        "must be -1 or at least socket.request.max.bytes",
    )
    threads = num("log.cleaner.threads")
    _check(
        threads == 0 or num("log.cleaner.dedupe.buffer.size") // threads > 1024 * 1024,
        "log.cleaner.dedupe.buffer.size",
        values,
        "must be more than 1 MiB per cleaner thread",
    )
    wait = num("replica.fetch.wait.max.ms")
    _check(
        wait <= num("replica.socket.timeout.ms"),
        "replica.fetch.wait.max.ms",
        values,
        "must not exceed replica.socket.timeout.ms",
    )
    _check(
        wait <= num("replica.lag.time.max.ms"),
        "replica.fetch.wait.max.ms",
        values,
        "must not exceed replica.lag.time.max.ms",
    )
    idle = num("connections.max.idle.ms")
    _check(
        idle < 0 or num("connection.failed.authentication.delay.ms") < idle,
        "connection.failed.authentication.delay.ms",
        values,
        "must be less than connections.max.idle.ms",
    )


def load_config(
    path: str | None, overrides: Sequence[str] = (), env: Mapping[str, str] | None = None
) -> tuple[BrokerConfig, list[str]]:
    """Read ``path`` (a Java properties file; None for none), apply ``overrides``
    (``key=value`` strings, later ones winning) and build the config. Returns the config
    and warnings about ignored keys; raises :class:`ConfigError` for invalid values and
    OSError when the file cannot be read."""
    props: dict[str, str] = {}
    if path is not None:
        props.update(parse_properties(decode_properties(Path(path).read_bytes()), path))
    for arg in overrides:
        key, value = parse_override(arg)
        props[key] = value
    return build_config(props, env)

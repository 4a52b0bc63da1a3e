"""DescribeConfigs views of the broker and topic resources, and a real server.properties."""

from __future__ import annotations

from pathlib import Path

import pytest

from millpond.broker.config import BrokerConfig, ConfigError, build_config, load_config
from millpond.broker.config_defs import BROKER_CONFIGS, TOPIC_CONFIGS, ConfigSource, ConfigType
from millpond.broker.config_defs_describe import (
    ConfigEntry,
    ConfigSynonym,
    describe,
    describe_topic,
    validate_topic_configs,
)

ENV = {"HOME": "/home/pond"}
STATIC = ConfigSource.STATIC_BROKER_CONFIG
DEFAULT = ConfigSource.DEFAULT_CONFIG
TOPIC = ConfigSource.TOPIC_CONFIG


def config_of(props: dict[str, str]) -> BrokerConfig:
    return build_config(props, ENV)[0]


def by_name(entries: list[ConfigEntry]) -> dict[str, ConfigEntry]:
    return {entry.name: entry for entry in entries}


def syn(name: str, value: str | None, source: ConfigSource) -> ConfigSynonym:
    return ConfigSynonym(name, value, source)


def test_codes_are_kafkas() -> None:
    assert [int(s) for s in (TOPIC, STATIC, DEFAULT)] == [1, 4, 5]
    assert int(ConfigSource.DYNAMIC_BROKER_CONFIG) == 2
    assert int(ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG) == 3
    assert [int(t) for t in (ConfigType.BOOLEAN, ConfigType.LIST, ConfigType.PASSWORD)] == [1, 7, 9]


def test_broker_entries_sources_and_synonyms() -> None:
    config = config_of({"log.retention.hours": "24", "num.partitions": " 3 ", "foo.bar": "x"})
    entries = by_name(describe(config))
    assert set(BROKER_CONFIGS) <= set(entries)

    partitions = entries["num.partitions"]
    assert partitions.value == "3"  # the parsed value, rendered
    assert partitions.source is STATIC and partitions.type is ConfigType.INT
    assert partitions.synonyms == (
        syn("num.partitions", " 3 ", STATIC),  # the static layer keeps what was written
        syn("num.partitions", "1", DEFAULT),
    )
    assert partitions.read_only and not partitions.is_sensitive
    assert partitions.documentation and "ignores it" not in partitions.documentation

    hours = entries["log.retention.hours"]
    assert hours.synonyms == (
        syn("log.retention.hours", "24", STATIC),
        syn("log.retention.hours", "168", DEFAULT),
    )
    # log.retention.ms is null, and its synonym list starts at its own name: empty
    millis = entries["log.retention.ms"]
    assert (millis.value, millis.source, millis.synonyms) == (None, DEFAULT, ())
    assert not millis.read_only  # Kafka lets AlterConfigs change it
    assert entries["log.dir"].value == "/home/pond/.local/share/millpond/data"
    assert entries["listeners"].value == "PLAINTEXT://127.0.0.1:9092"

    unknown = entries["foo.bar"]
    assert (unknown.value, unknown.is_sensitive, unknown.type) == (None, True, ConfigType.UNKNOWN)
    assert unknown.source is STATIC


def test_broker_keys_filter_and_flags() -> None:
    config = config_of({"log.retention.ms": "1000", "log.retention.hours": "1"})
    entries = describe(
        config, ["log.retention.ms", "nope"], include_synonyms=False, include_documentation=False
    )
    assert [e.name for e in entries] == ["log.retention.ms"]
    assert entries[0].synonyms == () and entries[0].documentation is None
    assert entries[0].source is STATIC
    full = by_name(describe(config, ["log.retention.ms"]))["log.retention.ms"]
    assert full.synonyms == (
        syn("log.retention.ms", "1000", STATIC),
        syn("log.retention.hours", "1", STATIC),
        syn("log.retention.hours", "168", DEFAULT),
    )


def test_broker_dynamic_layers_come_first() -> None:
    config = config_of({"log.retention.ms": "1000"})
    entry = describe(
        config,
        ["log.retention.ms"],
        dynamic={"log.retention.ms": "7"},
        dynamic_default={"log.retention.minutes": "2"},
    )[0]
    assert entry.value == "7" and entry.source is ConfigSource.DYNAMIC_BROKER_CONFIG
    assert [s.source for s in entry.synonyms] == [
        ConfigSource.DYNAMIC_BROKER_CONFIG,
        ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
        STATIC,
        DEFAULT,
    ]


def test_topic_entries() -> None:
    config = config_of({"log.segment.bytes": "2097152", "log.retention.hours": "24"})
    entries = by_name(describe_topic({"cleanup.policy": "compact , delete"}, config))
    assert set(entries) == set(TOPIC_CONFIGS)

    policy = entries["cleanup.policy"]
    assert (policy.value, policy.source, policy.type) == ("compact,delete", TOPIC, ConfigType.LIST)
    assert policy.synonyms == (
        syn("cleanup.policy", "compact,delete", TOPIC),
        syn("log.cleanup.policy", "delete", DEFAULT),
    )
    segment = entries["segment.bytes"]
    assert (segment.value, segment.source) == ("2097152", STATIC)
    assert segment.synonyms == (
        syn("log.segment.bytes", "2097152", STATIC),
        syn("log.segment.bytes", "1073741824", DEFAULT),
    )
    # the value follows log.retention.hours, but (as in Kafka) the synonyms start at
    # log.retention.ms, which nothing sets
    retention = entries["retention.ms"]
    assert (retention.value, retention.source, retention.synonyms) == ("86400000", DEFAULT, ())
    assert not retention.read_only
    # a topic config without broker synonyms
    remote = entries["remote.storage.enable"]
    assert (remote.value, remote.source, remote.synonyms) == ("false", DEFAULT, ())
    assert remote.documentation and "ignores it" in remote.documentation


def test_topic_retention_synonyms_when_ms_is_set() -> None:
    config = config_of({"log.retention.ms": "5000", "log.retention.hours": "2"})
    entry = describe_topic({"retention.ms": "100"}, config, ["retention.ms"])[0]
    assert entry.value == "100" and entry.source is TOPIC
    assert entry.synonyms == (
        syn("retention.ms", "100", TOPIC),
        syn("log.retention.ms", "5000", STATIC),
        syn("log.retention.hours", "2", STATIC),
        syn("log.retention.hours", "168", DEFAULT),
    )
    plain = describe_topic({}, config, ["retention.ms"])[0]
    assert (plain.value, plain.source) == ("5000", STATIC)


def test_validate_topic_configs() -> None:
    assert validate_topic_configs({"retention.ms": " 10 ", "preallocate": "TRUE"}) == {
        "retention.ms": "10",
        "preallocate": "true",
    }
    with pytest.raises(ConfigError) as info:
        validate_topic_configs({"retention.ms": "-2"})
    assert info.value.key == "retention.ms" and "at least -1" in str(info.value)
    with pytest.raises(ConfigError) as info:
        validate_topic_configs({"log.retention.ms": "1"})
    assert "unknown topic config" in str(info.value)


def test_to_wire() -> None:
    config = config_of({"num.partitions": "3"})
    wire = describe(config, ["num.partitions"])[0].to_wire()
    assert (wire.name, wire.value, wire.config_source, wire.config_type) == (
        "num.partitions",
        "3",
        4,
        3,
    )
    assert [(s.name, s.value, s.source) for s in wire.synonyms] == [
        ("num.partitions", "3", 4),
        ("num.partitions", "1", 5),
    ]


# Kafka 4.4's config/server.properties (KRaft, combined mode), with its comments, as
# shipped; our test adds a few lines in the styles Java accepts.
KAFKA_SERVER_PROPERTIES = r"""
# Licensed to the Apache Software Foundation (ASF) under one or more ...

############################# Server Basics #############################

# The role of this server. Setting this puts us in KRaft mode
process.roles=broker,controller

# The node id associated with this instance's roles
node.id=1

# List of controller endpoints used connect to the controller cluster
controller.quorum.bootstrap.servers=localhost:9093

############################# Socket Server Settings #############################

listeners=PLAINTEXT://:9092,CONTROLLER://:9093

# Name of listener used for communication between brokers.
inter.broker.listener.name=PLAINTEXT

advertised.listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093

# A comma-separated list of the names of the listeners used by the controller.
controller.listener.names=CONTROLLER

# Maps listener names to security protocols, the default is for them to be the same.
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,\
    SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL

num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600

############################# Log Basics #############################

log.dirs=/tmp/kraft-combined-logs
num.partitions=1
num.recovery.threads.per.data.dir=2

############################# Internal Topic Settings  #############################
offsets.topic.replication.factor=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1

############################# Log Flush Policy #############################

#log.flush.interval.messages=10000
#log.flush.interval.ms=1000

############################# Log Retention Policy #############################

log.retention.hours=168
#log.retention.bytes=1073741824
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
! a Java-style comment
log.cleaner.enable : true
group.initial.rebalance.delay.ms 0
"""


def test_kafka_server_properties_loads(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text(KAFKA_SERVER_PROPERTIES + "confluent.support.metrics.enable=false\n")
    config, warnings = load_config(str(path), ["log.dirs=/data/pond"], ENV)
    assert warnings == [
        "confluent.support.metrics.enable is a Kafka setting millpond does not support yet; ignored"
    ]
    assert config.node_id == 1
    assert config.log_dirs == ("/data/pond",)
    assert [str(listener) for listener in config.listeners] == [
        "PLAINTEXT://:9092",
        "CONTROLLER://:9093",
    ]
    assert [str(a) for a in config.advertised_listeners] == ["PLAINTEXT://localhost:9092"]
    assert config.controller_listener_names == ("CONTROLLER",)
    assert config.group_initial_rebalance_delay_ms == 0
    assert config.get("controller.quorum.bootstrap.servers") == ("localhost:9093",)
    assert config.topic_defaults()["retention.ms"] == str(168 * 3_600_000)
    entries = by_name(describe(config))
    assert entries["log.dirs"].source is STATIC and entries["log.dirs"].value == "/data/pond"
    assert entries["listener.security.protocol.map"].value == (
        "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
        "SASL_SSL:SASL_SSL"
    )

"""BrokerConfig: defaults, file and overrides, validation, listeners, topic defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from millpond.broker.config import (
    DATA_DIR_ENV,
    DEFAULT_DATA_DIR,
    BrokerConfig,
    ConfigError,
    Listener,
    build_config,
    default_data_dir,
    load_config,
)
from millpond.broker.config_defs import (
    BROKER_CONFIGS,
    TOPIC_CONFIGS,
    TOPIC_SYNONYMS,
    ConfigType,
    default_value,
    parse_value,
)
from millpond.storage.config import LogConfig

ENV = {"HOME": "/home/pond"}


def build(**props: str) -> tuple[BrokerConfig, list[str]]:
    return build_config({k.replace("_", "."): v for k, v in props.items()}, ENV)


def config_of(props: dict[str, str]) -> BrokerConfig:
    config, warnings = build_config(props, ENV)
    assert warnings == []
    return config


def test_defaults() -> None:
    config, warnings = load_config(None, [], ENV)
    assert warnings == []
    assert config.node_id == 1
    assert config.process_roles == ("broker", "controller")
    assert config.listeners == (Listener("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT"),)
    assert config.advertised_listeners == config.listeners
    assert config.log_dirs == ("/home/pond/.local/share/millpond/data",)
    assert config.metadata_log_dir == config.log_dirs[0]
    assert config.auto_create_topics_enable is True
    assert config.num_partitions == 1
    assert config.default_replication_factor == 1
    assert config.offsets_topic_replication_factor == 1
    assert config.socket_request_max_bytes == 100 * 1024 * 1024
    assert config.connections_max_idle_ms == 600_000
    assert config.inter_broker_listener_name == "PLAINTEXT"
    assert config.log_config() == LogConfig()


def test_data_dir_default_and_environment() -> None:
    assert DEFAULT_DATA_DIR == "~/.local/share/millpond/data"
    assert default_data_dir({"HOME": "/h"}) == "/h/.local/share/millpond/data"
    assert default_data_dir({"HOME": "/h", DATA_DIR_ENV: "/srv/pond"}) == "/srv/pond"
    config, _ = build_config({}, {DATA_DIR_ENV: "/srv/pond"})
    assert config.log_dirs == ("/srv/pond",)
    assert config_of({"log.dir": "/a"}).log_dirs == ("/a",)
    assert config_of({"log.dir": "/a", "log.dirs": "/b, /c"}).log_dirs == ("/b", "/c")


def test_file_then_overrides(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("num.partitions=3\nauto.create.topics.enable = false\nnode.id=4\n")
    config, warnings = load_config(str(path), ["num.partitions=5", "num.partitions=6"], ENV)
    assert warnings == []
    assert config.num_partitions == 6  # overrides win, the last one last
    assert config.auto_create_topics_enable is False
    assert config.node_id == 4
    assert config.static["num.partitions"] == "6"


def test_unknown_keys_are_warned_not_refused() -> None:
    config, warnings = build(
        num_partitions="2",
        no_such_thing="1",
        remote_log_manager_thread_pool_size="2",
        retention_ms="5",
    )
    assert config.num_partitions == 2
    assert warnings == [
        "unknown config no.such.thing; ignored",
        "remote.log.manager.thread.pool.size is a Kafka setting millpond does not support "
        "yet; ignored",
        "retention.ms is a topic config, not a broker config; ignored; the broker-wide "
        "default is log.retention.ms",
    ]


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("num.partitions", "0", "must be at least 1"),
        ("num.partitions", "two", "expected a whole number"),
        ("num.partitions", "1_000", "expected a whole number"),
        ("num.partitions", "2147483648", "out of range for a int"),
        ("auto.create.topics.enable", "yes", "expected true or false"),
        ("log.cleanup.policy", "delete,shred", "compact, delete"),
        ("log.message.timestamp.type", "Now", "CreateTime, LogAppendTime"),
        ("log.cleaner.min.cleanable.ratio", "1.5", "between 0 and 1"),
        ("log.cleaner.min.cleanable.ratio", "half", "expected a number"),
        ("offsets.topic.replication.factor", "40000", "out of range for a short"),
        ("compression.gzip.level", "0", "between 1 and 9 or -1"),
        ("process.roles", "broker,router", "broker, controller"),
        ("log.dirs", "/a,/a", "duplicates"),
        ("log.segment.bytes", "1000", "at least 1048576"),
    ],
)
def test_invalid_values_name_key_value_and_rule(key: str, value: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        build_config({key: value}, ENV)
    assert info.value.key == key
    assert info.value.value == value
    message = str(info.value)
    assert key in message and repr(value) in message and reason in message


def test_values_are_trimmed_and_case_insensitive_booleans() -> None:
    config = config_of({"num.partitions": "  7 ", "delete.topic.enable": " FALSE"})
    assert config.num_partitions == 7
    assert config.delete_topic_enable is False
    assert config.static["num.partitions"] == "  7 "  # kept raw for DescribeConfigs


def test_node_id_and_broker_id() -> None:
    assert config_of({"broker.id": "3"}).node_id == 3
    assert config_of({"node.id": "3"}).get("broker.id") == 3
    with pytest.raises(ConfigError) as info:
        build_config({"node.id": "1", "broker.id": "2"}, ENV)
    assert info.value.key == "broker.id"


def test_retention_precedence_ms_minutes_hours() -> None:
    def retention(**props: str) -> str:
        return build(**props)[0].topic_defaults()["retention.ms"]

    assert retention() == str(7 * 24 * 3_600_000)
    assert retention(log_retention_hours="1") == "3600000"
    assert retention(log_retention_hours="1", log_retention_minutes="2") == "120000"
    both = {"log_retention_hours": "1", "log_retention_minutes": "2"}
    assert retention(**both, log_retention_ms="5") == "5"
    assert retention(log_retention_ms="-1") == "-1"
    assert retention(log_retention_hours="-5") == "-1"  # any negative means forever
    with pytest.raises(ConfigError) as info:
        build(log_retention_minutes="0")
    assert info.value.key == "log.retention.minutes"


def test_other_synonym_conversions() -> None:
    config = config_of(
        {
            "log.roll.hours": "2",
            "log.roll.jitter.hours": "1",
            "log.flush.scheduler.interval.ms": "900",
            "log.segment.bytes": "2097152",
            "log.cleanup.policy": "compact, delete",
            "message.max.bytes": "2000",
            "log.cleaner.min.cleanable.ratio": "0.25",
        }
    )
    defaults = config.topic_defaults()
    assert defaults["segment.ms"] == "7200000"
    assert defaults["segment.jitter.ms"] == "3600000"
    assert defaults["flush.ms"] == "900"
    assert defaults["cleanup.policy"] == "compact,delete"
    assert defaults["max.message.bytes"] == "2000"
    log = config.log_config({"retention.bytes": "100"})
    assert log.segment_ms == 7_200_000 and log.segment_bytes == 2 * 1024 * 1024
    assert log.cleanup_policy == ("compact", "delete")
    assert log.min_cleanable_dirty_ratio == 0.25 and log.retention_bytes == 100
    assert (
        config_of({"log.roll.ms": "5", "log.roll.hours": "2"}).topic_defaults()["segment.ms"] == "5"
    )


def test_listeners_parsing() -> None:
    config = config_of(
        {
            "listeners": "plaintext://:9092,CONTROLLER://[::1]:9093,INTERNAL://10.0.0.1:9094",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,"
            "INTERNAL:PLAINTEXT",
            "controller.listener.names": "CONTROLLER",
        }
    )
    plain, controller, internal = config.listeners
    assert plain == Listener("PLAINTEXT", "", 9092, "PLAINTEXT")
    assert plain.bind_host is None  # the wildcard: every interface
    assert plain.resolved().host  # advertised under this machine's name
    assert controller == Listener("CONTROLLER", "::1", 9093, "PLAINTEXT")
    assert str(controller) == "CONTROLLER://[::1]:9093"
    assert internal.host == "10.0.0.1"
    assert [a.name for a in config.advertised_listeners] == ["PLAINTEXT", "INTERNAL"]


def test_controller_listener_is_plaintext_without_an_explicit_map() -> None:
    config = config_of(
        {
            "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
            "controller.listener.names": "CONTROLLER",
        }
    )
    assert config.listeners[1].security_protocol == "PLAINTEXT"
    assert config.controller_listener_names == ("CONTROLLER",)


def test_advertised_listeners() -> None:
    config = config_of(
        {"listeners": "PLAINTEXT://0.0.0.0:9092", "advertised.listeners": "PLAINTEXT://pond:9092"}
    )
    assert config.listeners[0].host == "0.0.0.0"
    assert config.advertised_listeners == (Listener("PLAINTEXT", "pond", 9092, "PLAINTEXT"),)


@pytest.mark.parametrize(
    ("props", "key", "reason"),
    [
        ({"listeners": "PLAINTEXT://0.0.0.0:9092"}, "listeners", "0.0.0.0"),
        (
            {"listeners": "PLAINTEXT://:9092", "advertised.listeners": "PLAINTEXT://0.0.0.0:9092"},
            "advertised.listeners",
            "0.0.0.0",
        ),
        ({"listeners": "PLAINTEXT:/:9092"}, "listeners", "NAME://host:port"),
        ({"listeners": "PLAINTEXT://:70000"}, "listeners", "0..65535"),
        ({"listeners": "FOO://:9092"}, "listeners", "defined for listener FOO"),
        ({"listeners": "PLAINTEXT://:9092,plaintext://:9093"}, "listeners", "different name"),
        (
            {
                "listeners": "A://:9092,B://:9092",
                "listener.security.protocol.map": "A:PLAINTEXT,B:PLAINTEXT",
                "inter.broker.listener.name": "A",
            },
            "listeners",
            "different port",
        ),
        ({"listeners": "SSL://:9093"}, "listeners", "only PLAINTEXT"),
        (
            {"listener.security.protocol.map": "PLAINTEXT:TLS"},
            "listener.security.protocol.map",
            "NAME:PROTOCOL",
        ),
        (
            {"listeners": "PLAINTEXT://:9092", "advertised.listeners": "OTHER://h:1",
             "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT"},
            "advertised.listeners",
            "among those of listeners",
        ),
        ({"inter.broker.listener.name": "NOPE"}, "inter.broker.listener.name", "advertised"),
        (
            {"inter.broker.listener.name": "PLAINTEXT", "security.inter.broker.protocol": "SSL"},
            "inter.broker.listener.name",
            "only one",
        ),
    ],
)  # fmt: skip
def test_listener_errors(props: dict[str, str], key: str, reason: str) -> None:
    with pytest.raises(ConfigError) as info:
        build_config(props, ENV)
    assert info.value.key == key
    assert reason in str(info.value)


def test_ipv4_and_ipv6_may_share_a_port() -> None:
    config = config_of(
        {
            "listeners": "A://127.0.0.1:9092,B://[::1]:9092",
            "listener.security.protocol.map": "A:PLAINTEXT,B:PLAINTEXT",
            "inter.broker.listener.name": "A",
        }
    )
    assert [listener.port for listener in config.listeners] == [9092, 9092]


@pytest.mark.parametrize(
    ("props", "key"),
    [
        ({"queued.max.request.bytes": "10"}, "queued.max.request.bytes"),
        ({"replica.fetch.wait.max.ms": "40000"}, "replica.fetch.wait.max.ms"),
        ({"log.cleaner.dedupe.buffer.size": "1048576"}, "log.cleaner.dedupe.buffer.size"),
        ({"log.roll.ms": "0"}, "log.roll.ms"),
        ({"connections.max.idle.ms": "50"}, "connection.failed.authentication.delay.ms"),
    ],
)
def test_cross_field_rules(props: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError) as info:
        build_config(props, ENV)
    assert info.value.key == key


def test_tables_are_consistent() -> None:
    for name, definition in {**BROKER_CONFIGS, **TOPIC_CONFIGS}.items():
        assert definition.name == name
        assert definition.doc.endswith((".", ")"))
        if definition.default is not None:  # every default passes its own validator
            assert parse_value(definition, definition.default) == default_value(definition)
    for topic, synonyms in TOPIC_SYNONYMS.items():
        assert topic in TOPIC_CONFIGS
        assert BROKER_CONFIGS[synonyms[0][0]].dynamic, synonyms[0][0]
        for broker_name, _factor in synonyms:
            kind = BROKER_CONFIGS[broker_name].type
            assert kind == TOPIC_CONFIGS[topic].type or kind is ConfigType.INT


def test_ignored_settings_say_so() -> None:
    assert "ignores it" in BROKER_CONFIGS["num.network.threads"].documentation
    assert "ignores it" not in BROKER_CONFIGS["num.partitions"].documentation
    assert "Kafka's is 3" in BROKER_CONFIGS["offsets.topic.replication.factor"].documentation

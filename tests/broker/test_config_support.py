"""Kafka settings for what millpond does not do yet: accepted when they describe what runs
(one process, broker and controller, a one-voter quorum of this node, PLAINTEXT, no
authorizer, classic groups), refused at start-up otherwise with what was given, what
millpond supports so far and what to set instead."""

from __future__ import annotations

import pytest

from millpond.broker.config import ConfigError, build_config
from millpond.broker.config_defs_describe import describe

ENV = {"HOME": "/home/pond"}
#: A combined-mode node with a controller listener, as Kafka's config/server.properties.
COMBINED = {
    "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
    "advertised.listeners": "PLAINTEXT://localhost:9092",
    "controller.listener.names": "CONTROLLER",
}


@pytest.mark.parametrize(
    "props",
    [
        {"process.roles": "broker,controller"},
        {"process.roles": " controller , broker "},
        {"controller.quorum.voters": "1@localhost:9093"},
        {"node.id": "7", "controller.quorum.voters": "7@[::1]:9093"},
        {**COMBINED, "controller.quorum.voters": "1@localhost:9093,2@b:9093,3@c:9093"},
        {**COMBINED, "controller.quorum.bootstrap.servers": "localhost:9093"},
        {**COMBINED, "controller.quorum.bootstrap.servers": "127.0.0.1:9093,[::1]:9093"},
        # a dynamic quorum of several (KIP-853)
        {**COMBINED, "controller.quorum.bootstrap.servers": "localhost:9093,b:9093,c:9093"},
        {"authorizer.class.name": ""},
        {"cordoned.log.dirs": ""},
        {"group.coordinator.rebalance.protocols": " classic "},
        {"security.inter.broker.protocol": "PLAINTEXT"},
        # SSL and SASL names no listener uses (Kafka's default map lists them all)
        {"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL"},
    ],
)
def test_what_runs_is_accepted(props: dict[str, str]) -> None:
    config, warnings = build_config(props, ENV)
    assert warnings == []
    assert config.process_roles in (("broker", "controller"), ("controller", "broker"))


#: A broker-only node following three controllers.
BROKER_ONLY = {
    "node.id": "4",
    "process.roles": "broker",
    "controller.listener.names": "CONTROLLER",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "controller.quorum.voters": "1@a:9093,2@b:9093,3@c:9093",
}


#: A controller-only node, one of three voters.
CONTROLLER_ONLY = {
    "process.roles": "controller",
    "listeners": "CONTROLLER://:9093",
    "controller.listener.names": "CONTROLLER",
    "listener.security.protocol.map": "CONTROLLER:PLAINTEXT",
    "controller.quorum.voters": "1@a:9093,2@b:9093,3@c:9093",
}


def test_a_controller_only_voter_is_accepted() -> None:
    config, warnings = build_config(CONTROLLER_ONLY, ENV)
    assert warnings == [] and config.process_roles == ("controller",)
    assert config.advertised_listeners == ()


@pytest.mark.parametrize(
    ("change", "key", "says"),
    [
        ({"controller.quorum.voters": ""}, "controller.quorum.voters", "list every voter"),
        ({"node.id": "4"}, "controller.quorum.voters", "add 4@HOST:PORT"),
        ({"listeners": "CONTROLLER://:9093,PLAINTEXT://:9092",
          "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"},
         "listeners", "not PLAINTEXT://:9092"),
    ],
)  # fmt: skip
def test_a_controller_only_node_outside_its_quorum_is_refused(
    change: dict[str, str], key: str, says: str
) -> None:
    with pytest.raises(ConfigError) as info:
        build_config(CONTROLLER_ONLY | change, ENV)
    assert info.value.key == key and says in str(info.value)


def test_a_broker_only_node_following_a_static_quorum_is_accepted() -> None:
    config, warnings = build_config(BROKER_ONLY, ENV)
    assert warnings == [] and config.process_roles == ("broker",)


def test_nodes_of_a_dynamic_quorum_are_accepted() -> None:
    dynamic = {"controller.quorum.voters": "", "controller.quorum.bootstrap.servers": "a:9093"}
    for props in (BROKER_ONLY | dynamic, CONTROLLER_ONLY | dynamic):
        config, warnings = build_config(props, ENV)
        assert warnings == []
        assert config.get("controller.quorum.bootstrap.servers") == ("a:9093",)


@pytest.mark.parametrize(
    ("props", "key", "says"),
    [
        # a controller of several with no controller listener to serve its peers on
        ({"controller.quorum.bootstrap.servers": "other:9093"}, "controller.listener.names",
         "serves its peers on a controller listener"),
        ({**COMBINED, "controller.quorum.bootstrap.servers": "other"},
         "controller.quorum.bootstrap.servers", "is not HOST:PORT"),
        ({**COMBINED, "controller.quorum.voters": "1@localhost:9093",
          "controller.quorum.bootstrap.servers": "other:9093"},
         "controller.quorum.bootstrap.servers", "set one of the two"),
    ],
)  # fmt: skip
def test_a_dynamic_quorum_that_cannot_run_is_refused(
    props: dict[str, str], key: str, says: str
) -> None:
    with pytest.raises(ConfigError) as info:
        build_config(props, ENV)
    assert info.value.key == key and says in str(info.value)


@pytest.mark.parametrize(
    ("change", "key", "says"),
    [
        ({"controller.quorum.voters": ""}, "controller.quorum.voters", "needs the quorum"),
        ({"node.id": "2"}, "controller.quorum.voters", "cannot be a voter"),
        ({"controller.listener.names": ""}, "controller.listener.names", "names the controllers'"),
        ({"listeners": "PLAINTEXT://:9092,CONTROLLER://:9093"}, "controller.listener.names",
         "lists none of its own"),
        ({"controller.quorum.bootstrap.servers": "a:9093"}, "controller.quorum.bootstrap.servers",
         "set one of the two"),
    ],
)  # fmt: skip
def test_a_broker_only_node_without_its_quorum_is_refused(
    change: dict[str, str], key: str, says: str
) -> None:
    with pytest.raises(ConfigError) as info:
        build_config(BROKER_ONLY | change, ENV)
    assert info.value.key == key and says in str(info.value)


@pytest.mark.parametrize(
    ("props", "key", "given", "instead"),
    [
        ({"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer"},
         "authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
         "remove authorizer.class.name"),
        ({"cordoned.log.dirs": "/a,/b"}, "cordoned.log.dirs", "/a,/b",
         "remove cordoned.log.dirs"),
        ({"ssl.keystore.location": "/k"}, "ssl.keystore.location", None, "remove"),
        ({"sasl.enabled.mechanisms": "SCRAM-SHA-512"}, "sasl.enabled.mechanisms", None, "remove"),
        ({"sasl.mechanism.controller.protocol": "SCRAM-SHA-256"},
         "sasl.mechanism.controller.protocol", None, "remove"),
        ({"listener.name.client.ssl.keystore.location": "/k"},
         "listener.name.client.ssl.keystore.location", None, "remove"),
        ({"listener.name.client.plain.sasl.jaas.config": "secret"},
         "listener.name.client.plain.sasl.jaas.config", None, "remove"),
        ({"listeners": "SSL://:9093"}, "listeners", "SSL://:9093", "map listener SSL"),
        ({**COMBINED, "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SSL"},
         "listeners", "PLAINTEXT://:9092,CONTROLLER://:9093", "map listener CONTROLLER"),
        ({"listeners": "PLAINTEXT://:9092,SASL_PLAINTEXT://:9094"}, "listeners",
         "PLAINTEXT://:9092,SASL_PLAINTEXT://:9094", "map listener SASL_PLAINTEXT"),
        ({"security.inter.broker.protocol": "SASL_SSL"}, "security.inter.broker.protocol",
         "SASL_SSL", "PLAINTEXT"),
        ({"group.coordinator.rebalance.protocols": "classic,consumer,streams"},
         "group.coordinator.rebalance.protocols", "classic,consumer,streams", "set it to classic"),
        ({"group.coordinator.rebalance.protocols": "consumer"},
         "group.coordinator.rebalance.protocols", "consumer", "set it to classic"),
        ({"group.coordinator.rebalance.protocols": "classic,share"},
         "group.coordinator.rebalance.protocols", "classic,share", "set it to classic"),
    ],
)  # fmt: skip
def test_what_does_not_run_is_refused_saying_what_to_do(
    props: dict[str, str], key: str, given: str | None, instead: str
) -> None:
    with pytest.raises(ConfigError) as info:
        build_config(props, ENV)
    message = str(info.value)
    assert info.value.key == key
    assert message.startswith(f"{key}: invalid value ")
    assert "so far" in message and instead in message
    if given is None:  # TLS and SASL settings may be secrets: never echoed
        assert "(hidden)" in message and props[key] not in message.replace(key, "")
    else:
        assert repr(given) in message


def test_unknown_protocols_keep_kafkas_message() -> None:
    with pytest.raises(ConfigError) as info:
        build_config({"group.coordinator.rebalance.protocols": "classic,modern"}, ENV)
    assert "each item must be one of: classic, consumer, share, streams" in str(info.value)


def test_describe_reports_these_keys_as_kafka_does() -> None:
    config, _ = build_config({"controller.quorum.voters": "1@localhost:9093"}, ENV)
    entries = {e.name: e for e in describe(config)}
    protocols = entries["group.coordinator.rebalance.protocols"]
    assert protocols.value == "classic" and protocols.read_only
    assert "Kafka's is classic,consumer,streams" in (protocols.documentation or "")
    assert entries["process.roles"].value == "broker,controller"
    assert entries["controller.quorum.voters"].value == "1@localhost:9093"
    assert entries["authorizer.class.name"].value == ""


@pytest.mark.parametrize(
    ("props", "given", "says"),
    [
        ({"controller.quorum.voters": "2@h:9093"}, "2@h:9093", "add 1@HOST:PORT"),
        ({"controller.quorum.voters": "one@a:9093"}, "one@a:9093", "is not ID@HOST:PORT"),
        ({"controller.quorum.voters": "1@:9093"}, "1@:9093", "is not ID@HOST:PORT"),
        ({"controller.quorum.voters": "1@a:9093,1@b:9093"}, "1@a:9093,1@b:9093", "named twice"),
        ({**COMBINED, "controller.quorum.voters": "1@a:9999,2@b:9093"}, "1@a:9999,2@b:9093",
         "port 9999, which none of its controller listeners uses"),
        ({"controller.quorum.voters": "1@a:9093,2@b:9093"}, "1@a:9093,2@b:9093",
         "controller.listener.names (none set)"),
    ],
)  # fmt: skip
def test_a_voter_set_without_this_controller_is_refused(
    props: dict[str, str], given: str, says: str
) -> None:
    with pytest.raises(ConfigError) as info:
        build_config(props, ENV)
    assert info.value.key == "controller.quorum.voters"
    assert str(info.value).startswith(f"controller.quorum.voters: invalid value {given!r}")
    assert says in str(info.value)

"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs through the real server."""

from __future__ import annotations

from typing import Any

from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api import alter_configs_request as ac
from millpond.wire.generated.api import create_topics_request as ct
from millpond.wire.generated.api import describe_configs_request as dc
from millpond.wire.generated.api import incremental_alter_configs_request as iac

from .harness import Client, running_broker

TOPIC, BROKER, LOGGER, GROUP = 2, 4, 8, 32


def _make_topic(client: Client, name: str, **configs: str) -> None:
    topic = ct.CreatableTopic(
        name=name,
        num_partitions=1,
        replication_factor=1,
        configs=[ct.CreatableTopicConfig(name=k, value=v) for k, v in configs.items()],
    )
    [result] = client.request(ct.CreateTopicsRequest(topics=[topic]), 7)[1].topics
    assert result.error_code == ErrorCode.NONE


def _describe(
    client: Client,
    *resources: tuple[int, str, list[str] | None],
    version: int = 4,
    synonyms: bool = True,
    docs: bool = True,
) -> list[Any]:
    request = dc.DescribeConfigsRequest(
        resources=[
            dc.DescribeConfigsResource(resource_type=t, resource_name=n, configuration_keys=k)
            for t, n, k in resources
        ],
        include_synonyms=synonyms,
        include_documentation=docs,
    )
    results: list[Any] = client.request(request, version)[1].results
    return results


def test_describe_topic_configs_with_defaults_sources_and_docs() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        _make_topic(client, "t", **{"retention.ms": "5000"})
        [result] = _describe(client, (TOPIC, "t", None))
        assert result.error_code == ErrorCode.NONE
        configs = {c.name: c for c in result.configs}
        assert len(configs) > 30 and "cleanup.policy" in configs
        retention = configs["retention.ms"]
        assert (retention.value, retention.config_source) == ("5000", 1)
        assert retention.synonyms[0].name == "retention.ms"
        assert retention.config_type == 5  # LONG
        assert retention.documentation
        policy = configs["cleanup.policy"]
        assert (policy.value, policy.config_source, policy.read_only) == ("delete", 5, False)


def test_describe_filters_keys_and_honours_the_include_flags() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        _make_topic(client, "t", **{"retention.ms": "5000"})
        [result] = _describe(
            client, (TOPIC, "t", ["retention.ms", "nope"]), synonyms=False, docs=False
        )
        [entry] = result.configs
        assert (entry.name, entry.synonyms, entry.documentation) == ("retention.ms", [], None)
        # v1-2 carry no type nor documentation.
        [result] = _describe(client, (TOPIC, "t", ["retention.ms"]), version=1, docs=False)
        assert result.configs[0].value == "5000"


def test_describe_broker_configs() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        [result] = _describe(client, (BROKER, str(broker.node_id), None))
        assert result.error_code == ErrorCode.NONE
        configs = {c.name: c for c in result.configs}
        assert configs["num.partitions"].value == "1"
        assert configs["node.id"].value == str(broker.node_id)
        assert all(c.config_type != 0 for c in result.configs)
        # The cluster default resource lists only dynamic cluster-wide values: on a fresh
        # cluster, the bootstrap's min.insync.replicas (as on Kafka 4.4).
        [result] = _describe(client, (BROKER, "", None))
        assert result.error_code == ErrorCode.NONE
        assert [(c.name, c.value, c.config_source) for c in result.configs] == [
            ("min.insync.replicas", "1", 3)
        ]


def test_describe_configs_errors_as_kafka() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        results = _describe(
            client,
            (TOPIC, "missing", None),
            (TOPIC, "bad name!", None),
            (BROKER, "x", None),
            (BROKER, "99", None),
            (LOGGER, "", None),
            (GROUP, "g", None),
        )
        codes = [(r.error_code, r.error_message) for r in results]
        assert codes[0] == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "")  # as Kafka: empty
        assert codes[1][0] == ErrorCode.INVALID_TOPIC_EXCEPTION
        assert codes[2] == (ErrorCode.INVALID_REQUEST, "Broker id must be an integer, but it is: x")
        assert codes[3] == (
            ErrorCode.INVALID_REQUEST,
            f"Unexpected broker id, expected {broker.node_id} or empty string, but received 99",
        )
        assert codes[4] == (ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
        assert codes[5][0] == ErrorCode.INVALID_REQUEST
        assert all(r.configs == [] for r in results)
        # An unknown resource type fails the whole request.
        results = _describe(client, (TOPIC, "missing", None), (99, "x", None))
        assert [r.error_code for r in results] == [ErrorCode.INVALID_REQUEST] * 2


def _alter(client: Client, *resources: tuple[int, str, dict[str, str | None]], **kw: Any) -> Any:
    request = ac.AlterConfigsRequest(
        resources=[
            ac.AlterConfigsResource(
                resource_type=t,
                resource_name=n,
                configs=[ac.AlterableConfig(name=k, value=v) for k, v in c.items()],
            )
            for t, n, c in resources
        ],
        **kw,
    )
    return client.request(request, 2)[1].responses


def test_alter_configs_replaces_the_set_and_reaches_the_log() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        _make_topic(client, "t", **{"retention.ms": "5000", "segment.ms": "100000"})
        [r] = _alter(client, (TOPIC, "t", {"retention.bytes": "1024"}), validate_only=True)
        assert r.error_code == ErrorCode.NONE
        assert broker.image.topic_config("t") == {"retention.ms": "5000", "segment.ms": "100000"}
        [r] = _alter(client, (TOPIC, "t", {"retention.bytes": "1024"}))
        assert (r.error_code, r.resource_type, r.resource_name) == (ErrorCode.NONE, TOPIC, "t")
        assert broker.image.topic_config("t") == {"retention.bytes": "1024"}
        log = broker.log_manager.get_log("t", 0)
        assert log is not None and log.config.retention_bytes == 1024


def test_alter_configs_errors_as_kafka() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        _make_topic(client, "t")
        results = _alter(
            client,
            (TOPIC, "missing", {"retention.ms": "1"}),
            (TOPIC, "t", {"no.such.config": "1"}),
            (BROKER, "99", {"log.retention.ms": "1"}),
            (BROKER, "", {"log.dirs": "/x"}),
            (BROKER, "1", {"log.retention.ms": "abc"}),
            (LOGGER, "1", {"root": "DEBUG"}),
        )
        codes = [(r.error_code, r.error_message) for r in results]
        assert codes[0][0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert codes[1][0] == ErrorCode.INVALID_CONFIG
        assert codes[2] == (
            ErrorCode.INVALID_REQUEST,
            f"Unexpected broker id, expected {broker.node_id}, but received 99",
        )
        assert codes[3] == (
            ErrorCode.INVALID_REQUEST,
            "Cannot update these configs dynamically: Set(log.dirs)",
        )
        assert codes[4][0] == ErrorCode.INVALID_REQUEST
        assert codes[5] == (ErrorCode.INVALID_REQUEST, "Unknown resource type 8")
        twice = _alter(client, (TOPIC, "t", {"retention.ms": "1"}), (TOPIC, "t", {}))
        assert [r.error_code for r in twice] == [ErrorCode.INVALID_REQUEST] * 2


def test_a_dynamic_broker_config_is_described_with_its_source() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        [r] = _alter(client, (BROKER, "", {"log.retention.ms": "1234"}))
        assert r.error_code == ErrorCode.NONE
        [result] = _describe(client, (BROKER, "", None))
        assert [(c.name, c.value, c.config_source) for c in result.configs] == [
            ("log.retention.ms", "1234", 3)  # DYNAMIC_DEFAULT_BROKER_CONFIG
        ]
        _make_topic(client, "t")
        [result] = _describe(client, (TOPIC, "t", ["retention.ms"]))
        [entry] = result.configs
        assert (entry.value, entry.config_source) == ("1234", 3)


def _incremental(client: Client, name: str, *ops: tuple[str, int, str | None]) -> Any:
    request = iac.IncrementalAlterConfigsRequest(
        resources=[
            iac.AlterConfigsResource(
                resource_type=TOPIC,
                resource_name=name,
                configs=[
                    iac.AlterableConfig(name=k, config_operation=op, value=v) for k, op, v in ops
                ],
            )
        ]
    )
    [result] = client.request(request, 1)[1].responses
    return result


def test_incremental_alter_configs_set_delete_append_subtract() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        _make_topic(client, "t", **{"retention.ms": "5000"})
        r = _incremental(client, "t", ("segment.ms", 0, "60000"), ("retention.ms", 1, None))
        assert r.error_code == ErrorCode.NONE
        assert broker.image.topic_config("t") == {"segment.ms": "60000"}
        # APPEND to a key the topic does not set starts from its default (Kafka 4.4).
        assert _incremental(client, "t", ("cleanup.policy", 2, "compact")).error_code == 0
        assert broker.image.topic_config("t")["cleanup.policy"] == "delete,compact"
        assert _incremental(client, "t", ("cleanup.policy", 2, "delete")).error_code == 0
        assert broker.image.topic_config("t")["cleanup.policy"] == "delete,compact"
        assert _incremental(client, "t", ("cleanup.policy", 3, "delete")).error_code == 0
        assert broker.image.topic_config("t")["cleanup.policy"] == "compact"


def test_incremental_alter_configs_errors_as_kafka() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        _make_topic(client, "t")
        r = _incremental(client, "t", ("retention.ms", 2, "1"))
        assert r.error_code == ErrorCode.INVALID_CONFIG
        assert r.error_message == "Can't APPEND to key retention.ms because its type is not LIST."
        r = _incremental(client, "t", ("retention.ms", 0, None))
        assert (r.error_code, r.error_message) == (
            ErrorCode.INVALID_REQUEST,
            "Null value not supported for : retention.ms",
        )
        r = _incremental(client, "t", ("retention.ms", 0, "1"), ("retention.ms", 1, None))
        assert (r.error_code, r.error_message) == (
            ErrorCode.INVALID_REQUEST,
            "Error due to duplicate config keys",
        )
        assert _incremental(client, "t", ("retention.ms", 0, "x")).error_code == 40
        assert _incremental(client, "gone", ("retention.ms", 0, "1")).error_code == 3
        assert broker.image.topic_config("t") == {}

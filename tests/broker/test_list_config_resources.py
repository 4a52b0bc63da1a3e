"""ListConfigResources through the real server: which resources each version lists."""

from __future__ import annotations

from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api import create_topics_request as ct
from millpond.wire.generated.api.list_config_resources_request import ListConfigResourcesRequest

from .harness import Client, running_broker

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32


def _listed(client: Client, version: int, *types: int) -> tuple[int, list[tuple[int, str]]]:
    answer = client.request(ListConfigResourcesRequest(resource_types=list(types)), version)[1]
    return answer.error_code, [(r.resource_type, r.resource_name) for r in answer.config_resources]


def test_each_type_lists_its_resources_in_kafkas_order() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        topics = [ct.CreatableTopic(name=n, num_partitions=1, replication_factor=1) for n in "ba"]
        client.request(ct.CreateTopicsRequest(topics=topics), 7)
        node = str(broker.node_id)
        everything = [(BROKER_LOGGER, node), (BROKER, node), (TOPIC, "a"), (TOPIC, "b")]
        assert _listed(client, 1) == (ErrorCode.NONE, everything)
        assert _listed(client, 1, TOPIC, BROKER, TOPIC) == (ErrorCode.NONE, everything[1:])
        assert _listed(client, 1, GROUP, CLIENT_METRICS) == (ErrorCode.NONE, [])
        assert _listed(client, 1, BROKER_LOGGER) == (ErrorCode.NONE, everything[:1])


def test_a_type_the_version_does_not_list_fails_the_request() -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        topic = ct.CreatableTopic(name="a", num_partitions=1, replication_factor=1)
        client.request(ct.CreateTopicsRequest(topics=[topic]), 7)
        assert _listed(client, 1, TOPIC, 1) == (ErrorCode.UNSUPPORTED_VERSION, [])
        assert _listed(client, 1, 64) == (ErrorCode.UNSUPPORTED_VERSION, [])
        # v0 (ListClientMetricsResources) lists client metrics only: none configured.
        assert _listed(client, 0) == (ErrorCode.NONE, [])

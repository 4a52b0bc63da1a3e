"""The request guard, without sockets: which action each API asks the authorizer for, and
Kafka's answer when it is refused."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from millpond.broker.authorization import (
    CLUSTER_NAME,
    AclOperation,
    Action,
    AllowEverything,
    RequestGuard,
    ResourceType,
)
from millpond.broker.context import RequestContext
from millpond.broker.dispatch import CloseConnection
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.alter_replica_log_dirs_request import (
    AlterReplicaLogDir,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirTopic,
)
from millpond.wire.generated.api.alter_replica_log_dirs_response import (
    AlterReplicaLogDirsResponse,
)
from millpond.wire.generated.api.describe_cluster_request import DescribeClusterRequest
from millpond.wire.generated.api.list_config_resources_request import (
    ListConfigResourcesRequest,
)
from millpond.wire.generated.api.list_config_resources_response import (
    ListConfigResourcesResponse,
)


class Recording:
    """Answers ``allow`` to everything and keeps what it was asked."""

    def __init__(self, allow: bool) -> None:
        self.allow = allow
        self.asked: list[Action] = []

    def authorize(self, ctx: RequestContext, actions: Sequence[Action]) -> Sequence[bool]:
        self.asked.extend(actions)
        return [self.allow] * len(actions)


def cluster(operation: AclOperation) -> Action:
    return Action(operation, ResourceType.CLUSTER, CLUSTER_NAME)


CTX = RequestContext(1, "127.0.0.1:5000", client_address="127.0.0.1")


def test_allowing_everything_needs_no_guard() -> None:
    assert RequestGuard.of(AllowEverything()) is None


def test_list_config_resources_needs_describe_configs_on_the_cluster() -> None:
    allowed = Recording(allow=True)
    request = ListConfigResourcesRequest(resource_types=[2])
    assert RequestGuard(allowed).check(74, CTX, request) is None
    assert allowed.asked == [cluster(AclOperation.DESCRIBE_CONFIGS)]

    refused = RequestGuard(Recording(allow=False)).check(74, CTX, request)
    assert isinstance(refused, ListConfigResourcesResponse)
    assert refused.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert refused.config_resources == []


def test_alter_replica_log_dirs_needs_alter_on_the_cluster_and_refuses_every_partition() -> None:
    request = AlterReplicaLogDirsRequest(
        dirs=[
            AlterReplicaLogDir(
                path="/a", topics=[AlterReplicaLogDirTopic(name="t", partitions=[0, 2])]
            ),
            AlterReplicaLogDir(
                path="/b",
                topics=[
                    AlterReplicaLogDirTopic(name="t", partitions=[1]),
                    AlterReplicaLogDirTopic(name="u", partitions=[0]),
                ],
            ),
        ]
    )
    allowed = Recording(allow=True)
    assert RequestGuard(allowed).check(34, CTX, request) is None
    assert allowed.asked == [cluster(AclOperation.ALTER)]

    refused = RequestGuard(Recording(allow=False)).check(34, CTX, request)
    assert isinstance(refused, AlterReplicaLogDirsResponse)
    answered = [
        (t.topic_name, p.partition_index, p.error_code)
        for t in refused.results
        for p in t.partitions
    ]
    failed = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert answered == [("t", 0, failed), ("t", 2, failed), ("t", 1, failed), ("u", 0, failed)]


def test_an_api_without_actions_of_its_own_needs_all_on_the_cluster() -> None:
    allowed = Recording(allow=True)
    assert RequestGuard(allowed).check(60, CTX, DescribeClusterRequest()) is None
    assert allowed.asked == [cluster(AclOperation.ALL)]
    with pytest.raises(CloseConnection, match="User:ANONYMOUS may not send DescribeCluster"):
        RequestGuard(Recording(allow=False)).check(60, CTX, DescribeClusterRequest())


def test_api_versions_asks_nothing() -> None:
    refusing = Recording(allow=False)
    assert RequestGuard(refusing).check(18, CTX, None) is None
    assert refusing.asked == []

"""DescribeGroups, ListGroups, DeleteGroups and OffsetDelete through the real server (and
the handler-level checks of SyncGroup and OffsetCommit they rely on)."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from millpond.broker.config import build_config
from millpond.broker.coordinator.runtime import PartitionState
from millpond.broker.node import Broker
from millpond.controller.replication_control import CreatableTopic
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.delete_groups_request import DeleteGroupsRequest
from millpond.wire.generated.api.delete_groups_response import DeleteGroupsResponse
from millpond.wire.generated.api.describe_groups_request import DescribeGroupsRequest
from millpond.wire.generated.api.describe_groups_response import (
    DescribedGroup,
    DescribeGroupsResponse,
)
from millpond.wire.generated.api.find_coordinator_request import FindCoordinatorRequest
from millpond.wire.generated.api.join_group_request import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
)
from millpond.wire.generated.api.join_group_response import JoinGroupResponse
from millpond.wire.generated.api.list_groups_request import ListGroupsRequest
from millpond.wire.generated.api.list_groups_response import ListGroupsResponse
from millpond.wire.generated.api.offset_commit_request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from millpond.wire.generated.api.offset_commit_response import OffsetCommitResponse
from millpond.wire.generated.api.offset_delete_request import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from millpond.wire.generated.api.offset_delete_response import OffsetDeleteResponse
from millpond.wire.generated.api.offset_fetch_request import (
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
)
from millpond.wire.generated.api.offset_fetch_response import OffsetFetchResponse
from millpond.wire.generated.api.sync_group_request import (
    SyncGroupRequest,
    SyncGroupRequestAssignment,
)
from millpond.wire.generated.api.sync_group_response import SyncGroupResponse

from .groups.helpers import subscription
from .harness import Client, running_broker

GROUP_OPERATIONS = 3400  # READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS


@contextmanager
def group_broker() -> Iterator[tuple[Broker, Client]]:
    """A broker whose new groups form at once (no initial rebalance delay), with topics
    ``t`` (2 partitions) and ``u`` (1), ``__consumer_offsets``, and a client."""
    with tempfile.TemporaryDirectory(prefix="millpond-test-") as data:
        props = {"node.id": "1", "log.dirs": data, "group.initial.rebalance.delay.ms": "0"}
        config = build_config(props, env={})[0]
        with running_broker(data_dir=data, config=config) as broker:
            broker.controller.create_topics(
                [CreatableTopic("t", num_partitions=2), CreatableTopic("u", num_partitions=1)]
            )
            client = Client(broker.port, client_id="cid")
            # As clients do first: the lookup creates __consumer_offsets.
            client.request(FindCoordinatorRequest(key="any", key_type=0), 3)
            yield broker, client


def join(client: Client, group: str, protocol_type: str = "consumer") -> JoinGroupResponse:
    """A new member's two JoinGroups (v9): its answer once it joined."""
    request = JoinGroupRequest(
        group_id=group,
        session_timeout_ms=30_000,
        rebalance_timeout_ms=60_000,
        protocol_type=protocol_type,
        protocols=[JoinGroupRequestProtocol(name="range", metadata=subscription("t"))],
    )
    _, first = client.request(request, 9)
    assert isinstance(first, JoinGroupResponse)
    assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
    request.member_id = first.member_id
    _, joined = client.request(request, 9)
    assert isinstance(joined, JoinGroupResponse)
    assert joined.error_code == ErrorCode.NONE
    return joined


def sync(
    client: Client, group: str, joined: JoinGroupResponse, protocol_type: str = "consumer"
) -> SyncGroupResponse:
    request = SyncGroupRequest(
        group_id=group,
        generation_id=joined.generation_id,
        member_id=joined.member_id,
        protocol_type=protocol_type,
        protocol_name="range",
        assignments=[SyncGroupRequestAssignment(member_id=joined.member_id, assignment=b"a")],
    )
    _, response = client.request(request, 5)
    assert isinstance(response, SyncGroupResponse)
    return response


def stable(client: Client, group: str, protocol_type: str = "consumer") -> JoinGroupResponse:
    joined = join(client, group, protocol_type)
    assert sync(client, group, joined, protocol_type).error_code == ErrorCode.NONE
    return joined


def commit(client: Client, group: str, offsets: dict[str, list[int]]) -> OffsetCommitResponse:
    request = OffsetCommitRequest(
        group_id=group,
        topics=[
            OffsetCommitRequestTopic(
                name=topic,
                partitions=[
                    OffsetCommitRequestPartition(partition_index=p, committed_offset=10 + p)
                    for p in partitions
                ],
            )
            for topic, partitions in offsets.items()
        ],
    )
    _, response = client.request(request, 9)
    assert isinstance(response, OffsetCommitResponse)
    return response


def describe(
    client: Client, *groups: str, version: int = 5, ops: bool = False
) -> list[DescribedGroup]:
    request = DescribeGroupsRequest(groups=list(groups), include_authorized_operations=ops)
    _, response = client.request(request, version)
    assert isinstance(response, DescribeGroupsResponse)
    return response.groups


def committed(client: Client, group: str, topic: str, partitions: list[int]) -> list[int]:
    request = OffsetFetchRequest(
        group_id=group,
        topics=[OffsetFetchRequestTopic(name=topic, partition_indexes=partitions)],
    )
    _, response = client.request(request, 7)
    assert isinstance(response, OffsetFetchResponse)
    return [p.committed_offset for t in response.topics for p in t.partitions]


# --- DescribeGroups -------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(7))
def test_describe_unknown_group(version: int) -> None:
    with group_broker() as (_, client):
        [group, empty_id] = describe(client, "nope", "", version=version, ops=version >= 3)
        for described, name in ((group, "nope"), (empty_id, "")):
            assert (described.group_id, described.group_state) == (name, "Dead")
            assert described.members == []
            if version >= 6:
                assert described.error_code == ErrorCode.GROUP_ID_NOT_FOUND
                assert described.error_message == f"Group {name} not found."
                assert described.authorized_operations == -(2**31)
            else:
                assert (described.error_code, described.error_message) == (ErrorCode.NONE, None)
                expected = GROUP_OPERATIONS if version >= 3 else -(2**31)
                assert described.authorized_operations == expected


def test_describe_states() -> None:
    with group_broker() as (_, client):
        commit(client, "simple", {"t": [0]})
        joined = stable(client, "stable")
        joining = join(client, "joining")
        simple, stable_group, joining_group = describe(client, "simple", "stable", "joining")
        assert (simple.group_state, simple.protocol_type, simple.members) == ("Empty", "", [])
        assert (stable_group.group_state, stable_group.protocol_data) == ("Stable", "range")
        [member] = stable_group.members
        assert (member.member_id, member.client_id) == (joined.member_id, "cid")
        assert member.client_host == "/127.0.0.1"
        assert (member.member_metadata, member.member_assignment) == (subscription("t"), b"a")
        assert joining_group.group_state == "CompletingRebalance"
        assert (joining_group.protocol_type, joining_group.protocol_data) == ("consumer", "")
        [member] = joining_group.members
        assert (member.member_id, member.member_metadata) == (joining.member_id, b"")


# --- ListGroups -----------------------------------------------------------------------------


def _list(client: Client, version: int, **filters: list[str]) -> ListGroupsResponse:
    request = ListGroupsRequest(
        states_filter=filters.get("states", []), types_filter=filters.get("types", [])
    )
    _, response = client.request(request, version)
    assert isinstance(response, ListGroupsResponse)
    assert response.error_code == ErrorCode.NONE
    return response


def _ids(response: ListGroupsResponse) -> list[str]:
    return sorted(g.group_id for g in response.groups)


@pytest.mark.parametrize("version", range(6))
def test_list_groups_versions(version: int) -> None:
    with group_broker() as (_, client):
        assert _list(client, version).groups == []
        commit(client, "simple", {"t": [0]})
        stable(client, "stable")
        by_id = {g.group_id: g for g in _list(client, version).groups}
        assert sorted(by_id) == ["simple", "stable"]
        assert (by_id["simple"].protocol_type, by_id["stable"].protocol_type) == ("", "consumer")
        state = by_id["stable"].group_state
        assert state == ("Stable" if version >= 4 else "")
        assert by_id["stable"].group_type == ("classic" if version >= 5 else "")


def test_list_groups_filters() -> None:
    with group_broker() as (_, client):
        commit(client, "simple", {"t": [0]})
        stable(client, "stable")
        join(client, "joining")
        assert _ids(_list(client, 4, states=["Stable"])) == ["stable"]
        assert _ids(_list(client, 4, states=[" empty ", "COMPLETINGREBALANCE"])) == [
            "joining",
            "simple",
        ]
        assert _ids(_list(client, 4, states=["bogus"])) == []
        assert _ids(_list(client, 5, types=["Classic"], states=["stable"])) == ["stable"]
        assert _ids(_list(client, 5, types=["consumer"])) == []
        assert _ids(_list(client, 5, types=[" classic"])) == []
        # Filters are fields of v4 and v5 only: an older request lists everything.
        assert _ids(_list(client, 3)) == ["joining", "simple", "stable"]


def test_list_groups_while_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    with group_broker() as (broker, client):
        commit(client, "simple", {"t": [0]})
        monkeypatch.setattr(broker.groups, "loading", lambda: True)
        _, response = client.request(ListGroupsRequest(), 4)
        assert isinstance(response, ListGroupsResponse)
        assert (response.error_code, response.groups) == (
            ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
            [],
        )


# --- DeleteGroups ---------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(4))
def test_delete_groups(version: int) -> None:
    with group_broker() as (_, client):
        commit(client, "simple", {"t": [0, 1]})
        stable(client, "stable")
        request = DeleteGroupsRequest(groups_names=["stable", "simple", "nope", "", "simple"])
        _, response = client.request(request, version)
        assert isinstance(response, DeleteGroupsResponse)
        assert [(r.group_id, r.error_code, r.error_message) for r in response.results] == [
            ("stable", ErrorCode.NON_EMPTY_GROUP, None),
            ("simple", ErrorCode.NONE, None),
            ("nope", ErrorCode.GROUP_ID_NOT_FOUND, None),
            ("", ErrorCode.GROUP_ID_NOT_FOUND, None),
        ]
        assert [g.group_state for g in describe(client, "simple", "stable")] == [
            "Dead",
            "Stable",
        ]
        assert committed(client, "simple", "t", [0, 1]) == [-1, -1]
        _, again = client.request(DeleteGroupsRequest(groups_names=["simple"]), version)
        assert isinstance(again, DeleteGroupsResponse)
        assert again.results[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND


# --- OffsetDelete ---------------------------------------------------------------------------


def _delete_offsets(
    client: Client, group: str, topics: dict[str, list[int]]
) -> OffsetDeleteResponse:
    request = OffsetDeleteRequest(
        group_id=group,
        topics=[
            OffsetDeleteRequestTopic(
                name=t, partitions=[OffsetDeleteRequestPartition(partition_index=p) for p in ps]
            )
            for t, ps in topics.items()
        ],
    )
    _, response = client.request(request, 0)
    assert isinstance(response, OffsetDeleteResponse)
    return response


def _answers(response: OffsetDeleteResponse) -> list[tuple[str, list[tuple[int, int]]]]:
    return [
        (t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in response.topics
    ]


def test_offset_delete_group_errors() -> None:
    with group_broker() as (_, client):
        for group, code in (("", ErrorCode.INVALID_GROUP_ID), ("g", ErrorCode.GROUP_ID_NOT_FOUND)):
            response = _delete_offsets(client, group, {"t": [0], "nope": [0]})
            assert (response.error_code, response.topics) == (code, [])
        stable(client, "connect", protocol_type="connect")
        response = _delete_offsets(client, "connect", {"t": [0]})
        assert (response.error_code, response.topics) == (ErrorCode.NON_EMPTY_GROUP, [])


def test_offset_delete_partitions() -> None:
    with group_broker() as (_, client):
        commit(client, "g", {"t": [0, 1], "u": [0]})
        response = _delete_offsets(client, "g", {"t": [0, 5], "nope": [0, 1], "u": [0]})
        assert response.error_code == ErrorCode.NONE
        unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        # Kafka's order: what the broker refused first, then the group's answers.
        assert _answers(response) == [
            ("t", [(5, unknown), (0, ErrorCode.NONE)]),
            ("nope", [(0, unknown), (1, unknown)]),
            ("u", [(0, ErrorCode.NONE)]),
        ]
        assert committed(client, "g", "t", [0, 1]) == [-1, 11]
        assert committed(client, "g", "u", [0]) == [-1]


def test_offset_delete_subscribed_topic() -> None:
    with group_broker() as (_, client):
        joined = stable(client, "g")
        request = OffsetCommitRequest(
            group_id="g",
            generation_id_or_member_epoch=joined.generation_id,
            member_id=joined.member_id,
            topics=[
                OffsetCommitRequestTopic(
                    name=name,
                    partitions=[
                        OffsetCommitRequestPartition(partition_index=0, committed_offset=7)
                    ],
                )
                for name in ("t", "u")
            ],
        )
        client.request(request, 9)
        response = _delete_offsets(client, "g", {"t": [0], "u": [0]})
        assert _answers(response) == [
            ("t", [(0, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC)]),
            ("u", [(0, ErrorCode.NONE)]),
        ]
        assert committed(client, "g", "t", [0]) == [7]
        assert committed(client, "g", "u", [0]) == [-1]


# --- what the admin APIs rely on: SyncGroup and OffsetCommit at the handler -----------------


def test_sync_v5_needs_protocol_type_and_name() -> None:
    with group_broker() as (_, client):
        joined = join(client, "g")
        for missing in ("protocol_type", "protocol_name"):
            request = SyncGroupRequest(
                group_id="g",
                generation_id=joined.generation_id,
                member_id=joined.member_id,
                protocol_type="consumer",
                protocol_name="range",
            )
            setattr(request, missing, None)
            _, response = client.request(request, 5)
            assert isinstance(response, SyncGroupResponse)
            assert response.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        assert describe(client, "g")[0].group_state == "CompletingRebalance"


def test_commit_of_unknown_partitions_only_makes_no_group() -> None:
    with group_broker() as (_, client):
        response = commit(client, "g", {"nope": [0], "t": [7]})
        assert [(t.name, [p.error_code for p in t.partitions]) for t in response.topics] == [
            ("nope", [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]),
            ("t", [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]),
        ]
        assert describe(client, "g")[0].group_state == "Dead"


def test_commit_answers_refused_topics_first() -> None:
    with group_broker() as (_, client):
        response = commit(client, "g", {"t": [0, 9], "nope": [0], "u": [0]})
        unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        assert [
            (t.name, [(p.partition_index, p.error_code) for p in t.partitions])
            for t in response.topics
        ] == [
            ("t", [(9, unknown), (0, ErrorCode.NONE)]),
            ("nope", [(0, unknown)]),
            ("u", [(0, ErrorCode.NONE)]),
        ]


def test_loading_partition() -> None:
    with group_broker() as (broker, client):
        commit(client, "g", {"t": [0]})
        loading = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        context = broker.groups.runtime.context(broker.groups.partition("g"))
        assert context is not None
        with pytest.MonkeyPatch.context() as patch:
            # The group's partition as the runtime holds it while it is replayed.
            patch.setattr(context, "state", PartitionState.LOADING)
            [described] = describe(client, "g", version=6, ops=True)
            assert (described.error_code, described.group_state) == (loading, "")
            assert described.authorized_operations == -(2**31)
            _, deleted = client.request(DeleteGroupsRequest(groups_names=["g"]), 3)
            assert isinstance(deleted, DeleteGroupsResponse)
            assert deleted.results[0].error_code == loading
            response = _delete_offsets(client, "g", {"t": [0]})
            assert (response.error_code, response.topics) == (loading, [])
        assert committed(client, "g", "t", [0]) == [10]


# --- leadership of __consumer_offsets ------------------------------------------------------


def test_resigning_a_partition_unloads_its_groups_and_an_election_loads_them_again() -> None:
    with group_broker() as (broker, client):
        commit(client, "g", {"t": [0]})
        service = broker.groups
        partition = service.partition("g")
        loop = service._tasks[0].get_loop()  # the broker's event loop, in its own thread

        def on_loop(action: Callable[[], None]) -> None:
            async def run() -> None:
                action()

            asyncio.run_coroutine_threadsafe(run(), loop).result(timeout=10)

        # What the metadata publisher's leadership listeners hear when leadership moves.
        on_loop(lambda: service.on_resignation(partition, 100))
        request = OffsetFetchRequest(
            group_id="g", topics=[OffsetFetchRequestTopic(name="t", partition_indexes=[0])]
        )
        _, response = client.request(request, 7)
        assert isinstance(response, OffsetFetchResponse)
        assert response.error_code == ErrorCode.NOT_COORDINATOR
        assert describe(client, "g")[0].error_code == ErrorCode.NOT_COORDINATOR
        assert commit(client, "g", {"t": [1]}).topics[0].partitions[0].error_code == (
            ErrorCode.NOT_COORDINATOR
        )
        on_loop(lambda: service.on_election(partition, 101))  # replays the partition's log

        async def loaded() -> None:
            task = service._loads.get(partition)  # the load, a task of the broker's loop
            if task is not None:
                await task

        asyncio.run_coroutine_threadsafe(loaded(), loop).result(timeout=10)
        assert service.availability("g") == ErrorCode.NONE
        assert committed(client, "g", "t", [0, 1]) == [10, -1]

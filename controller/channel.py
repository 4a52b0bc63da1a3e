"""How a broker reaches the controller: submit an operation, await its committed answer.

As in Kafka, where a broker forwards admin requests and sends its registration,
heartbeats and producer id requests to the active controller over a channel, the
broker never calls the controller's operations itself. Each method here submits one
operation and returns when the controller has answered, and an answer that changed
metadata arrives only once its records are committed: a caller never sees a response
whose records could still be lost. Validate-only and refused operations append nothing
and complete at once.

:class:`ControllerChannel` is the shape every channel has. :class:`LocalControllerChannel`
is the one in the same process (combined mode): it runs the operation on the
:class:`~millpond.controller.controller.QuorumController` and waits for the commit of
its last record, which a one-voter quorum makes after the fsync and a quorum of several
voters makes when a majority has fetched the records. A failed metadata append fails the
operation with :class:`~millpond.controller.raft.client.RaftLogFailedError`, as it
fails every pending and later one.

Runs on the event loop that owns the controller.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from millpond.controller.alter_partition import AlterPartitionAnswer, AlterPartitionRequest
    from millpond.controller.cluster_control import BrokerRegistrationResult, ProducerIdsBlock
    from millpond.controller.config_control import AlterConfigsResource
    from millpond.controller.controller import MetadataListener, QuorumController
    from millpond.controller.feature_control import FeatureUpdate
    from millpond.controller.image import BrokerEndpoint, ConfigResource, MetadataImage
    from millpond.controller.leader_election import ElectionType, TopicElection
    from millpond.controller.raft.keys import Endpoint
    from millpond.controller.reassignment import (
        OngoingReassignment,
        ReassignmentOutcomes,
        TopicReassignment,
    )
    from millpond.controller.replication_control import (
        CreatableTopic,
        CreatePartitionsResult,
        CreatePartitionsTopic,
        CreateTopicResult,
        DeleteTopicResult,
    )
    from millpond.controller.results import ApiError, ControllerResult
    from millpond.wire import Message

__all__ = ["ControllerChannel", "LocalControllerChannel", "MetadataFeed", "QuorumRequests"]

T = TypeVar("T")


class MetadataFeed(Protocol):
    """Where a broker's committed metadata comes from: the image so far, then every
    committed batch (the controller in this process; a quorum's log over the network)."""

    @property
    def committed_image(self) -> MetadataImage: ...

    def register_listener(
        self, listener: MetadataListener, broker_id: int | None = None
    ) -> None: ...


class QuorumRequests(Protocol):
    """Where a controller listener's KRaft requests (Vote, Fetch, DescribeQuorum, ...)
    go: this node's replica of the metadata quorum."""

    async def handle_raft_request(self, request: Message, version: int) -> Message: ...

    async def handle_controller_request(
        self, request: Message, version: int, connection_id: int
    ) -> Message:
        """BrokerRegistration, BrokerHeartbeat and AllocateProducerIds, answered once
        committed (``connection_id``: the connection it came on)."""

    def connection_closed(self, connection_id: int) -> None:
        """A connection of a controller listener closed."""

    @property
    def channel(self) -> LocalControllerChannel:
        """This node's controller, which answers the admin requests of its listeners."""

    @property
    def is_active_controller(self) -> bool:
        """Whether this node is the active controller now."""

    @property
    def quorum_leader_id(self) -> int:
        """The quorum's leader, the active controller (-1 while none is known)."""

    def voter_endpoints(self) -> dict[int, tuple[Endpoint, ...]]:
        """Every voter's controller listeners as the quorum knows them, by node id."""


class ControllerChannel(Protocol):
    """What a broker submits to the controller on its own behalf; each completes on
    commit. (Clients' admin requests reach the controller whole: on its listener, or
    forwarded there in an Envelope.)"""

    async def register_broker(
        self,
        broker_id: int,
        endpoints: Sequence[BrokerEndpoint],
        log_dirs: Sequence[bytes] = (),
        previous_broker_epoch: int = -1,
    ) -> BrokerRegistrationResult:
        """``log_dirs``: the directory ids of the broker's log directories;
        ``previous_broker_epoch``: the epoch it last stopped cleanly in (-1: a crash)."""

    async def unfence_broker(self, broker_id: int, broker_epoch: int) -> ApiError: ...

    async def allocate_producer_ids(
        self, broker_id: int, broker_epoch: int
    ) -> ProducerIdsBlock: ...

    async def create_topics(
        self, topics: Sequence[CreatableTopic], *, validate_only: bool = False
    ) -> list[CreateTopicResult]: ...

    async def alter_partition(self, request: AlterPartitionRequest) -> AlterPartitionAnswer:
        """ISR changes from this broker's partition leaders."""

    async def close(self) -> None:
        """The broker stops (a controlled shutdown, where the controller is remote)."""


class LocalControllerChannel:
    """The channel to a controller in this process (see the module docstring): the
    broker's operations, and the admin operations its listener's handlers run."""

    def __init__(self, controller: QuorumController) -> None:
        self._controller = controller

    async def submit(self, operation: Callable[[QuorumController], ControllerResult[T]]) -> T:
        """Run ``operation`` on the controller; its answer once its records commit."""
        controller = self._controller
        result = operation(controller)  # raises RaftLogFailedError on a failed log
        if not result.records:
            return result.response
        committed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def done(error: BaseException | None) -> None:
            if committed.done():
                return
            if error is None:
                committed.set_result(None)
            else:
                committed.set_exception(error)

        controller.when_committed(controller.last_offset, done)
        await committed
        return result.response

    async def register_broker(
        self,
        broker_id: int,
        endpoints: Sequence[BrokerEndpoint],
        log_dirs: Sequence[bytes] = (),
        previous_broker_epoch: int = -1,
    ) -> BrokerRegistrationResult:
        return await self.submit(
            lambda c: c.register_broker(
                broker_id, endpoints, log_dirs=log_dirs, previous_broker_epoch=previous_broker_epoch
            )
        )

    async def unfence_broker(self, broker_id: int, broker_epoch: int) -> ApiError:
        return await self.submit(lambda c: c.unfence_broker(broker_id, broker_epoch))

    async def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> ProducerIdsBlock:
        return await self.submit(lambda c: c.allocate_producer_ids(broker_id, broker_epoch))

    async def alter_partition(self, request: AlterPartitionRequest) -> AlterPartitionAnswer:
        return await self.submit(lambda c: c.alter_partition(request))

    async def create_topics(
        self, topics: Sequence[CreatableTopic], *, validate_only: bool = False
    ) -> list[CreateTopicResult]:
        return await self.submit(lambda c: c.create_topics(topics, validate_only=validate_only))

    async def delete_topics(
        self, names: Sequence[str] = (), topic_ids: Sequence[bytes] = ()
    ) -> list[DeleteTopicResult]:
        return await self.submit(lambda c: c.delete_topics(names, topic_ids))

    async def create_partitions(
        self, topics: Sequence[CreatePartitionsTopic], *, validate_only: bool = False
    ) -> list[CreatePartitionsResult]:
        return await self.submit(lambda c: c.create_partitions(topics, validate_only=validate_only))

    async def elect_leaders(
        self,
        election: ElectionType,
        requested: Sequence[tuple[str, Sequence[int]]] | None,
    ) -> list[TopicElection]:
        return await self.submit(lambda c: c.elect_leaders(election, requested))

    async def alter_partition_reassignments(
        self, topics: Sequence[TopicReassignment], *, allow_rf_change: bool = True
    ) -> ReassignmentOutcomes:
        return await self.submit(
            lambda c: c.alter_partition_reassignments(topics, allow_rf_change=allow_rf_change)
        )

    async def unregister_broker(self, broker_id: int) -> ApiError:
        return await self.submit(lambda c: c.unregister_broker(broker_id))

    async def list_partition_reassignments(
        self, topics: Sequence[tuple[str, Sequence[int]]] | None
    ) -> list[OngoingReassignment]:
        return await self.submit(lambda c: c.list_partition_reassignments(topics))

    async def alter_configs(
        self,
        resources: Sequence[AlterConfigsResource],
        *,
        validate_only: bool = False,
        incremental: bool = False,
    ) -> dict[ConfigResource, ApiError]:
        if incremental:
            return await self.submit(
                lambda c: c.incremental_alter_configs(resources, validate_only=validate_only)
            )
        return await self.submit(lambda c: c.alter_configs(resources, validate_only=validate_only))

    async def update_features(
        self, updates: Sequence[FeatureUpdate], *, validate_only: bool = False
    ) -> dict[str, ApiError]:
        return await self.submit(lambda c: c.update_features(updates, validate_only=validate_only))

    async def close(self) -> None:
        """Nothing to do: the controller stops with its node."""

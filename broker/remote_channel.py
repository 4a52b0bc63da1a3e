"""The controller channel of a broker in a quorum of several nodes: Kafka's requests to
the active controller, over the network, wherever that controller runs.

As Kafka's ``BrokerLifecycleManager``, the broker registers (BrokerRegistration, with
a new incarnation id each start; asked again while the controller still holds the
previous incarnation's session), then heartbeats (BrokerHeartbeat) with the offset of
the metadata it has replayed: fenced until the controller finds it caught up, then every
``broker.heartbeat.interval.ms`` for as long as it runs, so the controller keeps its
session. It stops with a heartbeat that asks to shut down (controlled shutdown).
Producer id blocks (AllocateProducerIds) and the topics a broker creates itself
(CreateTopics: auto-creation, internal topics) go the same way. Each answer is the
active controller's, given once its records are committed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from millpond.controller.alter_partition import (
    AlterPartitionAnswer,
    AlterPartitionRequest,
    IsrChange,
    PartitionResult,
)
from millpond.controller.cluster_control import BrokerRegistrationResult, ProducerIdsBlock
from millpond.controller.image import PartitionRegistration
from millpond.controller.replication_control import CreateTopicResult
from millpond.controller.results import NO_ERROR, ApiError
from millpond.wire import Message
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api import allocate_producer_ids_request as pid
from millpond.wire.generated.api import allocate_producer_ids_response as pid_resp
from millpond.wire.generated.api import alter_partition_request as ap
from millpond.wire.generated.api import alter_partition_response as ap_resp
from millpond.wire.generated.api import broker_heartbeat_request as hb
from millpond.wire.generated.api import broker_heartbeat_response as hb_resp
from millpond.wire.generated.api import broker_registration_request as reg
from millpond.wire.generated.api import broker_registration_response as reg_resp
from millpond.wire.generated.api import create_topics_request as ct
from millpond.wire.generated.api import create_topics_response as ct_resp

if TYPE_CHECKING:
    from millpond.broker.controller_link import ControllerLink
    from millpond.controller.image import BrokerEndpoint
    from millpond.controller.replication_control import CreatableTopic

__all__ = ["BrokerIdentity", "RemoteControllerChannel"]

_log = logging.getLogger("millpond.broker")
#: How soon a fenced broker asks again whether it has caught up.
_CATCH_UP_POLL_MS = 50


class BrokerIdentity(NamedTuple):
    """What a broker tells the controller about itself, and its lifecycle timers."""

    cluster_id: str
    incarnation_id: bytes
    rack: str | None
    #: Feature name -> (min, max) supported level.
    features: Mapping[str, tuple[int, int]]
    heartbeat_interval_ms: int  # broker.heartbeat.interval.ms
    registration_timeout_ms: int  # initial.broker.registration.timeout.ms
    request_timeout_ms: int  # request.timeout.ms
    session_timeout_ms: int = 9000  # broker.session.timeout.ms
    controlled_shutdown: bool = True  # controlled.shutdown.enable


def _code(response: Message) -> int:
    code = getattr(response, "error_code", ErrorCode.NONE)
    assert isinstance(code, int)
    return code


def _first_topic_code(response: Message) -> int:
    assert isinstance(response, ct_resp.CreateTopicsResponse)
    return response.topics[0].error_code if response.topics else ErrorCode.NONE


class RemoteControllerChannel:
    """A :class:`~millpond.controller.channel.ControllerChannel` over the network."""

    def __init__(
        self, link: ControllerLink, identity: BrokerIdentity, metadata_offset: Callable[[], int]
    ) -> None:
        """``metadata_offset()``: the last offset of the metadata this broker has
        replayed (what its heartbeats report)."""
        self._link = link
        self._identity = identity
        self._metadata_offset = metadata_offset
        self._heartbeats: asyncio.Task[None] | None = None
        self._session: tuple[int, int] | None = None  # (broker id, broker epoch)
        self._unfenced: asyncio.Future[None] | None = None

    async def register_broker(
        self,
        broker_id: int,
        endpoints: Sequence[BrokerEndpoint],
        log_dirs: Sequence[bytes] = (),
        previous_broker_epoch: int = -1,
    ) -> BrokerRegistrationResult:
        me = self._identity

        def build(version: int) -> Message:
            return reg.BrokerRegistrationRequest(
                broker_id=broker_id,
                cluster_id=me.cluster_id,
                incarnation_id=me.incarnation_id,
                listeners=[
                    reg.Listener(
                        name=e.name, host=e.host, port=e.port, security_protocol=e.security_protocol
                    )
                    for e in endpoints
                ],
                features=[
                    reg.Feature(name=n, min_supported_version=lo, max_supported_version=hi)
                    for n, (lo, hi) in me.features.items()
                    if version >= 4 or lo > 0  # older readers reject a 0 (KAFKA-17492)
                ],
                rack=me.rack,
                log_dirs=list(log_dirs),
                previous_broker_epoch=previous_broker_epoch,
            )

        loop = asyncio.get_running_loop()
        deadline = loop.time() + me.registration_timeout_ms / 1000
        while True:
            remaining_ms = max(int((deadline - loop.time()) * 1000), 1)
            response = await self._link.send(62, build, _code, remaining_ms)
            assert isinstance(response, reg_resp.BrokerRegistrationResponse)
            # The previous incarnation's session has not lapsed yet (a restart after a
            # crash): Kafka's brokers ask again until it has, or until the registration
            # timeout.
            waiting = response.error_code == ErrorCode.DUPLICATE_BROKER_REGISTRATION
            if not waiting or loop.time() + me.heartbeat_interval_ms / 1000 >= deadline:
                return BrokerRegistrationResult(
                    ApiError(ErrorCode(response.error_code)), response.broker_epoch
                )
            await asyncio.sleep(me.heartbeat_interval_ms / 1000)

    async def unfence_broker(self, broker_id: int, broker_epoch: int) -> ApiError:
        """Heartbeat until the controller unfences this broker (it keeps heartbeating
        afterwards, until :meth:`close`)."""
        self._session = (broker_id, broker_epoch)
        self._unfenced = asyncio.get_running_loop().create_future()
        self._heartbeats = asyncio.get_running_loop().create_task(self._heartbeat_loop())
        await asyncio.shield(self._unfenced)
        return NO_ERROR

    async def _heartbeat(
        self, *, shut_down: bool = False, timeout_ms: int | None = None
    ) -> hb_resp.BrokerHeartbeatResponse:
        assert self._session is not None
        broker_id, broker_epoch = self._session

        def build(version: int) -> Message:
            return hb.BrokerHeartbeatRequest(
                broker_id=broker_id,
                broker_epoch=broker_epoch,
                current_metadata_offset=self._metadata_offset(),
                want_fence=False,
                want_shut_down=shut_down,
            )

        timeout_ms = timeout_ms or self._identity.request_timeout_ms
        response = await self._link.send(63, build, _code, timeout_ms)
        assert isinstance(response, hb_resp.BrokerHeartbeatResponse)
        return response

    async def _heartbeat_loop(self) -> None:
        assert self._unfenced is not None
        interval = self._identity.heartbeat_interval_ms
        reported: int | None = None
        while True:
            try:
                response = await self._heartbeat()
            except ConnectionError as exc:
                _log.warning("broker heartbeat: %s", exc)
                continue
            fenced = response.is_fenced or response.error_code != ErrorCode.NONE
            if response.error_code != reported and response.error_code != ErrorCode.NONE:
                _log.warning("broker heartbeat refused: %s", ErrorCode(response.error_code).name)
            reported = response.error_code
            if not fenced and not self._unfenced.done():
                self._unfenced.set_result(None)
            await asyncio.sleep((_CATCH_UP_POLL_MS if fenced else interval) / 1000)

    async def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> ProducerIdsBlock:
        def build(version: int) -> Message:
            return pid.AllocateProducerIdsRequest(broker_id=broker_id, broker_epoch=broker_epoch)

        response = await self._link.send(67, build, _code, self._identity.request_timeout_ms)
        assert isinstance(response, pid_resp.AllocateProducerIdsResponse)
        return ProducerIdsBlock(
            ApiError(ErrorCode(response.error_code)),
            response.producer_id_start,
            response.producer_id_len,
        )

    async def create_topics(
        self, topics: Sequence[CreatableTopic], *, validate_only: bool = False
    ) -> list[CreateTopicResult]:
        timeout_ms = self._identity.request_timeout_ms

        def build(version: int) -> Message:
            return ct.CreateTopicsRequest(
                topics=[
                    ct.CreatableTopic(
                        name=t.name,
                        num_partitions=t.num_partitions,
                        replication_factor=t.replication_factor,
                        assignments=[
                            ct.CreatableReplicaAssignment(
                                partition_index=a.partition_index, broker_ids=list(a.broker_ids)
                            )
                            for a in t.assignments
                        ],
                        configs=[
                            ct.CreatableTopicConfig(name=k, value=v) for k, v in t.configs.items()
                        ],
                    )
                    for t in topics
                ],
                timeout_ms=timeout_ms,
                validate_only=validate_only,
            )

        response = await self._link.send(19, build, _first_topic_code, timeout_ms)
        assert isinstance(response, ct_resp.CreateTopicsResponse)
        return [
            CreateTopicResult(
                t.name,
                ApiError(ErrorCode(t.error_code), t.error_message),
                bytes(t.topic_id),
                t.num_partitions,
                t.replication_factor,
                {c.name: c.value for c in t.configs or () if c.value is not None},
            )
            for t in response.topics
        ]

    async def alter_partition(self, request: AlterPartitionRequest) -> AlterPartitionAnswer:
        """AlterPartition v3 to the active controller. A NOT_CONTROLLER anywhere in the
        answer, the request's own or a partition's (a controller behind the metadata),
        sends the whole request to the active controller again, as Kafka's brokers do."""

        def build(version: int) -> Message:
            return ap.AlterPartitionRequest(
                broker_id=request.broker_id,
                broker_epoch=request.broker_epoch,
                topics=[
                    ap.TopicData(
                        topic_id=topic_id,
                        partitions=[_partition_data(c, version) for c in changes],
                    )
                    for topic_id, changes in request.topics
                ],
            )

        def code(response: Message) -> int:
            assert isinstance(response, ap_resp.AlterPartitionResponse)
            partitions = (p.error_code for t in response.topics for p in t.partitions)
            if ErrorCode.NOT_CONTROLLER in partitions:
                return ErrorCode.NOT_CONTROLLER
            return response.error_code

        response = await self._link.send(56, build, code, self._identity.request_timeout_ms)
        assert isinstance(response, ap_resp.AlterPartitionResponse)
        return ApiError(ErrorCode(response.error_code)), [
            (
                bytes(t.topic_id),
                [
                    PartitionResult(p.partition_index, ApiError(ErrorCode(p.error_code)))
                    if p.error_code != ErrorCode.NONE
                    else PartitionResult(
                        p.partition_index,
                        NO_ERROR,
                        _answered(p),
                    )
                    for p in t.partitions
                ],
            )
            for t in response.topics
        ]

    async def close(self) -> None:
        """Stop heartbeating, after a controlled shutdown (``controlled.shutdown.enable``):
        heartbeats that ask to shut down until the controller, having moved this
        broker's leaderships and seen the other brokers apply that, says it may. The wait
        is bounded by ``broker.session.timeout.ms``: past it the controller fences this
        broker anyway."""
        if self._heartbeats is None:
            return
        self._heartbeats.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._heartbeats
        self._heartbeats = None
        if self._identity.controlled_shutdown:
            await self._shut_down()
        self._link.close()

    async def _shut_down(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._identity.session_timeout_ms / 1000
        # Each ask waits two heartbeat intervals at most: a controller that does not
        # answer by then is not coming back before the session lapses.
        patience_ms = 2 * self._identity.heartbeat_interval_ms
        while (remaining_ms := int((deadline - loop.time()) * 1000)) > 0:
            try:
                response = await self._heartbeat(
                    shut_down=True, timeout_ms=min(remaining_ms, patience_ms)
                )
            except ConnectionError as exc:
                _log.info("controlled shutdown not acknowledged: %s", exc)
                return
            if response.should_shut_down or response.error_code != ErrorCode.NONE:
                return
            await asyncio.sleep(_CATCH_UP_POLL_MS / 1000)
        _log.warning(
            "controlled shutdown not granted within broker.session.timeout.ms (%d ms); "
            "stopping anyway (the controller fences this broker)",
            self._identity.session_timeout_ms,
        )


def _answered(p: ap_resp.PartitionData) -> PartitionRegistration:
    """The partition as an AlterPartition answer gives it (the fields the leader reads)."""
    return PartitionRegistration(
        replicas=(),
        isr=tuple(p.isr),
        leader=p.leader_id,
        leader_epoch=p.leader_epoch,
        partition_epoch=p.partition_epoch,
        leader_recovery_state=p.leader_recovery_state,
    )


def _partition_data(change: IsrChange, version: int) -> ap.PartitionData:
    """One partition's change, its ISR as the version carries it: with broker epochs
    from v3 (KIP-903)."""
    data = ap.PartitionData(
        partition_index=change.partition_index,
        leader_epoch=change.leader_epoch,
        leader_recovery_state=change.leader_recovery_state,
        partition_epoch=change.partition_epoch,
    )
    if version >= 3:
        data.new_isr_with_epochs = [
            ap.BrokerState(broker_id=m.broker_id, broker_epoch=m.broker_epoch)
            for m in change.new_isr
        ]
    else:
        data.new_isr = [m.broker_id for m in change.new_isr]
    return data

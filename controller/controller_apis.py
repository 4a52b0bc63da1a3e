"""The broker lifecycle APIs a controller listener serves, as Kafka's ``ControllerApis``:
BrokerRegistration (62), BrokerHeartbeat (63), AllocateProducerIds (67) and
AlterPartition (56, from partition leaders), from brokers in other processes (a millpond
broker, or Apache Kafka's), and ControllerRegistration (70), from the other controllers
(Apache Kafka's register themselves).

Each request becomes one controller operation; its answer goes out once the operation's
records are committed. A node that is not the active controller answers NOT_CONTROLLER,
and the broker asks the quorum's leader instead, which it learns from the log it follows.
"""

from __future__ import annotations

from millpond.controller.alter_partition import AlterPartitionRequest, IsrChange, IsrMember
from millpond.controller.channel import LocalControllerChannel
from millpond.controller.cluster_control import (
    BrokerHeartbeatRequest,
    ControllerRegistrationRequest,
)
from millpond.controller.image import BrokerEndpoint
from millpond.controller.results import NotControllerError
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
from millpond.wire.generated.api import controller_registration_request as creg
from millpond.wire.generated.api import controller_registration_response as creg_resp

__all__ = ["CONTROLLER_API_VERSIONS", "handle_controller_request"]

#: What these handlers serve: Kafka 4.4's ranges.
CONTROLLER_API_VERSIONS = {56: (2, 3), 62: (0, 4), 63: (0, 2), 67: (0, 0), 70: (0, 0)}


async def handle_controller_request(
    channel: LocalControllerChannel, request: Message, version: int
) -> Message:
    if isinstance(request, reg.BrokerRegistrationRequest):
        return await _register(channel, request)
    if isinstance(request, hb.BrokerHeartbeatRequest):
        return await _heartbeat(channel, request)
    if isinstance(request, pid.AllocateProducerIdsRequest):
        return await _allocate_producer_ids(channel, request)
    if isinstance(request, creg.ControllerRegistrationRequest):
        return await _register_controller(channel, request)
    if isinstance(request, ap.AlterPartitionRequest):
        return await _alter_partition(channel, request, version)
    raise TypeError(f"not a broker lifecycle request: {type(request).__name__}")


async def _register(
    channel: LocalControllerChannel, request: reg.BrokerRegistrationRequest
) -> reg_resp.BrokerRegistrationResponse:
    endpoints = [
        BrokerEndpoint(e.name, e.host, e.port, e.security_protocol) for e in request.listeners
    ]
    features = [
        (f.name, f.min_supported_version, f.max_supported_version) for f in request.features
    ]
    try:
        result = await channel.submit(
            lambda c: c.register_broker(
                request.broker_id,
                endpoints,
                request.rack,
                incarnation_id=bytes(request.incarnation_id),
                features=features,
                cluster_id=request.cluster_id,
                log_dirs=[bytes(d) for d in request.log_dirs],
                previous_broker_epoch=request.previous_broker_epoch,
            )
        )
    except NotControllerError:
        return reg_resp.BrokerRegistrationResponse(error_code=ErrorCode.NOT_CONTROLLER)
    return reg_resp.BrokerRegistrationResponse(
        error_code=result.error.code, broker_epoch=result.broker_epoch
    )


async def _heartbeat(
    channel: LocalControllerChannel, request: hb.BrokerHeartbeatRequest
) -> hb_resp.BrokerHeartbeatResponse:
    heartbeat = BrokerHeartbeatRequest(
        request.broker_id,
        request.broker_epoch,
        request.current_metadata_offset,
        request.want_fence,
        request.want_shut_down,
    )
    try:
        result = await channel.submit(lambda c: c.broker_heartbeat(heartbeat))
    except NotControllerError:
        return hb_resp.BrokerHeartbeatResponse(error_code=ErrorCode.NOT_CONTROLLER)
    return hb_resp.BrokerHeartbeatResponse(
        error_code=result.error.code,
        is_caught_up=result.is_caught_up,
        is_fenced=result.is_fenced,
        should_shut_down=result.should_shut_down,
    )


async def _allocate_producer_ids(
    channel: LocalControllerChannel, request: pid.AllocateProducerIdsRequest
) -> pid_resp.AllocateProducerIdsResponse:
    try:
        block = await channel.allocate_producer_ids(request.broker_id, request.broker_epoch)
    except NotControllerError:
        return pid_resp.AllocateProducerIdsResponse(error_code=ErrorCode.NOT_CONTROLLER)
    return pid_resp.AllocateProducerIdsResponse(
        error_code=block.error.code,
        producer_id_start=block.producer_id_start,
        producer_id_len=block.producer_id_len,
    )


async def _register_controller(
    channel: LocalControllerChannel, request: creg.ControllerRegistrationRequest
) -> creg_resp.ControllerRegistrationResponse:
    registration = ControllerRegistrationRequest(
        request.controller_id,
        bytes(request.incarnation_id),
        [BrokerEndpoint(e.name, e.host, e.port, e.security_protocol) for e in request.listeners],
        [(f.name, f.min_supported_version, f.max_supported_version) for f in request.features],
    )
    try:
        error = await channel.submit(lambda c: c.register_controller(registration))
    except NotControllerError as exc:
        return creg_resp.ControllerRegistrationResponse(
            error_code=ErrorCode.NOT_CONTROLLER, error_message=str(exc)
        )
    return creg_resp.ControllerRegistrationResponse(
        error_code=error.code, error_message=error.message
    )


async def _alter_partition(
    channel: LocalControllerChannel, request: ap.AlterPartitionRequest, version: int
) -> ap_resp.AlterPartitionResponse:
    def members(p: ap.PartitionData) -> list[IsrMember]:
        if version >= 3:
            return [IsrMember(b.broker_id, b.broker_epoch) for b in p.new_isr_with_epochs]
        return [IsrMember(broker_id) for broker_id in p.new_isr]

    alter = AlterPartitionRequest(
        request.broker_id,
        request.broker_epoch,
        [
            (
                bytes(t.topic_id),
                [
                    IsrChange(
                        p.partition_index,
                        p.leader_epoch,
                        p.partition_epoch,
                        members(p),
                        p.leader_recovery_state,
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
    )
    if not alter.topics:  # Kafka answers an empty request at once, unchecked
        return ap_resp.AlterPartitionResponse()
    try:
        error, topics = await channel.submit(lambda c: c.alter_partition(alter))
    except NotControllerError:
        return ap_resp.AlterPartitionResponse(error_code=ErrorCode.NOT_CONTROLLER)
    return ap_resp.AlterPartitionResponse(
        error_code=error.code,
        topics=[
            ap_resp.TopicData(
                topic_id=topic_id,
                partitions=[
                    ap_resp.PartitionData(
                        partition_index=r.partition_index, error_code=r.error.code
                    )
                    if r.registration is None
                    else ap_resp.PartitionData(
                        partition_index=r.partition_index,
                        leader_id=r.registration.leader,
                        leader_epoch=r.registration.leader_epoch,
                        isr=list(r.registration.isr),
                        leader_recovery_state=r.registration.leader_recovery_state,
                        partition_epoch=r.registration.partition_epoch,
                    )
                    for r in results
                ],
            )
            for topic_id, results in topics
        ],
    )

"""Broker lifecycle and producer id blocks as records.

Registration (Kafka's BrokerRegistration): a broker registers with its id, a fresh
incarnation id per process start, its listeners' endpoints, its rack and the feature
levels it supports. The controller writes a RegisterBrokerRecord whose broker epoch is
the record's own offset in the metadata log (so epochs only grow), fenced: a broker is
unfenced (BrokerRegistrationChangeRecord, fenced = -1) once it has caught up with the
metadata log, which for a combined single node is right after its own registration.

Refusals, as Kafka's: INCONSISTENT_CLUSTER_ID for another cluster's broker;
DUPLICATE_BROKER_REGISTRATION when another incarnation of the id holds it with a session
this controller has heard from within ``broker.session.timeout.ms``, fenced or not (a new
active controller starts with no sessions, as Kafka's with no heartbeat times, so a
restarted node can register again at once); UNSUPPORTED_VERSION when the broker cannot
run a finalized feature level; and STALE_BROKER_EPOCH for requests naming an old epoch
or a broker that has not registered.

Controllers register too (ControllerRegistration, as Kafka's controllers do with the
active one): a RegisterControllerRecord with their listeners and supported features,
refused with UNSUPPORTED_VERSION when they cannot run a finalized feature level.

Producer ids (Kafka's ProducerIdControlManager): AllocateProducerIds hands out blocks;
ProducerIdsRecord stores the first id of the *next* block, so the image alone says what
was handed out and a restart never hands out an id twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from millpond.controller import partition_change
from millpond.controller.feature_control import KRAFT_VERSION
from millpond.controller.image import (
    BrokerEndpoint,
    BrokerRegistration,
    ControllerRegistration,
    MetadataImage,
)
from millpond.controller.image_records import broker_record, controller_record
from millpond.controller.record_serde import ApiMessageAndVersion, with_version
from millpond.controller.results import NO_ERROR, ApiError, ControllerResult
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.metadata.broker_registration_change_record import (
    BrokerRegistrationChangeRecord,
)
from millpond.wire.generated.metadata.producer_ids_record import ProducerIdsRecord
from millpond.wire.generated.metadata.unregister_broker_record import UnregisterBrokerRecord

__all__ = [
    "PRODUCER_ID_BLOCK_SIZE",
    "BrokerHeartbeatRequest",
    "BrokerHeartbeatResult",
    "BrokerRegistrationRequest",
    "BrokerRegistrationResult",
    "ProducerIdsBlock",
    "allocate_producer_ids",
    "broker_heartbeat",
    "check_broker_epoch",
    "register_broker",
    "set_fenced",
    "unregister_broker",
]

#: Kafka's producer id block size.
PRODUCER_ID_BLOCK_SIZE = 1000
_LONG_MAX = 2**63 - 1


class BrokerRegistrationRequest(NamedTuple):
    broker_id: int
    cluster_id: str
    incarnation_id: bytes
    endpoints: Sequence[BrokerEndpoint]
    rack: str | None = None
    #: (feature, min level, max level) the broker supports.
    features: Sequence[tuple[str, int, int]] = ()
    log_dirs: Sequence[bytes] = ()
    #: The broker epoch it last stopped cleanly in; -1 when it did not (a crash).
    previous_broker_epoch: int = -1


class BrokerRegistrationResult(NamedTuple):
    error: ApiError
    broker_epoch: int = -1


class ProducerIdsBlock(NamedTuple):
    error: ApiError
    producer_id_start: int = -1
    producer_id_len: int = 0


def register_broker(
    image: MetadataImage,
    request: BrokerRegistrationRequest,
    *,
    next_offset: int,
    live_session: bool,
    kraft_version: int = 0,
    unclean_default: bool = False,
) -> ControllerResult[BrokerRegistrationResult]:
    """Register (or re-register) a broker; ``next_offset`` is where the record will land
    (it becomes the broker epoch); ``live_session``: the registered broker of that id was
    heard from within its session timeout. A broker that comes back without having
    stopped cleanly in its registered epoch (it crashed, perhaps losing what it had not
    flushed) first leaves every ISR and its leaderships, as if fenced (Kafka's
    ``handleBrokerUncleanShutdown``): it leads again only after catching up."""
    if request.cluster_id != image.cluster_id:
        return _refuse(
            ErrorCode.INCONSISTENT_CLUSTER_ID,
            f"Expected cluster ID {image.cluster_id}, but got cluster ID {request.cluster_id}",
        )
    existing = image.brokers.get(request.broker_id)
    if existing is not None and live_session and existing.incarnation_id != request.incarnation_id:
        return _refuse(
            ErrorCode.DUPLICATE_BROKER_REGISTRATION,
            "Another broker is registered with that broker id.",
        )
    unsupported = _unsupported_feature(image, request.features, "broker", kraft_version)
    if unsupported is not None:
        return _refuse(ErrorCode.UNSUPPORTED_VERSION, unsupported)
    record = broker_record(
        BrokerRegistration(
            broker_id=request.broker_id,
            broker_epoch=next_offset,
            incarnation_id=request.incarnation_id,
            endpoints=tuple(request.endpoints),
            rack=request.rack,
            fenced=True,
            supported_features=tuple(request.features),
            log_dirs=tuple(request.log_dirs),
        )
    )
    crashed = existing is not None and request.previous_broker_epoch != existing.broker_epoch
    moved = _without(image, request.broker_id, unclean_default) if crashed else []
    return ControllerResult(
        (*moved, with_version(record)),
        BrokerRegistrationResult(NO_ERROR, next_offset),
    )


def _unsupported_feature(
    image: MetadataImage, features: Sequence[tuple[str, int, int]], who: str, kraft_version: int
) -> str | None:
    """Why a node supporting ``features`` cannot join: a finalized level out of its range
    (kraft.version is the quorum's, not a FeatureLevelRecord's)."""
    supported = {name: (low, high) for name, low, high in features}
    finalized = dict(image.features)
    if kraft_version > 0:
        finalized[KRAFT_VERSION] = kraft_version
    for name, level in finalized.items():
        low, high = supported.get(name, (0, 0))
        if not low <= level <= high:
            return (
                f"Unable to register because the {who} does not support finalized version "
                f"{level} of {name}. The {who} wants a version between {low} and {high}, "
                "inclusive."
            )
    return None


class ControllerRegistrationRequest(NamedTuple):
    controller_id: int
    incarnation_id: bytes
    endpoints: Sequence[BrokerEndpoint]
    features: Sequence[tuple[str, int, int]] = ()


def register_controller(
    image: MetadataImage, request: ControllerRegistrationRequest, kraft_version: int = 0
) -> ControllerResult[ApiError]:
    """ControllerRegistration, as Kafka's controller answers it: a controller that
    supports every finalized feature level is recorded with its listeners (what
    DescribeCluster on a controller listener and the features tool read)."""
    unsupported = _unsupported_feature(image, request.features, "controller", kraft_version)
    if unsupported is not None:
        return ControllerResult((), ApiError(ErrorCode.UNSUPPORTED_VERSION, unsupported))
    record = controller_record(
        ControllerRegistration(
            controller_id=request.controller_id,
            incarnation_id=request.incarnation_id,
            endpoints=tuple(request.endpoints),
            supported_features=tuple(request.features),
        )
    )
    return ControllerResult((with_version(record),), NO_ERROR)


def _refuse(code: ErrorCode, message: str) -> ControllerResult[BrokerRegistrationResult]:
    return ControllerResult((), BrokerRegistrationResult(ApiError(code, message)))


def check_broker_epoch(image: MetadataImage, broker_id: int, broker_epoch: int) -> ApiError:
    broker = image.brokers.get(broker_id)
    if broker is None:  # Kafka answers a heartbeat before registration so
        return ApiError(
            ErrorCode.STALE_BROKER_EPOCH,
            f"broker {broker_id} is not registered: it registers before it heartbeats",
        )
    if broker.broker_epoch != broker_epoch:
        return ApiError(
            ErrorCode.STALE_BROKER_EPOCH,
            f"Expected broker epoch {broker.broker_epoch}, but got broker epoch {broker_epoch}",
        )
    return NO_ERROR


def set_fenced(
    image: MetadataImage,
    broker_id: int,
    broker_epoch: int,
    *,
    fenced: bool,
    unclean_default: bool = False,
) -> ControllerResult[ApiError]:
    """Fence or unfence a broker (no record when it already is). Fencing takes the
    broker out of every ISR and moves its leaderships (Kafka's ``handleBrokerFenced``);
    unfencing gives partitions without a leader one again (``handleBrokerUnfenced``).
    ``unclean_default`` is the controller's static ``unclean.leader.election.enable``."""
    error = check_broker_epoch(image, broker_id, broker_epoch)
    if error.is_failure:
        return ControllerResult((), error)
    if image.brokers[broker_id].fenced == fenced:
        return ControllerResult((), NO_ERROR)
    record = with_version(
        BrokerRegistrationChangeRecord(
            broker_id=broker_id, broker_epoch=broker_epoch, fenced=1 if fenced else -1
        )
    )
    if fenced:
        moved = _without(image, broker_id, unclean_default)
        return ControllerResult((*moved, record), NO_ERROR)
    elected = partition_change.leader_and_isr_updates(
        image,
        partition_change.partitions_without_leader(image),
        add=broker_id,
        unclean_default=unclean_default,
    )
    return ControllerResult((record, *elected), NO_ERROR)


def _without(
    image: MetadataImage, broker_id: int, unclean_default: bool
) -> list[ApiMessageAndVersion]:
    """The broker out of every ISR, its leaderships moved."""
    return partition_change.leader_and_isr_updates(
        image,
        partition_change.partitions_with_replica_in_isr(image, broker_id),
        remove=broker_id,
        unclean_default=unclean_default,
    )


class BrokerHeartbeatRequest(NamedTuple):
    broker_id: int
    broker_epoch: int
    #: The offset of the metadata the broker has applied.
    current_metadata_offset: int
    want_fence: bool
    want_shut_down: bool


class BrokerHeartbeatResult(NamedTuple):
    error: ApiError
    is_caught_up: bool = False
    is_fenced: bool = True
    should_shut_down: bool = False
    #: The broker entered controlled shutdown with this heartbeat.
    entered_controlled_shutdown: bool = False


class ShutdownProgress(NamedTuple):
    """What the active controller knows (in memory, as Kafka's BrokerHeartbeatManager)
    of a broker in controlled shutdown and of the others."""

    #: The offset by which the broker's shutdown records are written (None: not known,
    #: e.g. it entered controlled shutdown under another controller).
    shutdown_offset: int | None = None
    #: The lowest metadata offset the usable brokers have reported applying.
    lowest_active_offset: int = 2**63 - 1


_NO_SHUTDOWN = ShutdownProgress()


def broker_heartbeat(
    image: MetadataImage,
    request: BrokerHeartbeatRequest,
    progress: ShutdownProgress = _NO_SHUTDOWN,
    *,
    unclean_default: bool = False,
) -> ControllerResult[BrokerHeartbeatResult]:
    """BrokerHeartbeat, as Kafka's controller answers it (its BrokerHeartbeatManager's
    states FENCED, UNFENCED, CONTROLLED_SHUTDOWN and SHUTDOWN_NOW).

    A broker is caught up once it has applied the metadata up to its own registration
    (its broker epoch is that record's offset); a caught-up fenced broker that does not
    want to be fenced is unfenced. An unfenced broker that wants to shut down and still
    leads partitions enters controlled shutdown: it leaves every ISR and its leaderships
    move; it is told to shut down (and fenced) once it leads nothing and every usable
    broker has applied those changes. One that leads nothing, or is fenced, or wants to
    be fenced as well, shuts down at once."""
    error = check_broker_epoch(image, request.broker_id, request.broker_epoch)
    if error.is_failure:
        return ControllerResult((), BrokerHeartbeatResult(error))
    broker = image.brokers[request.broker_id]
    caught_up = request.current_metadata_offset >= broker.broker_epoch
    state = _next_state(image, request, progress, caught_up=caught_up)
    if state == _CONTROLLED_SHUTDOWN:
        records = (
            []
            if broker.in_controlled_shutdown
            else _enter_controlled_shutdown(image, request, unclean_default)
        )
    else:
        change = set_fenced(
            image,
            request.broker_id,
            request.broker_epoch,
            fenced=state != _UNFENCED,
            unclean_default=unclean_default,
        )
        records = list(change.records)
    return ControllerResult(
        tuple(records),
        BrokerHeartbeatResult(
            NO_ERROR,
            is_caught_up=caught_up,
            is_fenced=state in (_FENCED, _SHUTDOWN_NOW),
            should_shut_down=state == _SHUTDOWN_NOW,
            entered_controlled_shutdown=(
                state == _CONTROLLED_SHUTDOWN and not broker.in_controlled_shutdown
            ),
        ),
    )


_FENCED, _UNFENCED, _CONTROLLED_SHUTDOWN, _SHUTDOWN_NOW = range(4)


def _next_state(
    image: MetadataImage,
    request: BrokerHeartbeatRequest,
    progress: ShutdownProgress,
    *,
    caught_up: bool,
) -> int:
    broker = image.brokers[request.broker_id]
    if broker.fenced:
        if request.want_shut_down:
            return _SHUTDOWN_NOW
        return _UNFENCED if not request.want_fence and caught_up else _FENCED
    leads = bool(partition_change.partitions_led_by(image, request.broker_id))
    if broker.in_controlled_shutdown:
        if leads:
            return _CONTROLLED_SHUTDOWN
        applied = progress.shutdown_offset is not None and (
            progress.shutdown_offset <= progress.lowest_active_offset
        )
        return _SHUTDOWN_NOW if applied else _CONTROLLED_SHUTDOWN
    if request.want_fence:
        return _SHUTDOWN_NOW if request.want_shut_down else _FENCED
    if request.want_shut_down:
        return _CONTROLLED_SHUTDOWN if leads else _SHUTDOWN_NOW
    return _UNFENCED


def _enter_controlled_shutdown(
    image: MetadataImage, request: BrokerHeartbeatRequest, unclean_default: bool
) -> list[ApiMessageAndVersion]:
    """Kafka's ``handleBrokerInControlledShutdown``: the broker marked as shutting down
    (so it is no longer usable), out of every ISR, its leaderships moved."""
    record = BrokerRegistrationChangeRecord(
        broker_id=request.broker_id,
        broker_epoch=request.broker_epoch,
        in_controlled_shutdown=1,
    )
    return [with_version(record), *_without(image, request.broker_id, unclean_default)]


def unregister_broker(
    image: MetadataImage, broker_id: int, *, unclean_default: bool = False
) -> ControllerResult[ApiError]:
    """UnregisterBroker: the broker out of every ISR, its leaderships moved, and its
    registration dropped (BROKER_ID_NOT_REGISTERED if none)."""
    broker = image.brokers.get(broker_id)
    if broker is None:
        return ControllerResult(
            (),
            ApiError(
                ErrorCode.BROKER_ID_NOT_REGISTERED,
                f"Broker ID {broker_id} is not currently registered",
            ),
        )
    record = UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=broker.broker_epoch)
    moved = _without(image, broker_id, unclean_default)
    return ControllerResult((*moved, with_version(record)), NO_ERROR)


def allocate_producer_ids(
    image: MetadataImage,
    broker_id: int,
    broker_epoch: int,
    count: int = PRODUCER_ID_BLOCK_SIZE,
) -> ControllerResult[ProducerIdsBlock]:
    """AllocateProducerIds: the next block of ``count`` ids for ``broker_id``."""
    assert count > 0
    error = check_broker_epoch(image, broker_id, broker_epoch)
    if error.is_failure:
        return ControllerResult((), ProducerIdsBlock(error))
    first = image.next_producer_id
    if first > _LONG_MAX - count:
        return ControllerResult(
            (),
            ProducerIdsBlock(
                ApiError(
                    ErrorCode.UNKNOWN_SERVER_ERROR,
                    "Exhausted all producerIds as the next block's end producerId has "
                    "exceeded the int64 type limit",
                )
            ),
        )
    record = ProducerIdsRecord(
        broker_id=broker_id, broker_epoch=broker_epoch, next_producer_id=first + count
    )
    return ControllerResult((with_version(record),), ProducerIdsBlock(NO_ERROR, first, count))

"""A metadata image written out as records: what a snapshot holds.

Replaying :func:`image_records` over an empty image gives the image back (the snapshot
tests hold it to that), in the order Kafka's ``MetadataImage.write`` uses: features
(``metadata.version`` first), brokers and controllers, topics with their partitions,
configs, then the producer id block. Each record is written at the version this
controller writes it at in the log, so Kafka's tools and controllers read the snapshot.

What the image does not keep (the record types replay skips) is not in a snapshot: a
snapshot taken by millpond holds the metadata millpond acts on.

Pure; safe from any thread (images are never mutated).
"""

from __future__ import annotations

from collections.abc import Iterator

from millpond.controller.feature_control import METADATA_VERSION
from millpond.controller.image import (
    BrokerRegistration,
    ControllerRegistration,
    MetadataImage,
    PartitionRegistration,
)
from millpond.controller.record_serde import ApiMessageAndVersion, with_version
from millpond.wire.generated.metadata.config_record import ConfigRecord
from millpond.wire.generated.metadata.feature_level_record import FeatureLevelRecord
from millpond.wire.generated.metadata.partition_record import PartitionRecord
from millpond.wire.generated.metadata.producer_ids_record import ProducerIdsRecord
from millpond.wire.generated.metadata.register_broker_record import (
    BrokerEndpoint as BrokerEndpointRecord,
)
from millpond.wire.generated.metadata.register_broker_record import (
    BrokerFeature,
    RegisterBrokerRecord,
)
from millpond.wire.generated.metadata.register_controller_record import (
    ControllerEndpoint,
    ControllerFeature,
    RegisterControllerRecord,
)
from millpond.wire.generated.metadata.topic_record import TopicRecord

__all__ = ["broker_record", "controller_record", "image_records", "partition_record"]


def image_records(image: MetadataImage) -> Iterator[ApiMessageAndVersion]:
    """Every record that rebuilds ``image`` from nothing, in Kafka's snapshot order."""
    features = sorted(image.features.items(), key=lambda f: (f[0] != METADATA_VERSION, f[0]))
    for name, level in features:
        yield with_version(FeatureLevelRecord(name=name, feature_level=level))
    for broker_id in sorted(image.brokers):
        yield with_version(broker_record(image.brokers[broker_id]))
    for controller_id in sorted(image.controllers):
        yield with_version(controller_record(image.controllers[controller_id]))
    for topic in sorted(image.topics_by_id.values(), key=lambda t: t.name):
        yield with_version(TopicRecord(name=topic.name, topic_id=topic.topic_id))
        for index in sorted(topic.partitions):
            yield with_version(partition_record(topic.topic_id, index, topic.partitions[index]))
    for resource in sorted(image.configs):
        for name, value in sorted(image.configs[resource].items()):
            yield with_version(
                ConfigRecord(
                    resource_type=resource.type,
                    resource_name=resource.name,
                    name=name,
                    value=value,
                )
            )
    if image.next_producer_id > 0:
        block = ProducerIdsRecord(
            broker_id=-1, broker_epoch=-1, next_producer_id=image.next_producer_id
        )
        yield with_version(block)


def partition_record(topic_id: bytes, index: int, p: PartitionRegistration) -> PartitionRecord:
    """The PartitionRecord that registers partition ``index`` as ``p``."""
    return PartitionRecord(
        partition_id=index,
        topic_id=topic_id,
        replicas=list(p.replicas),
        isr=list(p.isr),
        removing_replicas=list(p.removing_replicas),
        adding_replicas=list(p.adding_replicas),
        leader=p.leader,
        leader_recovery_state=p.leader_recovery_state,
        leader_epoch=p.leader_epoch,
        partition_epoch=p.partition_epoch,
    )


def broker_record(b: BrokerRegistration) -> RegisterBrokerRecord:
    """The RegisterBrokerRecord that registers ``b``."""
    return RegisterBrokerRecord(
        broker_id=b.broker_id,
        incarnation_id=b.incarnation_id,
        broker_epoch=b.broker_epoch,
        end_points=[
            BrokerEndpointRecord(
                name=e.name, host=e.host, port=e.port, security_protocol=e.security_protocol
            )
            for e in b.endpoints
        ],
        features=[
            BrokerFeature(name=name, min_supported_version=low, max_supported_version=high)
            for name, low, high in b.supported_features
        ],
        rack=b.rack,
        fenced=b.fenced,
        in_controlled_shutdown=b.in_controlled_shutdown,
        log_dirs=list(b.log_dirs),
    )


def controller_record(c: ControllerRegistration) -> RegisterControllerRecord:
    """The RegisterControllerRecord that registers ``c``."""
    return RegisterControllerRecord(
        controller_id=c.controller_id,
        incarnation_id=c.incarnation_id,
        zk_migration_ready=False,
        end_points=[
            ControllerEndpoint(
                name=e.name, host=e.host, port=e.port, security_protocol=e.security_protocol
            )
            for e in c.endpoints
        ],
        features=[
            ControllerFeature(name=name, min_supported_version=low, max_supported_version=high)
            for name, low, high in c.supported_features
        ],
    )

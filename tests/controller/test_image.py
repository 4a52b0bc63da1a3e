"""Replaying each record type into the immutable image."""

from __future__ import annotations

import logging

import pytest

from millpond.controller.image import (
    BrokerEndpoint,
    ConfigResource,
    ConfigResourceType,
    MetadataDelta,
    MetadataImage,
    PartitionRegistration,
    apply,
)
from millpond.wire.generated.metadata.access_control_entry_record import (
    AccessControlEntryRecord,
)
from millpond.wire.generated.metadata.broker_registration_change_record import (
    BrokerRegistrationChangeRecord,
)
from millpond.wire.generated.metadata.config_record import ConfigRecord
from millpond.wire.generated.metadata.feature_level_record import FeatureLevelRecord
from millpond.wire.generated.metadata.fence_broker_record import FenceBrokerRecord
from millpond.wire.generated.metadata.no_op_record import NoOpRecord
from millpond.wire.generated.metadata.partition_change_record import PartitionChangeRecord
from millpond.wire.generated.metadata.partition_record import PartitionRecord
from millpond.wire.generated.metadata.producer_ids_record import ProducerIdsRecord
from millpond.wire.generated.metadata.register_broker_record import (
    BrokerEndpoint as EndpointRecord,
)
from millpond.wire.generated.metadata.register_broker_record import RegisterBrokerRecord
from millpond.wire.generated.metadata.remove_topic_record import RemoveTopicRecord
from millpond.wire.generated.metadata.topic_record import TopicRecord
from millpond.wire.generated.metadata.unfence_broker_record import UnfenceBrokerRecord
from millpond.wire.generated.metadata.unregister_broker_record import UnregisterBrokerRecord

TID = bytes(range(16))
OTHER = bytes(range(1, 17))
EMPTY = MetadataImage.empty("cluster")


def with_topic() -> MetadataImage:
    delta = MetadataDelta(EMPTY)
    delta.replay(TopicRecord(name="t", topic_id=TID), 0, 1)
    for p in range(2):
        delta.replay(
            PartitionRecord(
                partition_id=p, topic_id=TID, replicas=[1, 2], isr=[1, 2], leader=1,
                leader_epoch=0, partition_epoch=0,
            ),
            1 + p,
            1,
        )  # fmt: skip
    delta.replay(ConfigRecord(resource_type=2, resource_name="t", name="a", value="1"), 3, 1)
    return delta.apply()


def with_broker(fenced: bool = True) -> MetadataImage:
    record = RegisterBrokerRecord(
        broker_id=1,
        incarnation_id=TID,
        broker_epoch=10,
        end_points=[EndpointRecord(name="PLAINTEXT", host="h", port=9092, security_protocol=0)],
        rack="r1",
        fenced=fenced,
    )
    return apply(EMPTY, record, 10, 1)


def test_topic_and_partition_records() -> None:
    image = with_topic()
    topic = image.topic("t")
    assert topic is not None and image.topic_by_id(TID) is topic
    assert topic.partitions[1] == PartitionRegistration((1, 2), (1, 2), 1, 0, 0)
    assert (image.offset, image.epoch) == (3, 1)
    assert image.topic_config("t") == {"a": "1"}
    assert EMPTY.topics_by_id == {}  # the base is never touched


def test_partition_change_merges_and_bumps_epochs() -> None:
    image = apply(with_topic(), PartitionChangeRecord(partition_id=0, topic_id=TID, isr=[1]), 4)
    p = image.topics_by_id[TID].partitions[0]
    assert (p.isr, p.leader, p.leader_epoch, p.partition_epoch) == ((1,), 1, 0, 1)
    image = apply(image, PartitionChangeRecord(partition_id=0, topic_id=TID, leader=2), 5)
    p = image.topics_by_id[TID].partitions[0]
    assert (p.isr, p.leader, p.leader_epoch, p.partition_epoch) == ((1,), 2, 1, 2)
    image = apply(
        image, PartitionChangeRecord(partition_id=0, topic_id=TID, replicas=[2], isr=[2]), 6
    )
    p = image.topics_by_id[TID].partitions[0]
    assert (p.replicas, p.leader_epoch, p.partition_epoch) == ((2,), 1, 3)
    assert image.topics_by_id[TID].partitions[1].partition_epoch == 0


def test_remove_topic_drops_partitions_and_configs() -> None:
    image = apply(with_topic(), RemoveTopicRecord(topic_id=TID), 4)
    assert image.topic("t") is None and image.topics_by_id == {}
    assert image.topic_config("t") == {}


def test_config_record_sets_and_null_deletes() -> None:
    broker = ConfigResource(ConfigResourceType.BROKER, "")
    image = apply(EMPTY, ConfigRecord(resource_type=4, resource_name="", name="x", value="1"))
    assert image.config(broker) == {"x": "1"}
    image = apply(image, ConfigRecord(resource_type=4, resource_name="", name="x", value="2"))
    assert image.config(broker) == {"x": "2"}
    image = apply(image, ConfigRecord(resource_type=4, resource_name="", name="x", value=None))
    assert image.config(broker) == {} and broker not in image.configs


def test_feature_level_set_and_removed_at_zero() -> None:
    image = apply(EMPTY, FeatureLevelRecord(name="metadata.version", feature_level=27))
    image = apply(image, FeatureLevelRecord(name="group.version", feature_level=1))
    assert image.features == {"metadata.version": 27, "group.version": 1}
    image = apply(image, FeatureLevelRecord(name="group.version", feature_level=0))
    assert image.features == {"metadata.version": 27}


def test_register_broker() -> None:
    broker = with_broker().brokers[1]
    assert broker.endpoints == (BrokerEndpoint("PLAINTEXT", "h", 9092, 0),)
    assert (broker.broker_epoch, broker.rack, broker.fenced) == (10, "r1", True)
    assert with_broker().usable_brokers() == []
    assert with_broker(fenced=False).usable_brokers() == [1]


def test_fence_unfence_and_registration_change() -> None:
    image = apply(with_broker(), UnfenceBrokerRecord(id=1, epoch=10))
    assert not image.brokers[1].fenced
    image = apply(image, FenceBrokerRecord(id=1, epoch=10))
    assert image.brokers[1].fenced
    image = apply(image, BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=10, fenced=-1))
    assert not image.brokers[1].fenced
    image = apply(
        image,
        BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=10, in_controlled_shutdown=1),
    )
    assert image.brokers[1].in_controlled_shutdown and image.usable_brokers() == []
    image = apply(image, BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=10, fenced=1))
    assert image.brokers[1].fenced


def test_unregister_broker_needs_the_epoch() -> None:
    delta = MetadataDelta(with_broker())
    delta.replay(UnregisterBrokerRecord(broker_id=1, broker_epoch=9))
    assert 1 in delta.apply().brokers and delta.skipped == 1
    assert apply(with_broker(), UnregisterBrokerRecord(broker_id=1, broker_epoch=10)).brokers == {}


def test_producer_ids_and_no_op() -> None:
    image = apply(EMPTY, ProducerIdsRecord(broker_id=1, broker_epoch=3, next_producer_id=1000), 5)
    assert (image.next_producer_id, image.offset) == (1000, 5)
    image2 = apply(image, NoOpRecord(), 6)
    assert image2.offset == 6 and image2.next_producer_id == 1000


def test_irrelevant_and_dangling_records_are_skipped_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    delta = MetadataDelta(EMPTY)
    with caplog.at_level(logging.WARNING):
        delta.replay(AccessControlEntryRecord(), 0)
        delta.replay(PartitionRecord(partition_id=0, topic_id=OTHER, replicas=[1]), 1)
        delta.replay(PartitionChangeRecord(partition_id=0, topic_id=OTHER), 2)
        delta.replay(RemoveTopicRecord(topic_id=OTHER), 3)
        delta.replay(FenceBrokerRecord(id=4, epoch=1), 4)
    assert delta.skipped == 5
    assert "AccessControlEntryRecord" in caplog.text
    assert delta.apply() == MetadataImage("cluster", offset=4, epoch=-1)


def test_images_compare_by_value() -> None:
    assert with_topic() == with_topic()
    assert with_topic() != EMPTY


def test_a_delta_notes_the_topics_and_configs_it_touched() -> None:
    base = with_topic()
    delta = MetadataDelta(base)
    delta.replay(TopicRecord(name="u", topic_id=OTHER), 4)
    delta.replay(PartitionChangeRecord(partition_id=1, topic_id=TID, isr=[1]), 5)
    delta.replay(ConfigRecord(resource_type=4, resource_name="", name="x", value="1"), 6)
    assert delta.changed_topics == {TID, OTHER}
    assert delta.changed_configs == {ConfigResource(ConfigResourceType.BROKER, "")}
    removal = MetadataDelta(base)
    removal.replay(RemoveTopicRecord(topic_id=TID), 4)
    assert removal.changed_topics == {TID}
    assert removal.changed_configs == {ConfigResource(ConfigResourceType.TOPIC, "t")}
    brokers_only = MetadataDelta(base)
    brokers_only.replay(NoOpRecord(), 4)
    assert brokers_only.changed_topics == set() and brokers_only.changed_configs == set()

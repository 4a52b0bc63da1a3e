"""Metadata record framing: known bytes built from Kafka's format, round trips, refusals."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from millpond.controller.record_serde import (
    ApiMessageAndVersion,
    MetadataParseError,
    UnknownMetadataRecordError,
    decode_metadata_record,
    encode_metadata_record,
    record_class,
    with_version,
)
from millpond.wire.exceptions import EncodeError
from millpond.wire.generated.data.leader_change_message import LeaderChangeMessage
from millpond.wire.generated.metadata.broker_registration_change_record import (
    BrokerRegistrationChangeRecord,
)
from millpond.wire.generated.metadata.config_record import ConfigRecord
from millpond.wire.generated.metadata.feature_level_record import FeatureLevelRecord
from millpond.wire.generated.metadata.no_op_record import NoOpRecord
from millpond.wire.generated.metadata.partition_change_record import PartitionChangeRecord
from millpond.wire.generated.metadata.partition_record import PartitionRecord
from millpond.wire.generated.metadata.producer_ids_record import ProducerIdsRecord
from millpond.wire.generated.metadata.register_broker_record import (
    BrokerEndpoint,
    RegisterBrokerRecord,
)
from millpond.wire.generated.metadata.remove_topic_record import RemoveTopicRecord
from millpond.wire.generated.metadata.topic_record import TopicRecord
from millpond.wire.message import Message

TOPIC_ID = bytes(range(16))


def test_topic_record_known_bytes() -> None:
    # frame version 1, api key 2, version 0 (unsigned varints), then TopicRecord v0:
    # compact string (length + 1), uuid, empty tagged fields.
    expected = b"\x01\x02\x00" + b"\x04foo" + TOPIC_ID + b"\x00"
    record = with_version(TopicRecord(name="foo", topic_id=TOPIC_ID))
    assert encode_metadata_record(record) == expected
    decoded = decode_metadata_record(expected)
    assert decoded == ApiMessageAndVersion(TopicRecord(name="foo", topic_id=TOPIC_ID), 0)


def test_feature_level_record_known_bytes() -> None:
    expected = b"\x01\x0c\x00" + b"\x11metadata.version" + b"\x00\x1b" + b"\x00"
    record = with_version(FeatureLevelRecord(name="metadata.version", feature_level=27))
    assert encode_metadata_record(record) == expected


def test_config_record_with_null_value_known_bytes() -> None:
    expected = b"\x01\x04\x00" + b"\x02" + b"\x02t" + b"\x0dretention.ms" + b"\x00" + b"\x00"
    record = with_version(
        ConfigRecord(resource_type=2, resource_name="t", name="retention.ms", value=None)
    )
    assert encode_metadata_record(record) == expected
    decoded = decode_metadata_record(expected).message
    assert isinstance(decoded, ConfigRecord) and decoded.value is None


def test_remove_topic_and_no_op_known_bytes() -> None:
    remove = with_version(RemoveTopicRecord(topic_id=TOPIC_ID))
    assert encode_metadata_record(remove) == b"\x01\x09\x00" + TOPIC_ID + b"\x00"
    assert encode_metadata_record(with_version(NoOpRecord())) == b"\x01\x14\x00\x00"


def test_register_broker_is_written_at_version_3() -> None:
    record = RegisterBrokerRecord(
        broker_id=1,
        incarnation_id=TOPIC_ID,
        broker_epoch=5,
        end_points=[BrokerEndpoint(name="PLAINTEXT", host="h", port=9092, security_protocol=0)],
        rack=None,
    )
    framed = encode_metadata_record(with_version(record))
    assert framed[:3] == b"\x01\x00\x03"
    assert decode_metadata_record(framed) == ApiMessageAndVersion(record, 3)


SAMPLES: list[Message] = [
    TopicRecord(name="t", topic_id=TOPIC_ID),
    PartitionRecord(
        partition_id=3,
        topic_id=TOPIC_ID,
        replicas=[1, 2],
        isr=[1],
        leader=1,
        leader_epoch=4,
        partition_epoch=9,
    ),  # fmt: skip
    PartitionChangeRecord(partition_id=0, topic_id=TOPIC_ID, isr=[1], leader=2),
    RemoveTopicRecord(topic_id=TOPIC_ID),
    ConfigRecord(resource_type=4, resource_name="", name="log.retention.ms", value="1"),
    FeatureLevelRecord(name="metadata.version", feature_level=27),
    BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=7, fenced=-1),
    ProducerIdsRecord(broker_id=1, broker_epoch=7, next_producer_id=2000),
    NoOpRecord(),
]


@pytest.mark.parametrize("message", SAMPLES, ids=lambda m: m.NAME)
def test_round_trip(message: Message) -> None:
    record = with_version(message)
    assert decode_metadata_record(encode_metadata_record(record)) == record


@given(name=st.text(min_size=0, max_size=300), topic_id=st.binary(min_size=16, max_size=16))
def test_topic_record_round_trip_property(name: str, topic_id: bytes) -> None:
    record = with_version(TopicRecord(name=name, topic_id=topic_id))
    assert decode_metadata_record(encode_metadata_record(record)) == record


def test_registry_covers_every_metadata_record_type() -> None:
    assert record_class(2) is TopicRecord
    assert record_class(3) is PartitionRecord
    assert record_class(9999) is None


def test_frame_version_zero_and_unknown_frame_are_refused() -> None:
    with pytest.raises(MetadataParseError, match="frame version 0"):
        decode_metadata_record(b"\x00\x02\x00")
    with pytest.raises(MetadataParseError, match="frame version 2"):
        decode_metadata_record(b"\x02\x02\x00")


def test_unknown_type_and_version_are_reported_as_unknown() -> None:
    # api key 200 takes two varint bytes.
    with pytest.raises(UnknownMetadataRecordError) as info:
        decode_metadata_record(b"\x01\xc8\x01\x00\x00")
    assert info.value.api_key == 200
    with pytest.raises(UnknownMetadataRecordError) as info:
        decode_metadata_record(b"\x01\x02\x05" + b"\x04foo" + TOPIC_ID + b"\x00")
    assert (info.value.api_key, info.value.version) == (2, 5)


def test_malformed_values_are_refused() -> None:
    good = b"\x01\x02\x00" + b"\x04foo" + TOPIC_ID + b"\x00"
    with pytest.raises(MetadataParseError, match="garbage"):
        decode_metadata_record(good + b"\x00")
    with pytest.raises(MetadataParseError, match="malformed TopicRecord"):
        decode_metadata_record(good[:-5])
    with pytest.raises(MetadataParseError, match="null value"):
        decode_metadata_record(None)
    with pytest.raises(MetadataParseError):
        decode_metadata_record(b"\x01")
    with pytest.raises(MetadataParseError, match="int16"):
        decode_metadata_record(b"\x01\xff\xff\x03\x00")


def test_only_metadata_records_are_framed() -> None:
    with pytest.raises(EncodeError):
        encode_metadata_record(ApiMessageAndVersion(LeaderChangeMessage(), 0))

"""Replication throttles: which partitions a throttled-replicas config names on a
broker, the rate over Kafka's sample windows, and the two sides read from the image."""

from __future__ import annotations

from millpond.broker.replication.throttle import (
    ALL_PARTITIONS,
    FOLLOWER,
    LEADER,
    Rate,
    ReplicationThrottles,
    throttled_partitions,
)
from millpond.controller.image import ConfigResourceType as T
from millpond.controller.image import MetadataImage, apply
from millpond.wire.generated.metadata.config_record import ConfigRecord


def test_a_throttled_replicas_list_names_partitions_per_broker() -> None:
    assert throttled_partitions("0:2,1:3, 2:2", 2) == {0, 2}
    assert throttled_partitions("0:2", 3) == frozenset()
    assert throttled_partitions(" * ", 7) is ALL_PARTITIONS
    assert throttled_partitions("", 2) == frozenset()


def test_the_rate_spans_at_least_the_windows_before_the_current_one() -> None:
    rate = Rate(window_ms=1000, samples=11)
    rate.record(1000, now_ms=0)
    assert rate.per_second(0) == 100.0  # 1000 bytes over 10 s
    rate.record(1000, now_ms=500)  # the same window
    assert rate.per_second(15_000) == 0.0  # every window expired
    rate.record(300, now_ms=20_000)
    rate.record(300, now_ms=30_500)
    assert rate.per_second(30_500) == 600 * 1000 / 10_500  # more than 10 s apart
    assert rate.per_second(31_000) == 300 * 1000 / 10_000  # the older window expired


def test_throttles_follow_the_image_and_hold_only_what_they_name() -> None:
    image = MetadataImage.empty("c")
    now = [0]
    throttles = ReplicationThrottles(2, lambda: image, lambda: now[0])
    assert not throttles.throttled(LEADER, "t", 0)  # no rate set: nothing throttled
    for resource_type, name, key, value in [
        (T.TOPIC, "t", "leader.replication.throttled.replicas", "0:2,1:3"),
        (T.TOPIC, "t", "follower.replication.throttled.replicas", "*"),
        (T.BROKER, "", "leader.replication.throttled.rate", "100"),
        (T.BROKER, "2", "follower.replication.throttled.rate", "10"),
    ]:
        record = ConfigRecord(
            resource_type=resource_type, resource_name=name, name=key, value=value
        )
        image = apply(image, record)
    assert throttles.throttled(LEADER, "t", 0) and not throttles.throttled(LEADER, "t", 1)
    assert throttles.throttled(FOLLOWER, "t", 5) and not throttles.throttled(FOLLOWER, "u", 0)
    throttles.record(LEADER, 999)
    assert not throttles.exceeded(LEADER)  # 99.9 B/s
    throttles.record(LEADER, 2)
    assert throttles.exceeded(LEADER) and not throttles.exceeded(FOLLOWER)
    now[0] = 12_000
    assert not throttles.exceeded(LEADER)  # the windows moved on

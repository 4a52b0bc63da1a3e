"""Configs, features, broker registration and producer id blocks through the controller."""

from __future__ import annotations

import pytest

from millpond.controller.cluster_control import (
    BrokerHeartbeatRequest,
    BrokerHeartbeatResult,
    ControllerRegistrationRequest,
)
from millpond.controller.config_control import AlterableConfig, AlterConfigsResource
from millpond.controller.feature_control import FeatureUpdate, FeatureUpgradeType
from millpond.controller.image import BrokerEndpoint, ConfigResource, ConfigResourceType
from millpond.controller.replication_control import CreatableTopic
from millpond.storage.clock import ManualClock
from millpond.wire.errors import ErrorCode

from .helpers import CLUSTER_ID, ENDPOINT, NODE_ID, mem_fs, open_controller, running_node

TOPIC = ConfigResourceType.TOPIC
BROKER = ConfigResourceType.BROKER
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3


def alter(
    ops: list[AlterableConfig], type_: int = TOPIC, name: str = "t", validate_only: bool = False
) -> tuple[ErrorCode, str | None, dict[str, str], int]:
    controller = running_node()
    controller.create_topics([CreatableTopic("t", 1, configs={"retention.ms": "100"})])
    result = controller.incremental_alter_configs(
        [AlterConfigsResource(type_, name, ops)], validate_only=validate_only
    )
    [error] = result.response.values()
    config = dict(controller.image.config(ConfigResource(type_, name)))
    return error.code, error.message, config, len(result.records)


def test_incremental_set_delete_append_subtract() -> None:
    code, _, config, n = alter(
        [
            AlterableConfig("retention.ms", SET, "200"),
            AlterableConfig("segment.ms", SET, "1000"),
            AlterableConfig("cleanup.policy", APPEND, "compact"),
        ]
    )
    assert code == ErrorCode.NONE and n == 3
    # APPEND starts from the default when the topic does not set the key, as Kafka 4.4
    # does (checked against the reference broker): delete + compact.
    assert config == {
        "retention.ms": "200",
        "segment.ms": "1000",
        "cleanup.policy": "delete,compact",
    }
    code, _, config, n = alter([AlterableConfig("retention.ms", DELETE, None)])
    assert code == ErrorCode.NONE and config == {} and n == 1
    code, _, config, n = alter([AlterableConfig("retention.ms", SET, "100")])
    assert n == 0  # an unchanged value writes nothing


def test_append_and_subtract_lists() -> None:
    controller = running_node()
    controller.create_topics([CreatableTopic("t", 1, configs={"cleanup.policy": "delete"})])
    resource = ConfigResource(TOPIC, "t")

    def run(op: int, value: str) -> None:
        result = controller.incremental_alter_configs(
            [AlterConfigsResource(TOPIC, "t", [AlterableConfig("cleanup.policy", op, value)])]
        )
        assert all(e.is_success for e in result.response.values())

    run(APPEND, "compact,delete")
    assert controller.image.config(resource)["cleanup.policy"] == "delete,compact"
    run(SUBTRACT, "delete")
    assert controller.image.config(resource)["cleanup.policy"] == "compact"


@pytest.mark.parametrize(
    ("ops", "type_", "name", "code", "message"),
    [
        ([AlterableConfig("retention.ms", SET, "1")], TOPIC, "ghost",
         ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The topic 'ghost' does not exist."),
        ([AlterableConfig("retention.ms", SET, "1")], TOPIC, "",
         ErrorCode.INVALID_REQUEST, "Default topic resources are not allowed."),
        ([AlterableConfig("x", SET, "1")], BROKER, "abc",
         ErrorCode.INVALID_REQUEST, "Illegal non-integral BROKER resource type name abc"),
        ([AlterableConfig("x", SET, "1")], 99, "x",
         ErrorCode.INVALID_REQUEST, "Unsupported resource type 99"),
        ([AlterableConfig("retention.ms", SET, "1"), AlterableConfig("retention.ms", DELETE, None)],
         TOPIC, "t", ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys"),
        ([AlterableConfig("retention.ms", APPEND, "1")], TOPIC, "t",
         ErrorCode.INVALID_CONFIG,
         "Can't APPEND to key retention.ms because its type is not LIST."),
        ([AlterableConfig("retention.ms", SUBTRACT, "1")], TOPIC, "t",
         ErrorCode.INVALID_CONFIG,
         "Can't SUBTRACT to key retention.ms because its type is not LIST."),
        ([AlterableConfig("retention.ms", 7, "1")], TOPIC, "t",
         ErrorCode.INVALID_REQUEST, "Unknown alter configs op type 7"),
        ([AlterableConfig("retention.ms", SET, None)], TOPIC, "t",
         ErrorCode.INVALID_CONFIG, "Null value not supported for : retention.ms"),
    ],
)  # fmt: skip
def test_incremental_errors(
    ops: list[AlterableConfig], type_: int, name: str, code: int, message: str
) -> None:
    got_code, got_message, _, n = alter(ops, type_, name)
    assert (got_code, got_message, n) == (code, message, 0)


def test_invalid_topic_config_values_are_invalid_config() -> None:
    code, message, config, n = alter([AlterableConfig("retention.ms", SET, "soon")])
    assert code == ErrorCode.INVALID_CONFIG and message is not None and "retention.ms" in message
    assert config == {"retention.ms": "100"} and n == 0
    code, _, _, _ = alter([AlterableConfig("bogus.key", SET, "1")])
    assert code == ErrorCode.INVALID_CONFIG


def test_validate_only_and_broker_configs() -> None:
    code, _, config, n = alter([AlterableConfig("retention.ms", SET, "5")], validate_only=True)
    assert code == ErrorCode.NONE and n == 0 and config == {"retention.ms": "100"}
    code, _, config, _ = alter([AlterableConfig("log.retention.ms", SET, "5")], BROKER, "")
    # Beside the bootstrap's cluster-wide min.insync.replicas (as a fresh Kafka 4.4 has).
    assert code == ErrorCode.NONE
    assert config == {"log.retention.ms": "5", "min.insync.replicas": "1"}
    code, _, config, _ = alter([AlterableConfig("log.retention.ms", SET, "5")], BROKER, "1")
    assert code == ErrorCode.NONE


def test_the_bootstrap_writes_the_controllers_min_insync_replicas_cluster_wide() -> None:
    controller = running_node(min_insync_replicas=2)
    cluster_wide = controller.committed_image.config(ConfigResource(BROKER, ""))
    assert cluster_wide == {"min.insync.replicas": "2"}


def test_legacy_alter_configs_replaces_the_set() -> None:
    controller = running_node()
    controller.create_topics(
        [CreatableTopic("t", 1, configs={"retention.ms": "100", "segment.ms": "1000"})]
    )
    result = controller.alter_configs(
        [AlterConfigsResource(TOPIC, "t", [AlterableConfig("retention.ms", SET, "7")])]
    )
    assert all(e.is_success for e in result.response.values())
    assert dict(controller.image.topic_config("t")) == {"retention.ms": "7"}
    [error] = controller.alter_configs(
        [AlterConfigsResource(TOPIC, "t", [AlterableConfig("retention.ms", SET, None)])]
    ).response.values()
    assert error.code == ErrorCode.INVALID_REQUEST


# -- features ----------------------------------------------------------------------------------


def test_bootstrap_finalizes_metadata_version() -> None:
    controller = open_controller(mem_fs())
    assert dict(controller.image.features) == {"metadata.version": 27}


@pytest.mark.parametrize(
    ("update", "message"),
    [
        (FeatureUpdate("metadata.version", 20, FeatureUpgradeType.UPGRADE),
         "Can't downgrade the version of this feature without setting the upgrade type to "
         "either safe or unsafe downgrade."),
        (FeatureUpdate("metadata.version", 20, FeatureUpgradeType.SAFE_DOWNGRADE),
         "Invalid metadata.version 20. Refusing to perform the requested downgrade because "
         "it might delete metadata information."),
        (FeatureUpdate("metadata.version", 99),
         "Invalid update version 99 for feature metadata.version. Local controller 1 only "
         "supports versions 7-27"),
        (FeatureUpdate("group.version", 1),
         "Invalid update version 1 for feature group.version. Local controller 1 only "
         "supports versions 0-0"),
        (FeatureUpdate("no.such.feature", 1),
         "Invalid update version 1 for feature no.such.feature. Local controller 1 does not "
         "support this feature."),
        (FeatureUpdate("group.version", 1, FeatureUpgradeType.SAFE_DOWNGRADE),
         "Can't downgrade to a newer version."),
        (FeatureUpdate("group.version", -1),
         "The upper value for the new range cannot be less than 0."),
        (FeatureUpdate("group.version", 0, 0), "Unknown upgrade type."),
    ],
)  # fmt: skip
def test_feature_update_errors(update: FeatureUpdate, message: str) -> None:
    controller = open_controller(mem_fs())
    result = controller.update_features([update])
    error = result.response[update.feature]
    assert (error.code, error.message, result.records) == (
        ErrorCode.INVALID_UPDATE_VERSION, message, (),
    )  # fmt: skip


def test_feature_updates_that_change_and_that_do_not() -> None:
    supported = {"metadata.version": (7, 27), "group.version": (0, 1)}
    controller = open_controller(mem_fs(), supported_features=supported)
    result = controller.update_features(
        [FeatureUpdate("group.version", 1), FeatureUpdate("metadata.version", 27)]
    )
    assert all(e.is_success for e in result.response.values()) and len(result.records) == 1
    assert controller.image.features["group.version"] == 1
    result = controller.update_features(
        [FeatureUpdate("group.version", 0, FeatureUpgradeType.SAFE_DOWNGRADE)]
    )
    assert result.response["group.version"].is_success
    assert "group.version" not in controller.image.features
    dup = controller.update_features([FeatureUpdate("x", 0), FeatureUpdate("x", 0)])
    assert dup.response["x"].code == ErrorCode.INVALID_REQUEST
    assert controller.update_features([FeatureUpdate("gone", 0)]).response["gone"].is_success
    only = controller.update_features([FeatureUpdate("group.version", 1)], validate_only=True)
    assert only.records == () and "group.version" not in controller.image.features


# -- brokers -----------------------------------------------------------------------------------


def test_register_unfence_and_epoch() -> None:
    controller = open_controller(mem_fs())
    result = controller.register_broker(NODE_ID, [ENDPOINT], "rack-a")
    epoch = result.response.broker_epoch
    assert result.response.error.is_success and epoch == controller.image.offset
    broker = controller.image.brokers[NODE_ID]
    assert broker.fenced and broker.rack == "rack-a" and broker.endpoints == (ENDPOINT,)
    assert controller.unfence_broker(NODE_ID, epoch).response.is_success
    assert not controller.image.brokers[NODE_ID].fenced
    assert controller.unfence_broker(NODE_ID, epoch).records == ()
    assert controller.fence_broker(NODE_ID, epoch).response.is_success
    assert controller.image.brokers[NODE_ID].fenced


def test_registration_refusals() -> None:
    controller = running_node()
    epoch = controller.image.brokers[NODE_ID].broker_epoch
    other = controller.register_broker(NODE_ID, [ENDPOINT], incarnation_id=b"\x01" * 16)
    assert other.response.error.code == ErrorCode.DUPLICATE_BROKER_REGISTRATION
    wrong = controller.register_broker(2, [], cluster_id="other")
    assert wrong.response.error.code == ErrorCode.INCONSISTENT_CLUSTER_ID
    assert wrong.response.error.message == (
        f"Expected cluster ID {CLUSTER_ID}, but got cluster ID other"
    )
    old = controller.register_broker(3, [], features=[("metadata.version", 7, 20)])
    assert old.response.error.code == ErrorCode.UNSUPPORTED_VERSION
    stale = controller.unfence_broker(NODE_ID, epoch - 1)
    assert stale.response.code == ErrorCode.STALE_BROKER_EPOCH
    unknown = controller.fence_broker(9, 0)  # as Kafka answers a broker not registered
    assert unknown.response.code == ErrorCode.STALE_BROKER_EPOCH


def test_unregister() -> None:
    controller = running_node()
    assert controller.unregister_broker(NODE_ID).response.is_success
    assert controller.image.brokers == {}
    assert controller.unregister_broker(NODE_ID).response.code == ErrorCode.BROKER_ID_NOT_REGISTERED


def test_producer_id_blocks() -> None:
    controller = running_node()
    epoch = controller.image.brokers[NODE_ID].broker_epoch
    first = controller.allocate_producer_ids(NODE_ID, epoch).response
    second = controller.allocate_producer_ids(NODE_ID, epoch).response
    assert (first.producer_id_start, first.producer_id_len) == (0, 1000)
    assert second.producer_id_start == 1000 and controller.image.next_producer_id == 2000
    stale = controller.allocate_producer_ids(NODE_ID, epoch + 5).response
    assert stale.error.code == ErrorCode.STALE_BROKER_EPOCH


def test_heartbeats_unfence_a_caught_up_broker_and_fence_on_request() -> None:
    controller = open_controller(mem_fs())
    epoch = controller.register_broker(2, [ENDPOINT]).response.broker_epoch

    def beat(offset: int, *, fence: bool = False, stop: bool = False) -> BrokerHeartbeatResult:
        request = BrokerHeartbeatRequest(2, epoch, offset, fence, stop)
        return controller.broker_heartbeat(request).response

    behind = beat(epoch - 1)
    assert behind.error.is_success and not behind.is_caught_up and behind.is_fenced
    assert controller.image.brokers[2].fenced
    caught_up = beat(epoch)
    assert caught_up.is_caught_up and not caught_up.is_fenced
    assert not controller.committed_image.brokers[2].fenced
    end = controller.last_offset
    assert not beat(epoch + 5).is_fenced and controller.last_offset == end  # no new record
    assert beat(epoch + 5, fence=True).is_fenced and controller.image.brokers[2].fenced
    going = beat(epoch + 5, stop=True)
    assert going.should_shut_down and going.is_fenced
    stale = controller.broker_heartbeat(BrokerHeartbeatRequest(2, epoch - 1, 0, False, False))
    assert stale.response.error.code == ErrorCode.STALE_BROKER_EPOCH and not stale.records
    unknown = controller.broker_heartbeat(BrokerHeartbeatRequest(9, 0, 0, False, False))
    assert unknown.response.error.code == ErrorCode.STALE_BROKER_EPOCH


def test_a_broker_silent_for_its_session_timeout_is_fenced() -> None:
    clock = ManualClock()
    controller = open_controller(mem_fs(), clock=clock, broker_session_timeout_ms=1000)
    epochs = {b: controller.register_broker(b, [ENDPOINT]).response.broker_epoch for b in (2, 3)}

    def beat(broker_id: int) -> BrokerHeartbeatResult:
        request = BrokerHeartbeatRequest(broker_id, epochs[broker_id], 100, False, False)
        return controller.broker_heartbeat(request).response

    assert not beat(2).is_fenced and not beat(3).is_fenced
    clock.advance(600)
    beat(3)
    clock.advance(399)
    assert controller.fence_stale_brokers().response == ()  # 999 ms: still in time
    clock.advance(1)
    fenced = controller.fence_stale_brokers()
    assert fenced.response == (2,) and len(fenced.records) == 1
    assert controller.image.brokers[2].fenced and not controller.image.brokers[3].fenced
    assert controller.fence_stale_brokers().response == ()  # fenced already: no record
    assert not beat(2).is_fenced  # a caught-up broker that heartbeats again is unfenced
    clock.advance(1000)
    assert controller.fence_stale_brokers().response == (2, 3)


def test_a_broker_whose_heartbeat_connection_closed_is_fenced_after_the_grace() -> None:
    clock = ManualClock()
    controller = open_controller(
        mem_fs(), clock=clock, broker_session_timeout_ms=9000, broker_disconnect_fence_ms=300
    )
    epochs = {b: controller.register_broker(b, [ENDPOINT]).response.broker_epoch for b in (2, 3)}

    def beat(broker_id: int) -> BrokerHeartbeatResult:
        request = BrokerHeartbeatRequest(broker_id, epochs[broker_id], 100, False, False)
        return controller.broker_heartbeat(request).response

    assert not beat(2).is_fenced and not beat(3).is_fenced
    controller.broker_disconnected(2)
    controller.broker_disconnected(3)
    clock.advance(100)
    beat(3)  # 3 came back on a new connection within the grace: it keeps its session
    clock.advance(199)
    assert controller.fence_stale_brokers().response == ()  # 299 ms: still in time
    clock.advance(1)
    assert controller.fence_stale_brokers().response == (2,)  # long before 9 s
    assert controller.image.brokers[2].fenced and not controller.image.brokers[3].fenced
    assert not beat(2).is_fenced  # heard from again: unfenced, and no longer counted gone
    clock.advance(1000)
    assert controller.fence_stale_brokers().response == ()


def test_without_the_grace_a_closed_connection_fences_nobody_before_the_session_ends() -> None:
    clock = ManualClock()
    controller = open_controller(mem_fs(), clock=clock, broker_session_timeout_ms=9000)
    epoch = controller.register_broker(2, [ENDPOINT]).response.broker_epoch
    assert not controller.broker_heartbeat(
        BrokerHeartbeatRequest(2, epoch, 100, False, False)
    ).response.is_fenced
    controller.broker_disconnected(2)
    clock.advance(8999)
    assert controller.fence_stale_brokers().response == ()
    clock.advance(1)
    assert controller.fence_stale_brokers().response == (2,)


def test_a_single_node_fences_no_broker_on_silence() -> None:
    clock = ManualClock()
    controller = open_controller(mem_fs(), clock=clock)
    epoch = controller.register_broker(2, [ENDPOINT]).response.broker_epoch
    controller.unfence_broker(2, epoch)
    clock.advance(10**9)
    assert controller.fence_stale_brokers().response == ()
    assert not controller.image.brokers[2].fenced


def test_a_controller_registers_with_its_listeners_unless_it_lacks_a_feature_level() -> None:
    controller = open_controller(mem_fs())
    endpoint = BrokerEndpoint("CONTROLLER", "10.0.0.3", 9093, 0)
    features = [("metadata.version", 7, 40), ("kraft.version", 0, 1)]
    request = ControllerRegistrationRequest(3, b"\x01" * 16, [endpoint], features)
    assert controller.register_controller(request).response.is_success
    registered = controller.committed_image.controllers[3]
    assert registered.endpoints == (endpoint,) and registered.incarnation_id == b"\x01" * 16
    assert ("kraft.version", 0, 1) in registered.supported_features
    too_old = request._replace(controller_id=4, features=[("metadata.version", 1, 6)])
    refused = controller.register_controller(too_old)
    assert refused.response.code == ErrorCode.UNSUPPORTED_VERSION and not refused.records
    assert "controller does not support finalized version" in (refused.response.message or "")
    assert 4 not in controller.committed_image.controllers

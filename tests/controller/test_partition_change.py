"""Leadership and ISR follow the brokers' states, as on Kafka's controller: a fenced,
shutting-down or unregistered broker leaves every ISR (never emptying one) and its
partitions move to the next in-sync replica that can lead; an unfenced one leads again
what was left without a leader; unclean elections happen only where a topic allows them;
controlled shutdown completes only once the broker leads nothing and the other brokers
have applied the moves."""

from __future__ import annotations

from millpond.controller.cluster_control import set_fenced
from millpond.controller.config_control import (
    AlterableConfig,
    AlterConfigOp,
    AlterConfigsResource,
)
from millpond.controller.image import ConfigResource, ConfigResourceType, apply

from .helpers import Cluster


def test_a_fenced_leader_hands_over_to_the_next_in_sync_replica() -> None:
    cluster = Cluster()
    before = [cluster.partition(i) for i in range(3)]
    cluster.controller.fence_broker(1, cluster.epochs[1])
    led, followed, two = (cluster.partition(i) for i in range(3))
    assert (led.leader, led.isr) == (2, (2, 3))
    assert led.leader_epoch == before[0].leader_epoch + 1
    assert led.partition_epoch == before[0].partition_epoch + 1
    # A follower leaving the ISR changes neither the leader nor its epoch.
    assert (followed.leader, followed.isr) == (2, (2, 3))
    assert followed.leader_epoch == before[1].leader_epoch
    assert followed.partition_epoch == before[1].partition_epoch + 1
    assert (two.leader, two.isr, two.leader_epoch) == (3, (3,), before[2].leader_epoch)


def test_the_last_in_sync_replica_stays_in_the_isr_without_leading() -> None:
    cluster = Cluster()
    cluster.controller.fence_broker(3, cluster.epochs[3])
    cluster.controller.fence_broker(1, cluster.epochs[1])
    two = cluster.partition(2)
    assert (two.leader, two.isr) == (-1, (1,))  # 1 holds every acknowledged record
    # Unfencing 3, out of the ISR, elects nobody; unfencing 1 elects it.
    cluster.beat(3)
    assert cluster.partition(2).leader == -1
    cluster.beat(1)
    assert (cluster.partition(2).leader, cluster.partition(2).isr) == (1, (1,))


def test_an_unclean_election_needs_the_topic_or_the_cluster_to_allow_it() -> None:
    for allow in ("topic", "cluster", "static"):
        cluster = Cluster(unclean_leader_election_enable=allow == "static")
        resource = ConfigResource(
            ConfigResourceType.TOPIC if allow == "topic" else ConfigResourceType.BROKER,
            "u" if allow == "topic" else "",
        )
        if allow != "static":
            op = AlterableConfig("unclean.leader.election.enable", AlterConfigOp.SET, "true")
            request = AlterConfigsResource(resource.type, resource.name, [op])
            altered = cluster.controller.incremental_alter_configs([request]).response
            assert altered[resource].is_success
        cluster.controller.fence_broker(3, cluster.epochs[3])  # partition 2: ISR [1]
        cluster.controller.fence_broker(1, cluster.epochs[1])  # no in-sync replica left
        # Unfencing 3, out of the ISR, makes it the leader: the ISR is only itself, and
        # it leads in the RECOVERING state.
        cluster.beat(3)
        two = cluster.partition(2)
        assert (two.leader, two.isr, two.leader_recovery_state) == (3, (3,), 1), allow


def test_unclean_election_is_off_by_default() -> None:
    cluster = Cluster()
    image = cluster.image
    for broker in (3, 1):
        epoch = image.brokers[broker].broker_epoch
        for record in set_fenced(image, broker, epoch, fenced=True).records:
            image = apply(image, record.message)
    unfence = set_fenced(image, 3, image.brokers[3].broker_epoch, fenced=False)
    assert len(unfence.records) == 1  # the unfencing alone: 3 is not in the ISR


def test_brokers_fenced_together_are_fenced_one_after_the_other() -> None:
    cluster = Cluster(broker_session_timeout_ms=1000)
    cluster.clock.advance(1000)
    cluster.beat(3)
    cluster.clock.advance(1)
    assert cluster.controller.fence_stale_brokers().response == (1, 2)
    # Each fencing saw the one before: no ISR names a fenced broker but as its last member.
    for index in range(3):
        p = cluster.partition(index)
        assert p.leader == 3 and p.isr == (3,), (index, p)


def test_controlled_shutdown_moves_leadership_then_lets_the_broker_go() -> None:
    cluster = Cluster()
    assert cluster.beat(1, stop=True) == (False, False)  # in controlled shutdown
    broker = cluster.image.brokers[1]
    assert broker.in_controlled_shutdown and not broker.fenced
    assert 1 not in cluster.image.usable_brokers()
    assert [cluster.partition(i).leader for i in range(3)] == [2, 2, 3]
    assert [cluster.partition(i).isr for i in range(3)] == [(2, 3), (2, 3), (3,)]
    moved = cluster.controller.last_offset
    # It leads nothing now, but 2 and 3 have not applied the moves yet.
    assert cluster.beat(1, stop=True) == (False, False)
    cluster.beat(2, offset=moved - 1)
    cluster.beat(3)
    assert cluster.beat(1, stop=True) == (False, False)
    cluster.beat(2, offset=moved)
    assert cluster.beat(1, stop=True) == (True, True)
    assert cluster.image.brokers[1].fenced


def test_a_broker_loading_metadata_in_the_controllers_process_counts_as_applied() -> None:
    """A single node's own broker reads the controller's commits as they are made and
    sends no heartbeat: another broker's controlled shutdown must not wait on it (a Kafka
    broker beside a single millpond node hung in PENDING_CONTROLLED_SHUTDOWN)."""
    cluster = Cluster()
    cluster.controller.register_listener(_Loader(), broker_id=3)
    assert cluster.beat(1, stop=True) == (False, False)  # in controlled shutdown
    cluster.beat(2)  # 2 has applied the moves; 3 never heartbeats
    assert cluster.beat(1, stop=True) == (True, True)
    without = Cluster()
    assert without.beat(1, stop=True) == (False, False)
    without.beat(2)
    assert without.beat(1, stop=True) == (False, False)  # 3's heartbeat is still awaited


class _Loader:
    def handle_commit(self, delta: object, image: object) -> None:
        pass


def test_a_broker_that_leads_nothing_shuts_down_at_once() -> None:
    cluster = Cluster()
    cluster.controller.fence_broker(1, cluster.epochs[1])
    cluster.beat(1)  # unfenced again: in no ISR, leading nothing
    assert cluster.beat(1, stop=True) == (True, True)
    fenced_already = Cluster()
    fenced_already.controller.fence_broker(2, fenced_already.epochs[2])
    assert fenced_already.beat(2, stop=True) == (True, True)


def test_a_new_active_controller_finishes_a_controlled_shutdown() -> None:
    """The shutdown offset lives in the active controller's memory; the next one takes
    its own image's offset, so the broker still gets to go."""
    cluster = Cluster()
    cluster.beat(1, stop=True)
    cluster.controller._forget_brokers()  # what a change of active controller loses
    assert cluster.beat(1, stop=True) == (False, False)
    cluster.beat(2)
    cluster.beat(3)
    assert cluster.beat(1, stop=True) == (True, True)


def test_unregistering_a_broker_moves_its_leaderships() -> None:
    cluster = Cluster()
    assert cluster.controller.unregister_broker(1).response.is_success
    assert 1 not in cluster.image.brokers
    assert [(cluster.partition(i).leader, cluster.partition(i).isr) for i in range(3)] == [
        (2, (2, 3)),
        (2, (2, 3)),
        (3, (3,)),
    ]


def test_a_broker_back_from_a_crash_leaves_the_isr_and_leads_again_once_caught_up() -> None:
    cluster = Cluster()
    before = cluster.partition(0)  # led by 1, ISR (1, 2, 3)
    incarnation = cluster.image.brokers[1].incarnation_id
    # Back after a clean stop in its epoch: nothing moves.
    clean = cluster.controller.register_broker(
        1, [], incarnation_id=incarnation, previous_broker_epoch=cluster.epochs[1]
    )
    assert clean.response.error.is_success
    assert (cluster.partition(0).leader, cluster.partition(0).isr) == (1, (1, 2, 3))
    cluster.epochs[1] = clean.response.broker_epoch
    # Back without a clean stop (-1): out of every ISR, its leaderships moved.
    crashed = cluster.controller.register_broker(1, [], incarnation_id=incarnation)
    assert crashed.response.error.is_success
    led = cluster.partition(0)
    assert (led.leader, led.isr, led.leader_epoch) == (2, (2, 3), before.leader_epoch + 1)
    assert 1 not in cluster.partition(1).isr

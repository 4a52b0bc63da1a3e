"""The embedded cluster (millpond.testing.cluster) with a real client: three controllers
and two brokers in this process. Killing the active controller elects another and loses
no acknowledged topic; a killed controller restarts on its data and catches up; an
isolated broker is fenced and comes back once healed; an isolated leader is replaced;
admin requests sent to any broker reach the active controller, ElectLeaders among
them; a broker stopped cleanly hands its leaderships over first, and a killed one loses
them once its session lapses; and the nodes' threads and descriptors, killed ones'
included, are gone afterwards."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from millpond.broker.node import Broker
from millpond.testing.cluster import ClusterError, EmbeddedCluster, cluster
from millpond.wire.errors import ErrorCode


def _until(condition: Callable[[], bool], what: str, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _topics(running: EmbeddedCluster, node_id: int) -> set[str]:
    """The topics a controller's committed metadata holds."""
    image = running.node(node_id).handle.call(lambda b: b.controller_server.committed_image)
    return set(image.topic_ids_by_name)


def test_failover_kill_restart_and_isolate() -> None:
    threads_before = {t.ident for t in threading.enumerate()}
    fds_before = len(os.listdir("/proc/self/fd"))
    with cluster(controllers=3, brokers=2) as running:
        admin = KafkaAdminClient(bootstrap_servers=running.bootstrap_servers)
        try:
            admin.create_topics([NewTopic("before", 2, 1)])
            first = running.wait_for_leader()
            running.kill(first)
            second = running.wait_for_leader(other_than=first)
            admin.create_topics([NewTopic("while-down", 1, 1)])  # through the new leader
            running.restart(first)
            _until(lambda: "while-down" in _topics(running, first), "the restarted node caught up")
            assert {"before", "while-down"} <= _topics(running, first)

            running.isolate(second)
            third = running.wait_for_leader(other_than=second)
            assert third != second
            running.wait_ready()  # the brokers heartbeat to the new leader, unfenced
            admin.create_topics([NewTopic("while-cut-off", 1, 1)])
            assert "while-cut-off" not in _topics(running, second)  # it heard nothing
            running.heal(second)
            _until(lambda: "while-cut-off" in _topics(running, second), "the healed node caught up")

            broker = running.brokers[0]
            running.isolate(broker)
            _until(lambda: broker not in running.live_brokers(), "the isolated broker fenced")
            running.heal(broker)
            running.wait_ready()
            assert set(running.brokers) <= running.live_brokers()
            running.kill(broker)  # its files are let go unflushed, as the kernel would
            running.restart(broker)
            running.wait_ready()

            # ElectLeaders goes on to the active controller like any admin request: every
            # partition is led by its preferred (only) replica already.
            answer = admin.elect_leaders(0, {"before": [0, 1], "nope": [0]}, raise_errors=False)
            codes = {
                (topic.topic, p.partition_id): p.error_code
                for topic in answer.replica_election_results
                for p in topic.partition_result
            }
            assert codes == {
                ("before", 0): ErrorCode.ELECTION_NOT_NEEDED,
                ("before", 1): ErrorCode.ELECTION_NOT_NEEDED,
                ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            }
        finally:
            admin.close()
    lingering = [t for t in threading.enumerate() if t.ident not in threads_before]
    assert [t.name for t in lingering if t.name.startswith("millpond-node-")] == []
    assert len(os.listdir("/proc/self/fd")) <= fds_before + 2  # the client's, closing


def _leader_and_isr(running: EmbeddedCluster, topic: str) -> dict[int, tuple[int, tuple[int, ...]]]:
    """Each partition's (leader, ISR), as a client's Metadata answer gives them, asked
    of the last broker (the test never stops it)."""
    last = running.node(running.brokers[-1])
    admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{last.port}")
    try:
        [described] = admin.describe_topics([topic])
    finally:
        admin.close()
    return {
        p["partition_index"]: (p["leader_id"], tuple(p["isr_nodes"]))
        for p in described["partitions"]
    }


def test_a_stopped_or_killed_broker_loses_its_leaderships() -> None:
    with cluster(controllers=1, brokers=3) as running:
        admin = KafkaAdminClient(bootstrap_servers=running.bootstrap_servers)
        try:
            assignment = {0: [2, 3, 4], 1: [3, 4, 2]}
            admin.create_topics([NewTopic("t", replica_assignments=assignment)])
        finally:
            admin.close()
        last = running.node(4).handle

        def created(broker: Broker) -> bool:
            return broker.image.topic("t") is not None

        _until(lambda: last.call(created), "the topic reached the last broker")
        assert _leader_and_isr(running, "t") == {0: (2, (2, 3, 4)), 1: (3, (3, 4, 2))}

        started = time.monotonic()
        running.stop(2)  # controlled shutdown: leadership moves before it goes
        stop_s = time.monotonic() - started
        assert _leader_and_isr(running, "t") == {0: (3, (3, 4)), 1: (3, (3, 4))}
        assert stop_s < 3.0, f"controlled shutdown took {stop_s:.1f} s: it was not granted"

        running.kill(3)  # no goodbye: fenced once broker.session.timeout.ms lapses

        def leader_seen_by_the_last(broker: Broker) -> int:
            topic = broker.image.topic("t")
            return -2 if topic is None else topic.partitions[0].leader

        _until(lambda: last.call(leader_seen_by_the_last) == 4, "the killed leader replaced")
        assert _leader_and_isr(running, "t") == {0: (4, (4,)), 1: (4, (4,))}


@pytest.mark.parametrize("grace_ms", [200, -1])
def test_a_killed_broker_is_fenced_once_its_heartbeat_connection_closes(grace_ms: int) -> None:
    """With millpond.broker.disconnect.fence.ms, long before the session (60 s) lapses;
    with it off, not until then."""
    settings = {
        "broker.session.timeout.ms": 60_000,
        "millpond.broker.disconnect.fence.ms": grace_ms,
    }
    with cluster(controllers=1, brokers=2, configs=settings) as running:
        running.kill(3)
        deadline = time.monotonic() + 5
        while 3 in running.live_brokers() and time.monotonic() < deadline:
            time.sleep(0.02)
        live = running.live_brokers()
    assert live == ({2} if grace_ms >= 0 else {2, 3}), f"unfenced after the kill: {live}"


def test_asking_a_stopped_node_says_so() -> None:
    with cluster(controllers=1, brokers=1) as running:
        running.stop(2)
        with pytest.raises(ClusterError, match="node 2 is not running"):
            running.isolate(2)
        with pytest.raises(ClusterError, match="no node 7"):
            running.kill(7)
        running.restart(2)
        running.wait_ready()

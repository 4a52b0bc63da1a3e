"""millpond and Apache Kafka 4.4 in one KRaft quorum: a millpond replica follows a Kafka
controller's ``__cluster_metadata`` over Kafka's own Fetch protocol and replays what it
reads into the same metadata Kafka serves."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from compat_tests.kafka.reference import RunningBroker
from millpond.controller.controller import ControllerConfig
from millpond.controller.controller_server import ControllerServer
from millpond.controller.raft.config import RaftConfig
from millpond.controller.raft.keys import Endpoint, ReplicaKey, Voter, VoterSet
from millpond.controller.raft.node import Role
from millpond.storage.checkpoints import read_meta_properties
from millpond.storage.clock import SystemClock
from millpond.storage.fs import OsFileSystem

pytestmark = pytest.mark.compat

OBSERVER_ID = 3000


def _kafka_topic_ids(bootstrap: str, names: list[str]) -> dict[str, bytes]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, 3, 1) for name in names])
        described = admin.describe_topics(names)
    finally:
        admin.close()
    return {t["name"]: _uuid_bytes(t["topic_id"]) for t in described}


def _uuid_bytes(topic_id: object) -> bytes:
    import base64  # noqa: PLC0415
    import uuid  # noqa: PLC0415

    text = str(topic_id)
    try:
        return uuid.UUID(text).bytes
    except ValueError:
        return base64.urlsafe_b64decode(text + "==")


def test_a_millpond_observer_follows_a_kafka_controller(
    tmp_path: Path, reference_kafka: RunningBroker
) -> None:
    names = [f"mixed-observed-{i}" for i in range(3)]
    topic_ids = _kafka_topic_ids(reference_kafka.bootstrap, names)
    meta = read_meta_properties(OsFileSystem(), str(reference_kafka.log_dir / "meta.properties"))
    assert meta.cluster_id is not None
    cluster_id = meta.cluster_id
    controller = Endpoint("CONTROLLER", "127.0.0.1", reference_kafka.ports.adv_controller)

    async def follow() -> ControllerServer:
        server = ControllerServer(
            OsFileSystem(),
            str(tmp_path),
            SystemClock(),
            random.Random(1),
            ControllerConfig(OBSERVER_ID, cluster_id),
            voters=VoterSet([Voter(ReplicaKey(1), (controller,))]),
            raft_config=RaftConfig(cluster_id=cluster_id, kraft_version=1),
            observer=True,
        )
        await server.start()
        try:
            async with asyncio.timeout(30):
                while not all(server.committed_image.topic(n) for n in names):
                    await asyncio.sleep(0.05)
        finally:
            await server.stop()
        return server

    server = asyncio.run(follow())
    image = server.committed_image
    for name in names:
        topic = image.topic(name)
        assert topic is not None and topic.topic_id == topic_ids[name]
        assert sorted(topic.partitions) == [0, 1, 2]
        assert all(p.leader == 1 and p.replicas == (1,) for p in topic.partitions.values())
    raft = server.raft
    assert raft.node.role is Role.FOLLOWER and raft.leader.leader_id == 1
    # Kafka's voter set came through the log: voter 1 with the directory id it formatted.
    voter = raft.node.voters.get(1)
    assert voter is not None and voter.key.directory_id is not None
    assert 1 in image.brokers and not image.brokers[1].fenced

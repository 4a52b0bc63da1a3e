"""Shared set-up for controller tests: an in-memory disk, a manual clock, a seeded Random."""

from __future__ import annotations

import random

from millpond.controller.cluster_control import BrokerHeartbeatRequest
from millpond.controller.controller import ControllerConfig, QuorumController
from millpond.controller.image import BrokerEndpoint, MetadataImage, PartitionRegistration
from millpond.controller.metadata_log import (
    MetadataLogConfig,
    open_metadata_log,
    open_raft_client,
    read_image,
)
from millpond.controller.replication_control import CreatableReplicaAssignment, CreatableTopic
from millpond.storage.clock import ManualClock
from millpond.storage.fs import MemFileSystem
from millpond.wire.errors import ErrorCode

LOG_DIR = "/data/kraft"
CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
NODE_ID = 1
ENDPOINT = BrokerEndpoint("PLAINTEXT", "localhost", 9092, 0)


def mem_fs() -> MemFileSystem:
    fs = MemFileSystem()
    fs.makedirs(LOG_DIR)
    return fs


def open_controller(
    fs: MemFileSystem,
    seed: int = 7,
    clock: ManualClock | None = None,
    log_config: MetadataLogConfig | None = None,
    **config: object,
) -> QuorumController:
    clock = clock or ManualClock()
    rng = random.Random(seed)
    raft = open_raft_client(fs, LOG_DIR, clock, rng, node_id=NODE_ID, log_config=log_config)
    return QuorumController(
        raft,
        clock,
        rng,
        ControllerConfig(NODE_ID, CLUSTER_ID, **config),  # type: ignore[arg-type]
    )


def replayed(fs: MemFileSystem) -> MetadataImage:
    """The image a tool reading the directory sees: every batch in the log replayed."""
    log = open_metadata_log(fs, LOG_DIR, ManualClock())
    try:
        return read_image(log, MetadataImage.empty(CLUSTER_ID)).image
    finally:
        log.log.close()


def running_node(
    fs: MemFileSystem | None = None,
    seed: int = 7,
    clock: ManualClock | None = None,
    log_config: MetadataLogConfig | None = None,
    **config: object,
) -> QuorumController:
    """A controller with its own broker registered and unfenced (a combined node)."""
    controller = open_controller(fs or mem_fs(), seed, clock, log_config, **config)
    registered = controller.register_broker(NODE_ID, [ENDPOINT])
    assert registered.response.error.is_success
    unfenced = controller.unfence_broker(NODE_ID, registered.response.broker_epoch)
    assert unfenced.response.is_success
    return controller


#: Topic ``t``'s partition 0 on [1, 2, 3] and 1 on [2, 3, 1]; topic ``u``'s one on
#: [3, 1] (the tests call it partition 2). The ISRs start as the replicas.
REPLICAS: dict[str, list[tuple[int, ...]]] = {"t": [(1, 2, 3), (2, 3, 1)], "u": [(3, 1)]}


class Cluster:
    """A controller with brokers 1-3 registered and unfenced, and :data:`REPLICAS`."""

    def __init__(self, **config: object) -> None:
        self.clock = ManualClock()
        self.controller: QuorumController = open_controller(mem_fs(), 7, self.clock, None, **config)
        self.epochs: dict[int, int] = {}
        for broker in (1, 2, 3):
            registered = self.controller.register_broker(
                broker, [ENDPOINT._replace(port=9092 + broker)]
            )
            self.epochs[broker] = registered.response.broker_epoch
            assert self.controller.unfence_broker(broker, self.epochs[broker]).response.is_success
        topics = [
            CreatableTopic(
                name, assignments=[CreatableReplicaAssignment(i, r) for i, r in enumerate(rs)]
            )
            for name, rs in REPLICAS.items()
        ]
        for created in self.controller.create_topics(topics).response:
            assert created.error.code == ErrorCode.NONE

    @property
    def image(self) -> MetadataImage:
        return self.controller.image

    def partition(self, index: int) -> PartitionRegistration:
        topic = self.image.topic("t" if index < 2 else "u")
        assert topic is not None
        return topic.partitions[index % 2]

    def beat(
        self, broker: int, *, stop: bool = False, offset: int | None = None
    ) -> tuple[bool, bool]:
        """A heartbeat having applied ``offset`` (default: all); (fenced, shut down)."""
        applied = self.controller.last_offset if offset is None else offset
        request = BrokerHeartbeatRequest(broker, self.epochs[broker], applied, False, stop)
        response = self.controller.broker_heartbeat(request).response
        assert response.error.is_success
        return response.is_fenced, response.should_shut_down

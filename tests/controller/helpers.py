"""Shared set-up for controller tests: an in-memory disk, a manual clock, a seeded Random."""

from __future__ import annotations

import random

from millpond.controller.controller import ControllerConfig, QuorumController
from millpond.controller.image import BrokerEndpoint, MetadataImage
from millpond.controller.metadata_log import (
    MetadataLogConfig,
    open_metadata_log,
    open_raft_client,
    read_image,
)
from millpond.storage.clock import ManualClock
from millpond.storage.fs import MemFileSystem

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

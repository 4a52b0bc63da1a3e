"""Shared set-up for controller tests: an in-memory disk, a manual clock, a seeded Random."""

from __future__ import annotations

import random

from millpond.controller.controller import ControllerConfig, QuorumController
from millpond.controller.image import BrokerEndpoint
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
    fs: MemFileSystem, seed: int = 7, clock: ManualClock | None = None, **config: int
) -> QuorumController:
    return QuorumController(
        fs,
        LOG_DIR,
        clock or ManualClock(),
        random.Random(seed),
        ControllerConfig(NODE_ID, CLUSTER_ID, **config),  # type: ignore[arg-type]
    )


def running_node(fs: MemFileSystem | None = None, seed: int = 7) -> QuorumController:
    """A controller with its own broker registered and unfenced (a combined node)."""
    controller = open_controller(fs or mem_fs(), seed)
    registered = controller.register_broker(NODE_ID, [ENDPOINT])
    assert registered.response.error.is_success
    unfenced = controller.unfence_broker(NODE_ID, registered.response.broker_epoch)
    assert unfenced.response.is_success
    return controller

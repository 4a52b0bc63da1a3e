"""The controller role of a node: the quorum controller and the channel brokers use.

Kafka composes a node from a ``ControllerServer`` and a ``BrokerServer`` according to
``process.roles``; the controller server owns the metadata log (through the Raft
client) and the active controller, and brokers reach it only through a channel and
learn metadata only from the committed log. :class:`ControllerServer` is that role for
a node of the metadata quorum: it owns the node's
:class:`~millpond.controller.raft.client.RaftClient` over ``__cluster_metadata`` (by
default the one voter of a static set) and the
:class:`~millpond.controller.controller.QuorumController` listening to it, hands brokers
in the same process a
:class:`~millpond.controller.channel.LocalControllerChannel`, and feeds them the
committed metadata (:meth:`register_listener`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.controller.channel import LocalControllerChannel
from millpond.controller.controller import ControllerConfig, MetadataListener, QuorumController
from millpond.controller.metadata_log import open_raft_client

if TYPE_CHECKING:
    import random

    from millpond.controller.image import MetadataImage
    from millpond.controller.raft.client import RaftClient
    from millpond.storage.clock import Clock
    from millpond.storage.fs import FileSystem

__all__ = ["ControllerServer"]


class ControllerServer:
    def __init__(
        self,
        fs: FileSystem,
        metadata_log_dir: str,
        clock: Clock,
        rng: random.Random,
        config: ControllerConfig,
        *,
        raft: RaftClient | None = None,
    ) -> None:
        """``raft``: this node's replica of the quorum, if not the default one-voter
        quorum over ``metadata_log_dir``."""
        self.config = config
        if raft is None:
            raft = open_raft_client(fs, metadata_log_dir, clock, rng, node_id=config.node_id)
        self.raft = raft
        self.controller = QuorumController(raft, clock, rng, config)
        #: What a broker in this process submits its controller operations to.
        self.channel = LocalControllerChannel(self.controller)

    @property
    def committed_image(self) -> MetadataImage:
        return self.controller.committed_image

    def register_listener(self, listener: MetadataListener) -> None:
        """Feed ``listener`` each committed batch from now on (a broker's loader)."""
        self.controller.register_listener(listener)

    def close(self) -> None:
        self.controller.close()

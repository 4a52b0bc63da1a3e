"""The controller role of a node: the quorum controller and the channel brokers use.

Kafka composes a node from a ``ControllerServer`` and a ``BrokerServer`` according to
``process.roles``; the controller server owns the metadata log (through the Raft
client) and the active controller, and brokers reach it only through a channel and
learn metadata only from the committed log. :class:`ControllerServer` is that role for
a one-voter quorum: it owns the :class:`~millpond.controller.controller.QuorumController`
and its ``__cluster_metadata`` log, hands brokers in the same process a
:class:`~millpond.controller.channel.LocalControllerChannel`, and feeds them the
committed metadata (:meth:`register_listener`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.controller.channel import LocalControllerChannel
from millpond.controller.controller import ControllerConfig, MetadataListener, QuorumController

if TYPE_CHECKING:
    import random

    from millpond.controller.image import MetadataImage
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
        commit_on_append: bool = True,
    ) -> None:
        self.config = config
        self.controller = QuorumController(
            fs, metadata_log_dir, clock, rng, config, commit_on_append=commit_on_append
        )
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

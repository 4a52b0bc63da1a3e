"""Producer id blocks from the controller, asked for through the controller channel.

Kafka's broker (``RPCProducerIdManager``) sends AllocateProducerIds to the controller
and never blocks on the answer: while no block is at hand, InitProducerId answers
COORDINATOR_LOAD_IN_PROGRESS and the block arrives for a later call. The controller
answers once the block's ``ProducerIdsRecord`` is committed, so no id handed out can be
handed out again after a restart. :class:`ControllerProducerIdBlocks` is the
``next_block`` of a :class:`~millpond.broker.producer_ids.ProducerIdManager` doing that;
:meth:`ControllerProducerIdBlocks.wait` lets a request wait for the block in flight
rather than answer a retriable error.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from millpond.broker.producer_ids import ProducerIdsBlock

if TYPE_CHECKING:
    from millpond.controller.channel import ControllerChannel

__all__ = ["ControllerProducerIdBlocks"]

_log = logging.getLogger("millpond.broker")


class ControllerProducerIdBlocks:
    """Blocks for one broker incarnation (``broker_epoch``), one request at a time."""

    def __init__(self, channel: ControllerChannel, broker_id: int, broker_epoch: int) -> None:
        self._channel = channel
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self._ready: ProducerIdsBlock | None = None
        self._pending: asyncio.Task[None] | None = None

    def __call__(self) -> ProducerIdsBlock | None:
        """The block the controller has granted, or None (asking for one if no request
        is in flight)."""
        block, self._ready = self._ready, None
        if block is None and self._pending is None:
            self._pending = asyncio.get_running_loop().create_task(self._allocate())
        return block

    async def wait(self) -> None:
        """Until the request in flight, if any, is answered."""
        if self._pending is not None:
            await asyncio.shield(self._pending)

    async def _allocate(self) -> None:
        try:
            result = await self._channel.allocate_producer_ids(self.broker_id, self.broker_epoch)
        except OSError as exc:
            _log.error("no producer id block for broker %d: %s", self.broker_id, exc)
            return
        finally:
            self._pending = None
        if result.error.is_failure:
            _log.warning(
                "no producer id block for broker %d: %s %s",
                self.broker_id,
                result.error.code.name,
                result.error.message or "",
            )
            return
        self._ready = ProducerIdsBlock(
            self.broker_id, result.producer_id_start, result.producer_id_len
        )

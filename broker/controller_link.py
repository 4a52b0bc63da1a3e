"""Requests from a broker to the active controller, wherever the quorum has it.

Kafka's brokers reach the controller through one channel (``NodeToControllerChannelManager``):
requests go to the node the metadata quorum names as its leader, and one that answers
NOT_CONTROLLER, or cannot be reached, is asked again once the quorum names another,
until the request's deadline. A client's admin request that went out and timed out is not
sent again (the controller may have applied it): Kafka's brokers answer REQUEST_TIMED_OUT.
The leader and its controller listener come from this node's own replica of the metadata
log (a voter's, or an observer's), so a broker never needs more than the quorum's
configuration to find its controller.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

from millpond.controller.peer_channel import PeerChannel, PeerTimeoutError, PeerUnreachableError
from millpond.wire import Message
from millpond.wire.errors import ErrorCode

__all__ = ["ControllerLink", "ControllerUnavailableError", "LINK_VERSIONS"]

#: What a broker sends its controller, in Kafka 4.4's ranges: CreateTopics (its own,
#: for topics it creates itself), Envelope (client admin requests), BrokerRegistration,
#: BrokerHeartbeat, AllocateProducerIds, AlterPartition (its partition leaders' ISR
#: changes).
LINK_VERSIONS: Mapping[int, tuple[int, int]] = {
    19: (2, 7),
    56: (2, 3),
    58: (0, 0),
    62: (0, 4),
    63: (0, 2),
    67: (0, 0),
}


class ControllerUnavailableError(ConnectionError):
    """No active controller answered before the deadline."""


class ControllerLink:
    def __init__(
        self,
        leader_id: Callable[[], int],
        address_of: Callable[[int], tuple[str, int] | None],
        *,
        client_id: str,
        request_timeout_ms: int,
        retry_backoff_ms: int,
    ) -> None:
        """``leader_id()``: the quorum's leader as this node knows it (-1: none yet);
        ``address_of(id)``: that node's controller listener."""
        self._leader_id = leader_id
        self._backoff = retry_backoff_ms / 1000
        self._peers = PeerChannel(
            address_of, LINK_VERSIONS, client_id=client_id, request_timeout_ms=request_timeout_ms
        )

    async def send(
        self,
        api_key: int,
        build: Callable[[int], Message],
        error_of: Callable[[Message], int],
        timeout_ms: int,
        *,
        once_sent: bool = False,
    ) -> Message:
        """The active controller's answer to ``build(version)``: asked again while no node
        is active or the one asked answers NOT_CONTROLLER (``error_of`` reads its code),
        for ``timeout_ms`` at most. :class:`ControllerUnavailableError` after that.
        ``once_sent``: a request the controller may not apply twice (a client's admin
        request) is not sent again after it went out unanswered."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        why = "the metadata quorum has no leader"
        while True:
            leader = self._leader_id()
            if leader >= 0:
                try:
                    response, _ = await self._peers.send(leader, api_key, build)
                except PeerUnreachableError as exc:
                    if once_sent and isinstance(exc, PeerTimeoutError):
                        # Sent and not answered: the controller may have applied it, so
                        # it is not sent again (Kafka's forwarding: REQUEST_TIMED_OUT).
                        raise ControllerUnavailableError(
                            f"node {leader}, the active controller, did not answer in time"
                            f" ({exc}); it may have applied the request, so check before"
                            " sending it again"
                        ) from None
                    why = str(exc)
                else:
                    if error_of(response) != ErrorCode.NOT_CONTROLLER:
                        return response
                    why = f"node {leader} is no longer the active controller"
            if loop.time() + self._backoff >= deadline:
                raise ControllerUnavailableError(
                    f"no active controller answered within {timeout_ms} ms (last: {why}); "
                    "check that a majority of controller.quorum.voters is running and "
                    "reachable"
                )
            await asyncio.sleep(self._backoff)

    def close(self) -> None:
        self._peers.close()

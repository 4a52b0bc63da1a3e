"""This controller's registration with the active controller (Kafka's
ControllerRegistrationManager).

Every node with the controller role sends ControllerRegistration to the active
controller, with a new incarnation id each start, its controller listeners and the
feature levels it supports, until the committed metadata holds that incarnation. Kafka's
controllers read those registrations: DescribeCluster on a controller listener lists
them, and a feature upgrade (``kafka-features upgrade``) refuses a level that a
controller never registered support for. The active controller registers itself
through its own controller; any other sends the request to the leader's controller
listener, and tries again on the next check while the answer is an error or does not
come.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping

from millpond.controller import cluster_control
from millpond.controller.channel import LocalControllerChannel
from millpond.controller.image import BrokerEndpoint, MetadataImage
from millpond.controller.peer_channel import PeerChannel, PeerUnreachableError
from millpond.controller.raft.keys import Endpoint
from millpond.controller.results import NotControllerError
from millpond.wire.api import ApiKey
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api import controller_registration_request as creg
from millpond.wire.generated.api import controller_registration_response as creg_resp
from millpond.wire.message import Message

__all__ = ["ControllerRegistrar"]

_log = logging.getLogger(__name__)
#: PLAINTEXT's SecurityProtocol id: the only protocol controller listeners serve yet.
_PLAINTEXT = 0
#: How often the registration is checked (and, while missing, sent again).
CHECK_INTERVAL_S = 0.5


class ControllerRegistrar:
    def __init__(
        self,
        node_id: int,
        incarnation_id: bytes,
        features: Mapping[str, tuple[int, int]],
        *,
        channel: LocalControllerChannel,
        peers: PeerChannel,
        image: Callable[[], MetadataImage],
        leader_id: Callable[[], int],
        is_active: Callable[[], bool],
        endpoints: Callable[[], tuple[Endpoint, ...]],
    ) -> None:
        """``image``: the committed metadata; ``leader_id``: the quorum's leader (-1 when
        none is known); ``is_active``: whether this node is the active controller;
        ``endpoints``: this node's controller listeners (empty until they are bound)."""
        self.node_id = node_id
        self.incarnation_id = incarnation_id
        self._features = sorted((name, low, high) for name, (low, high) in features.items())
        self._channel = channel
        self._peers = peers
        self._image = image
        self._leader_id = leader_id
        self._is_active = is_active
        self._endpoints = endpoints
        self._wake = asyncio.Event()

    def wake(self) -> None:
        """Check now (the listeners were bound, or the leader changed)."""
        self._wake.set()

    @property
    def registered(self) -> bool:
        """Whether the committed metadata holds this incarnation's registration."""
        found = self._image().controllers.get(self.node_id)
        return found is not None and found.incarnation_id == self.incarnation_id

    async def run(self) -> None:
        while True:
            self._wake.clear()
            if not self.registered:
                await self.register_once()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), CHECK_INTERVAL_S)

    async def register_once(self) -> ErrorCode | None:
        """Send the registration to the active controller once: its answer, or None
        when there is nothing to send to yet (no leader, no bound listener) or no
        answer came."""
        endpoints = tuple(
            BrokerEndpoint(e.listener, e.host, e.port, _PLAINTEXT) for e in self._endpoints()
        )
        leader = self._leader_id()
        if not endpoints or leader < 0 or (leader == self.node_id and not self._is_active()):
            return None  # nowhere to send it yet (this node leads, its controller not yet)
        if self._is_active():
            request = cluster_control.ControllerRegistrationRequest(
                self.node_id, self.incarnation_id, endpoints, self._features
            )
            try:
                answer = await self._channel.submit(lambda c: c.register_controller(request))
            except NotControllerError:
                return None
            return self._logged(answer.code, answer.message)
        try:
            response, _ = await self._peers.send(
                leader, ApiKey.CONTROLLER_REGISTRATION, lambda _: self._request(endpoints)
            )
        except PeerUnreachableError as exc:
            _log.debug("controller registration: %s", exc)
            return None
        assert isinstance(response, creg_resp.ControllerRegistrationResponse)
        return self._logged(ErrorCode(response.error_code), response.error_message)

    def close(self) -> None:
        """Close the connection to the active controller."""
        self._peers.close()

    def _request(self, endpoints: tuple[BrokerEndpoint, ...]) -> Message:
        return creg.ControllerRegistrationRequest(
            controller_id=self.node_id,
            incarnation_id=self.incarnation_id,
            zk_migration_ready=False,
            listeners=[
                creg.Listener(
                    name=e.name, host=e.host, port=e.port, security_protocol=e.security_protocol
                )
                for e in endpoints
            ],
            features=[
                creg.Feature(name=name, min_supported_version=low, max_supported_version=high)
                for name, low, high in self._features
            ],
        )

    def _logged(self, error: ErrorCode, message: str | None) -> ErrorCode:
        if error != ErrorCode.NONE and error != ErrorCode.NOT_CONTROLLER:
            _log.warning(
                "controller %d: the active controller refused its registration: %s %s",
                self.node_id,
                error.name,
                message or "",
            )
        return error

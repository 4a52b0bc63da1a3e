"""What a controller listener hands to this node's controller role.

- The KRaft APIs: Vote (52), BeginQuorumEpoch (53), EndQuorumEpoch (54), DescribeQuorum
  (55), FetchSnapshot (59), AddRaftVoter (80), RemoveRaftVoter (81), UpdateRaftVoter
  (82), and Fetch (1) of
  ``__cluster_metadata``. This node's replica of the metadata quorum answers them as
  Kafka 4.4's raft client does (the answer may wait: a follower's Fetch long-polls at the
  leader). DescribeQuorum comes here from broker listeners too.
- The lifecycle APIs: BrokerRegistration (62), BrokerHeartbeat (63),
  AllocateProducerIds (67), AlterPartition (56) and ControllerRegistration (70), which
  the active controller answers once their records commit (NOT_CONTROLLER elsewhere).

A node without a controller role serves no controller listener, so only a broker
listener's DescribeQuorum can find none here; the connection is then closed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.broker.dispatch import CloseConnection
from millpond.wire import Message

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer

#: BrokerRegistration, BrokerHeartbeat, AllocateProducerIds, AlterPartition and
#: ControllerRegistration.
LIFECYCLE_APIS = frozenset({56, 62, 63, 67, 70})


async def handle(broker: BrokerServer, ctx: RequestContext, request: Message) -> Message:
    quorum = broker.quorum
    if quorum is None:
        raise CloseConnection(
            f"{type(request).__name__} reached a node with no controller role; send it to"
            " a controller listener"
        )
    if request.API_KEY in LIFECYCLE_APIS:
        return await quorum.handle_controller_request(request, ctx.api_version, ctx.connection_id)
    return await quorum.handle_raft_request(request, ctx.api_version)

"""The KRaft APIs on a controller listener: Vote (52), BeginQuorumEpoch (53),
EndQuorumEpoch (54), DescribeQuorum (55), FetchSnapshot (59), AddRaftVoter (80),
RemoveRaftVoter (81), and Fetch (1) of ``__cluster_metadata``.

Each goes to this node's replica of the metadata quorum, which answers as Kafka 4.4's
raft client does (the answer may wait: a follower's Fetch long-polls at the leader). A
node without a controller role serves no controller listener, so never gets here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.broker.dispatch import CloseConnection
from millpond.wire import Message

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer


async def handle(broker: BrokerServer, ctx: RequestContext, request: Message) -> Message:
    if broker.quorum is None:
        raise CloseConnection(
            f"{type(request).__name__} reached a node with no controller role; send KRaft"
            " requests to a controller listener"
        )
    return await broker.quorum.handle_raft_request(request, ctx.api_version)

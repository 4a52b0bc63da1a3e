"""ConsumerGroupDescribe (key 69), v0-1: describe consumer-protocol groups (KIP-848).

Behaviour, as Apache Kafka 4.4 when ``group.coordinator.rebalance.protocols`` is
``classic`` (millpond's only protocol so far): every group asked about is answered
UNSUPPORTED_VERSION with no message, in the
order asked. Classic groups are described by DescribeGroups.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.consumer_group_describe_request import (
    ConsumerGroupDescribeRequest,
)
from millpond.wire.generated.api.consumer_group_describe_response import (
    ConsumerGroupDescribeResponse,
    DescribedGroup,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer


def handle(
    broker: BrokerServer, ctx: RequestContext, request: ConsumerGroupDescribeRequest
) -> ConsumerGroupDescribeResponse:
    del broker, ctx
    return ConsumerGroupDescribeResponse(
        groups=[
            DescribedGroup(group_id=group, error_code=ErrorCode.UNSUPPORTED_VERSION)
            for group in request.group_ids
        ]
    )

"""The consumer group protocol's APIs with only the classic protocol enabled: advertised
with Kafka 4.4's ranges and refused, so a client asking for that protocol fails at once."""

from __future__ import annotations

from typing import Any, cast

import pytest

from millpond.broker.emulation import RANGES
from millpond.broker.handlers import ROUTES, consumer_group_describe, consumer_group_heartbeat
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.consumer_group_describe_request import (
    ConsumerGroupDescribeRequest,
)
from millpond.wire.generated.api.consumer_group_heartbeat_request import (
    ConsumerGroupHeartbeatRequest,
)

#: Neither handler looks at the broker or the request's context.
NOTHING = cast("Any", None)


@pytest.mark.parametrize("api_key", [68, 69])
def test_advertised_with_kafkas_range(api_key: int) -> None:
    [route] = [r for r in ROUTES if r.api_key == api_key]
    assert (route.min_version, route.max_version) == RANGES["4.4"][api_key]


@pytest.mark.parametrize(
    "request_",
    [
        ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=0),
        ConsumerGroupHeartbeatRequest(group_id="g", member_id="m", member_epoch=-1),
        ConsumerGroupHeartbeatRequest(group_id=""),
    ],
)
def test_every_heartbeat_is_unsupported(request_: ConsumerGroupHeartbeatRequest) -> None:
    response = consumer_group_heartbeat.handle(NOTHING, NOTHING, request_)
    assert response.error_code == ErrorCode.UNSUPPORTED_VERSION
    assert response.error_message is None and response.member_id is None
    assert response.assignment is None


def test_every_group_described_is_unsupported_in_order() -> None:
    request = ConsumerGroupDescribeRequest(group_ids=["b", "a", ""])
    response = consumer_group_describe.handle(NOTHING, NOTHING, request)
    assert [(g.group_id, g.error_code, g.error_message) for g in response.groups] == [
        (name, ErrorCode.UNSUPPORTED_VERSION, None) for name in ("b", "a", "")
    ]

from __future__ import annotations

import pytest

from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.find_coordinator_request import FindCoordinatorRequest
from millpond.wire.generated.api.find_coordinator_response import FindCoordinatorResponse

from .harness import Client, running_broker


@pytest.mark.parametrize("version", range(4))
def test_single_key_versions(version: int) -> None:
    with running_broker() as broker:
        _, response = Client(broker.port).request(FindCoordinatorRequest(key="g"), version)
        assert isinstance(response, FindCoordinatorResponse)
        assert (response.error_code, response.node_id) == (ErrorCode.NONE, broker.node_id)
        assert (response.host, response.port) == broker.advertised


@pytest.mark.parametrize("version", [4, 5, 6])
def test_batched_keys_and_types(version: int) -> None:
    with running_broker() as broker:
        client = Client(broker.port)
        for key_type, code in [
            (0, ErrorCode.NONE),
            (1, ErrorCode.NONE),
            (2, ErrorCode.COORDINATOR_NOT_AVAILABLE),
            (7, ErrorCode.INVALID_REQUEST),
        ]:
            request = FindCoordinatorRequest(key_type=key_type, coordinator_keys=["a", "b"])
            _, response = client.request(request, version)
            assert isinstance(response, FindCoordinatorResponse)
            assert [c.key for c in response.coordinators] == ["a", "b"]
            assert {c.error_code for c in response.coordinators} == {code}

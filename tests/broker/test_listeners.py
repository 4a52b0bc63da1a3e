"""Every listener of ``listeners`` served over real sockets, each with its own routes and
advertised endpoint; the authorization hook's refusals as a client receives them."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from millpond.broker.authorization import Action, ResourceType
from millpond.broker.config import ConfigError, build_config
from millpond.broker.config_defs_listeners import Listener
from millpond.broker.context import RequestContext
from millpond.broker.handlers import CONTROLLER_ROUTES
from millpond.broker.server import CONTROLLER_APIS, plan_listeners
from millpond.testing.embedded import broker as embedded_broker
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.api_versions_request import ApiVersionsRequest
from millpond.wire.generated.api.describe_cluster_request import DescribeClusterRequest
from millpond.wire.generated.api.find_coordinator_request import FindCoordinatorRequest
from millpond.wire.generated.api.metadata_request import MetadataRequest, MetadataRequestTopic

from .harness import Client, running_broker

VERSIONS = ApiVersionsRequest(client_software_name="test", client_software_version="1")
THREE_LISTENERS = {
    "listeners": "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
    "listener.security.protocol.map": (
        "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT"
    ),
    "controller.listener.names": "CONTROLLER",
}


def test_each_listener_answers_with_its_own_endpoint_and_routes() -> None:
    with embedded_broker(configs=THREE_LISTENERS) as handle:
        ports = handle.call(lambda b: {s.listener.name: s.port for s in b.listeners.servers})
        assert len(set(ports.values())) == 3
        for name in ("PLAINTEXT", "INTERNAL"):
            client = Client(ports[name])
            _, metadata = client.request(MetadataRequest(topics=None), 12)
            assert [(b.host, b.port) for b in metadata.brokers] == [("127.0.0.1", ports[name])]
            _, cluster = client.request(DescribeClusterRequest(), 1)
            assert [(b.host, b.port) for b in cluster.brokers] == [("127.0.0.1", ports[name])]
            _, found = client.request(FindCoordinatorRequest(key="g"), 3)
            assert (found.error_code, found.port) == (ErrorCode.NONE, ports[name])
            _, versions = client.request(VERSIONS, 3)
            assert {0, 1, 3} <= {k.api_key for k in versions.api_keys}
            client.close()
        # The controller listener serves the controller's APIs, not the broker's.
        controller = Client(ports["CONTROLLER"])
        _, versions = controller.request(VERSIONS, 3)
        raft = {r.api_key for r in CONTROLLER_ROUTES}
        assert {k.api_key for k in versions.api_keys} == CONTROLLER_APIS | raft
        with pytest.raises(ConnectionError):
            controller.request(MetadataRequest(topics=None), 12)
        # Registered with the controller: the broker listeners, not the controller's.
        endpoints = handle.call(lambda b: b.image.brokers[1].endpoints)
        assert [(e.name, e.port) for e in endpoints] == [
            ("PLAINTEXT", ports["PLAINTEXT"]),
            ("INTERNAL", ports["INTERNAL"]),
        ]


def test_a_listener_it_cannot_serve_is_refused_not_served_as_plaintext(tmp_path: Path) -> None:
    props = dict(THREE_LISTENERS, **{"log.dirs": str(tmp_path)})
    props["listener.security.protocol.map"] = (
        "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT,CONTROLLER:SSL"
    )
    with pytest.raises(ConfigError, match="listener CONTROLLER"):
        build_config(props, env={})
    # The servers refuse it too, whatever built the listener list.
    ssl = Listener("CONTROLLER", "127.0.0.1", 0, "SSL")
    with pytest.raises(ConfigError, match="CONTROLLER uses SSL; millpond serves only PLAINTEXT"):
        plan_listeners([ssl], [], ["CONTROLLER"])
    result = subprocess.run(
        [sys.executable, "-m", "millpond", "serve", *(
            a for key, value in props.items() for a in ("--override", f"{key}={value}")
        )],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert "listeners" in result.stderr and "CONTROLLER" in result.stderr
    assert "Traceback" not in result.stderr


class RefuseSecrets:
    """Refuses every action on topics named ``secret*`` and on the cluster."""

    def __init__(self) -> None:
        self.principals: list[str] = []

    def authorize(self, ctx: RequestContext, actions: Sequence[Action]) -> Sequence[bool]:
        self.principals.append(f"{ctx.principal} on {ctx.listener.name} from {ctx.client_address}")
        return [
            not (a.resource_type == ResourceType.CLUSTER or a.name.startswith("secret"))
            for a in actions
        ]


def test_an_authorizers_refusal_reaches_the_client_as_kafkas_error() -> None:
    authorizer = RefuseSecrets()
    with running_broker(authorizer=authorizer) as broker:
        client = Client(broker.port)
        _, versions = client.request(VERSIONS, 3)  # asks for nothing
        assert versions.error_code == ErrorCode.NONE and authorizer.principals == []
        wanted = [MetadataRequestTopic(name="secret"), MetadataRequestTopic(name="open")]
        _, metadata = client.request(MetadataRequest(topics=wanted), 12)
        by_name = {t.name: t.error_code for t in metadata.topics}
        assert by_name["secret"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert by_name["open"] != ErrorCode.TOPIC_AUTHORIZATION_FAILED
        assert set(authorizer.principals) == {"User:ANONYMOUS on PLAINTEXT from 127.0.0.1"}
        # Without a refusal its response can carry, the connection closes (one log line).
        with pytest.raises(ConnectionError):
            client.request(DescribeClusterRequest(), 1)

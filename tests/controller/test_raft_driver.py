"""Three controllers on loopback, speaking Kafka's KRaft protocol to each other through
their drivers: they elect one leader, replicate what it commits, and elect another when
it dies. Real sockets and real bytes; each node's controller listener is a small Kafka
request server in front of its ``handle_raft_request``."""

from __future__ import annotations

import asyncio
import random
import struct
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from millpond.controller.controller import ControllerConfig
from millpond.controller.controller_server import ControllerServer
from millpond.controller.image import BrokerEndpoint
from millpond.controller.raft import codec
from millpond.controller.raft.config import RaftConfig
from millpond.controller.raft.keys import Endpoint, ReplicaKey, Voter, VoterSet
from millpond.controller.raft.node import Role
from millpond.controller.replication_control import CreatableTopic
from millpond.storage.clock import SystemClock
from millpond.storage.fs import OsFileSystem
from millpond.wire import ApiKey, Message, ResponseHeader, decode_request, encode_response
from millpond.wire.generated.api.api_versions_response import ApiVersion, ApiVersionsResponse

CLUSTER_ID = "cmFmdC1kcml2ZXItdGVzdA"
CONFIG = RaftConfig(
    cluster_id=CLUSTER_ID,
    kraft_version=0,
    election_timeout_ms=150,
    fetch_timeout_ms=300,
    election_backoff_max_ms=150,
    request_timeout_ms=300,
    fetch_max_wait_ms=100,
)
_SIZE = struct.Struct(">i")
API_VERSIONS = ApiVersionsResponse(
    api_keys=[
        ApiVersion(api_key=k, min_version=lo, max_version=hi)
        for k, (lo, hi) in {**codec.SUPPORTED_VERSIONS, ApiKey.API_VERSIONS: (0, 4)}.items()
    ]
)


class Node:
    def __init__(self, node_id: int, directory: Path, voters: VoterSet) -> None:
        self.node_id = node_id
        self.directory = directory
        self.voters = voters
        self.server: ControllerServer | None = None
        self.listener: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    @property
    def port(self) -> int:
        voter = self.voters.get(self.node_id)
        assert voter is not None
        return voter.endpoints[0].port

    async def start(self) -> None:
        self.server = ControllerServer(
            OsFileSystem(),
            str(self.directory),
            SystemClock(),
            random.Random(self.node_id),
            ControllerConfig(self.node_id, CLUSTER_ID),
            voters=self.voters,
            raft_config=CONFIG,
        )
        self.listener = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        await self.server.start()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server = self.server
        assert server is not None
        self._writers.add(writer)
        try:
            while True:
                (size,) = _SIZE.unpack(await reader.readexactly(4))
                header, body = decode_request(await reader.readexactly(size))
                version = header.request_api_version
                if header.request_api_key == ApiKey.API_VERSIONS:
                    answer: Message = API_VERSIONS
                else:
                    answer = await server.handle_raft_request(body, version)
                frame = encode_response(
                    ResponseHeader(correlation_id=header.correlation_id), answer, version
                )
                writer.write(_SIZE.pack(len(frame)) + frame)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the peer went away, or this node was killed
        finally:
            self._writers.discard(writer)
            writer.close()

    async def kill(self) -> None:
        """Stop answering and sending at once, as a killed process would."""
        assert self.server is not None and self.listener is not None
        self.listener.close()
        for writer in list(self._writers):
            writer.close()
        await self.server.stop()
        await self.listener.wait_closed()
        self.server = None


def voters_on(ports: list[int]) -> VoterSet:
    return VoterSet(
        Voter(ReplicaKey(i + 1), (Endpoint("CONTROLLER", "127.0.0.1", port),))
        for i, port in enumerate(ports)
    )


def free_ports(n: int) -> list[int]:
    import socket  # noqa: PLC0415

    sockets = [socket.socket() for _ in range(n)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@asynccontextmanager
async def quorum(tmp: Path, size: int = 3) -> AsyncIterator[list[Node]]:
    voters = voters_on(free_ports(size))
    nodes = [Node(i + 1, tmp / f"c{i + 1}", voters) for i in range(size)]
    for node in nodes:
        node.directory.mkdir()
        await node.start()
    try:
        yield nodes
    finally:
        for node in nodes:
            if node.server is not None:
                await node.kill()


async def until(condition: Callable[[], object], what: str, seconds: float = 10) -> None:
    """Wait for a real condition, bounded."""
    async with asyncio.timeout(seconds):
        while not condition():
            await asyncio.sleep(0.01)
    assert condition(), what


def leaders(nodes: list[Node]) -> list[Node]:
    return [n for n in nodes if n.server is not None and n.server.controller.is_active]


def servers(nodes: list[Node]) -> list[ControllerServer]:
    return [n.server for n in nodes if n.server is not None]


async def create_topic(server: ControllerServer, name: str) -> None:
    channel = server.channel
    if not server.controller.image.brokers:
        endpoint = BrokerEndpoint("PLAINTEXT", "127.0.0.1", 9092, 0)
        registered = await channel.register_broker(1, [endpoint])
        await channel.unfence_broker(1, registered.broker_epoch)
    [created] = await channel.create_topics([CreatableTopic(name, 1)])
    assert created.error.is_success, created


def committed_batches(server: ControllerServer) -> list[bytes]:
    raft = server.raft
    return [bytes(b.buffer) for b in raft.log.batches(0, max(raft.high_watermark, 0))]


def test_three_controllers_elect_one_leader_replicate_and_fail_over(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with quorum(tmp_path) as nodes:
            await until(lambda: len(leaders(nodes)) == 1, "one active controller")
            [first] = leaders(nodes)
            assert first.server is not None
            await create_topic(first.server, "a")
            await until(
                lambda: all(s.committed_image.topic("a") for s in servers(nodes)),
                "every controller has the topic",
            )
            epochs = {s.raft.leader.epoch for s in servers(nodes)}
            assert len(epochs) == 1

            await first.kill()
            await until(lambda: len(leaders(nodes)) == 1, "a new active controller")
            [second] = leaders(nodes)
            assert second is not first and second.server is not None
            assert second.server.raft.leader.epoch > epochs.pop()
            assert second.server.committed_image.topic("a") is not None
            await create_topic(second.server, "b")
            await until(
                lambda: all(s.committed_image.topic("b") for s in servers(nodes)),
                "both remaining controllers have the new topic",
            )
            # The old leader comes back as a follower and catches up.
            await first.start()
            assert first.server is not None
            await until(
                lambda: (
                    first.server is not None and first.server.committed_image.topic("b") is not None
                ),
                "the restarted controller caught up",
            )
            assert first.server.raft.node.role is Role.FOLLOWER
            logs = [committed_batches(s) for s in servers(nodes)]
            shortest = min(len(log) for log in logs)
            assert shortest > 0 and all(log[:shortest] == logs[0][:shortest] for log in logs)

    asyncio.run(scenario())

"""A small blocking Kafka client over millpond.wire, for the command line.

One socket per broker, one request in flight, versions negotiated per connection: the
highest version of each API that both this client and the broker support, so the same
commands talk to millpond and to Apache Kafka. It does what the commands need and no
more: metadata with leader routing, admin requests, produce, fetch, offsets and groups.
"""

from __future__ import annotations

import socket
import struct
import time
from collections.abc import Callable
from typing import Any

from millpond.cli.errors import CliError, kafka_error
from millpond.wire import APIS, DecodeError, Message, RequestHeader, decode_response, encode_request
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.api_versions_request import ApiVersionsRequest
from millpond.wire.generated.api.find_coordinator_request import FindCoordinatorRequest
from millpond.wire.generated.api.list_offsets_request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from millpond.wire.generated.api.metadata_request import MetadataRequest, MetadataRequestTopic
from millpond.wire.generated.api.offset_commit_request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from millpond.wire.generated.api.offset_fetch_request import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)

DEFAULT_BOOTSTRAP = "localhost:9092"
#: ListOffsets' special timestamps.
EARLIEST, LATEST = -2, -1

#: Group errors after which a client finds the coordinator again and retries.
COORDINATOR_MOVED = frozenset(
    {
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.NOT_COORDINATOR,
    }
)

#: The oldest version of each API whose shape this client's code handles (default: the
#: specs' oldest); it speaks up to the newest stable version in the specs. Ignorable fields
#: that moved between versions (topic names and ids) are both set and both read; where a
#: shape changed (FindCoordinator's batching, OffsetFetch's groups, LeaveGroup's member
#: list), the request is built for the version negotiated.
_CLIENT_MIN = {0: 3, 1: 4, 2: 1, 3: 1, 8: 2, 9: 1, 10: 1, 15: 0, 16: 0, 18: 0}


def client_max(key: int) -> int:
    api = APIS[key]
    return api.max_version - 1 if api.latest_version_unstable else api.max_version


def client_range(key: int) -> tuple[int, int]:
    """The versions of API ``key`` this client speaks."""
    return _CLIENT_MIN.get(key, APIS[key].min_version), client_max(key)


def parse_address(address: str) -> tuple[str, int]:
    host, sep, port = address.strip().rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise CliError(
            f"bad broker address {address!r}",
            "pass --bootstrap-server HOST:PORT, e.g. 127.0.0.1:9092",
        )
    return host.strip("[]"), int(port)


def recv_exactly(sock: socket.socket, n: int) -> bytes:
    """``n`` bytes from a blocking socket; ConnectionError if the peer closes first."""
    data = bytearray()
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed by the broker")
        data += chunk
    return bytes(data)


class Connection:
    """One socket to one broker, with the API versions it advertised."""

    def __init__(self, host: str, port: int, timeout: float, client_id: str) -> None:
        self.address = f"{host}:{port}"
        self.client_id = client_id
        try:
            self._sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise CliError(
                f"cannot reach a broker at {self.address}: {exc.strerror or exc}",
                "check that a broker runs there, or pass --bootstrap-server HOST:PORT",
            ) from None
        self._correlation_id = 0
        self.versions: dict[int, tuple[int, int]] = {}
        self._negotiate()

    def _negotiate(self) -> None:
        """ApiVersions v3. A broker that does not know v3 answers in v0's shape, with
        UNSUPPORTED_VERSION and its versions all the same (KIP-511): read that answer as
        v0 rather than fail, and use the versions it lists."""
        request = ApiVersionsRequest(
            client_software_name="millpond-cli", client_software_version="1"
        )
        frame = self._roundtrip(request, 3, decode=False)
        # The response header (correlation id) is 4 bytes; every version starts with the
        # error code.
        if frame[4:6] == ErrorCode.UNSUPPORTED_VERSION.to_bytes(2, "big"):
            response = self._decode(frame, request, 0)
        else:
            response = self._decode(frame, request, 3)
        if response.error_code not in (0, ErrorCode.UNSUPPORTED_VERSION):
            raise kafka_error(response.error_code, f"ApiVersions from {self.address}")
        self.versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}

    def version(self, key: int) -> int:
        """The highest version of API ``key`` both sides support."""
        name = APIS[key].name
        theirs = self.versions.get(key)
        ours = client_range(key)
        if theirs is None or max(theirs[0], ours[0]) > min(theirs[1], ours[1]):
            raise CliError(
                f"the broker at {self.address} does not serve {name} in a version this "
                f"client speaks (broker: {theirs or 'none'}, client: {ours})",
                "use a broker that supports this command",
            )
        return min(theirs[1], ours[1])

    def request(self, body: Message) -> Any:
        assert body.API_KEY is not None
        return self._roundtrip(body, self.version(body.API_KEY))

    def send_only(self, body: Message) -> None:
        """Send a request the broker does not answer (Produce with acks=0)."""
        self._roundtrip(body, self.version(0), answered=False)

    def _roundtrip(
        self, body: Message, version: int, answered: bool = True, decode: bool = True
    ) -> Any:
        assert body.API_KEY is not None
        name = APIS[body.API_KEY].name
        self._correlation_id += 1
        header = RequestHeader(
            request_api_key=body.API_KEY,
            request_api_version=version,
            correlation_id=self._correlation_id,
            client_id=self.client_id,
        )
        frame = encode_request(header, body)
        try:
            self._sock.sendall(struct.pack(">i", len(frame)) + frame)
            if not answered:
                return None
            (size,) = struct.unpack(">i", self._read(4))
            frame = self._read(size)
            return self._decode(frame, body, version) if decode else frame
        except BaseException as exc:
            # Interrupted mid-exchange (Ctrl-C during a long poll, a timeout): an answer may
            # still be on its way, so this socket is never trusted with another request.
            self.close()
            if isinstance(exc, TimeoutError):
                raise CliError(
                    f"{self.address} did not answer {name} in time",
                    "the broker may be overloaded; retry, or raise --timeout-ms",
                ) from None
            if isinstance(exc, OSError):
                raise CliError(
                    f"lost the connection to {self.address} during {name}: {exc}",
                    "check the broker's log; is it a Kafka broker?",
                ) from None
            raise

    def _decode(self, frame: bytes, body: Message, version: int) -> Any:
        assert body.API_KEY is not None
        try:
            return decode_response(frame, body.API_KEY, version)[1]
        except DecodeError as exc:
            self.close()
            raise CliError(
                f"cannot read {self.address}'s answer to {APIS[body.API_KEY].name}: {exc}",
                "check the broker's log; is it a Kafka broker?",
            ) from None

    def _read(self, n: int) -> bytes:
        return recv_exactly(self._sock, n)

    @property
    def closed(self) -> bool:
        return self._sock.fileno() < 0

    def close(self) -> None:
        self._sock.close()


class Client:
    """Connections to the brokers of one cluster, found from the bootstrap address."""

    def __init__(
        self, bootstrap: str, timeout_ms: int = 30000, client_id: str = "millpond-cli"
    ) -> None:
        self.timeout = timeout_ms / 1000
        self.client_id = client_id
        self._addresses = [parse_address(a) for a in bootstrap.split(",") if a.strip()]
        if not self._addresses:
            raise CliError("no broker address given", "pass --bootstrap-server HOST:PORT")
        self.brokers: dict[int, tuple[str, int]] = {}
        self._by_node: dict[int, Connection] = {}
        self._bootstrap: Connection | None = None
        self._topic_ids: dict[str, bytes] = {}

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        for conn in {id(c): c for c in [*self._by_node.values(), self._bootstrap] if c}.values():
            conn.close()
        self._by_node.clear()
        self._bootstrap = None

    def any(self) -> Connection:
        """A connection to some broker of the cluster (the first bootstrap that answers)."""
        if self._bootstrap is not None and self._bootstrap.closed:
            self._bootstrap = None
        if self._bootstrap is None:
            failure: CliError | None = None
            for host, port in self._addresses:
                try:
                    self._bootstrap = Connection(host, port, self.timeout, self.client_id)
                    break
                except CliError as exc:
                    failure = exc
            if self._bootstrap is None:
                assert failure is not None
                raise failure
        return self._bootstrap

    def node(self, node_id: int) -> Connection:
        """The connection to broker ``node_id`` (as Metadata or FindCoordinator named it)."""
        conn = self._by_node.get(node_id)
        if conn is None or conn.closed:
            if node_id not in self.brokers:
                self.metadata([])
            if node_id not in self.brokers:
                raise CliError(
                    f"broker {node_id} is not in the cluster's metadata",
                    "the cluster is changing; retry in a moment",
                )
            host, port = self.brokers[node_id]
            conn = Connection(host, port, self.timeout, self.client_id)
            self._by_node[node_id] = conn
        return conn

    # --- metadata -----------------------------------------------------------------------

    def metadata(self, topics: list[str] | None, allow_auto_create: bool = False) -> Any:
        """Metadata of ``topics`` (``None``: every topic; ``[]``: brokers only). Only with
        ``allow_auto_create`` may the broker create a missing topic (when its
        ``auto.create.topics.enable`` is on), as producers' metadata requests allow."""
        request = MetadataRequest(
            topics=None if topics is None else [MetadataRequestTopic(name=t) for t in topics],
            allow_auto_topic_creation=allow_auto_create,
        )
        response = self.any().request(request)
        self.brokers.update({b.node_id: (b.host, b.port) for b in response.brokers})
        for topic in response.topics:
            if topic.name:
                self._topic_ids[topic.name] = topic.topic_id
        return response

    def topic_id(self, topic: str) -> bytes:
        if topic not in self._topic_ids:
            self.partitions(topic)
        return self._topic_ids.get(topic, bytes(16))

    def partitions(
        self, topic: str, wait_s: float = 5.0, create: bool = False, created: bool = False
    ) -> dict[int, int]:
        """``{partition: leader node id}`` of ``topic``; waits up to ``wait_s`` for leaders
        (a topic created a moment ago may have none yet).

        With ``create``, a missing topic is asked for as Kafka's producers ask: the broker
        creates it if its ``auto.create.topics.enable`` is on, and answers
        UNKNOWN_TOPIC_OR_PARTITION until the topic is there (Kafka 4.4 answers so even to
        the request that created it), so that answer is waited through as well. So it is
        with ``created`` (a topic this client has just created: Kafka's brokers learn it
        from the metadata log a moment after CreateTopics answers)."""
        deadline = time.monotonic() + wait_s
        while True:
            response = self.metadata([topic], allow_auto_create=create)
            (found,) = [t for t in response.topics if t.name == topic] or [None]
            missing = found is None or found.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            if missing and (not (create or created) or time.monotonic() > deadline):
                raise CliError(
                    f"topic {topic!r} does not exist"
                    + (" and the broker did not create it" if create else ""),
                    "check the name with `millpond topic list`, or create it with "
                    f"`millpond topic create {topic}`"
                    + (" (or turn on the broker's auto.create.topics.enable)" if create else ""),
                )
            if found is not None and found.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION:
                raise kafka_error(found.error_code, f"metadata of topic {topic!r}")
            if found is not None and not missing:
                leaders = {p.partition_index: p.leader_id for p in found.partitions}
                ready = found.error_code == 0 and leaders and min(leaders.values()) >= 0
                if ready:
                    return dict(sorted(leaders.items()))
                if time.monotonic() > deadline:
                    if found.error_code:
                        raise kafka_error(found.error_code, f"metadata of topic {topic!r}")
                    raise CliError(
                        f"topic {topic!r} has partitions without a leader",
                        "the cluster is recovering; retry in a moment",
                    )
            time.sleep(0.05)

    def controller(self) -> Connection:
        """The connection admin requests go to (Kafka forwards them to the controller)."""
        response = self.metadata([])
        if response.controller_id >= 0 and response.controller_id in self.brokers:
            return self.node(response.controller_id)
        return self.any()

    # --- offsets and groups ---------------------------------------------------------------

    def list_offsets(
        self, topic: str, partitions: dict[int, int], timestamp: int, isolation: int = 0
    ) -> dict[int, tuple[int, int]]:
        """``{partition: (offset, timestamp)}`` for a ListOffsets ``timestamp`` (or
        :data:`EARLIEST` / :data:`LATEST`), asked of each partition's leader; with
        ``isolation`` 1 (read_committed), LATEST is the last stable offset."""
        by_leader: dict[int, list[int]] = {}
        for partition, leader in partitions.items():
            by_leader.setdefault(leader, []).append(partition)
        result: dict[int, tuple[int, int]] = {}
        for leader, indexes in by_leader.items():
            request = ListOffsetsRequest(
                replica_id=-1,
                isolation_level=isolation,
                topics=[
                    ListOffsetsTopic(
                        name=topic,
                        partitions=[
                            ListOffsetsPartition(partition_index=p, timestamp=timestamp)
                            for p in indexes
                        ],
                    )
                ],
                timeout_ms=int(self.timeout * 1000),
            )
            response = self.node(leader).request(request)
            for answer in response.topics:
                for part in answer.partitions:
                    if part.error_code:
                        raise kafka_error(
                            part.error_code, f"ListOffsets of {topic}-{part.partition_index}"
                        )
                    result[part.partition_index] = (part.offset, part.timestamp)
        return result

    def coordinator(self, group: str) -> Connection:
        """The connection to ``group``'s coordinator (retried while it is loading)."""
        deadline = time.monotonic() + self.timeout
        while True:
            conn = self.any()
            batched = conn.version(10) >= 4  # KIP-699: keys in a list, answers in a list
            if batched:
                request = FindCoordinatorRequest(key_type=0, coordinator_keys=[group])
            else:
                request = FindCoordinatorRequest(key=group, key_type=0)
            response = conn.request(request)
            answer = response.coordinators[0] if batched else response
            if answer.error_code == 0:
                self.brokers[answer.node_id] = (answer.host, answer.port)
                return self.node(answer.node_id)
            if answer.error_code not in COORDINATOR_MOVED or time.monotonic() > deadline:
                raise kafka_error(answer.error_code, f"the coordinator of group {group!r}")
            time.sleep(0.1)

    def group_request(
        self, group: str, build: Callable[[Connection], Message], error: Callable[[Any], int]
    ) -> tuple[Connection, Any]:
        """Send ``build(conn)`` to ``group``'s coordinator; while the answer's ``error`` says
        the coordinator is loading or has moved (a fresh ``__consumer_offsets``), find it
        again and retry until the timeout, as Kafka's clients do."""
        deadline = time.monotonic() + self.timeout
        while True:
            conn = self.coordinator(group)
            response = conn.request(build(conn))
            if error(response) not in COORDINATOR_MOVED or time.monotonic() > deadline:
                return conn, response
            time.sleep(0.1)

    def topic_name(self, topic_id: bytes) -> str:
        """The name of the topic with ``topic_id`` (newer responses carry only ids)."""
        names = {v: k for k, v in self._topic_ids.items()}
        if topic_id not in names:
            self.metadata(None)
            names = {v: k for k, v in self._topic_ids.items()}
        return names.get(topic_id, f"<topic id {topic_id.hex()}>")

    def committed(
        self, group: str, topics: dict[str, list[int]] | None
    ) -> dict[tuple[str, int], int]:
        """The offsets ``group`` committed: ``{(topic, partition): offset}`` (only the
        partitions with a commit; ``topics=None``: every topic)."""

        def build(conn: Connection) -> Message:
            if conn.version(9) >= 8:
                wanted = None
                if topics is not None:
                    wanted = [
                        OffsetFetchRequestTopics(
                            name=t, topic_id=self.topic_id(t), partition_indexes=p
                        )
                        for t, p in topics.items()
                    ]
                group_spec = OffsetFetchRequestGroup(group_id=group, member_id=None, topics=wanted)
                return OffsetFetchRequest(groups=[group_spec])
            old = None
            if topics is not None:
                old = [
                    OffsetFetchRequestTopic(name=t, partition_indexes=p) for t, p in topics.items()
                ]
            return OffsetFetchRequest(group_id=group, topics=old)

        def error(response: Any) -> int:
            code: int = (response.groups[0] if response.groups else response).error_code
            return code

        conn, response = self.group_request(group, build, error)
        v8 = conn.version(9) >= 8
        answer = response.groups[0] if v8 else response
        if answer.error_code:
            raise kafka_error(answer.error_code, f"committed offsets of group {group!r}")
        result: dict[tuple[str, int], int] = {}
        for topic in answer.topics:
            name = topic.name or self.topic_name(topic.topic_id)
            for part in topic.partitions:
                if part.error_code:
                    raise kafka_error(
                        part.error_code, f"committed offset of {name}-{part.partition_index}"
                    )
                if part.committed_offset >= 0:
                    result[(name, part.partition_index)] = part.committed_offset
        return result

    def commit(
        self,
        group: str,
        offsets: dict[tuple[str, int], int],
        generation: int = -1,
        member_id: str = "",
        tolerate: frozenset[int] = frozenset(),
    ) -> bool:
        """Commit ``offsets``; by default as a simple consumer (no member id, generation
        -1), which a group coordinator accepts only while the group has no members. False
        when the broker refused with an error in ``tolerate``; raises on any other."""
        by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
        for (topic, partition), offset in sorted(offsets.items()):
            by_topic.setdefault(topic, []).append(
                OffsetCommitRequestPartition(partition_index=partition, committed_offset=offset)
            )
        request = OffsetCommitRequest(
            group_id=group,
            generation_id_or_member_epoch=generation,
            member_id=member_id,
            group_instance_id=None,
            topics=[
                OffsetCommitRequestTopic(name=t, topic_id=self.topic_id(t), partitions=p)
                for t, p in by_topic.items()
            ],
        )

        def error(response: Any) -> int:
            codes = [p.error_code for t in response.topics for p in t.partitions]
            return next((c for c in codes if c), 0)

        _, response = self.group_request(group, lambda _: request, error)
        for topic in response.topics:
            for part in topic.partitions:
                if part.error_code in tolerate:
                    return False
                if part.error_code:
                    name = topic.name or self.topic_name(topic.topic_id)
                    raise kafka_error(
                        part.error_code, f"committing {name}-{part.partition_index} for {group!r}"
                    )
        return True

"""The connection state machine without sockets: bytes in, what it asks of its edge out,
on a clock the test moves."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import random
import struct
from collections.abc import Awaitable, Generator, Sequence
from typing import Any

import pytest

from millpond.broker.authorization import AclOperation, Action, ResourceType
from millpond.broker.context import ListenerInfo, RequestContext
from millpond.broker.control.faults import FaultAction, FaultPlan, FaultRule
from millpond.broker.dispatch import CloseConnection, Dispatcher, Route
from millpond.broker.network.connection import MAX_QUEUED_REQUESTS, Connection
from millpond.broker.trace import RequestTrace
from millpond.wire import Message, RequestHeader, decode_response, encode_request
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.api_versions_request import ApiVersionsRequest
from millpond.wire.generated.api.api_versions_response import ApiVersionsResponse
from millpond.wire.generated.api.describe_log_dirs_request import DescribeLogDirsRequest
from millpond.wire.generated.api.describe_log_dirs_response import DescribeLogDirsResponse
from millpond.wire.generated.api.metadata_request import MetadataRequest, MetadataRequestTopic
from millpond.wire.generated.api.metadata_response import MetadataResponse, MetadataResponseTopic
from millpond.wire.splice import SplicingWriter

API_VERSIONS, METADATA, DESCRIBE_LOG_DIRS = 18, 3, 35
MS = 1_000_000


class Clock:
    def __init__(self) -> None:
        self.now = 1_000 * MS

    def __call__(self) -> int:
        return self.now


class Edge:
    """Records what the connection asks; ``send`` answers ``sends_whole``."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self.waits: list[tuple[int, Awaitable[Message | None]]] = []
        self.wakes: list[int] = []
        self.reading: list[str] = []
        self.closes: list[tuple[str | None, int, BaseException | None]] = []
        self.sends_whole = True

    def send(self, frame: SplicingWriter) -> bool:
        self.frames.append(bytes(frame))
        return self.sends_whole

    def wait(self, token: int, pending: Awaitable[Message | None]) -> None:
        self.waits.append((token, pending))

    def wake_at(self, deadline_ns: int) -> None:
        self.wakes.append(deadline_ns)

    def pause_reading(self) -> None:
        self.reading.append("pause")

    def resume_reading(self) -> None:
        self.reading.append("resume")

    def close(
        self, reason: str | None, level: int = logging.WARNING, failure: BaseException | None = None
    ) -> None:
        self.closes.append((reason, level, failure))

    def correlation_ids(self, api_key: int, version: int) -> list[int]:
        return [decode_response(f, api_key, version)[0].correlation_id for f in self.frames]


class Pending:
    """An awaitable a handler returns: the test completes it through the connection."""

    def __await__(self) -> Generator[Any, None, Message | None]:
        raise AssertionError("the edge awaits, not the test")


class Handlers:
    """Route handlers that record the requests they see; a handler's answer is either a
    response now or, for Metadata when ``metadata_waits``, a :class:`Pending`."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, int]] = []
        self.metadata_waits = False
        self.metadata_requests: list[Any] = []

    def api_versions(self, broker: Any, ctx: RequestContext, request: Any) -> Message:
        self.seen.append((ctx.api_key, ctx.correlation_id))
        return ApiVersionsResponse(error_code=ErrorCode.NONE)

    def metadata(self, broker: Any, ctx: RequestContext, request: Any) -> Any:
        self.seen.append((ctx.api_key, ctx.correlation_id))
        self.metadata_requests.append(request)
        if self.metadata_waits:
            return Pending()
        names = [t.name for t in request.topics or []]
        return MetadataResponse(topics=[MetadataResponseTopic(name=n) for n in names])

    def describe_log_dirs(self, broker: Any, ctx: RequestContext, request: Any) -> Message:
        self.seen.append((ctx.api_key, ctx.correlation_id))
        return DescribeLogDirsResponse(results=[])

    def routes(self) -> list[Route]:
        return [
            Route(API_VERSIONS, 0, 4, self.api_versions),
            Route(METADATA, 0, 12, self.metadata),
            Route(DESCRIBE_LOG_DIRS, 1, 4, self.describe_log_dirs),
        ]


def body(frame: bytes, api_key: int, version: int) -> Any:
    """A response frame's body, its fields untyped (any API)."""
    return decode_response(frame, api_key, version)[1]


def frame(body: Message, version: int, correlation_id: int, client: str = "t") -> bytes:
    assert body.API_KEY is not None
    header = RequestHeader(
        request_api_key=body.API_KEY,
        request_api_version=version,
        correlation_id=correlation_id,
        client_id=client,
    )
    encoded = encode_request(header, body)
    return struct.pack(">i", len(encoded)) + encoded


def api_versions(correlation_id: int) -> bytes:
    return frame(ApiVersionsRequest(), 0, correlation_id)


def metadata(correlation_id: int, *topics: str, version: int = 12) -> bytes:
    wanted = [MetadataRequestTopic(name=t) for t in topics]
    return frame(MetadataRequest(topics=wanted), version, correlation_id)


class Setup:
    def __init__(self, **kwargs: Any) -> None:
        self.edge = Edge()
        self.clock = Clock()
        self.handlers = Handlers()
        authorizer = kwargs.pop("authorizer", None)
        dispatcher = Dispatcher(self.handlers.routes(), authorizer, kwargs.pop("topics", None))
        kwargs.setdefault("max_frame_size", 1 << 20)
        self.conn = Connection(
            self.edge,
            dispatcher,
            lambda route, ctx, request: route.handler(None, ctx, request),  # type: ignore[arg-type]
            clock=self.clock,
            connection_id=7,
            peer="10.0.0.1:5000",
            client_address="10.0.0.1",
            **kwargs,
        )


def test_frames_split_anywhere_are_answered_whole_and_in_order() -> None:
    stream = api_versions(1) + api_versions(2) + api_versions(3)
    rng = random.Random(17)
    for _ in range(50):
        setup = Setup()
        cuts = sorted(rng.sample(range(1, len(stream)), rng.randint(1, 12)))
        for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
            setup.conn.receive(stream[start:end])
        assert setup.edge.correlation_ids(API_VERSIONS, 0) == [1, 2, 3]
        assert not setup.edge.closes
    # One byte at a time: the worst split.
    setup = Setup()
    for i in range(len(stream)):
        setup.conn.receive(stream[i : i + 1])
    assert setup.edge.correlation_ids(API_VERSIONS, 0) == [1, 2, 3]


def test_an_oversize_frame_closes_before_its_body_is_read() -> None:
    setup = Setup(max_frame_size=100)
    setup.conn.receive(struct.pack(">i", 101) + b"x" * 10)
    [(reason, level, _)] = setup.edge.closes
    assert reason is not None and "101" in reason and level == logging.WARNING
    assert setup.handlers.seen == [] and setup.conn.closed
    setup.conn.receive(api_versions(1))  # nothing after the close
    assert setup.edge.frames == []


def test_a_malformed_request_closes_with_its_reason() -> None:
    setup = Setup()
    setup.conn.receive(struct.pack(">i", 3) + b"\x00\x03\x00")
    [(reason, _, _)] = setup.edge.closes
    assert reason is not None and "malformed" in reason


def test_a_waiting_request_holds_back_the_next_one_as_kafka_mutes_the_channel() -> None:
    """A long poll then a quick request: the second is not even handled until the first
    is answered, and the answers leave in order."""
    setup = Setup()
    setup.handlers.metadata_waits = True
    setup.conn.receive(metadata(1, "t") + api_versions(2))
    assert setup.handlers.seen == [(METADATA, 1)]
    [(token, _)] = setup.edge.waits
    assert setup.edge.frames == [] and not setup.conn.idle
    setup.conn.completed(token, MetadataResponse(topics=[]))
    assert setup.handlers.seen == [(METADATA, 1), (API_VERSIONS, 2)]
    assert [decode_response(f, k, v)[0].correlation_id for f, k, v in zip(
        setup.edge.frames, (METADATA, API_VERSIONS), (12, 0), strict=True
    )] == [1, 2]  # fmt: skip
    assert setup.conn.idle


def test_answers_leave_in_request_order_when_handlers_finish_out_of_order() -> None:
    setup = Setup(max_in_flight=3)
    setup.handlers.metadata_waits = True
    setup.conn.receive(metadata(1, "a") + metadata(2, "b") + api_versions(3))
    assert [c for _, c in setup.handlers.seen] == [1, 2, 3]
    (first, _), (second, _) = setup.edge.waits
    assert setup.edge.frames == []  # the third is answered, but waits for the first two
    setup.conn.completed(second, MetadataResponse(topics=[MetadataResponseTopic(name="b")]))
    assert setup.edge.frames == []
    setup.conn.completed(first, MetadataResponse(topics=[MetadataResponseTopic(name="a")]))
    ids = [decode_response(f, k, v)[0].correlation_id for f, k, v in zip(
        setup.edge.frames, (METADATA, METADATA, API_VERSIONS), (12, 12, 0), strict=True
    )]  # fmt: skip
    assert ids == [1, 2, 3]


def test_a_frame_still_being_sent_holds_back_the_next_answer() -> None:
    setup = Setup()
    setup.edge.sends_whole = False
    setup.conn.receive(api_versions(1) + api_versions(2))
    assert setup.edge.correlation_ids(API_VERSIONS, 0) == [1]
    assert not setup.conn.idle
    setup.conn.sent()
    assert setup.edge.correlation_ids(API_VERSIONS, 0) == [1, 2]


def test_reading_pauses_with_too_many_waiting_and_resumes_below_half() -> None:
    setup = Setup()
    setup.handlers.metadata_waits = True
    setup.conn.receive(metadata(0, "t"))  # in flight: everything after it waits
    setup.conn.receive(b"".join(api_versions(i) for i in range(1, MAX_QUEUED_REQUESTS)))
    assert setup.edge.reading == []
    setup.conn.receive(api_versions(MAX_QUEUED_REQUESTS))
    assert setup.edge.reading == ["pause"]
    setup.handlers.metadata_waits = False
    [(token, _)] = setup.edge.waits
    setup.conn.completed(token, MetadataResponse(topics=[]))
    assert setup.edge.reading == ["pause", "resume"]
    assert len(setup.edge.frames) == MAX_QUEUED_REQUESTS + 1


def fault(action: FaultAction, trace: RequestTrace | None = None, **kwargs: Any) -> Setup:
    plan = FaultPlan()
    plan.add(FaultRule(api_key=API_VERSIONS, action=action, **kwargs))
    return Setup(trace=trace, faults=lambda route, ctx, request: plan.take(
        route.api_key, ctx.client_id, request, lambda topic_id: None
    ))  # fmt: skip


def test_a_close_fault_closes_instead_of_answering() -> None:
    setup = fault(FaultAction.CLOSE)
    setup.conn.receive(api_versions(1) + api_versions(2))
    assert setup.edge.frames == [] and setup.handlers.seen == []
    assert [reason for reason, _, _ in setup.edge.closes] == [None]


def test_a_drop_fault_reads_on_and_never_answers() -> None:
    stream = io.StringIO()
    setup = fault(FaultAction.DROP, trace=RequestTrace(stream))
    setup.conn.receive(api_versions(1) + api_versions(2))
    setup.conn.receive(api_versions(3))
    assert setup.edge.frames == [] and setup.handlers.seen == [] and setup.edge.closes == []
    assert [json.loads(line)["outcome"] for line in stream.getvalue().splitlines()] == [
        "no response"
    ]


def test_a_delay_fault_holds_the_answer_until_the_clock_passes_it() -> None:
    setup = fault(FaultAction.DELAY, delay_ms=250)
    setup.conn.receive(api_versions(1) + api_versions(2))
    assert setup.handlers.seen == [(API_VERSIONS, 1)]  # handled, then held
    assert setup.edge.wakes == [setup.clock.now + 250 * MS]
    setup.clock.now += 249 * MS
    setup.conn.tick()
    assert setup.edge.frames == []
    setup.clock.now += 1 * MS
    setup.conn.tick()
    assert setup.edge.correlation_ids(API_VERSIONS, 0) == [1, 2]


def test_an_error_fault_answers_the_error_without_handling() -> None:
    setup = fault(FaultAction.ERROR, error_code=ErrorCode.BROKER_NOT_AVAILABLE)
    setup.conn.receive(api_versions(1) + api_versions(2))
    assert setup.handlers.seen == [(API_VERSIONS, 2)]
    codes = [body(f, API_VERSIONS, 0).error_code for f in setup.edge.frames]
    assert codes == [ErrorCode.BROKER_NOT_AVAILABLE, ErrorCode.NONE]


def test_each_request_ends_in_one_trace_record() -> None:
    stream = io.StringIO()
    setup = Setup(trace=RequestTrace(stream), listener=ListenerInfo("INTERNAL"))
    setup.handlers.metadata_waits = True
    setup.conn.receive(metadata(1, "t"))
    setup.clock.now += 3 * MS
    [(token, _)] = setup.edge.waits
    setup.conn.completed(token, MetadataResponse(topics=[]))
    setup.conn.receive(struct.pack(">i", 3) + b"\x00\x03\x00")  # too short to name an API
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [(x["api"], x["correlation_id"], x["outcome"]) for x in lines] == [
        ("Metadata", 1, "answered")
    ]
    assert lines[0]["latency_us"] == 3000
    assert lines[0]["listener"] == "INTERNAL" and lines[0]["principal"] == "User:ANONYMOUS"
    assert lines[0]["connection"] == 7 and lines[0]["peer"] == "10.0.0.1:5000"


def test_a_handler_that_fails_closes_with_its_traceback_traced_as_closed() -> None:
    stream = io.StringIO()
    setup = Setup(trace=RequestTrace(stream))
    setup.handlers.metadata_waits = True
    setup.conn.receive(metadata(1, "t"))
    [(token, _)] = setup.edge.waits
    bug = RuntimeError("bug")
    setup.conn.failed(token, bug)
    [(reason, level, failure)] = setup.edge.closes
    assert reason is not None and "Metadata v12 failed" in reason
    assert level == logging.ERROR and failure is bug
    assert json.loads(stream.getvalue())["outcome"] == "closed"
    # A refusal to answer is no bug: closed, nothing more to log than its reason.
    setup = Setup()
    setup.handlers.metadata_waits = True
    setup.conn.receive(metadata(1, "t"))
    [(token, _)] = setup.edge.waits
    setup.conn.failed(token, CloseConnection())
    assert setup.edge.closes == [(None, logging.WARNING, None)]


def test_idle_means_nothing_in_flight_and_silent_for_the_timeout() -> None:
    setup = Setup()
    setup.handlers.metadata_waits = True
    setup.conn.receive(metadata(1, "t"))
    setup.clock.now += 10_000 * MS
    assert not setup.conn.close_if_idle(5_000 * MS)  # a long poll is in flight
    [(token, _)] = setup.edge.waits
    setup.conn.completed(token, MetadataResponse(topics=[]))  # answered: active just now
    setup.clock.now += 4_999 * MS
    assert not setup.conn.close_if_idle(5_000 * MS)
    setup.clock.now += 1 * MS
    assert setup.conn.close_if_idle(5_000 * MS)
    assert setup.edge.closes == [("idle for 5000 ms", logging.INFO, None)]


class Refusing:
    """Refuses DESCRIBE on topics named ``secret*`` and everything on the cluster."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str, list[Action]]] = []

    def authorize(self, ctx: RequestContext, actions: Sequence[Action]) -> Sequence[bool]:
        self.asked.append((str(ctx.principal), ctx.listener.name, list(actions)))
        return [
            not (a.resource_type == ResourceType.CLUSTER or a.name.startswith("secret"))
            for a in actions
        ]


def test_a_refused_topic_gets_topic_authorization_failed_and_the_rest_are_answered() -> None:
    authorizer = Refusing()
    setup = Setup(authorizer=authorizer)
    setup.conn.receive(metadata(1, "open", "secret"))
    assert authorizer.asked == [
        (
            "User:ANONYMOUS",
            "PLAINTEXT",
            [
                Action(AclOperation.DESCRIBE, ResourceType.TOPIC, "open"),
                Action(AclOperation.DESCRIBE, ResourceType.TOPIC, "secret"),
            ],
        )
    ]
    # The handler saw only what was allowed.
    assert [t.name for t in setup.handlers.metadata_requests[0].topics] == ["open"]
    [answer] = setup.edge.frames
    topics = body(answer, METADATA, 12).topics
    assert [(t.name, t.error_code, t.topic_id) for t in topics] == [
        ("open", ErrorCode.NONE, bytes(16)),
        ("secret", ErrorCode.TOPIC_AUTHORIZATION_FAILED, bytes(16)),
    ]


class NewTopics:
    """Topics ``new*`` do not exist yet; a Metadata request would create them."""

    def name_of(self, topic_id: bytes) -> str | None:
        return None

    def creatable(self, name: str) -> bool:
        return name.startswith("new")


class CreateOnlyMine:
    """Allows describing everything, creating only topic ``new-mine``."""

    def authorize(self, ctx: RequestContext, actions: Sequence[Action]) -> Sequence[bool]:
        return [
            a.operation != AclOperation.CREATE
            or (a.resource_type == ResourceType.TOPIC and a.name == "new-mine")
            for a in actions
        ]


def test_a_topic_metadata_would_create_needs_create() -> None:
    setup = Setup(authorizer=CreateOnlyMine(), topics=NewTopics())
    setup.conn.receive(metadata(1, "old", "new-mine", "new-theirs"))
    assert [t.name for t in setup.handlers.metadata_requests[0].topics] == ["old", "new-mine"]
    topics = body(setup.edge.frames[0], METADATA, 12).topics
    assert [(t.name, t.error_code) for t in topics] == [
        ("old", ErrorCode.NONE),
        ("new-mine", ErrorCode.NONE),
        ("new-theirs", ErrorCode.TOPIC_AUTHORIZATION_FAILED),
    ]
    # Not asked to create: nothing to refuse.
    request = MetadataRequest(
        topics=[MetadataRequestTopic(name="new-theirs")], allow_auto_topic_creation=False
    )
    setup.conn.receive(frame(request, 12, 2))
    topics = body(setup.edge.frames[1], METADATA, 12).topics
    assert [(t.name, t.error_code) for t in topics] == [("new-theirs", ErrorCode.NONE)]


def test_every_topic_refused_is_not_read_as_every_topic() -> None:
    setup = Setup(authorizer=Refusing())
    setup.conn.receive(metadata(1, "secret", version=0))
    topics = body(setup.edge.frames[0], METADATA, 0).topics
    assert [(t.name, t.error_code) for t in topics] == [
        ("secret", ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    ]


def test_a_refused_cluster_action_gets_cluster_authorization_failed_unhandled() -> None:
    setup = Setup(authorizer=Refusing())
    setup.conn.receive(frame(DescribeLogDirsRequest(topics=None), 4, 1))
    assert setup.handlers.seen == []
    refusal = body(setup.edge.frames[0], DESCRIBE_LOG_DIRS, 4)
    assert refusal.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED and refusal.results == []
    # ApiVersions asks for nothing: a client learns versions before anything else.
    setup.conn.receive(api_versions(2))
    assert setup.handlers.seen == [(API_VERSIONS, 2)]


def test_without_an_authorizer_nothing_is_asked() -> None:
    setup = Setup()
    setup.conn.receive(metadata(1, "secret"))
    topics = body(setup.edge.frames[0], METADATA, 12).topics
    assert [(t.name, t.error_code) for t in topics] == [("secret", ErrorCode.NONE)]


@pytest.mark.parametrize("sends_whole", [True, False])
def test_the_edge_closing_mid_request_ends_everything(sends_whole: bool) -> None:
    setup = Setup()
    setup.edge.sends_whole = sends_whole
    setup.handlers.metadata_waits = True
    setup.conn.receive(metadata(1, "t") + api_versions(2))
    [(token, _)] = setup.edge.waits
    setup.conn.lost()
    setup.conn.completed(token, MetadataResponse(topics=[]))
    setup.conn.receive(api_versions(3))
    assert setup.edge.frames == [] and setup.handlers.seen == [(METADATA, 1)]


def test_nothing_here_needs_an_event_loop() -> None:
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()
    setup = Setup()
    setup.conn.receive(api_versions(1))
    assert setup.edge.correlation_ids(API_VERSIONS, 0) == [1]

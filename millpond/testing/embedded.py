"""A complete broker inside the test's own process, on a free loopback port.

:func:`broker` runs it on an event loop in a background thread, so blocking clients
(confluent-kafka, kafka-python, a subprocess running Java) can use it from the test's
thread; :func:`async_broker` runs it on the caller's running loop, for asyncio clients.
Either way the broker is the real one ``millpond serve`` runs: the same handlers,
storage and coordinator, only without a process of its own, so it starts in
milliseconds.

Configuration uses Kafka's names. Keyword arguments are configs with dots written as
underscores (``num_partitions=3`` is ``num.partitions=3``); ``configs={...}`` takes
names as they are. Two differences from ``millpond serve``'s defaults suit tests:
``group.initial.rebalance.delay.ms`` is 0 (a group forms as soon as its members
join, as Kafka's own test harness sets it), and the data lives in a temporary
directory removed at exit, or, with ``in_memory=True``, in memory only.
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from typing import Any, TypeVar

from millpond.broker.config import BrokerConfig, build_config
from millpond.broker.node import Broker
from millpond.storage.fs import MemFileSystem
from millpond.testing.topics import StoredRecord, create_topic, read_records

T = TypeVar("T")

#: Where an in-memory broker's (virtual) data directory is.
MEMORY_DATA_DIR = "/millpond-data"
_TEST_DEFAULTS = {
    "node.id": "1",
    "listeners": "PLAINTEXT://127.0.0.1:0",
    "group.initial.rebalance.delay.ms": "0",
}


def _property(value: object) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def broker_config(
    data_dir: str, configs: Mapping[str, object], keywords: Mapping[str, object]
) -> BrokerConfig:
    """The embedded broker's config: test defaults, then ``configs``, then keywords
    (underscores read as dots). Raises ConfigError naming a bad key or value."""
    props = dict(_TEST_DEFAULTS, **{"log.dirs": data_dir})
    props.update((key, _property(value)) for key, value in configs.items())
    props.update((key.replace("_", "."), _property(value)) for key, value in keywords.items())
    config, _warnings = build_config(props, env={})
    unknown = sorted(set(props) - set(config.values))
    if unknown:
        raise TypeError(
            f"unknown broker config(s) {', '.join(unknown)}: use Kafka's names, with dots "
            "written as underscores in keyword arguments (num_partitions=3)"
        )
    return config


def _new_broker(in_memory: bool, config: BrokerConfig) -> Broker:
    if in_memory:
        return Broker.from_config(config, fs=MemFileSystem())
    return Broker.from_config(config)


class _Handle:
    """What both variants offer over the running broker. Every helper goes through
    ``_call``, which runs a function of the broker where its event loop owns the state."""

    def __init__(self, broker: Broker) -> None:
        #: The broker itself, for what the helpers do not cover.
        self.broker = broker
        host, port = broker.advertised
        #: ``host:port`` for a client's ``bootstrap.servers``.
        self.bootstrap_servers = f"{host}:{port}"
        self.port = port

    def __repr__(self) -> str:
        return f"<embedded millpond broker at {self.bootstrap_servers}>"

    def _call(self, fn: Callable[[Broker], T]) -> T:
        raise NotImplementedError

    @property
    def control_url(self) -> str | None:
        """The HTTP control endpoint's base URL (``millpond_control_port=0`` turns it on)."""
        server = self.broker.control_server
        return None if server is None else server.url

    # -- topics ------------------------------------------------------------------------

    def create_topic(
        self, name: str, partitions: int = 1, configs: Mapping[str, str] | None = None
    ) -> None:
        """Create ``name``; raises TopicError if the broker refuses (it exists, a bad
        config)."""
        self._call(lambda b: create_topic(b, name, partitions, configs))

    def records(self, topic: str, partition: int | None = None) -> list[StoredRecord]:
        """What ``topic`` (or one partition) holds up to its high watermark."""
        return self._call(lambda b: read_records(b, topic, partition))

    # -- faults (millpond.broker.control.faults) ---------------------------------------

    def _fault(self, api: str | int, action: str, **rule: Any) -> dict[str, Any]:
        return self._call(lambda b: b.control.add_fault(api, action, **rule))

    def fail(
        self, api: str | int, error: str | int, *, count: int | None = 1, **match: Any
    ) -> dict[str, Any]:
        """Answer the next ``count`` ``api`` requests (matching ``topic``, ``partition``,
        ``client_id`` if given) with Kafka ``error`` instead of handling them."""
        return self._fault(api, "error", error=error, count=count, **match)

    def delay(
        self, api: str | int, delay_ms: int, *, count: int | None = 1, **match: Any
    ) -> dict[str, Any]:
        """Hold the answers of the next ``count`` ``api`` requests ``delay_ms`` longer."""
        return self._fault(api, "delay", delay_ms=delay_ms, count=count, **match)

    def drop(self, api: str | int, *, count: int | None = 1, **match: Any) -> dict[str, Any]:
        """Never answer the next matching request; its connection goes silent."""
        return self._fault(api, "drop", count=count, **match)

    def close(self, api: str | int, *, count: int | None = 1, **match: Any) -> dict[str, Any]:
        """Close the connection of the next matching request instead of answering."""
        return self._fault(api, "close", count=count, **match)

    def clear_faults(self) -> int:
        return self._call(lambda b: b.control.faults.clear())

    # -- clock, groups, state ----------------------------------------------------------

    def advance_clock(self, ms: int) -> dict[str, Any]:
        """Jump the broker's clock ``ms`` forwards: sessions, retention and producer and
        offset expiry act on it at once."""
        return self._call(lambda b: b.control.advance_clock(ms))

    def freeze_clock(self) -> dict[str, Any]:
        return self._call(lambda b: b.control.freeze_clock())

    def resume_clock(self) -> dict[str, Any]:
        return self._call(lambda b: b.control.resume_clock())

    def rebalance(self, group_id: str) -> dict[str, Any]:
        """Force ``group_id`` to rebalance (its members rejoin after their next heartbeat)."""
        return self._call(lambda b: b.control.force_rebalance(group_id))

    def fence_producer(self, producer_id: int) -> dict[str, Any]:
        """Bump ``producer_id``'s epoch wherever it wrote: its next batch is refused
        with INVALID_PRODUCER_EPOCH, as if a newer instance had taken its id."""
        return self._call(lambda b: b.control.fence_producer(producer_id))

    def state(self) -> dict[str, Any]:
        """Groups, idempotent producers, fetch sessions, clock and fault rules."""
        return self._call(lambda b: b.control.state())


class EmbeddedBroker(_Handle):
    """A broker running on its own event loop in a background thread."""

    def __init__(self, broker: Broker, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(broker)
        self._loop = loop

    def _call(self, fn: Callable[[Broker], T]) -> T:
        return self.call(fn)

    def call(self, fn: Callable[[Broker], T], timeout: float = 30) -> T:
        """Run ``fn(broker)`` on the broker's event loop and return its result."""

        async def run() -> T:
            return fn(self.broker)

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)


class AsyncEmbeddedBroker(_Handle):
    """A broker on the caller's event loop; its helpers run inline, since that loop
    owns the broker."""

    def _call(self, fn: Callable[[Broker], T]) -> T:
        return fn(self.broker)


async def stop_and_settle(instance: Broker) -> None:
    """Stop the broker, then end whatever tasks are left on its loop (a request a
    client sent while it stopped), so the loop closes with nothing pending."""
    await instance.stop()
    await instance.drop_late_connections()
    current = asyncio.current_task()
    leftover = [task for task in asyncio.all_tasks() if task is not current]
    for task in leftover:
        task.cancel()
    await asyncio.gather(*leftover, return_exceptions=True)


@contextmanager
def _data_dir(in_memory: bool, data_dir: str | None) -> Iterator[str]:
    if in_memory:
        yield MEMORY_DATA_DIR
    elif data_dir is not None:
        yield data_dir
    else:
        with tempfile.TemporaryDirectory(prefix="millpond-") as path:
            yield path


class NodeThread:
    """A node on an event loop of its own in a background thread: started by
    :meth:`start`, then stopped cleanly (:meth:`stop`) or killed (:meth:`kill`)."""

    def __init__(
        self, instance: Broker, loop: asyncio.AbstractEventLoop, thread: threading.Thread
    ) -> None:
        self.handle = EmbeddedBroker(instance, loop)
        self._loop = loop
        self._thread = thread

    @classmethod
    def start(cls, make: Callable[[], Broker], name: str = "millpond-embedded") -> NodeThread:
        """Build the node with ``make`` on the new loop and start it; raises what the
        start raised."""
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        started: list[Broker] = []
        failure: list[BaseException] = []

        def run() -> None:
            asyncio.set_event_loop(loop)
            try:
                instance = make()
                loop.run_until_complete(instance.start())
                started.append(instance)
            except BaseException as exc:  # noqa: BLE001 (raised again in the caller's thread)
                failure.append(exc)
                return
            finally:
                ready.set()
            loop.run_forever()

        thread = threading.Thread(target=run, name=name, daemon=True)
        thread.start()
        ready.wait()
        if failure:
            thread.join()
            loop.close()
            raise failure[0]
        return cls(started[0], loop, thread)

    def stop(self) -> None:
        """A clean shutdown, as ``millpond serve`` does on SIGTERM."""
        self._end(stop_and_settle(self.handle.broker))

    def kill(self) -> None:
        """As ``kill -9``: see :meth:`millpond.broker.node.Broker.abort`."""
        self._end(self.handle.broker.abort())

    def _end(self, last: Coroutine[Any, Any, None]) -> None:
        asyncio.run_coroutine_threadsafe(last, self._loop).result(60)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        self._loop.close()


@contextmanager
def broker(
    *,
    configs: Mapping[str, object] | None = None,
    in_memory: bool = False,
    data_dir: str | None = None,
    **keywords: object,
) -> Iterator[EmbeddedBroker]:
    """Run a broker in a background thread for the ``with`` block; its value has
    ``.bootstrap_servers``. ``data_dir`` keeps the data in a directory of yours (a
    second broker can reopen it); by default it is temporary."""
    with _data_dir(in_memory, data_dir) as path:
        config = broker_config(path, configs or {}, keywords)
        node = NodeThread.start(lambda: _new_broker(in_memory, config))
        try:
            yield node.handle
        finally:
            node.stop()


@asynccontextmanager
async def async_broker(
    *,
    configs: Mapping[str, object] | None = None,
    in_memory: bool = False,
    data_dir: str | None = None,
    **keywords: object,
) -> AsyncIterator[AsyncEmbeddedBroker]:
    """Run a broker on the running event loop for the ``async with`` block."""
    with _data_dir(in_memory, data_dir) as path:
        instance = _new_broker(in_memory, broker_config(path, configs or {}, keywords))
        await instance.start()
        try:
            yield AsyncEmbeddedBroker(instance)
        finally:
            await instance.stop()


__all__ = [
    "AsyncEmbeddedBroker",
    "EmbeddedBroker",
    "NodeThread",
    "StoredRecord",
    "async_broker",
    "broker",
    "broker_config",
]

"""Testing with a real broker and no Docker or JVM: an embedded broker per test or per
session (``millpond.testing.broker()``, its asyncio twin, and the pytest fixtures of
:mod:`millpond.testing.plugin`), with helpers to create topics and read what they hold;
and a whole cluster of controllers and brokers to kill, restart and cut off
(``millpond.testing.cluster()``).
"""

from millpond.testing.cluster import EmbeddedCluster, cluster
from millpond.testing.embedded import (
    AsyncEmbeddedBroker,
    EmbeddedBroker,
    async_broker,
    broker,
)
from millpond.testing.topics import StoredRecord, TopicError

__all__ = [
    "AsyncEmbeddedBroker",
    "EmbeddedBroker",
    "EmbeddedCluster",
    "StoredRecord",
    "TopicError",
    "async_broker",
    "broker",
    "cluster",
]

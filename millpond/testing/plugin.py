"""pytest fixtures for a real broker in the test process (registered through the
``pytest11`` entry point, so installing millpond is all a project needs):

- ``millpond_broker``: a fresh broker for each test, whose data vanishes after it.
  Configure it per test with ``@pytest.mark.millpond_config(num_partitions=3)``
  (Kafka's names, dots as underscores, or ``configs={"log.retention.ms": "1000"}``).
- ``millpond_session_broker``: one broker shared by the whole session, for suites
  whose tests keep to their own topics and groups.

Both yield a :class:`millpond.testing.EmbeddedBroker`: ``.bootstrap_servers``,
``.create_topic(...)`` and ``.records(topic)``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from millpond.testing.embedded import EmbeddedBroker


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "millpond_config(**configs): broker configs for the millpond_broker fixture "
        "(Kafka's names, dots written as underscores)",
    )


@pytest.fixture
def millpond_broker(request: pytest.FixtureRequest) -> Iterator[EmbeddedBroker]:
    """A broker of this test's own, stopped and removed after it."""
    from millpond.testing.embedded import broker

    marker = request.node.get_closest_marker("millpond_config")
    configs = dict(marker.kwargs) if marker is not None else {}
    with broker(**configs) as running:
        yield running


@pytest.fixture(scope="session")
def millpond_session_broker() -> Iterator[EmbeddedBroker]:
    """One broker for the whole session."""
    from millpond.testing.embedded import broker

    with broker() as running:
        yield running

"""What a broker start need not load, checked in a fresh interpreter: each of these costs
start-up time and idle memory (bench/startup.py measures both), so it is loaded when first
needed: with a compressed batch, a control endpoint, a request of that API, a tool."""

from __future__ import annotations

import json
import subprocess
import sys

from millpond.broker.handlers import ROUTES, LazyHandler

DEFERRED = [
    "cramjam",  # the codecs: with the first compressed batch
    "xxhash",
    "crc32c",  # the package; the broker loads its extension only (millpond.wire.crc32c)
    "importlib.metadata",
    "http.server",  # with millpond.control.port only
    "millpond.cli",  # `millpond serve` does not even build the tools' parsers
    "millpond.storage.cleaner.clean",  # with the first cleaning pass
    "uuid",  # it imports platform: ids come from millpond.storage.uuids
    "millpond.broker.groups.coordinator",  # with the first group request
    "millpond.broker.groups.records",  # with the first group or a replay of them
    "millpond.controller.replication_control",  # with the first topic created or deleted
    "millpond.broker.metadata_publisher",  # with the first change of topics or configs
    "millpond.broker.config_defs_describe",  # with the first DescribeConfigs
    "millpond.broker.control.service",  # with millpond.testing or the control endpoint
    "millpond.broker.control.faults",
    "datetime",
    # Defining a frozen dataclass costs ~0.5 ms on Python 3.11 (it execs six methods): the
    # values a start defines (configs, the metadata image, controller results) are
    # NamedTuples, ~0.07 ms each; together that is ~14 ms of a ~0.12 s start.
    "dataclasses",
]


def _handlers() -> list[LazyHandler]:
    handlers = [route.handler for route in ROUTES]
    assert all(isinstance(h, LazyHandler) for h in handlers)
    return handlers  # type: ignore[return-value]


def test_a_broker_start_loads_none_of_what_it_defers() -> None:
    modules = DEFERRED + [f"millpond.broker.handlers.{h.module}" for h in _handlers()]
    # A real start on a fresh data directory (which formats it), then a clean stop.
    code = (
        "import asyncio, contextlib, io, sys, tempfile\n"
        "import millpond.__main__ as entry\n"
        "from millpond.broker.node import Broker\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    entry.main(['serve', '--help'])\n"
        "async def run(data):\n"
        "    broker = Broker(port=0, data_dir=data)\n"
        "    await broker.start()\n"
        "    await broker.stop()\n"
        "with tempfile.TemporaryDirectory() as data:\n"
        "    asyncio.run(run(data))\n"
        f"loaded = [m for m in {modules!r} if m in sys.modules]\n"
        "import json\n"
        "print(json.dumps(loaded))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert json.loads(out) == []


def test_every_route_loads_its_handler() -> None:
    """Each module the table names exists and exports ``handle``: else its first request
    would fail, not the broker's start."""
    for handler in _handlers():
        assert callable(handler.load()), handler.module

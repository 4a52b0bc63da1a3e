"""millpond: a Kafka-wire-compatible message broker.

The layers live in folders at the repository root and install as this package's
subpackages (setuptools' ``package-dir``): ``millpond.wire`` (protocol),
``millpond.storage`` (logs on disk), ``millpond.controller`` (metadata quorum),
``millpond.broker`` (the server) and ``millpond.cli`` (the tools). Dependencies point
downwards: broker -> controller, storage, wire; controller -> storage, wire; storage ->
wire; wire -> nothing of ours (``tests/test_layers.py`` enforces it).
"""

__version__ = "0.1.0.dev0"

"""millpond: a Kafka-wire-compatible message broker.

The layers live at the repository root and import under this package:
``millpond.wire`` (protocol), ``millpond.storage`` (logs on disk),
``millpond.controller`` (metadata quorum) and ``millpond.broker`` (the server).
Dependencies point downwards: broker -> controller, storage, wire; controller ->
storage, wire; storage -> wire; wire -> nothing of ours.
"""

__version__ = "0.1.0.dev0"

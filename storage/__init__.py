"""millpond.storage: partition logs on disk, in Kafka's own file formats.

A log (:mod:`~millpond.storage.log`) is a directory of segments
(:mod:`~millpond.storage.segment`: ``.log`` batches exactly as on the wire, with their
``.index``, ``.timeindex`` and ``.txnindex``), its leader-epoch cache and producer
snapshots; :mod:`~millpond.storage.log_manager` owns the log directories, their
checkpoints and recovery; retention and compaction (:mod:`millpond.storage.cleaner`)
rewrite them; topic configs are :mod:`~millpond.storage.config`. Files and time come in
through :mod:`~millpond.storage.fs` and :mod:`~millpond.storage.clock`, so tests run on
an in-memory file system with injected faults and a manual clock. May import only the
wire layer (record batch framing).
"""

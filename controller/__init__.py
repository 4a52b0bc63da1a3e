"""millpond.controller: the metadata quorum and the controller logic.

- :mod:`~millpond.controller.record_serde`: Kafka's framing of metadata records.
- :mod:`~millpond.controller.image`: the immutable :class:`MetadataImage` and the
  :class:`MetadataDelta` that replays records into the next image.
- :mod:`~millpond.controller.raft`: KRaft, the quorum that replicates ``__cluster_metadata``.
- :mod:`~millpond.controller.metadata_log`: that log's directory, opening a replica over
  it, and replaying its batches into images.
- :mod:`~millpond.controller.controller`: :class:`QuorumController`, listening to the
  replica: operations in, records appended, committed batches replayed; the
  ``*_control`` modules hold the pure logic.
"""

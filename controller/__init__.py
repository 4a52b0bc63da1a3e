"""millpond.controller: the metadata quorum and the controller logic.

- :mod:`~millpond.controller.record_serde`: Kafka's framing of metadata records.
- :mod:`~millpond.controller.image`: the immutable :class:`MetadataImage` and the
  :class:`MetadataDelta` that replays records into the next image.
- :mod:`~millpond.controller.metadata_log`: ``__cluster_metadata-0``, a one-voter log.
- :mod:`~millpond.controller.controller`: :class:`QuorumController`, operations in,
  records appended, image replayed; the ``*_control`` modules hold the pure logic.
"""

"""millpond.wire: Kafka protocol codecs (public API in progress)."""

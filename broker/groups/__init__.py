"""Consumer groups: the classic group coordinator and its storage in __consumer_offsets."""

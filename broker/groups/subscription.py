"""The topics of a consumer's subscription, read from the JoinGroup metadata of the
``consumer`` protocol: what offset expiry and OffsetDelete need to know.

Every version of ConsumerProtocolSubscription starts with the v0 layout (an int16
version, then the topics as an array of strings), so reading that prefix serves all.
"""

from __future__ import annotations

import struct

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def subscribed_topics(metadata: bytes) -> frozenset[str] | None:
    """The subscribed topics, or None when ``metadata`` is not a consumer subscription."""
    try:
        (version,) = _INT16.unpack_from(metadata, 0)
        if version < 0:
            return None
        (count,) = _INT32.unpack_from(metadata, 2)
        if count < 0:
            return None
        pos = 6
        topics: set[str] = set()
        for _ in range(count):
            (size,) = _INT16.unpack_from(metadata, pos)
            pos += 2
            if size < 0 or pos + size > len(metadata):
                return None
            topics.add(metadata[pos : pos + size].decode())
            pos += size
    except (struct.error, UnicodeDecodeError):
        return None
    return frozenset(topics)

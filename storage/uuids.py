"""Random (version 4) UUIDs without the ``uuid`` module: it imports ``platform``, and
the two cost a broker about 2% of its start-up on a fresh data directory, which needs a
cluster id and a directory id."""

from __future__ import annotations

import os


def as_uuid4(raw: bytes) -> bytes:
    """Sixteen random bytes stamped with the version-4 and RFC 4122 variant bits, as
    ``uuid.UUID(bytes=raw, version=4).bytes``."""
    if len(raw) != 16:
        raise ValueError(f"a UUID is 16 bytes, not {len(raw)}")
    stamped = bytearray(raw)
    stamped[6] = (stamped[6] & 0x0F) | 0x40
    stamped[8] = (stamped[8] & 0x3F) | 0x80
    return bytes(stamped)


def random_uuid4() -> bytes:
    return as_uuid4(os.urandom(16))

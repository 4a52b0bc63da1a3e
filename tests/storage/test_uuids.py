import random
import uuid

import pytest

from millpond.storage.uuids import as_uuid4, random_uuid4


def test_stamped_like_the_uuid_module() -> None:
    rng = random.Random(7)
    for _ in range(1000):
        raw = rng.randbytes(16)
        assert as_uuid4(raw) == uuid.UUID(bytes=raw, version=4).bytes


def test_random_ones_are_version_4_and_differ() -> None:
    first, second = random_uuid4(), random_uuid4()
    assert first != second
    parsed = uuid.UUID(bytes=first)
    assert parsed.version == 4 and parsed.variant == uuid.RFC_4122


def test_wrong_length_is_refused() -> None:
    with pytest.raises(ValueError, match="16 bytes, not 15"):
        as_uuid4(bytes(15))

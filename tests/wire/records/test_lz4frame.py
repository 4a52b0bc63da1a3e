import os

import cramjam
import pytest

from millpond.wire.exceptions import DecodeError
from millpond.wire.records.lz4frame import (
    break_header_checksum,
    broken_header_checksum,
    header_checksum,
    repair_header_checksum,
)


@pytest.mark.parametrize("size", [0, 100, 200_000])
def test_header_checksum_matches_the_lz4_library(size: int) -> None:
    frame = bytes(cramjam.lz4.compress(os.urandom(size)))
    assert frame[6] == header_checksum(frame)
    broken = break_header_checksum(frame)
    assert broken[6] == broken_header_checksum(frame) != frame[6]
    with pytest.raises(cramjam.DecompressionError):
        cramjam.lz4.decompress(broken)
    assert repair_header_checksum(broken) == frame


def test_not_a_frame() -> None:
    for bad in (
        b"",
        b"\x04\x22\x4d\x18\x64\x40",
        b"\x00" * 10,
        b"\x04\x22\x4d\x18\x6c\x40" + b"\0" * 8,
    ):
        with pytest.raises(DecodeError):
            header_checksum(bad)

import pytest
from hypothesis import given
from hypothesis import strategies as st

from millpond.wire.exceptions import DecodeError
from millpond.wire.varint import (
    encode_uvarint,
    encode_varint,
    encode_varlong,
    read_uvarint,
    read_varint,
    read_varlong,
    size_of_uvarint,
)


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_uvarint_round_trip(value: int) -> None:
    data = encode_uvarint(value)
    assert len(data) == size_of_uvarint(value)
    assert read_uvarint(data + b"\xff", 0) == (value, len(data))


@given(st.integers(min_value=-(2**31), max_value=2**31 - 1))
def test_varint_round_trip(value: int) -> None:
    data = encode_varint(value)
    assert read_varint(data, 0) == (value, len(data))


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_varlong_round_trip(value: int) -> None:
    data = encode_varlong(value)
    assert read_varlong(data, 0) == (value, len(data))


def test_known_encodings() -> None:
    # Zig-zag as in the protobuf spec, which Kafka's record format follows.
    assert encode_varint(0) == b"\x00"
    assert encode_varint(-1) == b"\x01"
    assert encode_varint(1) == b"\x02"
    assert encode_varint(-64) == b"\x7f"
    assert encode_varint(64) == b"\x80\x01"
    assert encode_uvarint(300) == b"\xac\x02"


@pytest.mark.parametrize(
    "data",
    [b"", b"\x80", b"\xff\xff\xff\xff", b"\xff\xff\xff\xff\xff\x01", b"\xff\xff\xff\xff\x7f"],
)
def test_bad_uvarints(data: bytes) -> None:
    with pytest.raises(DecodeError):
        read_uvarint(data, 0)


def test_overlong_varlong() -> None:
    with pytest.raises(DecodeError):
        read_varlong(b"\xff" * 10 + b"\x01", 0)

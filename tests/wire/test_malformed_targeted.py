"""Malformed input, case by case: bad lengths in every length field of every message,
bad varints, hostile tagged-field sections, bad headers, and framing.

The cases are built on the *skeletons* of ``test_malformed`` (every message at every
version, built from the field metadata, each length prefix, nullable-struct marker and
tagged-field section a known *slot*): each slot in turn gets negative, huge, over-long
and otherwise hostile encodings, which must raise DecodeError, without allocating by
declaration.
"""

from __future__ import annotations

import random
import struct
import tracemalloc
from collections.abc import Iterator
from functools import partial

import pytest

from millpond.wire import (
    APIS,
    DecodeError,
    FrameTooLargeError,
    Message,
    RequestHeader,
    UnsupportedVersionError,
    decode_request,
    decode_request_header,
    decode_response,
    encode_request,
)
from millpond.wire.codegen.layout import FIXED_SIZES
from millpond.wire.framing import FrameReader, frame
from millpond.wire.generated.api.api_versions_request import ApiVersionsRequest
from millpond.wire.varint import encode_uvarint
from tests.wire.test_malformed import (
    MEMORY_SLACK,
    Case,
    Failures,
    Skeleton,
    Slot,
    corpus,
    decode_or_reject,
    expect_decode_error,
    mutate,
    peak_decode_memory,
    skeletons,
    warm_up,
)

# A targeted frame fails at its slot, having built at most the few objects before it:
# the limit is a small multiple of the frame plus the slack of test_malformed. A
# length of 2**31 - 1, or even a 32 KiB string, in these ~100-byte frames would be far
# above it if anything were allocated by declaration.
TARGETED_FACTOR = 16

OVERLONG_VARINT = b"\x80\x80\x80\x80\x80\x01"  # six bytes: too long for any uvarint
LONG_ZERO_VARINT = b"\x80" * 9 + b"\x00"  # ten bytes (a varlong's worth) of zero
WIDE_VARINT = b"\xff\xff\xff\xff\x7f"  # five bytes, more than 32 bits


# -- hostile lengths in every slot -----------------------------------------------------


def hostile_encodings(slot: Slot, remaining: int) -> Iterator[tuple[str, bytes]]:
    """Encodings that must make the decoder fail at ``slot`` (``remaining`` bytes of the
    frame follow it)."""
    if slot.width in ("int16", "int32"):
        width = 2 if slot.width == "int16" else 4
        top = 2 ** (8 * width - 1)
        values = [top - 1, remaining + 1]
        if not slot.nullable:
            # A nullable field reads any negative length as null, as Kafka does.
            values += [-1, -2, -top]
        for v in values:
            if -top <= v < top:
                yield f"{slot.width} length {v}", v.to_bytes(width, "big", signed=True)
        return
    if slot.width == "uvarint":
        yield "compact length 2**32 - 2", encode_uvarint(2**32 - 1)
        yield "compact length 2**31", encode_uvarint(2**31 + 1)
        yield f"compact length {remaining + 1}", encode_uvarint(remaining + 2)
        yield "over-long varint", OVERLONG_VARINT
        yield "ten-byte varint of 0", LONG_ZERO_VARINT
        yield "varint over 32 bits", WIDE_VARINT
        if not slot.nullable:
            yield "null", b"\x00"
        return
    if slot.width == "byte":
        for marker in (0, 2, 0x7F, 0x80, 0xFE):
            yield f"marker {marker}", bytes([marker])
        return
    assert slot.width == "tags"
    yield "2**32 - 1 tagged fields", encode_uvarint(2**32 - 1)
    yield "2**31 tagged fields", encode_uvarint(2**31)
    yield f"{remaining + 1} tagged fields", encode_uvarint(remaining + 1)
    yield "over-long tag count", OVERLONG_VARINT
    yield "ten-byte tag count of 0", LONG_ZERO_VARINT
    yield "tag count over 32 bits", WIDE_VARINT
    yield "over-long tag", b"\x01" + OVERLONG_VARINT + b"\x00"
    yield "tag over 32 bits", b"\x01" + WIDE_VARINT + b"\x00"
    yield "tagged field of 2**32 - 1 bytes", b"\x01\xe7\x07" + encode_uvarint(2**32 - 1)
    yield "over-long tagged field size", b"\x01\xe7\x07" + OVERLONG_VARINT
    yield (
        f"tagged field of {remaining + 1} bytes",
        b"\x01\xe7\x07" + encode_uvarint(remaining + 1),
    )


@pytest.mark.parametrize("kind", ["request", "response", "message"])
def test_hostile_lengths_in_every_slot(kind: str) -> None:
    """Every length prefix, marker and tag section of every message at every version:
    negative, huge and one-past-the-end lengths, bad varints. DecodeError only, and
    memory bounded by the frame, never by the declared length."""
    warm_up()
    failures = Failures()
    attempts = 0
    tracemalloc.start()
    try:
        for sk in skeletons():
            if sk.case.kind != kind:
                continue
            for i, token in enumerate(sk.tokens):
                if isinstance(token, bytes):
                    continue
                for what, encoding in hostile_encodings(token, sk.render(i)[1]):
                    data, _ = sk.render(i, encoding)
                    attempts += 1
                    label = f"{token.path} ({token.kind}): {what}"
                    peak = peak_decode_memory(partial(sk.case.decode, data))
                    expect_decode_error(sk.case, data, label, failures)
                    if peak > TARGETED_FACTOR * len(data) + MEMORY_SLACK:
                        failures.add(sk.case, f"{label}: peak {peak} bytes", data)
    finally:
        tracemalloc.stop()
    failures.check()
    assert attempts > 2_000


def test_unterminated_varint_at_the_end_of_the_frame() -> None:
    """A compact length or tag count whose continuation bits run off the frame."""
    failures = Failures()
    for sk in skeletons():
        for i, token in enumerate(sk.tokens):
            if isinstance(token, Slot) and token.width in ("uvarint", "tags"):
                data, remaining = sk.render(i, b"")
                head = data[: len(data) - remaining]
                for tail in (b"\x80", b"\xff\xff\xff", b"\x80\x80\x80\x80"):
                    what = f"{token.path}: unterminated varint {tail.hex()}"
                    expect_decode_error(sk.case, head + tail, what, failures)
    failures.check()


def test_one_byte_past_the_end_is_the_exact_boundary() -> None:
    """A bytes field whose length fits exactly is read; one byte more than the frame
    holds is refused. (Bytes fields, because any content is valid there.)"""
    payload = bytes(range(256)) * 2
    checked = 0
    for sk in skeletons():
        for i, token in enumerate(sk.tokens):
            if not isinstance(token, Slot) or token.kind != "bytes":
                continue
            _, remaining = sk.render(i)
            for extra, ok in ((0, True), (remaining + 1, False)):
                size = len(payload) + extra
                if token.width == "int32":
                    prefix = size.to_bytes(4, "big")
                else:
                    prefix = encode_uvarint(size + 1)
                data, _ = sk.render(i, prefix + payload)
                if ok:
                    sk.case.decode(data)
                else:
                    with pytest.raises(DecodeError):
                        sk.case.decode(data)
            checked += 1
    assert checked > 50


# -- strings longer than an int16 allows -----------------------------------------------


def _first_slot(kind: str, width: str) -> tuple[Skeleton, int]:
    for sk in skeletons():
        if sk.case.kind != "request":
            continue
        for i, token in enumerate(sk.tokens):
            if (
                isinstance(token, Slot)
                and (token.kind, token.width) == (kind, width)
                and not token.path.startswith("<header>")
            ):
                return sk, i
    raise AssertionError(f"no {kind} slot of width {width}")


def test_compact_string_longer_than_32767_bytes_is_a_decode_error() -> None:
    """Kafka caps strings at 0x7fff bytes in every encoding (its readers throw "string
    field had invalid length"), and so does our writer: a longer compact string must be
    refused when read, or a frame would decode and then fail to re-encode."""
    sk, i = _first_slot("string", "uvarint")
    fits, _ = sk.render(i, encode_uvarint(0x7FFF + 1) + b"s" * 0x7FFF)
    header, body = sk.case.decode(fits)
    assert sk.case.encode(header, body) == fits
    too_long, _ = sk.render(i, encode_uvarint(0x8000 + 1) + b"s" * 0x8000)
    with pytest.raises(DecodeError, match="32767|0x7fff|longer"):
        sk.case.decode(too_long)


def test_compact_bytes_have_no_int16_cap() -> None:
    sk, i = _first_slot("bytes", "uvarint")
    data, _ = sk.render(i, encode_uvarint(0x10000 + 1) + bytes(0x10000))
    header, body = sk.case.decode(data)
    assert sk.case.encode(header, body) == data


# -- tagged fields ---------------------------------------------------------------------


def _root_tags(sk: Skeleton) -> int:
    """Index of the top-level (body) tag section: the last token."""
    last = len(sk.tokens) - 1
    token = sk.tokens[last]
    assert isinstance(token, Slot) and token.path == "<body> tags"
    return last


def _tag_section(fields: list[tuple[int, bytes]]) -> bytes:
    out = bytearray(encode_uvarint(len(fields)))
    for tag, data in fields:
        out += encode_uvarint(tag) + encode_uvarint(len(data)) + data
    return bytes(out)


def test_unknown_tags_duplicated_and_unordered_are_kept_and_normalised() -> None:
    """Like Kafka, unknown tags are kept as they come (duplicates included); writing
    them back sorts them by tag, so the result is a valid section again."""
    checked = 0
    for sk in skeletons():
        if not (isinstance(sk.tokens[-1], Slot) and sk.tokens[-1].path == "<body> tags"):
            continue
        fields = [(5000, b"b"), (4000, b""), (5000, b"a")]
        data, _ = sk.render(_root_tags(sk), _tag_section(fields))
        header, body = sk.case.decode(data)
        assert body.unknown_tagged_fields == tuple(fields)
        again = sk.case.encode(header, body)
        expected, _ = sk.render(_root_tags(sk), _tag_section(sorted(fields, key=lambda f: f[0])))
        assert again == expected
        checked += 1
    assert checked > 300


def _class_of(case: Case) -> type[Message]:
    if case.message is not None:
        return case.message
    api = APIS[case.api_key]
    return api.request_class if case.kind == "request" else api.response_class


def _known_fixed_tags() -> Iterator[tuple[Skeleton, str, int, int]]:
    """(skeleton, attribute, tag, width) for top-level tagged fields of fixed width."""
    for sk in skeletons():
        case = sk.case
        cls = _class_of(case)
        for f in cls._FIELDS:
            if f.tagged_at(case.api_version) and f.kind in FIXED_SIZES and f.kind != "bool":
                assert f.tag is not None
                yield sk, f.name, f.tag, FIXED_SIZES[f.kind]


def test_known_tagged_fields_must_fill_their_declared_size() -> None:
    checked = 0
    failures = Failures()
    for sk, _, tag, width in _known_fixed_tags():
        root = _root_tags(sk)
        for size in (0, width - 1, width + 1, width + 100):
            data, _ = sk.render(root, _tag_section([(tag, bytes(size))]))
            expect_decode_error(sk.case, data, f"tag {tag} of {size} bytes", failures)
        checked += 1
    failures.check()
    assert checked > 10


def test_duplicate_known_tag_keeps_the_last_value() -> None:
    """Kafka's readers assign a known tag each time they meet it: the last one wins.
    The re-encoding carries it once."""
    checked = 0
    for sk, attribute, tag, width in _known_fixed_tags():
        root = _root_tags(sk)
        first, last = b"\x01" * width, b"\x02" * width
        data, _ = sk.render(root, _tag_section([(tag, first), (tag, last)]))
        header, body = sk.case.decode(data)
        once, _ = sk.render(root, _tag_section([(tag, last)]))
        assert getattr(body, attribute) == getattr(sk.case.decode(once)[1], attribute)
        assert sk.case.encode(header, body) == once
        checked += 1
    assert checked > 10


# -- headers and versions --------------------------------------------------------------


def _request_frame(api_key: int, version: int, correlation_id: int) -> bytes:
    return struct.pack(">hhi", api_key, version, correlation_id) + b"\xff\xff" + bytes(32)


@pytest.mark.parametrize("api_key", [-32768, -1, 9999, 32767, max(APIS) + 1])
def test_unknown_api_key(api_key: int) -> None:
    data = _request_frame(api_key, 0, -559038737)
    for decode in (decode_request, decode_request_header):
        with pytest.raises(UnsupportedVersionError) as info:
            decode(data)
        assert (info.value.api_key, info.value.api_version) == (api_key, 0)
        assert info.value.correlation_id == -559038737


def test_version_out_of_range_for_every_api() -> None:
    for api in APIS.values():
        bad = {-32768, -1, api.max_version + 1, 32767}
        if api.min_version > 0:
            bad.add(api.min_version - 1)
        for version in sorted(bad):
            data = _request_frame(api.key, version, 12345)
            with pytest.raises(UnsupportedVersionError) as info:
                decode_request(data)
            error = info.value
            assert (error.api_key, error.api_version, error.correlation_id) == (
                api.key,
                version,
                12345,
            )
            with pytest.raises(DecodeError) as plain:
                decode_response(data[4:], api.key, version)
            assert not isinstance(plain.value, UnsupportedVersionError)


@pytest.mark.parametrize("api_key", [-1, 9999])
def test_response_of_unknown_api(api_key: int) -> None:
    with pytest.raises(DecodeError):
        decode_response(bytes(16), api_key, 0)


def test_frames_shorter_than_a_header() -> None:
    metadata = _request_frame(3, 12, 7)
    for size in range(8):
        # Not even the correlation id can be read: a plain DecodeError.
        with pytest.raises(DecodeError) as info:
            decode_request(metadata[:size])
        assert not isinstance(info.value, UnsupportedVersionError)
    for size in (8, 9):
        # A known API whose client id length is cut off.
        with pytest.raises(DecodeError) as info:
            decode_request(metadata[:size])
        assert not isinstance(info.value, UnsupportedVersionError)
    for size in range(4):
        with pytest.raises(DecodeError):
            decode_response(bytes(size), 3, 12)


def test_invalid_utf8_is_replaced_as_kafka_does() -> None:
    header = RequestHeader(request_api_key=18, request_api_version=3, correlation_id=1)
    data = encode_request(header, ApiVersionsRequest(client_software_name="ab"))
    at = data.index(b"ab")
    broken = data[:at] + b"\xff\xfe" + data[at + 2 :]
    body = decode_request(broken)[1]
    assert isinstance(body, ApiVersionsRequest)
    assert body.client_software_name == "\ufffd\ufffd"


def test_client_id_lengths() -> None:
    sk = next(s for s in skeletons() if s.case.kind == "request")
    # Any negative length is a null client id, as in Kafka's reader.
    for length, ok in [(-1, True), (0, True), (-2, True), (-32768, True), (32767, False)]:
        data = sk.case.frame[:8] + struct.pack(">h", length) + sk.case.frame[10:]
        if ok:
            sk.case.decode(data)
            if length < 0:
                assert decode_request(data)[0].client_id is None
        else:
            with pytest.raises(DecodeError):
                sk.case.decode(data)


# -- framing ---------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", [2**31 - 1, 100 * 1024 * 1024 + 1, -1, -(2**31)])
def test_bad_prefix_with_its_body_in_the_same_chunk_is_not_buffered(prefix: int) -> None:
    """The reader refuses the prefix before copying the 1 MiB that came with it."""
    chunk = struct.pack(">i", prefix) + bytes(1 << 20)
    reader = FrameReader()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        start, _ = tracemalloc.get_traced_memory()
        with pytest.raises(DecodeError) as info:
            reader.feed(chunk)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak - start < 64 * 1024
    assert reader.buffered == 0
    assert isinstance(info.value, FrameTooLargeError) == (prefix > 0)


def test_fuzzed_streams_through_frame_reader_and_decoder() -> None:
    """Streams of framed requests, mutated (size prefixes included) and cut into random
    chunks: the reader and decode_request raise DecodeError and nothing else, and the
    reader never holds more than one maximum-size frame."""
    max_frame = 4096
    requests = [c for c in corpus() if c.kind == "request" and len(c.frame) <= max_frame]
    rng = random.Random(99)
    failures = Failures()
    frames_decoded = frames_seen = rejected = 0
    streams = 2_000
    for n in range(streams):
        picked = [rng.choice(requests) for _ in range(rng.randrange(1, 12))]
        framed = [bytearray(frame(c.frame)) for c in picked]
        if rng.random() < 0.3:  # a lying size prefix: a little off, huge, or negative
            victim = rng.choice(framed)
            size = len(victim) - 4 + rng.choice((-3, -1, 1, 2, 1000, 2**31 - 1 - len(victim)))
            victim[:4] = struct.pack(">i", rng.choice((size, -1, -(2**31))))
        stream = mutate(rng, b"".join(framed), tuple(picked))
        # Cut into chunks: byte by byte now and then, else at random points.
        if n % 20 == 0:
            cuts = list(range(1, len(stream)))
        else:
            # (A mutation may leave under two bytes: then there is nothing to cut.)
            cuts = sorted(rng.sample(range(1, len(stream)), min(max(len(stream) - 1, 0), 30)))
        reader = FrameReader(max_frame_size=max_frame)
        case = picked[0]
        try:
            for start, stop in zip([0, *cuts], [*cuts, len(stream)], strict=True):
                reader.feed(stream[start:stop])
                assert reader.buffered <= max_frame + 4
                for body in reader.drain():
                    frames_seen += 1
                    if decode_or_reject(case, body, f"stream {n}", failures):
                        frames_decoded += 1
            reader.check_eof()
        except DecodeError:
            rejected += 1
        except Exception:  # noqa: BLE001 - anything but DecodeError is the bug we hunt
            failures.unexpected(case, f"stream {n}: the frame reader failed", stream)
    failures.check()
    assert frames_seen > 2 * streams and frames_decoded > streams
    assert streams // 10 < rejected < streams, rejected

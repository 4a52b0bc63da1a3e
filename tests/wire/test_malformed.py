"""Malformed input: whatever bytes arrive, decoding raises DecodeError and nothing else.

The corpus of valid frames:

* every API's request and response at its min, middle and max version, with random
  field values from :func:`tests.wire.messages.struct_values` (fixed seed);
* a *skeleton* of every request and response at every version, and of every other
  message (records, group metadata, ...): built from the field metadata alone, with
  one element in each array, empty strings and bytes, nullable structs present. Each
  length prefix, nullable-struct marker and tagged-field section in a skeleton is a
  known :class:`Slot`, which ``test_malformed_targeted.py`` fills with hostile values;
* the golden frames captured from real clients, when ``tests/wire/golden/`` exists.

Every frame is truncated at every byte and mutated at random (deterministic seeds).
Every attempt must either decode or raise :class:`DecodeError`; any other exception
fails with the frame's hex and the traceback.

A mutated frame that *does* decode must re-encode without raising anything, EncodeError
included: whatever the decoder accepts, the encoder can write (a compact string over
32767 bytes was the one exception, and is now refused on read, as Kafka does). The
re-encoding must be a fixed point (decode + encode gives the same bytes again), but
need not equal the mutated frame, because decoding normalises, as Kafka's readers do: a
bool byte other than 0 reads as True and is written as 1, tagged fields are written in
ascending tag order, a duplicated known tag keeps its last value, a known tagged field
carrying its default value is not written, over-long varints (``80 80 80 80 00``) are
written short, and bytes after a request's body are dropped.

Decoding must also not use memory in proportion to any length the input declares:
under :mod:`tracemalloc` the peak stays below ``MEMORY_FACTOR * len(frame) +
MEMORY_SLACK`` (see there for why those numbers).

Targeted cases (every length field of every message with bad lengths, bad varints,
tagged sections, headers, framing) are in ``test_malformed_targeted.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import struct
import traceback
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import cache, partial
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

from millpond.wire import (
    APIS,
    DecodeError,
    Message,
    RequestHeader,
    ResponseHeader,
    UnsupportedVersionError,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    read_request,
)
from millpond.wire.api import ApiInfo
from millpond.wire.codegen.layout import FIXED_SIZES
from millpond.wire.message import Struct
from millpond.wire.primitives import Buffer
from millpond.wire.varint import encode_uvarint
from tests.wire.messages import all_message_versions, struct_values

GOLDEN = Path(__file__).resolve().parent / "golden"

# Random messages drawn per (message class, version) for the corpus.
EXAMPLES_PER_VERSION = 3
# Decode attempts of mutated frames in the default run (the acceptance asks >= 100,000);
# MILLPOND_FUZZ_MUTATIONS raises it for a longer soak.
MUTATIONS = max(100_000, int(os.environ.get("MILLPOND_FUZZ_MUTATIONS", "0")))
MUTATION_SEEDS = (0, 1, 2, 3)
# Golden frames can be up to 64 KiB: truncating those at every byte is quadratic, so
# frames above this size are cut at this many offsets (both ends, and spread between).
FULL_TRUNCATION_LIMIT = 4096
SAMPLED_CUTS = 512

# The memory bound, peak <= MEMORY_FACTOR * len(frame) + MEMORY_SLACK, in bytes.
#
# Every length is checked against the bytes that remain before anything is allocated,
# and every array element and tagged field consumes at least one byte of the frame, so
# the number of Python objects a decode creates is at most proportional to the frame.
# What each wire byte can cost is Python's object overhead: the worst real layouts are
# arrays of small flexible structs (an element of 3-4 bytes, e.g. StreamsGroupHeartbeat's
# copartition groups or CreatePartitions' assignments, becomes a slotted object of
# ~100-200 bytes plus fresh empty lists for its array fields and a list slot), measured
# at ~58 bytes per frame byte by test_dense_arrays_stay_within_the_memory_factor. 96
# leaves headroom for a new spec, while a single allocation driven by a declared length
# (2**31, or even 32 KiB for a string in a 100-byte frame) is far beyond it.
# The slack covers what does not scale with the frame: the exception (with its chained
# cause, traceback and formatted message), struct's cache of compiled formats, and the
# frame objects of the call chain.
MEMORY_FACTOR = 96
MEMORY_SLACK = 32 * 1024
MEMORY_MUTATIONS = 4_000


@dataclass(frozen=True)
class Case:
    """One valid frame, and how to decode it: a request or response frame (header and
    body), or, with ``message`` set, a bare message such as a record or group metadata."""

    label: str
    kind: str  # "request", "response" or "message"
    api_key: int
    api_version: int
    frame: bytes
    message: type[Message] | None = None

    def decode(self, data: Buffer) -> tuple[Message | None, Message]:
        if self.kind == "request":
            return decode_request(data)
        if self.kind == "response":
            return decode_response(data, self.api_key, self.api_version)
        assert self.message is not None
        return None, self.message.decode(data, self.api_version)

    def body_end(self) -> int:
        """Where the body of the (valid) frame ends: before any trailing bytes, which a
        request may carry."""
        if self.kind == "request":
            return read_request(self.frame)[2]
        return len(self.frame)

    def encode(self, header: Message | None, body: Message) -> bytes:
        if self.kind == "request":
            assert isinstance(header, RequestHeader)
            return encode_request(header, body)
        if self.kind == "response":
            assert isinstance(header, ResponseHeader)
            return encode_response(header, body, self.api_version)
        return body.encode(self.api_version)


# -- the corpus ------------------------------------------------------------------------


def _draw(cls: type[Message], version: int, n: int) -> list[Message]:
    """``n`` random valid instances of ``cls`` at ``version``, the same on every run."""
    out: list[Message] = []

    @seed(0x6D696C6C)
    @settings(
        max_examples=n,
        database=None,
        phases=[Phase.generate],
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(struct_values(cls, version, cls.is_flexible(version)))
    def collect(message: Message) -> None:
        out.append(message)

    collect()
    return out


def corpus_versions(low: int, high: int) -> list[int]:
    return sorted({low, (low + high) // 2, high})


@cache
def generated_corpus() -> tuple[Case, ...]:
    rng = random.Random(7)
    cases: list[Case] = []
    for api in APIS.values():
        for version in corpus_versions(api.min_version, api.max_version):
            for i, body in enumerate(_draw(api.request_class, version, EXAMPLES_PER_VERSION)):
                header = RequestHeader(
                    request_api_key=api.key,
                    request_api_version=version,
                    correlation_id=rng.randrange(-(2**31), 2**31),
                    client_id=rng.choice((None, "", "millpond-fuzz")),
                )
                label = f"{api.name}Request v{version} #{i}"
                cases.append(Case(label, "request", api.key, version, encode_request(header, body)))
            for i, body in enumerate(_draw(api.response_class, version, EXAMPLES_PER_VERSION)):
                rheader = ResponseHeader(correlation_id=rng.randrange(-(2**31), 2**31))
                label = f"{api.name}Response v{version} #{i}"
                cases.append(
                    Case(
                        label, "response", api.key, version, encode_response(rheader, body, version)
                    )
                )
    return tuple(cases)


@cache
def golden_corpus() -> tuple[Case, ...]:
    """Frames captured from real clients, if another engineer's capture is in place.

    Only frames this codec decodes are used (a capture may contain versions newer than
    our specs, or be half written while we run); the golden tests proper check the rest.
    """
    cases: list[Case] = []
    for index in sorted(GOLDEN.glob("*/index.json")):
        try:
            entries = json.loads(index.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(entries, list):
            continue
        for entry in entries:
            try:
                kind = entry["kind"]
                frame = (index.parent / entry["file"]).read_bytes()
                case = Case(
                    f"golden/{index.parent.name}/{entry['file']}",
                    kind,
                    int(entry["api_key"]),
                    int(entry["api_version"]),
                    frame,
                )
            except (OSError, KeyError, TypeError, ValueError):
                continue
            if kind not in ("request", "response"):
                continue
            try:
                case.decode(frame)
            except DecodeError:
                continue
            cases.append(case)
    return tuple(cases)


@cache
def corpus() -> tuple[Case, ...]:
    """Random messages at three versions per API, the skeleton of every message at
    every version, and the golden frames."""
    return generated_corpus() + tuple(sk.case for sk in skeletons()) + golden_corpus()


def warm_up() -> None:
    """Import every message class, so lazy imports do not count as decoding memory."""
    for api in APIS.values():
        api.request_class  # noqa: B018
        api.response_class  # noqa: B018


# -- skeletons -------------------------------------------------------------------------


@dataclass(frozen=True)
class Slot:
    """A place in a skeleton where the codec reads a length, marker or tag section."""

    path: str
    kind: str  # string, bytes, records, array, marker, tags
    width: str  # int16, int32, uvarint, byte, tags
    nullable: bool
    valid: bytes


Token = bytes | Slot


@dataclass(frozen=True)
class Skeleton:
    case: Case
    tokens: tuple[Token, ...]

    def render(self, index: int = -1, replacement: bytes | None = None) -> tuple[bytes, int]:
        """The frame, with the token at ``index`` replaced if a replacement is given;
        also the number of bytes after that token."""
        parts = [t if isinstance(t, bytes) else t.valid for t in self.tokens]
        if replacement is not None:
            parts[index] = replacement
        after = sum(map(len, parts[index + 1 :])) if index >= 0 else 0
        return b"".join(parts), after


def _length_slot(kind: str, path: str, compact: bool, nullable: bool, count: int) -> Slot:
    if compact:
        return Slot(path, kind, "uvarint", nullable, encode_uvarint(count + 1))
    if kind == "string":
        return Slot(path, kind, "int16", nullable, count.to_bytes(2, "big"))
    return Slot(path, kind, "int32", nullable, count.to_bytes(4, "big"))


def _struct_tokens(
    cls: type[Struct], version: int, compact: bool, path: str, out: list[Token]
) -> None:
    for f in cls._FIELDS:
        if not f.present(version) or f.tagged_at(version):
            continue
        where = f"{path}.{f.name}" if path else f.name
        nullable = f.nullable_at(version)
        if f.kind in FIXED_SIZES:
            out.append(bytes(FIXED_SIZES[f.kind]))
        elif f.kind in ("string", "bytes"):
            out.append(_length_slot(f.kind, where, compact, nullable, 0))
        elif f.kind == "records":  # the reader accepts null whatever the spec says
            out.append(_length_slot(f.kind, where, compact, True, 0))
        elif f.kind == "struct":
            assert f.struct is not None
            if nullable:
                out.append(Slot(where, "marker", "byte", False, b"\x01"))
            _struct_tokens(f.struct, version, compact, where, out)
        else:
            assert f.kind == "array" and f.element is not None, f
            out.append(_length_slot("array", where, compact, nullable, 1))
            if f.struct is not None:
                _struct_tokens(f.struct, version, compact, f"{where}[0]", out)
            elif f.element in FIXED_SIZES:
                out.append(bytes(FIXED_SIZES[f.element]))
            else:
                out.append(_length_slot(f.element, f"{where}[0]", compact, False, 0))
    if compact:
        out.append(Slot(f"{path or '<body>'} tags", "tags", "tags", False, b"\x00"))


def _header_tokens(api: ApiInfo, kind: str, version: int) -> list[Token]:
    if kind == "request":
        tokens: list[Token] = [struct.pack(">hhi", api.key, version, 0x1234)]
        # The client id keeps its int16 length in flexible versions too.
        tokens.append(Slot("<header>.client_id", "string", "int16", True, b"\x00\x00"))
        if api.request_header_version(version) >= 2:
            tokens.append(Slot("<header> tags", "tags", "tags", False, b"\x00"))
        return tokens
    tokens = [struct.pack(">i", 0x1234)]
    if api.response_header_version(version) >= 1:
        tokens.append(Slot("<header> tags", "tags", "tags", False, b"\x00"))
    return tokens


@cache
def skeletons() -> tuple[Skeleton, ...]:
    """A skeleton of every request and response (with its header) at every version, and
    of every other message (records, group and share metadata, ...) on its own."""
    out: list[Skeleton] = []
    api_classes: set[type[Message]] = set()
    for api in APIS.values():
        for kind, cls in (("request", api.request_class), ("response", api.response_class)):
            api_classes.add(cls)
            for version in range(api.min_version, api.max_version + 1):
                tokens = _header_tokens(api, kind, version)
                _struct_tokens(cls, version, cls.is_flexible(version), "", tokens)
                out.append(
                    _skeleton(Case(f"{cls.NAME} v{version}", kind, api.key, version, b""), tokens)
                )
    for cls, version in all_message_versions():
        # The headers are covered inside every request and response (and RequestHeader's
        # client id keeps its int16 length in flexible versions, unlike its Field says).
        if cls not in api_classes and cls not in (RequestHeader, ResponseHeader):
            tokens = []
            _struct_tokens(cls, version, cls.is_flexible(version), "", tokens)
            case = Case(f"{cls.NAME} v{version}", "message", -1, version, b"", cls)
            out.append(_skeleton(case, tokens))
    return tuple(out)


def _skeleton(case: Case, tokens: list[Token]) -> Skeleton:
    frame, _ = Skeleton(case, tuple(tokens)).render()
    return Skeleton(replace(case, frame=frame), tuple(tokens))


# -- failure reports -------------------------------------------------------------------


class Failures:
    """Collects failures with enough to reproduce them; reports the first few."""

    def __init__(self, limit: int = 5) -> None:
        self.limit = limit
        self.count = 0
        self.reports: list[str] = []

    def add(self, case: Case, what: str, data: Buffer, detail: str = "") -> None:
        self.count += 1
        if len(self.reports) < self.limit:
            self.reports.append(
                f"{case.label} ({case.kind}, api_key {case.api_key}, v{case.api_version}): "
                f"{what}\nframe ({len(data)} bytes): {bytes(data).hex()}\n{detail}"
            )

    def unexpected(self, case: Case, what: str, data: Buffer) -> None:
        """Record the exception being handled (call from an ``except`` block)."""
        self.add(case, what, data, traceback.format_exc())

    def check(self) -> None:
        if self.count:
            shown = "\n\n".join(self.reports)
            pytest.fail(f"{self.count} failures, the first {len(self.reports)}:\n\n{shown}")


def expect_decode_error(case: Case, data: Buffer, what: str, failures: Failures) -> None:
    try:
        case.decode(data)
    except UnsupportedVersionError:
        # Every caller keeps a valid header's api key and version (or cuts it short).
        failures.unexpected(case, f"{what}: UnsupportedVersionError", data)
    except DecodeError:
        pass
    except Exception:  # noqa: BLE001 - anything but DecodeError is the bug we hunt
        failures.unexpected(case, f"{what}: not a DecodeError", data)
    else:
        failures.add(case, f"{what}: decoded without error", data)


def decode_or_reject(case: Case, data: Buffer, what: str, failures: Failures) -> bool:
    """Decode ``data``: True if it decoded (and re-encodes to a fixed point), False on
    DecodeError. Anything else is recorded as a failure."""
    try:
        header, body = case.decode(data)
    except DecodeError:
        return False
    except Exception:  # noqa: BLE001 - anything but DecodeError is the bug we hunt
        failures.unexpected(case, f"{what}: not a DecodeError", data)
        return False
    try:
        again = case.encode(header, body)
        header2, body2 = case.decode(again)
        if case.encode(header2, body2) != again:
            failures.add(case, f"{what}: re-encoding is not a fixed point", data, again.hex())
    except Exception:  # noqa: BLE001 - anything but DecodeError is the bug we hunt
        failures.unexpected(case, f"{what}: decoded, but re-encoding failed", data)
    return True


# -- the corpus itself -----------------------------------------------------------------


def test_corpus_is_broad_and_valid() -> None:
    cases = generated_corpus()
    for kind in ("request", "response"):
        covered = {(c.api_key, c.api_version) for c in cases if c.kind == kind}
        for api in APIS.values():
            for version in corpus_versions(api.min_version, api.max_version):
                assert (api.key, version) in covered, (kind, api.name, version)
    failures = Failures()
    for case in corpus():
        try:
            header, body = case.decode(case.frame)
            if case.encode(header, body) != case.frame and not case.label.startswith("golden"):
                failures.add(case, "does not re-encode to the same bytes", case.frame)
        except Exception:  # noqa: BLE001 - anything but DecodeError is the bug we hunt
            failures.unexpected(case, "a corpus frame does not decode", case.frame)
    failures.check()


def test_skeletons_have_every_kind_of_slot() -> None:
    """(That each skeleton decodes and re-encodes to itself, which proves its slots are
    where the codec reads, is part of test_corpus_is_broad_and_valid.)"""
    kinds = {
        (t.kind, t.width, t.nullable)
        for sk in skeletons()
        for t in sk.tokens
        if isinstance(t, Slot)
    }
    for wanted in [
        ("string", "int16", False),
        ("string", "int16", True),
        ("string", "uvarint", False),
        ("string", "uvarint", True),
        ("bytes", "int32", False),
        ("bytes", "int32", True),
        ("bytes", "uvarint", False),
        ("bytes", "uvarint", True),
        ("records", "int32", True),
        ("records", "uvarint", True),
        ("array", "int32", False),
        ("array", "int32", True),
        ("array", "uvarint", False),
        ("array", "uvarint", True),
        ("marker", "byte", False),
        ("tags", "tags", False),
    ]:
        assert wanted in kinds, wanted


# -- truncation ------------------------------------------------------------------------


def cut_points(size: int, rng: random.Random) -> Iterator[int]:
    if size <= FULL_TRUNCATION_LIMIT:
        yield from range(size)
        return
    edge = SAMPLED_CUTS // 4
    points = set(range(edge)) | set(range(size - edge, size))
    points |= {rng.randrange(size) for _ in range(SAMPLED_CUTS - 2 * edge)}
    yield from sorted(points)


@pytest.mark.parametrize("kind", ["request", "response", "message"])
def test_truncation_at_every_byte(kind: str) -> None:
    """Every prefix of a valid frame that cuts into its body is a DecodeError, never
    anything else, and never a successful decode (a body is a fixed sequence of fields
    with no optional tail, and each read needs bytes the cut removed).

    Requests may carry bytes after their body, which Kafka (and decode_request) ignore
    (librdkafka sends some): a cut there still decodes, to the same message.
    The prefixes are zero-copy memoryview slices, as the broker gets them from
    FrameReader.
    """
    rng = random.Random(11)
    failures = Failures()
    attempts = 0
    for case in corpus():
        if case.kind != kind:
            continue
        end = case.body_end()
        whole = case.decode(case.frame)
        view = memoryview(case.frame)
        for cut in cut_points(len(view), rng):
            attempts += 1
            what = f"truncated to {cut} bytes (the body ends at {end})"
            if cut < end:
                expect_decode_error(case, view[:cut], what, failures)
            elif case.decode(view[:cut]) != whole:
                failures.add(case, f"{what}: decodes differently", view[:cut])
    failures.check()
    assert attempts > 2_000


def test_trailing_bytes() -> None:
    """Bytes after the body: a request ignores them (as Kafka does); a response or a
    bare message refuses them."""
    failures = Failures()
    for case in corpus():
        whole = case.decode(case.frame)
        for tail in (b"\x00", b"\xff", b"\x00\x00\x00\x00", case.frame[:16]):
            data = case.frame + tail
            what = f"{len(tail)} trailing bytes"
            try:
                decoded = case.decode(data)
            except DecodeError as exc:
                if case.kind == "request" or "trailing" not in str(exc):
                    failures.add(case, f"{what}: {exc}", data)
            except Exception:  # noqa: BLE001 - anything but DecodeError is the bug we hunt
                failures.unexpected(case, what, data)
            else:
                if case.kind != "request":
                    failures.add(case, f"{what} accepted", data)
                elif decoded != whole:
                    failures.add(case, f"{what} change the decoded request", data)
    failures.check()


# -- random mutations ------------------------------------------------------------------

_WINDOW_VALUES = {
    1: (0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF),
    2: (0x0000, 0x0001, 0x7FFF, 0x8000, 0xFFFE, 0xFFFF),
    4: (0x00000000, 0x00000001, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE, 0xFFFFFFFF, 0x7FFF, 0xFFFF),
}
_VARINTS = (
    b"\xff\xff\xff\xff\x0f",  # 2**32 - 1: the largest compact length
    b"\x80\x80\x80\x80\x08",  # 2**31
    b"\xff\xff\x03",  # 65535
    b"\xff\xff\xff\xff\x7f",  # 5 bytes, more than 32 bits
    b"\x80\x80\x80\x80\x80\x01",  # 6 bytes: over-long
    b"\x80\x80\x80\x80\x00",  # 0, over-long but legal
    b"\x80\x80\x80",  # unterminated (the frame goes on with other bytes)
)


def mutate(rng: random.Random, frame: bytes, pool: tuple[Case, ...]) -> bytes:
    """One to three random edits of ``frame``; the same ``rng`` state gives the same edits."""
    data = bytearray(frame)
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        op = rng.randrange(10)
        pos = rng.randrange(len(data) + 1)
        if op == 0 and data:  # flip one bit
            pos = min(pos, len(data) - 1)
            data[pos] ^= 1 << rng.randrange(8)
        elif op == 1 and data:  # random byte
            pos = min(pos, len(data) - 1)
            data[pos] = rng.randrange(256)
        elif op == 2:  # insert bytes
            data[pos:pos] = rng.randbytes(rng.choice((1, 1, 2, 4)))
        elif op == 3:  # delete bytes
            del data[pos : pos + rng.choice((1, 1, 2, 4))]
        elif op in (4, 5, 6):  # boundary value in a 1-, 2- or 4-byte big-endian window
            width = (1, 2, 4)[op - 4]
            value = rng.choice(_WINDOW_VALUES[width])
            data[pos : pos + width] = value.to_bytes(width, "big")
        elif op == 7:  # a hostile varint in place of one byte (a compact length, usually)
            data[pos : pos + 1] = rng.choice(_VARINTS)
        elif op == 8:  # splice: our head, another frame's tail
            other = rng.choice(pool).frame
            data = data[:pos] + other[rng.randrange(len(other) + 1) :]
        else:  # duplicate a slice somewhere else (repeats array elements, tagged fields)
            start = rng.randrange(len(data) + 1)
            chunk = data[start : start + rng.randrange(1, 24)]
            data[pos:pos] = chunk
    return bytes(data)


@pytest.mark.parametrize("seed_", MUTATION_SEEDS)
def test_random_mutations(seed_: int) -> None:
    """Mutated frames decode or raise DecodeError; what decodes re-encodes."""
    assert len(MUTATION_SEEDS) * (MUTATIONS // len(MUTATION_SEEDS)) >= 100_000
    pool = corpus()
    rng = random.Random(seed_)
    failures = Failures()
    decoded = 0
    n = MUTATIONS // len(MUTATION_SEEDS)
    for i in range(n):
        case = rng.choice(pool)
        data = mutate(rng, case.frame, pool)
        # Bytes, and now and then the other buffer types the decoder accepts.
        buf: Buffer = data if i % 8 else (memoryview(data) if i % 16 else bytearray(data))
        if decode_or_reject(case, buf, f"mutation {i} of seed {seed_}", failures):
            decoded += 1
    failures.check()
    # The mutations must be neither all rejected (too violent) nor all accepted.
    assert n // 50 < decoded < n // 2, decoded


# -- memory ----------------------------------------------------------------------------


def peak_decode_memory(decode: Callable[[], Any]) -> int:
    """Peak traced memory above the starting point while ``decode()`` runs (tracing
    must be on). A DecodeError is swallowed; any other exception propagates."""
    start, _ = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    with contextlib.suppress(DecodeError):
        decode()
    _, peak = tracemalloc.get_traced_memory()
    return peak - start


def memory_limit(size: int) -> int:
    return MEMORY_FACTOR * size + MEMORY_SLACK


@pytest.fixture
def traced() -> Iterator[None]:
    warm_up()
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


@pytest.mark.usefixtures("traced")
def test_mutated_frames_memory_is_bounded() -> None:
    pool = corpus()
    rng = random.Random(1000)
    failures = Failures()
    for case in pool:
        peak = peak_decode_memory(partial(case.decode, case.frame))
        if peak > memory_limit(len(case.frame)):
            failures.add(case, f"corpus frame: peak {peak} bytes", case.frame)
    for i in range(MEMORY_MUTATIONS):
        case = rng.choice(pool)
        data = mutate(rng, case.frame, pool)
        peak = peak_decode_memory(partial(case.decode, data))
        if peak > memory_limit(len(data)):
            failures.add(case, f"mutation {i}: peak {peak} bytes", data)
    failures.check()


def _fill_path(cls: type[Any], version: int, path: tuple[str, ...], count: int) -> Any:
    """A default ``cls`` whose arrays along ``path`` hold one element, and the last
    ``count`` (the same default element, encoded ``count`` times)."""
    root = cls()
    obj, owner = root, cls
    for depth, name in enumerate(path):
        field = next(f for f in owner._FIELDS if f.name == name)
        element = field.struct()
        if field.kind == "array":
            element_count = count if depth == len(path) - 1 else 1
            setattr(obj, name, [element] * element_count)
        else:
            setattr(obj, name, element)
        obj, owner = element, field.struct
    return root


def _struct_paths(cls: type[Any], version: int) -> Iterator[tuple[str, ...]]:
    """Paths to every array of structs inside ``cls`` at ``version``."""
    for f in cls._FIELDS:
        if not f.present(version) or f.struct is None:
            continue
        if f.kind == "array":
            yield (f.name,)
        for rest in _struct_paths(f.struct, version):
            yield (f.name, *rest)


@pytest.mark.usefixtures("traced")
def test_dense_arrays_stay_within_the_memory_factor() -> None:
    """The worst case for memory per frame byte: arrays packed with minimal elements.

    Checks the justification of MEMORY_FACTOR on every array of structs of every
    API's request and response, at every version.
    """
    worst = (0.0, "")
    failures: list[str] = []
    checked = 0
    for api in APIS.values():
        for cls in (api.request_class, api.response_class):
            for version in range(api.min_version, api.max_version + 1):
                for path in _struct_paths(cls, version):
                    message = _fill_path(cls, version, path, 200)
                    try:
                        data = message.encode(version)
                    except ValueError:
                        continue  # a default element that is not encodable (null records)
                    cls.decode(data, version)
                    peak = peak_decode_memory(partial(cls.decode, data, version))
                    checked += 1
                    where = f"{cls.NAME} v{version} {'.'.join(path)}"
                    worst = max(worst, (peak / len(data), where))
                    if peak > memory_limit(len(data)):
                        failures.append(f"{where}: {peak} bytes for a {len(data)}-byte frame")
    assert checked > 500
    assert not failures, failures[:10]
    # The headroom the MEMORY_FACTOR comment promises (~58 today).
    assert worst[0] < MEMORY_FACTOR * 3 / 4, worst

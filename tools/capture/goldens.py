"""Choose which recorded frames become goldens, and write them out.

A capture sees thousands of frames (heartbeats, fetch polls), mostly alike. We keep at most three
request/response exchanges per (client, api key, api version), preferring exchanges that carry
record batches of a compression codec or batch type not yet kept, so Produce and Fetch goldens
cover gzip, snappy, lz4, zstd, transactional and control batches where the client sent them.
"""

from __future__ import annotations

import json
import struct
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import crc32c

from tools.capture.apis import api_name
from tools.capture.proxy import Frame

PER_GROUP = 3
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}

BatchKind = tuple[str, bool, bool]  # (codec, transactional, control)


def batch_kinds(payload: bytes | None) -> frozenset[BatchKind]:
    """Record batches (v2) found anywhere in a frame, as (codec, transactional, control).

    Rather than decoding every Produce/Fetch version, look for a v2 batch header (magic 2 at
    offset 16) whose CRC-32C over the rest of the batch checks out: a false positive would need a
    matching 32-bit checksum.
    """
    found: set[BatchKind] = set()
    if payload is None:
        return frozenset()
    i, n = 15, len(payload)
    while True:
        i = payload.find(b"\x02", i + 1)
        if i < 0:
            break
        start = i - 16
        (length,) = struct.unpack_from(">i", payload, start + 8)
        end = start + 12 + length
        if length < 49 or end > n:
            continue
        (crc,) = struct.unpack_from(">I", payload, start + 17)
        if crc32c.crc32c(payload[start + 21 : end]) != crc:
            continue
        (attrs,) = struct.unpack_from(">h", payload, start + 21)
        found.add((CODECS.get(attrs & 7, "?"), bool(attrs & 0x10), bool(attrs & 0x20)))
        i = end + 15  # the next batch's magic byte, if one follows
    return frozenset(found)


@dataclass
class Exchange:
    """A request and (unless acks=0 or the connection dropped) its response."""

    request: Frame
    response: Frame | None = None

    def signature(self) -> frozenset[BatchKind]:
        resp = self.response.payload if self.response else None
        return batch_kinds(self.request.payload) | batch_kinds(resp)


def exchanges(frames: Iterable[Frame]) -> list[Exchange]:
    """Pair responses with their requests by (connection, correlation id), in capture order."""
    out: list[Exchange] = []
    open_: dict[tuple[int, int], Exchange] = {}
    for f in sorted(frames, key=lambda f: f.seq):
        key = (f.connection, f.correlation_id)
        if f.kind == "request":
            ex = Exchange(f)
            open_[key] = ex
            out.append(ex)
        elif key in open_:
            open_.pop(key).response = f
    return out


def weight(kind: BatchKind) -> float:
    """How much a batch kind is worth keeping: compressed, transactional and control batches are
    what a decoder most needs to see; plain uncompressed batches come along anyway."""
    codec, transactional, control = kind
    return (codec != "none") + transactional + control + 0.5


def select(frames: Iterable[Frame]) -> list[Frame]:
    """The frames to keep: per (label, key, version) up to PER_GROUP exchanges.

    Exchanges are picked greedily by the worth of the batch kinds they add; ties go to the kind
    kept least often so far by other clients (so three Produce slots per client still spread
    the five codecs over the clients), then to the earliest exchange. Remaining slots take the
    earliest exchanges.
    """
    groups: dict[tuple[str, int, int], list[Exchange]] = defaultdict(list)
    for ex in exchanges(frames):
        r = ex.request
        groups[(r.label, r.api_key, r.api_version)].append(ex)
    kept_kinds: dict[int, Counter[BatchKind]] = defaultdict(Counter)
    kept: list[Frame] = []
    for (_, api_key, _), exs in sorted(groups.items()):
        sigs = [ex.signature() for ex in exs]
        chosen: list[int] = []
        seen: set[BatchKind] = set()
        counts = kept_kinds[api_key]
        while len(chosen) < PER_GROUP:
            best: tuple[float, int, int] | None = None
            for i, sig in enumerate(sigs):
                new = sig - seen
                if i in chosen or not new:
                    continue
                score = (sum(weight(k) for k in new), -min(counts[k] for k in new), -i)
                if best is None or score > best:
                    best = score
            if best is None:
                break
            i = -best[2]
            chosen.append(i)
            seen |= sigs[i]
            counts.update(sigs[i])
        chosen += [i for i in range(len(exs)) if i not in chosen][: PER_GROUP - len(chosen)]
        for i in chosen:
            ex = exs[i]
            kept.extend(f for f in (ex.request, ex.response) if f and f.payload is not None)
    return sorted(kept, key=lambda f: f.seq)


def write(frames: Iterable[Frame], out_dir: Path) -> dict[str, list[Frame]]:
    """Write <label>/<n>-<Api>-v<ver>-<kind>.bin and <label>/index.json; return frames by label."""
    by_label: dict[str, list[Frame]] = defaultdict(list)
    for f in frames:
        by_label[f.label].append(f)
    for label, fs in by_label.items():
        d = out_dir / label
        d.mkdir(parents=True, exist_ok=True)
        for old in d.glob("*.bin"):
            old.unlink()
        index = []
        for n, f in enumerate(fs):
            assert f.payload is not None
            name = f"{n:04d}-{api_name(f.api_key)}-v{f.api_version}-{f.kind}.bin"
            (d / name).write_bytes(f.payload)
            index.append(
                {
                    "file": name,
                    "kind": f.kind,
                    "api_key": f.api_key,
                    "api_version": f.api_version,
                    "correlation_id": f.correlation_id,
                    "connection": f.connection,
                }
            )
        (d / "index.json").write_text(json.dumps(index, indent=1) + "\n")
    return dict(by_label)

"""Version emulation (``millpond.emulate``): advertise and serve the API version ranges of
an older Apache Kafka release, so client authors can test their fallback paths.

:data:`RANGES` holds, per release line, every API that release's broker advertises in
ApiVersions and its range, as captured from the real broker (3.9.1, 4.0.2 and 4.4.0; see
``tools/capture/api_versions.py``; ``tests/broker/test_emulation.py`` checks this table
against those captured answers byte for byte decoded). :func:`emulate` turns the broker's
own routes (Kafka 4.4's ranges) into those of a release, so the Dispatcher still advertises
exactly what it routes:

- an API the release does not have is neither advertised nor served;
- an API's maximum is the release's, and a request above it is refused as that release
  refuses one (the connection is closed; ApiVersions is answered UNSUPPORTED_VERSION with
  its own range in the v0 body, per KIP-511: the captured probes show 3.9, 4.0 and 4.4 all
  do so);
- quirks are kept: 4.0 and 4.4 advertise Produce from v0 but close the connection on
  v0-2 (KAFKA-18659), :data:`REFUSED_BELOW`.

What cannot be emulated: versions the 4.x specs no longer define (KIP-896 removed them in
4.0) have no codecs here, so they are not served and not advertised. Emulating 3.9 therefore
advertises, for these APIs, the 3.9 maximum but a higher minimum than 3.9 did: Produce from
v3 (3.9: v0), Fetch v4 (v0), ListOffsets v1 (v0), OffsetCommit v2 (v0), OffsetFetch v1
(v0), CreateTopics v2 (v0), DeleteTopics v1 (v0), OffsetForLeaderEpoch v2 (v0),
DescribeConfigs v1 (v0), AlterReplicaLogDirs v1 (v0) and DescribeLogDirs v1 (v0). Only a
client that speaks nothing newer than those removed versions notices (it finds no common
version, where 3.9 would have served it). 4.0 and 4.4 are emulated exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from millpond.broker.dispatch import Route

CONFIG_KEY = "millpond.emulate"

#: The release each line's ranges were captured from.
CAPTURED_FROM: Mapping[str, str] = {"3.9": "3.9.1", "4.0": "4.0.2", "4.4": "4.4.0"}

#: API key -> (min, max) advertised in ApiVersions by each release line's broker listener.
RANGES: Mapping[str, Mapping[int, tuple[int, int]]] = {
    "3.9": {
        0: (0, 11), 1: (0, 17), 2: (0, 9), 3: (0, 12), 8: (0, 9), 9: (0, 9), 10: (0, 6),
        11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 5), 17: (0, 1),
        18: (0, 4), 19: (0, 7), 20: (0, 6), 21: (0, 2), 22: (0, 5), 23: (0, 4), 24: (0, 5),
        25: (0, 4), 26: (0, 4), 27: (0, 1), 28: (0, 4), 29: (0, 3), 30: (0, 3), 31: (0, 3),
        32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 4), 36: (0, 2), 37: (0, 3), 38: (0, 3),
        39: (0, 2), 40: (0, 2), 41: (0, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 0),
        46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 2),
        57: (0, 1), 60: (0, 1), 61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 1), 68: (0, 0),
        69: (0, 0), 74: (0, 0), 75: (0, 0), 80: (0, 0), 81: (0, 0),
    },
    "4.0": {
        0: (0, 12), 1: (4, 17), 2: (1, 10), 3: (0, 13), 8: (2, 9), 9: (1, 9), 10: (0, 6),
        11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1),
        18: (0, 4), 19: (2, 7), 20: (1, 6), 21: (0, 2), 22: (0, 5), 23: (2, 4), 24: (0, 5),
        25: (0, 4), 26: (0, 5), 27: (1, 1), 28: (0, 5), 29: (1, 3), 30: (1, 3), 31: (1, 3),
        32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 4), 36: (0, 2), 37: (0, 3), 38: (1, 3),
        39: (1, 2), 40: (1, 2), 41: (1, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 0),
        46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 2),
        57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 1), 68: (0, 1),
        69: (0, 1), 74: (0, 0), 75: (0, 0), 80: (0, 0), 81: (0, 0),
    },
    "4.4": {
        0: (0, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13), 8: (2, 10), 9: (1, 10), 10: (0, 6),
        11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1),
        18: (0, 5), 19: (2, 7), 20: (1, 6), 21: (0, 2), 22: (0, 5), 23: (2, 4), 24: (0, 5),
        25: (0, 4), 26: (0, 5), 27: (1, 2), 28: (0, 6), 29: (1, 3), 30: (1, 3), 31: (1, 3),
        32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 5), 36: (0, 2), 37: (0, 3), 38: (1, 3),
        39: (1, 2), 40: (1, 2), 41: (1, 3), 42: (0, 3), 43: (0, 2), 44: (0, 1), 45: (0, 1),
        46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 2),
        57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 2), 68: (0, 1),
        69: (0, 1), 74: (0, 1), 75: (0, 0), 76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2),
        80: (0, 1), 81: (0, 0), 83: (0, 0), 84: (0, 0), 85: (0, 1), 86: (0, 0), 87: (0, 1),
        88: (0, 1), 89: (0, 1), 90: (0, 1), 91: (0, 0), 92: (0, 0), 93: (0, 0), 94: (0, 0),
    },
}  # fmt: skip

#: API key -> lowest version served, where a release advertises versions it refuses.
REFUSED_BELOW: Mapping[str, Mapping[int, int]] = {"3.9": {}, "4.0": {0: 3}, "4.4": {0: 3}}

#: The accepted values of ``millpond.emulate``; unset means the broker's own (4.4's).
RELEASES: tuple[str, ...] = tuple(RANGES)


def emulate(routes: Iterable[Route], release: object) -> tuple[Route, ...]:
    """``routes`` narrowed to what ``release`` (a key of :data:`RANGES`, typically the
    config's value) advertises and serves; unchanged for None.

    Raises ValueError for an unknown release, or when the release serves a version above
    what a route's handler serves (a handler must then be extended first)."""
    if release is None:
        return tuple(routes)
    if not isinstance(release, str) or release not in RANGES:
        raise ValueError(
            f"{CONFIG_KEY}: unknown release {release!r}; accepted: {', '.join(RELEASES)}"
        )
    ranges, refused = RANGES[release], REFUSED_BELOW[release]
    out = []
    for route in routes:
        if route.api_key not in ranges:
            continue
        low, high = ranges[route.api_key]
        if high > route.max_version:
            raise ValueError(
                f"Kafka {release} serves {route.name} v{high}; millpond v{route.max_version}"
            )
        floor = route.served_min_version or route.min_version
        served_min = refused.get(route.api_key)
        if served_min is None:
            low = max(low, floor)  # versions removed from the specs (KIP-896): not served
        else:
            served_min = max(served_min, floor)
        out.append(route._replace(min_version=low, max_version=high, served_min_version=served_min))
    return tuple(out)

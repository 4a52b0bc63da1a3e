"""Finalized features (metadata.version and friends) as FeatureLevelRecords.

What this controller can finalize is :data:`SUPPORTED_FEATURES` (inclusive level
ranges). The first controller of a fresh metadata log writes the bootstrap levels
(:func:`bootstrap_records`), as Kafka's controller does when it finds its log empty;
UpdateFeatures changes them later with Kafka's rules: a lower level needs a downgrade
type, a higher level the UPGRADE type, level 0 removes a feature, and metadata.version
is never downgraded (it might drop metadata a lower version cannot express).

metadata.version levels are Kafka's: 7 is 3.3-IV3 (the oldest KRaft level Kafka 4 still
reads), 27 is 4.1-IV1. We bootstrap 27: every record version we write is readable at it
by Kafka 4.1 and later, so Kafka's tools can read our log.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from enum import IntEnum
from typing import NamedTuple, Protocol

from millpond.controller.image import MetadataImage
from millpond.controller.record_serde import (
    ApiMessageAndVersion,
    decode_metadata_record,
    with_version,
)
from millpond.controller.results import NO_ERROR, ApiError, ControllerResult
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.metadata.feature_level_record import FeatureLevelRecord
from millpond.wire.records import RecordBatch

__all__ = [
    "BOOTSTRAP_FEATURES",
    "METADATA_VERSION",
    "SUPPORTED_FEATURES",
    "FeatureUpdate",
    "KRAFT_VERSION",
    "KRAFT_VERSIONS",
    "FeatureUpgradeType",
    "bootstrap_records",
    "read_bootstrap_features",
    "registered_features",
    "refuse_bootstrap",
    "update_features",
]

METADATA_VERSION = "metadata.version"
METADATA_VERSION_MIN = 7  # 3.3-IV3
METADATA_VERSION_LATEST = 27  # 4.1-IV1

#: Features this controller can finalize: name -> (lowest, highest) level. The broker
#: implements neither KIP-848 groups nor transactions v2 yet, so those stay at 0.
SUPPORTED_FEATURES: Mapping[str, tuple[int, int]] = {
    METADATA_VERSION: (METADATA_VERSION_MIN, METADATA_VERSION_LATEST),
    "group.version": (0, 0),
    "transaction.version": (0, 0),
}

BOOTSTRAP_FEATURES: Mapping[str, int] = {METADATA_VERSION: METADATA_VERSION_LATEST}

#: Moved by the quorum (a KRaftVersionRecord), never by UpdateFeatures here; a node
#: reports it among its supported features when it registers.
KRAFT_VERSION = "kraft.version"
KRAFT_VERSIONS = (0, 1)


def registered_features(
    supported: Mapping[str, tuple[int, int]] = SUPPORTED_FEATURES,
) -> dict[str, tuple[int, int]]:
    """What a node registers as supported: the finalizable features and kraft.version."""
    return {**supported, KRAFT_VERSION: KRAFT_VERSIONS}


class FeatureUpgradeType(IntEnum):
    UNKNOWN = 0
    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3


class FeatureUpdate(NamedTuple):
    feature: str
    max_version_level: int
    upgrade_type: int = FeatureUpgradeType.UPGRADE


def bootstrap_records(
    features: Mapping[str, int] = BOOTSTRAP_FEATURES,
) -> list[ApiMessageAndVersion]:
    """The FeatureLevelRecords a fresh metadata log starts with."""
    return [
        with_version(FeatureLevelRecord(name=name, feature_level=level))
        for name, level in features.items()
        if level > 0
    ]


def read_bootstrap_features(batches: Iterable[RecordBatch]) -> dict[str, int]:
    """The FeatureLevelRecords of a bootstrap checkpoint's data batches, by name."""
    features = {}
    for batch in batches:
        for record in batch.records():
            message = decode_metadata_record(record.value).message
            if isinstance(message, FeatureLevelRecord):
                features[message.name] = message.feature_level
    return features


def refuse_bootstrap(features: Mapping[str, int], node_id: int) -> str | None:
    """Why this controller cannot start a cluster at these levels, or None."""
    if METADATA_VERSION not in features:
        return "it names no metadata.version"
    for name, level in features.items():
        error = _check(0, FeatureUpdate(name, level), SUPPORTED_FEATURES, node_id)
        if not error.is_success:
            return error.message
    return None


def _check(
    current: int,
    update: FeatureUpdate,
    supported: Mapping[str, tuple[int, int]],
    node_id: int,
) -> ApiError:
    """``current``: the feature's finalized level now."""
    name, level = update.feature, update.max_version_level
    if update.upgrade_type not in (1, 2, 3):
        return ApiError(ErrorCode.INVALID_UPDATE_VERSION, "Unknown upgrade type.")
    if level < 0:
        return ApiError(
            ErrorCode.INVALID_UPDATE_VERSION,
            "The upper value for the new range cannot be less than 0.",
        )
    if level < current and update.upgrade_type == FeatureUpgradeType.UPGRADE:
        return ApiError(
            ErrorCode.INVALID_UPDATE_VERSION,
            "Can't downgrade the version of this feature without setting the upgrade type "
            "to either safe or unsafe downgrade.",
        )
    if level > current and update.upgrade_type != FeatureUpgradeType.UPGRADE:
        return ApiError(ErrorCode.INVALID_UPDATE_VERSION, "Can't downgrade to a newer version.")
    if name == METADATA_VERSION and level < current:
        return ApiError(
            ErrorCode.INVALID_UPDATE_VERSION,
            f"Invalid metadata.version {level}. Refusing to perform the requested downgrade "
            "because it might delete metadata information.",
        )
    bounds = supported.get(name)
    if bounds is None:
        if level == 0:
            return NO_ERROR
        return ApiError(
            ErrorCode.INVALID_UPDATE_VERSION,
            f"Invalid update version {level} for feature {name}. Local controller {node_id} "
            "does not support this feature.",
        )
    low, high = bounds
    if level != 0 and not low <= level <= high or level == 0 and name == METADATA_VERSION:
        return ApiError(
            ErrorCode.INVALID_UPDATE_VERSION,
            f"Invalid update version {level} for feature {name}. Local controller {node_id} "
            f"only supports versions {low}-{high}",
        )
    return NO_ERROR


class KRaftVersionControl(Protocol):
    """The Raft leader's kraft.version, as UpdateFeatures sees it."""

    @property
    def version(self) -> int: ...

    def upgrade(self, version: int, validate_only: bool) -> ApiError:
        """Upgrade (or check that it could), or the error saying why not."""


def update_features(
    image: MetadataImage,
    updates: Sequence[FeatureUpdate],
    *,
    validate_only: bool,
    node_id: int,
    supported: Mapping[str, tuple[int, int]] = SUPPORTED_FEATURES,
    kraft: KRaftVersionControl | None = None,
) -> ControllerResult[dict[str, ApiError]]:
    """UpdateFeatures: per feature its error; a record for each level that changes.
    kraft.version is no metadata record but the quorum's own: ``kraft`` (the Raft
    leader) upgrades it, and without one it cannot change."""
    results: dict[str, ApiError] = {}
    records: list[ApiMessageAndVersion] = []
    names = [u.feature for u in updates]
    for update in updates:
        if names.count(update.feature) > 1:
            results[update.feature] = ApiError(
                ErrorCode.INVALID_REQUEST, f"Feature {update.feature} was specified more than once."
            )
            continue
        if update.feature == KRAFT_VERSION and kraft is not None:
            kraft_supported = {**supported, KRAFT_VERSION: KRAFT_VERSIONS}
            error = _check(kraft.version, update, kraft_supported, node_id)
            if error.is_success:
                error = kraft.upgrade(update.max_version_level, validate_only)
            results[update.feature] = error
            continue
        error = _check(image.features.get(update.feature, 0), update, supported, node_id)
        results[update.feature] = error
        if error.is_success and image.features.get(update.feature, 0) != update.max_version_level:
            records.append(
                with_version(
                    FeatureLevelRecord(name=update.feature, feature_level=update.max_version_level)
                )
            )
    return ControllerResult(() if validate_only else tuple(records), results)

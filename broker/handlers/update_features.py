"""UpdateFeatures (key 57), v0-2: change finalized feature levels through the controller.

Behaviour, as Apache Kafka 4.4:
- All or nothing: every update is checked first; the first that fails fails the whole
  request (top-level error, message "The update failed for all features since the
  following feature had an error: ..."), and nothing changes.
- Rules (the controller's): a lower level needs a downgrade type (v0: allow_downgrade,
  read as SAFE_DOWNGRADE), a higher one UPGRADE; level 0 removes a feature;
  metadata.version is never downgraded; a level outside what this node supports, or a
  feature it does not know, is INVALID_UPDATE_VERSION; a feature named twice is
  INVALID_REQUEST.
- ``validate_only`` (v1+) checks and changes nothing.
- On success, v0-1 list each feature with error NONE (and the message "NONE", as
  Kafka's controller fills it); v2 answers the top-level error only (the
  per-feature results are gone).

Version notes: v1 adds upgrade_type and validate_only (KIP-778); v2 drops the results.
Not implemented: authorization.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from millpond.broker.context import RequestContext
from millpond.controller.feature_control import FeatureUpdate, FeatureUpgradeType
from millpond.wire.errors import ErrorCode
from millpond.wire.generated.api.update_features_request import UpdateFeaturesRequest
from millpond.wire.generated.api.update_features_response import (
    UpdatableFeatureResult,
    UpdateFeaturesResponse,
)

if TYPE_CHECKING:
    from millpond.broker.broker_server import BrokerServer


async def handle(
    broker: BrokerServer, ctx: RequestContext, request: UpdateFeaturesRequest
) -> UpdateFeaturesResponse:
    version = ctx.api_version
    updates = [
        FeatureUpdate(
            u.feature,
            u.max_version_level,
            u.upgrade_type
            if version >= 1
            else FeatureUpgradeType.SAFE_DOWNGRADE
            if u.allow_downgrade
            else FeatureUpgradeType.UPGRADE,
        )
        for u in request.feature_updates
    ]
    validate_only = version >= 1 and request.validate_only
    channel = broker.admin_channel
    checked = await channel.update_features(updates, validate_only=True)
    failed = next((checked[u.feature] for u in updates if checked[u.feature].is_failure), None)
    if failed is not None:
        return UpdateFeaturesResponse(
            error_code=failed.code,
            error_message="The update failed for all features since the following feature "
            f"had an error: {failed.message}",
        )
    if not validate_only:
        await channel.update_features(updates)
    response = UpdateFeaturesResponse(error_code=ErrorCode.NONE, error_message=None)
    if version <= 1:
        response.results = [
            UpdatableFeatureResult(
                feature=u.feature, error_code=ErrorCode.NONE, error_message="NONE"
            )
            for u in updates
        ]
    return response

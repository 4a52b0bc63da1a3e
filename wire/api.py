"""The registry of Kafka APIs: key -> name -> version range -> message classes.

Built from the tables the code generator writes, so it never drifts from the specs.
Message classes are imported on first use: a broker that serves ten APIs does not pay
for loading ninety.
"""

from __future__ import annotations

import importlib
from functools import cache
from typing import NamedTuple

from millpond.wire.generated.api import SPECS, ApiKey
from millpond.wire.message import Message, SpecInfo

__all__ = ["APIS", "ApiInfo", "ApiKey", "api_info", "load_message_class"]


@cache
def load_message_class(module: str, name: str) -> type[Message]:
    """Import one generated module and return its top-level message class."""
    cls: type[Message] = getattr(importlib.import_module(module), name)
    return cls


class ApiInfo(NamedTuple):
    """One API as the specs define it (not what a broker chooses to serve)."""

    key: int
    name: str
    min_version: int
    max_version: int
    flexible_min: int | None
    listeners: tuple[str, ...]
    latest_version_unstable: bool
    request_spec: SpecInfo
    response_spec: SpecInfo

    @property
    def request_class(self) -> type[Message]:
        return load_message_class(self.request_spec.module, self.request_spec.name)

    @property
    def response_class(self) -> type[Message]:
        return load_message_class(self.response_spec.module, self.response_spec.name)

    def supports(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version

    def is_flexible(self, version: int) -> bool:
        return self.flexible_min is not None and version >= self.flexible_min

    def request_header_version(self, version: int) -> int:
        """Header v2 for flexible versions, v1 otherwise (v0 left with ControlledShutdown v0)."""
        return 2 if self.is_flexible(version) else 1

    def response_header_version(self, version: int) -> int:
        """Header v1 for flexible versions, v0 otherwise; ApiVersions always uses v0
        (KIP-511: a client must read the answer before it knows our versions)."""
        if self.key == ApiKey.API_VERSIONS:
            return 0
        return 1 if self.is_flexible(version) else 0


def _build() -> dict[int, ApiInfo]:
    requests = {s.api_key: s for s in SPECS if s.type == "request"}
    responses = {s.api_key: s for s in SPECS if s.type == "response"}
    apis: dict[int, ApiInfo] = {}
    for key, request in sorted((k, v) for k, v in requests.items() if k is not None):
        assert request.valid_versions is not None, request.name
        flexible = request.flexible_versions
        apis[key] = ApiInfo(
            key=key,
            name=request.name.removesuffix("Request"),
            min_version=request.valid_versions[0],
            max_version=request.valid_versions[1],
            flexible_min=None if flexible is None else flexible[0],
            listeners=request.listeners,
            latest_version_unstable=request.latest_version_unstable,
            request_spec=request,
            response_spec=responses[key],
        )
    return apis


APIS: dict[int, ApiInfo] = _build()


def api_info(key: int) -> ApiInfo | None:
    return APIS.get(key)

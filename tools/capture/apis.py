"""Kafka API key -> name, for golden file names and the coverage table."""

from millpond.wire import APIS

#: Keys Kafka 4 removed (no spec left to generate), still named in old traffic.
_REMOVED = {4: "LeaderAndIsr", 5: "StopReplica", 6: "UpdateMetadata", 7: "ControlledShutdown"}


def api_name(api_key: int) -> str:
    api = APIS.get(api_key)
    if api is not None:
        return api.name
    return _REMOVED.get(api_key, f"ApiKey{api_key}")

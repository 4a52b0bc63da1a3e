#!/bin/sh
# Start the broker with its listeners and data directory from the environment; any
# arguments are passed on to `millpond serve` (e.g. --override num.partitions=3).
set -eu
exec millpond serve \
    --override "log.dirs=${MILLPOND_DATA_DIR}" \
    --override "listeners=${MILLPOND_LISTENERS}" \
    --override "advertised.listeners=${MILLPOND_ADVERTISED_LISTENERS}" \
    "$@"

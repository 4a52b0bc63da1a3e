#!/bin/sh
# Start a millpond node configured from the environment; any arguments are passed on to
# `millpond serve` after it (e.g. --override num.partitions=3).
#
#   MILLPOND_DATA_DIR              log.dirs (the volume)
#   MILLPOND_LISTENERS             listeners
#   MILLPOND_ADVERTISED_LISTENERS  advertised.listeners (empty: not set, as a controller
#                                  without a broker listener needs)
#   MILLPOND_NODE_ID               node.id
#   MILLPOND_CONFIG                more of Kafka's configs, one KEY=VALUE a line (lines
#                                  starting with # are comments): process.roles,
#                                  controller.quorum.voters, ... (shared by the nodes of a
#                                  compose file, where only node.id differs)
#   MILLPOND_CLUSTER_ID            when set, a data directory without meta.properties is
#                                  formatted with this cluster id before the first start
#                                  (`millpond storage format`, with the same configs), as
#                                  every node of a multi-node cluster needs
#
# Without MILLPOND_NODE_ID, MILLPOND_CONFIG and MILLPOND_CLUSTER_ID this is the single
# node, broker and controller in one process, that formats its own directory.
set -eu

# sh has one list, the positional parameters: the environment's --override pairs go after
# the $given arguments, which move to the end before serve starts.
given=$#
set -- "$@" --override "log.dirs=${MILLPOND_DATA_DIR}" --override "listeners=${MILLPOND_LISTENERS}"
if [ -n "${MILLPOND_ADVERTISED_LISTENERS:-}" ]; then
    set -- "$@" --override "advertised.listeners=${MILLPOND_ADVERTISED_LISTENERS}"
fi
if [ -n "${MILLPOND_NODE_ID:-}" ]; then
    set -- "$@" --override "node.id=${MILLPOND_NODE_ID}"
fi
while read -r line; do
    case $line in
        '' | '#'*) ;;
        *) set -- "$@" --override "$line" ;;
    esac
done <<EOF
${MILLPOND_CONFIG:-}
EOF

if [ -n "${MILLPOND_CLUSTER_ID:-}" ] && [ ! -e "${MILLPOND_DATA_DIR}/meta.properties" ]; then
    # The configs from the environment only: the arguments are serve's.
    (shift "$given" && millpond storage format --cluster-id "$MILLPOND_CLUSTER_ID" "$@")
fi

# The arguments given go last, so that they win over the environment's.
i=0
while [ "$i" -lt "$given" ]; do
    set -- "$@" "$1"
    shift
    i=$((i + 1))
done
exec millpond serve "$@"

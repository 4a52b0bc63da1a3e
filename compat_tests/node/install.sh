#!/usr/bin/env bash
# Installs compat_tests/node/node_modules exactly as package-lock.json pins it, offline from
# anything but the npm registry (and Debian's packages for one library), unless the last
# install was from this very lockfile (the stamp is a copy of it). .ci/run and the Node.js
# compat tests run it.
#
# Two packages compile native addons, from the sources their npm tarballs carry:
# - @confluentinc/kafka-javascript (librdkafka inside). Its install script would fetch a
#   prebuilt binary from GitHub, and its librdkafka build (static by default) would download
#   zlib, OpenSSL and zstd sources: neither is reachable here. So it is built from source
#   (build_from_source) and linked against the system's libraries (CKJS_LINKING=dynamic):
#   libssl-dev, zlib1g-dev and libzstd-dev (without the last, librdkafka has no zstd).
# - zstd-napi (kafkajs' zstd codec), whose prebuilt binary is also on GitHub.
# node-gyp compiles against the Node.js headers of the installed Node.js (nodedir) instead of
# downloading them.
set -euo pipefail
cd "$(dirname "$0")"

stamp=node_modules/.millpond-installed-lock.json
if cmp -s package-lock.json "$stamp"; then
  exit 0
fi

node_prefix=$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")
nodedir=${npm_config_nodedir:-$node_prefix}
if [ ! -f "$nodedir/include/node/node_api.h" ]; then
  echo "install.sh: no Node.js headers in $nodedir/include/node (set npm_config_nodedir)" >&2
  exit 1
fi
if ! pkg-config --exists libzstd libssl zlib; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libzstd-dev libssl-dev zlib1g-dev pkg-config
  else
    echo "install.sh: librdkafka needs libzstd-dev, libssl-dev, zlib1g-dev (pkg-config)" >&2
    exit 1
  fi
fi

start=$SECONDS
npm_config_nodedir=$nodedir npm_config_build_from_source=true CKJS_LINKING=dynamic \
  npm ci --no-audit --no-fund --prefer-offline
cp package-lock.json "$stamp"
echo "install.sh: node_modules installed in $((SECONDS - start))s"

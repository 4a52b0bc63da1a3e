#!/usr/bin/env bash
# Install Apache Kafka 4.4's jars (broker, tools, clients and their dependencies) from Maven
# Central into the cache directory that compat_tests/kafka/reference.py reads:
#   ${MILLPOND_KAFKA_CACHE:-~/.cache/millpond/kafka-4.4}/lib
# and Kafka's metadata shell with its own release's jars (shell/pom.xml says why) into
#   ${MILLPOND_KAFKA_SHELL_CACHE:-~/.cache/millpond/kafka-shell}/lib
# and MirrorMaker 2 with its own release's jars (mirror/pom.xml says why) into
#   ${MILLPOND_KAFKA_MIRROR_CACHE:-~/.cache/millpond/kafka-mirror}/lib
# The code generator (python -m millpond.wire.codegen) reads Kafka's JSON message specs from
# the same directory: kafka-clients and the raft, metadata, coordinators' and storage jars.
# Idempotent: when the jars there were resolved from this very pom.xml (its sha256 is stamped
# next to them), Maven is not started at all. Run by .ci/run and by tools/capture.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)

# install POM CACHE: the runtime jars POM resolves, into CACHE/lib.
install() {
  local pom=$1 cache=$2 digest version artifact tmp
  digest=$(sha256sum "$pom" | cut -d' ' -f1)
  version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom")
  # Current: resolved from this very pom (its sha256 is stamped next to the jars), and every
  # Kafka jar it names is still there (a jar deleted by hand would otherwise stay missing
  # until the pom changed). Then Maven is not started at all.
  if [ -d "$cache/lib" ] && [ "$(cat "$cache/pom.sha256" 2>/dev/null)" = "$digest" ]; then
    local complete=1
    for artifact in $(sed -n 's:.*<artifactId>\(kafka[^<]*\)</artifactId>.*:\1:p' "$pom"); do
      [ -f "$cache/lib/$artifact-$version.jar" ] || complete=0
    done
    [ "$complete" = 1 ] && return 0
  fi
  if ! command -v mvn >/dev/null; then
    echo "compat_tests/kafka/install.sh: mvn not found; install Maven (and Java 17)" >&2
    return 1
  fi
  echo "compat_tests/kafka/install.sh: resolving Kafka $version ($pom) from Maven Central into $cache/lib"
  mkdir -p "$cache"
  # Resolve into a fresh directory and swap it in only when complete, so an interrupted run
  # never leaves a half-filled lib/ that looks installed.
  tmp=$(mktemp -d "$cache/lib.XXXXXX")
  timeout 900 mvn -q -B -f "$pom" dependency:copy-dependencies \
    -DincludeScope=runtime -DoutputDirectory="$tmp" || { rm -rf "$tmp"; return 1; }
  rm -rf "$cache/lib" "$cache/pom.sha256"
  mv "$tmp" "$cache/lib"
  printf '%s' "$digest" >"$cache/pom.sha256"
}

install "$here/pom.xml" "${MILLPOND_KAFKA_CACHE:-$HOME/.cache/millpond/kafka-4.4}"
install "$here/shell/pom.xml" "${MILLPOND_KAFKA_SHELL_CACHE:-$HOME/.cache/millpond/kafka-shell}"
install "$here/mirror/pom.xml" "${MILLPOND_KAFKA_MIRROR_CACHE:-$HOME/.cache/millpond/kafka-mirror}"

#!/usr/bin/env bash
# Install Apache Kafka 4.4's jars (broker, tools, clients and their dependencies) from Maven
# Central into the cache directory that compat_tests/kafka/reference.py reads:
#   ${MILLPOND_KAFKA_CACHE:-~/.cache/millpond/kafka-4.4}/lib
# The code generator (python -m millpond.wire.codegen) reads Kafka's JSON message specs from
# the same directory: kafka-clients and the raft, metadata, coordinators' and storage jars.
# Idempotent: when the jars there were resolved from this very pom.xml (its sha256 is stamped
# next to them), Maven is not started at all. Run by .ci/run and by tools/capture.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
pom=$here/pom.xml
cache=${MILLPOND_KAFKA_CACHE:-$HOME/.cache/millpond/kafka-4.4}
digest=$(sha256sum "$pom" | cut -d' ' -f1)

# Current: resolved from this pom.xml, and every Kafka jar it names is still there (a jar
# deleted by hand would otherwise stay missing until pom.xml changed).
current() {
  [ -d "$cache/lib" ] && [ "$(cat "$cache/pom.sha256" 2>/dev/null)" = "$digest" ] || return 1
  local version artifact
  version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom")
  for artifact in $(sed -n 's:.*<artifactId>\(kafka[^<]*\)</artifactId>.*:\1:p' "$pom"); do
    [ -f "$cache/lib/$artifact-$version.jar" ] || return 1
  done
}
if current; then
  exit 0
fi
if ! command -v mvn >/dev/null; then
  echo "compat_tests/kafka/install.sh: mvn not found; install Maven (and Java 17)" >&2
  exit 1
fi

echo "compat_tests/kafka/install.sh: resolving Kafka 4.4 from Maven Central into $cache/lib"
mkdir -p "$cache"
# Resolve into a fresh directory and swap it in only when complete, so an interrupted run
# never leaves a half-filled lib/ that looks installed.
tmp=$(mktemp -d "$cache/lib.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
timeout 900 mvn -q -B -f "$pom" dependency:copy-dependencies \
  -DincludeScope=runtime -DoutputDirectory="$tmp"
rm -rf "$cache/lib" "$cache/pom.sha256"
mv "$tmp" "$cache/lib"
printf '%s' "$digest" >"$cache/pom.sha256"

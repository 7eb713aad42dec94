#!/usr/bin/env bash
# bench/tls.sh: what mutual TLS costs the software provider's fabric between two processes,
# side by side with the clear in alternating rounds: RDMA WRITE bandwidth (1 MiB writes, 16 in
# flight) and a 64-byte RDMA WRITE's round trip (p50, p99). Not a test: figures depend on the
# machine and its load, which the run prints with them.
# Settings, from the environment: ROUNDS=3, BYTES=536870912, LAT_ITERS=20000, MVN_ARGS=
set -euo pipefail
cd "$(dirname "$0")/.."
mvn -q -B ${MVN_ARGS:-} install -DskipTests
cpfile=$(mktemp)
trap 'rm -f "$cpfile"' EXIT
mvn -q -B ${MVN_ARGS:-} -pl core dependency:build-classpath -Dmdep.includeScope=test \
  -Dmdep.outputFile="$cpfile"
cp=$(cat "$cpfile")
java -cp "core/target/test-classes:core/target/classes:$cp" \
  -Drounds="${ROUNDS:-3}" -Dbytes="${BYTES:-536870912}" -DlatIters="${LAT_ITERS:-20000}" \
  dev.pekkordma.soft.FabricTlsBench

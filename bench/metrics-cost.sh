#!/usr/bin/env bash
# bench/metrics-cost.sh: what watching the streams costs them. StreamBench's throughput through
# the ByteString Flow on the software provider, in alternating rounds without and with
# --sample-metrics (the streams' metrics and the ports' counters read every SAMPLE_MS, as a
# Micrometer registry's 100 ms refresh does, and every
# pekko-rdma Flight Recorder event recorded, the periodic ones at that interval): 64-byte
# messages and 64 KiB ones. Not a test: figures depend on the machine and its load, which the
# run prints with them.
# Settings, from the environment: ROUNDS=5, SAMPLE_MS=100, SMALL_BYTES=128m, LARGE_BYTES=2g,
# SKIP_BUILD=0, MVN_ARGS=
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${SKIP_BUILD:-0}" != 1 ]]; then mvn -q -B ${MVN_ARGS:-} install -DskipTests; fi
cpfile=$(mktemp)
trap 'rm -f "$cpfile"' EXIT
mvn -q -B ${MVN_ARGS:-} -pl benchmarks dependency:build-classpath -Dmdep.outputFile="$cpfile" \
  >/dev/null
cp="benchmarks/target/classes:$(cat "$cpfile")"
echo "host: $(uname -srm), $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "git:  $(git rev-parse --short HEAD 2>/dev/null)"
rate() { # size bytes [--sample-metrics N]: the average MB/s of the run
  java -Xms512m -Xmx2g -cp "$cp" dev.pekkordma.benchmarks.StreamBench --transport rdma \
    --test throughput --sizes "$1" --bytes "$2" --warmup-bytes 64m "${@:3}" 2>/dev/null \
    | awk '/^ *[0-9]+ +[0-9]+ /{print $4}' | tail -1
}
printf '%-6s %-6s %14s %14s %8s\n' round size "plain MB/s" "sampled MB/s" ratio
for round in $(seq 1 "${ROUNDS:-5}"); do
  for spec in "64 ${SMALL_BYTES:-128m}" "64k ${LARGE_BYTES:-2g}"; do
    set -- $spec
    plain=$(rate "$1" "$2")
    sampled=$(rate "$1" "$2" --sample-metrics "${SAMPLE_MS:-100}")
    printf '%-6s %-6s %14s %14s %8s\n' "$round" "$1" "$plain" "$sampled" \
      "$(awk -v a="$plain" -v b="$sampled" 'BEGIN{ if (a > 0) printf "%.2f", b / a }')"
  done
done
echo "load at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

#!/usr/bin/env bash
# bench/run.sh: one benchmark run, printed side by side with ratios, and one chart.
#
#  (a) the software provider against Pekko Streams Tcp over loopback, server and client in two
#      JVMs as deployments run them (StreamBench's default): the streams layer (RdmaStreams'
#      outgoingConnection/bind, ByteString chunks of SIZES, default settings) against Tcp and
#      against Tcp with a length before each ByteString (tcp-framed: the boundaries the streams
#      keep), stream throughput and a 64-byte ping-pong, each with both processes' CPU per
#      message; the streams layer in one JVM as a labelled extra (rdma-streams-one-jvm); then
#      rdma-perf's raw verbs path (soft write_bw, send_bw, send_lat, one JVM) for scale.
#  (b) inside the Soft-RoCE VM: rdma-perf on the native provider against perftest's
#      ib_write_bw, ib_send_bw, ib_read_bw and ib_send_lat on rxe_lo (GID index 1), same sizes.
#      Needs root and the VM lab; VM=skip leaves it out (VM=perftest runs perftest's half alone,
#      to try the VM).
#  (c) the streams layer's throughput from (a) against rdma-perf's raw verbs path (soft
#      send_bw and write_bw from (a)); and the zero-copy bulk pair (bulkChunkSink ->
#      bulkBufferSource, one chunk a write of the size, no copy but the "NIC"'s) against
#      write_bw, run in (a)'s rounds: with Pekko's default dispatcher and with its affinity pool.
#      Inside the VM too (with (b)): the streams layer on the native provider against rdma-perf's
#      write_bw, both on rxe0 (rdma_cm needs its 192.0.2.1).
#  (d) scaling: N echo connections (ScaleBench), the echo server in a JVM of its own, the
#      streams layer on the software provider against Pekko Tcp, for N in SCALE_N: connect time
#      per connection (SCALE_CONCURRENCY connects in flight), the client's registered and direct
#      memory per connection, threads and idle CPU, the rate of 64-byte echoes and both
#      processes' CPU per echo; each side with the JVM's default settings; also Tcp with a
#      length before each ByteString (tcp-framed: message boundaries, as the streams keep them),
#      and, in one JVM, the streams layer (an extra) and the two references without a transport.
#      ScaleReport prints them side by side and draws scale.png. Inside the VM (with (b)): the
#      same on the native provider over rxe0, as many connections as rxe and the VM allow.
#  A part whose module is not built is reported as a gap, saying so.
#
# Not a test: figures depend on the machine and its load (uptime is recorded with them).
# Settings, from the environment:
#   SIZES=4k,64k,1m      message / chunk sizes
#   BYTES=2g             bytes moved per size in (a) and (c) (rdma-perf: BYTES/size iterations)
#   LAT_SIZE=64 LAT_ITERS=10000   the ping-pong
#   REPEAT=3             runs of each (a)/(c) measurement; the report takes the best of them
#                        (on a shared machine a run can lose the CPU; each side gets the same)
#   VM=auto|skip|perftest         (b) and (c)'s native rows: auto runs them when the native
#                        provider is built
#   VM_BYTES=64m         bytes per size inside the VM (emulated: ~50 MB/s)
#   VM_REPEAT=1          rounds of (b) (about ten minutes each); the report takes the best
#   VM_PARTS="perftest streams scale"   the VM's parts: (b), (c) and (d) on the native provider
#   OUT=bench/results/DATE        where outputs, manifest.tsv and throughput.png go
#   MVN_ARGS=            extra Maven arguments, e.g. -o -Dmaven.repo.local=...
#   SCALE_N=1,100,1000,10000  SCALE_CONCURRENCY=1000   (d)'s connection counts and burst
#   SCALE_MESSAGES=20000000   (d)'s messages echoed per N, over all its connections
#   SKIP_BUILD=1         use what is built
set -uo pipefail
{ # read whole before it runs: editing this file during a run cannot derail it

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
SIZES=${SIZES:-4k,64k,1m}
BYTES=${BYTES:-2g}
LAT_SIZE=${LAT_SIZE:-64}
LAT_ITERS=${LAT_ITERS:-10000}
REPEAT=${REPEAT:-3}
VM=${VM:-auto}
VM_BYTES=${VM_BYTES:-64m}
VM_REPEAT=${VM_REPEAT:-1}
OUT=${OUT:-bench/results/$(date +%Y%m%d-%H%M%S)}
MVN_ARGS=${MVN_ARGS:-}
LAB=${LAB:-$ROOT/native/softroce/vm}

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
MANIFEST="$OUT/manifest.tsv"
: > "$MANIFEST"

bytes() { # 4k -> 4096
  local v=${1,,}; v=${v%ib}; v=${v%b}
  case $v in
    *k) echo $(( ${v%k} << 10 ));; *m) echo $(( ${v%m} << 20 ));; *g) echo $(( ${v%g} << 30 ));;
    *) echo "$v";;
  esac
}
iters() { # iterations for size $1 within $2 bytes: at least 100, at most 200000
  local n=$(( $(bytes "$2") / $(bytes "$1") ))
  (( n < 100 )) && n=100; (( n > 200000 )) && n=200000
  echo $n
}
say() { echo "[bench] $*" >&2; }
# rdma-perf's figures come from its --out_json files, one a run, numbered in run order under
# json/LABEL/ (the report reads them there); its printed text stays beside them as the log
json_out() { # LABEL: the --out_json file of LABEL's next run
  local dir="$OUT/json/$1"
  mkdir -p "$dir"
  printf '%s/%04d.json' "$dir" $(( $(ls "$dir" | wc -l) + 1 ))
}
manifest() { local IFS=$'\t'; echo "$*" >> "$MANIFEST"; }

{
  echo "date: $(date -Is)"
  echo "host: $(uname -srm), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB"
  echo "load: $(uptime)"
  echo "java: $(java -version 2>&1 | head -1)"
  echo "git:  $(git rev-parse --short HEAD 2>/dev/null) $(git log -1 --format=%s 2>/dev/null | cut -c1-80)"
} > "$OUT/machine.txt"

if [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  say "building (mvn install -DskipTests $MVN_ARGS)"
  mvn -q -B install -DskipTests $MVN_ARGS || { say "build failed"; exit 1; }
fi
mvn -q -B dependency:build-classpath -pl benchmarks -Dmdep.outputFile="$OUT/classpath.txt" \
  $MVN_ARGS >/dev/null || { say "no class path for benchmarks"; exit 1; }
CP="$ROOT/benchmarks/target/classes:$(cat "$OUT/classpath.txt")"
JAVA=(java -Xms512m -Xmx2g -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$CP")
PERF=("${JAVA[@]}" dev.pekkordma.samples.perf.RdmaPerf)

# the streams layer is on main when module streams has more than its package-info
STREAMS=no
if ls streams/target/classes/dev/pekkordma/streams/*.class 2>/dev/null \
    | grep -qv package-info; then
  STREAMS=yes
fi
# the native provider is on main when its jar has the provider factory
NATIVE=no
if unzip -l native/target/pekko-rdma-native-*.jar 2>/dev/null | grep -q NativeProviderFactory; then
  NATIVE=yes
fi

run_perf() { # FILE ARGS...: rdma-perf, once per size, appended to FILE (figures: json/LABEL)
  local file=$1; shift
  local test=$1; shift
  for s in ${SIZES//,/ }; do
    "${PERF[@]}" "$test" -s "$s" -n "$(iters "$s" "$BYTES")" "$@" \
      --out_json "$(json_out "${file%.txt}")" >> "$OUT/$file" 2>&1 \
      || say "rdma-perf $test -s $s failed: see $OUT/$file"
  done
}

# ---- (a) software provider against Pekko Tcp -------------------------------------------------
A="(a) software provider against Pekko Streams Tcp over loopback, server and client in two JVMs"
say "$A"
for f in soft-write_bw soft-send_bw soft-send_lat pekko-tcp pekko-tcp-lat tcp-framed \
    tcp-framed-lat rdma-streams rdma-streams-lat rdma-streams-one-jvm rdma-streams-one-jvm-lat \
    rdma-streams-zero-copy rdma-streams-zero-copy-affinity; do
  : > "$OUT/$f.txt"
done
rm -rf "$OUT/json/soft-write_bw" "$OUT/json/soft-send_bw" "$OUT/json/soft-send_lat"
for r in $(seq "$REPEAT"); do
  say "  run $r of $REPEAT: rdma-perf soft (write_bw, send_bw at $SIZES; send_lat at $LAT_SIZE),"
  say "    Pekko Tcp, plain and framed (throughput at $SIZES, $BYTES each; ping-pong of $LAT_SIZE"
  say "    bytes), server and client in two JVMs"
  run_perf soft-write_bw.txt write_bw --provider soft
  run_perf soft-send_bw.txt send_bw --provider soft
  "${PERF[@]}" send_lat --provider soft -s "$LAT_SIZE" -n "$LAT_ITERS" \
    --out_json "$(json_out soft-send_lat)" >> "$OUT/soft-send_lat.txt" 2>&1 \
    || say "rdma-perf send_lat failed: see $OUT/soft-send_lat.txt"
  "${JAVA[@]}" dev.pekkordma.benchmarks.StreamBench --transport tcp --test throughput \
    --sizes "$SIZES" --bytes "$BYTES" >> "$OUT/pekko-tcp.txt" 2>&1 || say "Tcp throughput failed"
  "${JAVA[@]}" dev.pekkordma.benchmarks.StreamBench --transport tcp --test latency \
    -s "$LAT_SIZE" -n "$LAT_ITERS" >> "$OUT/pekko-tcp-lat.txt" 2>&1 || say "Tcp latency failed"
  "${JAVA[@]}" dev.pekkordma.benchmarks.StreamBench --transport tcp-framed --test throughput \
    --sizes "$SIZES" --bytes "$BYTES" >> "$OUT/tcp-framed.txt" 2>&1 \
    || say "framed Tcp throughput failed"
  "${JAVA[@]}" dev.pekkordma.benchmarks.StreamBench --transport tcp-framed --test latency \
    -s "$LAT_SIZE" -n "$LAT_ITERS" >> "$OUT/tcp-framed-lat.txt" 2>&1 \
    || say "framed Tcp latency failed"
  if [[ $STREAMS == yes ]]; then
    say "    the streams layer (RdmaStreams, software provider): the same two benchmarks"
    "${JAVA[@]}" dev.pekkordma.benchmarks.StreamBench --transport rdma --provider soft \
      --test throughput --sizes "$SIZES" --bytes "$BYTES" >> "$OUT/rdma-streams.txt" 2>&1 \
      || say "streams throughput failed: see $OUT/rdma-streams.txt"
    "${JAVA[@]}" dev.pekkordma.benchmarks.StreamBench --transport rdma --provider soft \
      --test latency -s "$LAT_SIZE" -n "$LAT_ITERS" >> "$OUT/rdma-streams-lat.txt" 2>&1 \
      || say "streams latency failed: see $OUT/rdma-streams-lat.txt"
    say "    the streams layer with both ends in one JVM (an extra: not a deployment's shape)"
    "${JAVA[@]}" dev.pekkordma.benchmarks.StreamBench --transport rdma --provider soft --jvms 1 \
      --test throughput --sizes "$SIZES" --bytes "$BYTES" >> "$OUT/rdma-streams-one-jvm.txt" \
      2>&1 || say "one-JVM streams throughput failed: see $OUT/rdma-streams-one-jvm.txt"
    "${JAVA[@]}" dev.pekkordma.benchmarks.StreamBench --transport rdma --provider soft --jvms 1 \
      --test latency -s "$LAT_SIZE" -n "$LAT_ITERS" >> "$OUT/rdma-streams-one-jvm-lat.txt" \
      2>&1 || say "one-JVM streams latency failed: see $OUT/rdma-streams-one-jvm-lat.txt"
    say "    the zero-copy bulk pair (bulkChunkSink -> bulkBufferSource) at $SIZES, for (c)"
    "${JAVA[@]}" dev.pekkordma.benchmarks.StreamBench --transport rdma --provider soft \
      --test zero-copy --sizes "$SIZES" --bytes "$BYTES" >> "$OUT/rdma-streams-zero-copy.txt" \
      2>&1 || say "zero-copy bulk throughput failed: see $OUT/rdma-streams-zero-copy.txt"
    say "    the same pair with Pekko's affinity pool as the dispatcher (--dispatcher affinity)"
    "${JAVA[@]}" dev.pekkordma.benchmarks.StreamBench --transport rdma --provider soft \
      --test zero-copy --dispatcher affinity --sizes "$SIZES" --bytes "$BYTES" \
      >> "$OUT/rdma-streams-zero-copy-affinity.txt" 2>&1 \
      || say "zero-copy bulk throughput failed: see $OUT/rdma-streams-zero-copy-affinity.txt"
  fi
done
manifest series soft-write_bw json/soft-write_bw
manifest series soft-send_bw json/soft-send_bw
manifest series soft-send_lat json/soft-send_lat
manifest series pekko-tcp pekko-tcp.txt
manifest series pekko-tcp-lat pekko-tcp-lat.txt
manifest series tcp-framed tcp-framed.txt
manifest series tcp-framed-lat tcp-framed-lat.txt
if [[ $STREAMS == yes ]]; then
  manifest series rdma-streams rdma-streams.txt
  manifest series rdma-streams-lat rdma-streams-lat.txt
  manifest series rdma-streams-one-jvm rdma-streams-one-jvm.txt
  manifest series rdma-streams-one-jvm-lat rdma-streams-one-jvm-lat.txt
  manifest series rdma-streams-zero-copy rdma-streams-zero-copy.txt
  manifest series rdma-streams-zero-copy-affinity rdma-streams-zero-copy-affinity.txt
  manifest note "$A" "the streams layer (RdmaStreams, defaults: 64 KiB buffers, so 1 MiB chunks go as 16 writes) against Tcp; then rdma-perf's raw verbs path against Tcp, for scale."
  manifest compare "$A" rdma-streams pekko-tcp bw 3 65536
  manifest compare "$A" rdma-streams tcp-framed bw 3 65536
  manifest compare "$A" rdma-streams-zero-copy pekko-tcp bw 5 65536
  manifest compare "$A" rdma-streams-lat pekko-tcp-lat lat - -
  manifest compare "$A" rdma-streams-lat tcp-framed-lat lat - -
  manifest note "$A" "rdma-streams-one-jvm: both ends in one JVM, where a WRITE is a copy within one address space; an extra, not a deployment's shape."
  manifest compare "$A" rdma-streams-one-jvm rdma-streams bw - 65536
else
  manifest note "$A" "GAP: the streams layer is not on main yet (or has no RDMA transport in StreamBench): rdma-perf's raw verbs path (soft) stands in for it below. Target: streams >= 3x Tcp at 64 KiB."
fi
manifest compare "$A" soft-write_bw pekko-tcp bw 3 65536
manifest compare "$A" soft-send_bw pekko-tcp bw 3 65536
manifest compare "$A" soft-send_lat pekko-tcp-lat lat - -

# ---- (b) native provider against perftest, in the Soft-RoCE VM -------------------------------
B="(b) native provider against perftest on Soft-RoCE rxe_lo (GID 1), inside the VM (emulated: compare only within this run)"
if [[ $VM == skip ]]; then
  manifest note "$B" "skipped (VM=skip)"
elif [[ $NATIVE == no && $VM != perftest ]]; then
  say "(b) skipped: the native provider is not on main yet"
  manifest note "$B" "SKIPPED: the native provider is not on main yet (its jar has no NativeProviderFactory)."
elif [[ ! -x $LAB || $(id -u) != 0 ]]; then
  say "(b) skipped: $LAB is missing or this is not root"
  manifest note "$B" "SKIPPED: $LAB is missing or needs root."
else
  [[ $NATIVE == no ]] && manifest note "$B" "the native provider is not on main yet: perftest only (VM=perftest)"
  say "(b) booting the Soft-RoCE VM (about a minute of emulation per size and test)"
  (cd "$ROOT" && "$LAB" --timeout "${VM_TIMEOUT:-3000}" -- env OUT="$OUT" CP="$CP" SIZES="$SIZES" \
      VM_BYTES="$VM_BYTES" VM_REPEAT="$VM_REPEAT" VM_PARTS="${VM_PARTS:-perftest streams scale}" \
      LAT_SIZE="$LAT_SIZE" NATIVE="$NATIVE" \
      bash bench/vm-native.sh) \
      > "$OUT/vm.log" 2>&1 || say "(b) the VM run failed: see $OUT/vm.log"
  for t in write_bw send_bw read_bw send_lat; do
    manifest series "perftest-$t" "perftest-$t.txt"
    if [[ $NATIVE == yes ]]; then
      manifest series "native-$t" "json/native-$t"
      if [[ $t == send_lat ]]; then
        manifest compare "$B" "native-$t" "perftest-$t" lat 1.5 "$(bytes "$LAT_SIZE")"
      else
        manifest compare "$B" "native-$t" "perftest-$t" bw 0.9 65536
      fi
    fi
  done
fi

# ---- (c) the streams layer against rdma-perf's raw verbs path --------------------------------
C="(c) the streams layer against rdma-perf's raw verbs path (software provider, one JVM)"
if [[ $STREAMS == yes && -s $OUT/rdma-streams.txt ]]; then
  manifest note "$C" "rdma-streams: the ByteString Flow of (a), copies on both sides; rdma-streams-zero-copy: bulkChunkSink -> bulkBufferSource, chunk = size, the consumer reads a word and releases (no copy but the NIC's, as write_bw)."
  manifest compare "$C" rdma-streams soft-send_bw bw 0.9 65536
  manifest compare "$C" rdma-streams soft-write_bw bw 0.9 65536
  manifest compare "$C" rdma-streams-zero-copy soft-write_bw bw 0.9 65536
  manifest note "$C" "rdma-streams-zero-copy-affinity: the same pair, the actor system's default dispatcher Pekko's affinity pool (one thread per core, idle-cpu-level 1): each stream keeps its thread, which spins a little before parking, so a completion's wake-up often finds it awake."
  manifest compare "$C" rdma-streams-zero-copy-affinity soft-write_bw bw 0.9 65536
else
  manifest note "$C" "GAP: the streams layer is not on main yet."
fi
CN="(c) on the native provider, inside the VM: the streams layer against rdma-perf's write_bw, both on Soft-RoCE rxe0 (emulated: compare only within this run)"
if [[ -s $OUT/native-streams.txt ]]; then
  manifest series native-rxe0-write_bw json/native-rxe0-write_bw
  manifest series native-streams native-streams.txt
  manifest series native-streams-zero-copy native-streams-zero-copy.txt
  manifest compare "$CN" native-streams native-rxe0-write_bw bw 0.9 65536
  manifest compare "$CN" native-streams-zero-copy native-rxe0-write_bw bw 0.9 65536
else
  manifest note "$CN" "not run (no VM run, or the native provider is not built): see (b)"
fi

# ---- (d) scaling: N connections, the streams layer against Tcp -------------------------------
D="(d) scaling: N echo connections, server and client in two JVMs, the streams layer (software provider) against Pekko Tcp"
: > "$OUT/scale-tcp.tsv"
: > "$OUT/scale-rdma.tsv"
: > "$OUT/scale-tcp-framed.tsv"
: > "$OUT/scale-in-jvm.tsv"
: > "$OUT/scale-none.tsv"
: > "$OUT/scale-rdma-one-jvm.tsv"
if [[ $STREAMS == yes ]]; then
  say "$D: N = ${SCALE_N:-1,100,1000,10000}"
  # the JVM's defaults (heap and direct memory), as a user would start it
  SCALE=(java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$CP" dev.pekkordma.benchmarks.ScaleBench
    -N "${SCALE_N:-1,100,1000,10000}" --concurrency "${SCALE_CONCURRENCY:-1000}"
    --messages "${SCALE_MESSAGES:-20000000}")
  "${SCALE[@]}" --transport tcp --tsv "$OUT/scale-tcp.tsv" > "$OUT/scale-tcp.txt" 2>&1 \
    || say "Tcp scaling failed: see $OUT/scale-tcp.txt"
  "${SCALE[@]}" --transport rdma --provider soft --tsv "$OUT/scale-rdma.tsv" \
    > "$OUT/scale-rdma.txt" 2>&1 || say "streams scaling failed: see $OUT/scale-rdma.txt"
  # Tcp with a length before each ByteString: message boundaries, as the streams layer keeps
  "${SCALE[@]}" --transport tcp-framed --tsv "$OUT/scale-tcp-framed.tsv" \
    > "$OUT/scale-tcp-framed.txt" 2>&1 || say "framed Tcp scaling failed: see $OUT/scale-tcp-framed.txt"
  # no transport at all: what Pekko Streams alone allows a transport that keeps boundaries
  "${SCALE[@]}" --transport in-jvm --jvms 1 --tsv "$OUT/scale-in-jvm.tsv" \
    > "$OUT/scale-in-jvm.txt" 2>&1 || say "in-JVM scaling failed: see $OUT/scale-in-jvm.txt"
  # no connection at all: the most any transport can show in this benchmark
  "${SCALE[@]}" --transport none --jvms 1 --tsv "$OUT/scale-none.tsv" \
    > "$OUT/scale-none.txt" 2>&1 || say "the benchmark's client alone failed: see $OUT/scale-none.txt"
  # the streams layer with both ends in one JVM: an extra, not a deployment's shape
  "${SCALE[@]}" --transport rdma --provider soft --jvms 1 --tsv "$OUT/scale-rdma-one-jvm.tsv" \
    > "$OUT/scale-rdma-one-jvm.txt" 2>&1 || say "one-JVM streams scaling failed: see $OUT/scale-rdma-one-jvm.txt"
else
  manifest note "$D" "GAP: the streams layer is not built."
fi

echo
echo "benchmark run in $OUT"
sed 's/^/  /' "$OUT/machine.txt"
"${JAVA[@]}" dev.pekkordma.benchmarks.BenchReport "$OUT"
echo
"${JAVA[@]}" dev.pekkordma.benchmarks.ScaleReport "$OUT" scale-tcp.tsv scale-rdma.tsv \
  scale-tcp-framed.tsv scale-in-jvm.tsv scale-none.tsv scale-rdma-one-jvm.tsv
if [[ -s $OUT/scale-native.tsv ]]; then
  echo "(d) on the native provider inside the VM (emulated), rxe0: see scale-native.txt"
  sed 's/^/  /' "$OUT/scale-native.txt" | grep -E "rdma-streams|Killed|killed|memory"
fi
exit
}

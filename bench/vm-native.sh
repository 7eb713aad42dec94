#!/usr/bin/env bash
# Part (b) of bench/run.sh, run inside the Soft-RoCE VM by native/softroce/vm: perftest's ib_write_bw,
# ib_send_bw, ib_read_bw and ib_send_lat, then rdma-perf on the native provider, on the same
# device (rxe_lo, GID index 1: plain verbs over loopback) with the same sizes and iterations.
# perftest runs as two processes (server, then client to 127.0.0.1); rdma-perf runs both sides
# in one JVM with QPs connected by hand. Inline size: what perftest reports using, passed on.
# Without the native provider (NATIVE=no) only perftest runs.
# Then, for (c) on the native provider: the streams layer (StreamBench: the ByteString Flow and
# the zero-copy bulk pair, over rdma_cm) against rdma-perf's raw write_bw, both on rxe0, whose
# 192.0.2.1 rdma_cm can use (it cannot use loopback addresses, so not rxe_lo).
# Then (d) on the native provider: ScaleBench's echo connections on rxe0, as many as rxe allows.
# rdma-perf's figures go to --out_json files, one a run, numbered in run order under json/LABEL/
# (what the report reads); its printed text goes to LABEL.txt, as perftest's does.
# Environment (from run.sh): OUT CP SIZES VM_BYTES LAT_SIZE NATIVE; VM_PARTS="perftest streams scale"
# (the default) or any of them; VM_SCALE_N, VM_SCALE_MESSAGES, VM_SCALE_CONCURRENCY, VM_SCALE_CONFIG for (d).
set -uo pipefail
DEV=${DEV:-rxe_lo}
GID=${GID:-1}
LAT_ITERS=${VM_LAT_ITERS:-1000}

bytes() {
  local v=${1,,}; v=${v%ib}; v=${v%b}
  case $v in
    *k) echo $(( ${v%k} << 10 ));; *m) echo $(( ${v%m} << 20 ));; *g) echo $(( ${v%g} << 30 ));;
    *) echo "$v";;
  esac
}
iters() { # at least 100, at most 5000 iterations within VM_BYTES
  local n=$(( $(bytes "$VM_BYTES") / $(bytes "$1") ))
  (( n < 100 )) && n=100; (( n > 5000 )) && n=5000
  echo $n
}

echo "[vm] $(uname -r), $(nproc) CPUs; devices: $(ibv_devices | awk 'NR>2{print $1}' | tr '\n' ' ')"
rdma resource show > "$OUT/vm-resources-before.txt" 2>&1

perftest() { # TOOL SIZE ITERS FILE: server in the background, client to it
  local tool=$1 size=$2 n=$3 file=$4 try
  "$tool" -d "$DEV" -x "$GID" -s "$size" -n "$n" -F > "$OUT/$file.server" 2>&1 &
  local server=$!
  # the server takes a while to listen under emulation: try the client until it connects
  for try in 1 2 3 4 5 6 7 8 9 10; do
    sleep 2
    "$tool" -d "$DEV" -x "$GID" -s "$size" -n "$n" -F 127.0.0.1 > "$OUT/$file.client" 2>&1
    grep -q "Couldn't connect" "$OUT/$file.client" || break
  done
  cat "$OUT/$file.client" >> "$OUT/$file"
  grep -q "#bytes" "$OUT/$file.client" || echo "[vm] $tool -s $size failed" >&2
  # a server left waiting (its client failed) is ended after a minute
  for try in $(seq 60); do kill -0 "$server" 2>/dev/null || break; sleep 1; done
  kill "$server" 2>/dev/null
  wait "$server" 2>/dev/null
}

json_out() { # LABEL: the --out_json file of LABEL's next run
  local dir="$OUT/json/$1"
  mkdir -p "$dir"
  printf '%s/%04d.json' "$dir" $(( $(ls "$dir" | wc -l) + 1 ))
}

inline_of() { # the inline size perftest reports in FILE
  awk -F: '/Max inline data/{gsub(/[^0-9]/,"",$2); print $2; exit}' "$OUT/$1"
}

# the serial collector, as native's VM tests use (a G1 JVM crashed under emulation); a crash
# log, if any, lands with the results
JAVA=(java -Xms256m -Xmx1g -XX:+UseSerialGC -XX:ErrorFile="$OUT/hs_err_pid%p.log" -cp "$CP"
  dev.pekkordma.samples.perf.RdmaPerf)
# A JVM can crash under QEMU's multi-threaded TCG (see native/softroce/run-native-tests.sh): a
# run whose JVM left an hs_err file runs again, at most twice; only a finished run's output is kept.
jrun() { # FILE COMMAND...: appends the command's output to FILE
  local file=$1 attempt rc crashes tmp="$OUT/.jrun.txt"
  shift
  for attempt in 1 2 3; do
    crashes=$(ls "$OUT"/hs_err_pid*.log 2>/dev/null | wc -l)
    "$@" > "$tmp" 2>&1
    rc=$?
    if (( $(ls "$OUT"/hs_err_pid*.log 2>/dev/null | wc -l) == crashes )); then
      cat "$tmp" >> "$file"
      rm -f "$tmp"
      return $rc
    fi
    echo "[vm] a JVM crashed under emulation (attempt $attempt of 3, hs_err in $OUT): ${*: -8}" >&2
  done
  cat "$tmp" >> "$file"
  rm -f "$tmp"
  return 1
}
rdmaperf() { # TEST SIZE ITERS WARMUP INLINE FILE
  [[ $NATIVE == yes ]] || return 0
  # a JVM run again after a crash writes the same --out_json file
  jrun "$OUT/$6" "${JAVA[@]}" "$1" --provider native -d "$DEV" -x "$GID" -s "$2" -n "$3" \
    --warmup "$4" -I "$5" -v --out_json "$(json_out "${6%.txt}")" \
    || echo "[vm] rdma-perf $1 -s $2 failed" >&2
}

# each size: perftest, then rdma-perf right after it, so that both see the same load; rdma-perf
# warms up with as many iterations as it measures (the JIT is slow under emulation). VM_REPEAT
# rounds of it all: the report takes the best of each.
for t in write_bw send_bw read_bw send_lat; do
  : > "$OUT/perftest-$t.txt"
  : > "$OUT/native-$t.txt"
  rm -rf "$OUT/json/native-$t"
done
VM_PARTS=${VM_PARTS:-perftest streams scale}
for round in $(seq "${VM_REPEAT:-1}"); do
  [[ $VM_PARTS == *perftest* ]] || break
  echo "[vm] round $round of ${VM_REPEAT:-1}"
  for t in write_bw send_bw read_bw; do
    for s in ${SIZES//,/ }; do
      size=$(bytes "$s")
      n=$(iters "$s")
      perftest "ib_$t" "$size" "$n" "perftest-$t.txt"
      inline=$(inline_of "perftest-$t.txt"); inline=${inline:-0}
      rdmaperf "$t" "$size" "$n" "$n" "$inline" "native-$t.txt"
    done
  done
  perftest ib_send_lat "$LAT_SIZE" "$LAT_ITERS" perftest-send_lat.txt
  inline=$(inline_of perftest-send_lat.txt); inline=${inline:-0}
  rdmaperf send_lat "$LAT_SIZE" "$LAT_ITERS" 5000 "$inline" native-send_lat.txt
done

gid_of() { # DEVICE IPV4: the index of the GID ::ffff:IPV4 on the device's port 1
  local want f
  want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${2//./ })
  for f in /sys/class/infiniband/"$1"/ports/1/gids/*; do
    [[ $(cat "$f" 2>/dev/null) == "$want" ]] && { basename "$f"; return; }
  done
}
S_DEV=rxe0
S_HOST=192.0.2.1
BENCH=(java -Xms256m -Xmx1g -XX:+UseSerialGC -XX:ErrorFile="$OUT/hs_err_pid%p.log" -cp "$CP"
  dev.pekkordma.benchmarks.StreamBench --transport rdma --provider native --host "$S_HOST"
  --bytes "$VM_BYTES" --warmup-bytes "$VM_BYTES" --sizes "$SIZES")
for f in native-rxe0-write_bw native-streams native-streams-zero-copy; do : > "$OUT/$f.txt"; done
rm -rf "$OUT/json/native-rxe0-write_bw"
if [[ $VM_PARTS == *streams* && $NATIVE == yes ]]; then
  S_GID=$(gid_of "$S_DEV" "$S_HOST")
  echo "[vm] (c): the streams layer against rdma-perf write_bw on $S_DEV ($S_HOST, GID $S_GID)"
  for round in $(seq "${VM_REPEAT:-1}"); do
    for s in ${SIZES//,/ }; do
      n=$(iters "$s")
      jrun "$OUT/native-rxe0-write_bw.txt" "${JAVA[@]}" write_bw --provider native \
        -d "$S_DEV" -x "$S_GID" -s "$(bytes "$s")" -n "$n" --warmup "$n" -v \
        --out_json "$(json_out native-rxe0-write_bw)" \
        || echo "[vm] rdma-perf write_bw -s $s on $S_DEV failed" >&2
    done
    jrun "$OUT/native-streams.txt" "${BENCH[@]}" --test throughput \
      || echo "[vm] the streams' throughput on the native provider failed" >&2
    jrun "$OUT/native-streams-zero-copy.txt" "${BENCH[@]}" --test zero-copy \
      || echo "[vm] the zero-copy pair on the native provider failed" >&2
  done
fi
# (d) on the native provider: ScaleBench's echo connections over rdma_cm on rxe0, as many as rxe
# allows (VM_SCALE_N); a count that fails names the first limit it met, and the counts after it run
# anyway (a limit may be a moment's). Emulation makes a connect take milliseconds, so the connect
# timeout is a minute (VM_SCALE_CONFIG: HOCON for the benchmark's actor system).
: > "$OUT/scale-native.tsv"
if [[ $VM_PARTS == *scale* && $NATIVE == yes ]]; then
  echo "[vm] (d): ScaleBench on the native provider, rxe0 ($S_HOST), N = ${VM_SCALE_N:-1,100,1000,4000,10000}"
  echo "[vm] rxe0's limits: $(ibv_devinfo -v -d "$S_DEV" | awk '/max_qp:|max_cq:|max_mr:|max_pd:/{printf "%s%s ", $1, $2}')"
  jrun "$OUT/scale-native.txt" java -Xms256m -Xmx2g -XX:+UseSerialGC \
    -XX:ErrorFile="$OUT/hs_err_pid%p.log" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
    -cp "$CP" dev.pekkordma.benchmarks.ScaleBench --transport rdma --provider native \
    --host "$S_HOST" -N "${VM_SCALE_N:-1,100,1000,4000,10000}" --messages "${VM_SCALE_MESSAGES:-20000}" \
    --concurrency "${VM_SCALE_CONCURRENCY:-100}" --tsv "$OUT/scale-native.tsv" \
    --config "${VM_SCALE_CONFIG:-pekko-rdma.streams.connect-timeout = 60s}" \
    || echo "[vm] the native scaling run failed: see scale-native.txt" >&2
  # a count past the VM's memory ends in the kernel's OOM killer: say so beside the figures
  dmesg 2>/dev/null | grep -iE "out of memory|killed process" | tail -3 >> "$OUT/scale-native.txt"
  rdma resource show > "$OUT/vm-resources-after-scale.txt" 2>&1
fi
rdma resource show > "$OUT/vm-resources-after.txt" 2>&1
echo "[vm] done"

#!/usr/bin/env bash
# Inside the Soft-RoCE VM (run-native-tests.sh boots it with this script as its command): the
# native provider's test steps, one Maven run each, offline, in order. Each step
#   - is skipped when an earlier attempt finished it (STATE/NAME.rc holds its exit status), so
#     a VM that died runs again only what it had not finished;
#   - says when it starts and ends on the console, and its tests say theirs
#     (TestProgress, -Dpekko-rdma.test.progress=/dev/console), so a hang names its test;
#   - has a deadline, three times its usual length (at least ten minutes): shortly before it,
#     every JVM's threads go to REPORTS/NAME/threads-PID.txt, then the step is killed and counts
#     as failed;
#   - leaves its reports in REPORTS/NAME: its JVM's output (output.txt) and JUnit's XML.
#
#   vm-test-steps.sh --repo LOCAL_REPO --state DIR --reports DIR [--only NAME,...] [extra mvn args]
#   vm-test-steps.sh --plan [--state DIR] [--only NAME,...]
#                                each step not yet finished and its usual seconds
#
# Exit status: 1 when a step failed, a JVM crashed three times, or the RDMA resources read
# differently after the steps than before; else 0.
set -uo pipefail
plan=false state= reports= repo= only=
while [[ $# -gt 0 ]]; do
  case $1 in
    --plan) plan=true; shift ;;
    --only) only=,$2,; shift 2 ;;
    --repo) repo=$2; shift 2 ;;
    --state) state=$2; shift 2 ;;
    --reports) reports=$2; shift 2 ;;
    *) break ;;
  esac
done
extra=("$@")
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
link=$root/native/softroce/link.sh
cd "$root"
say() { echo "run-native-tests: $*"; }

# JVMs crashed in the VM, never outside it: QEMU 7.2's multi-threaded TCG can translate code that
# another vCPU is patching half-way (the hs_err files show a C1 method's verified entry caught
# mid-patch, a jump over a stack bang, then a SIGSEGV at a wild address). So every JVM here runs
# on one vCPU (taskset: its threads then never race its own code patching), with C1 only (no
# tier-up: far fewer methods made not entrant, the patch that crashed) and the serial collector
# (one crash was in G1's concurrent refinement).
jvm=(-XX:+UseSerialGC -XX:TieredStopAtLevel=1)
# No Maven in here: each step is one JVM that runs JUnit's console launcher on the module's test
# class path, which the host wrote (target/test-classpath.txt; run-native-tests.sh). Maven's own
# start, its project model and its plugins took two to three minutes a step under emulation.
# Each test and lifecycle method has a deadline and a thread of its own, as in the build (the
# root pom's Surefire configuration), longer here for the emulation.
launcher=(org.junit.platform.console.ConsoleLauncher execute --disable-banner --details=summary
  --disable-ansi-colors --fail-if-no-tests
  --config=junit.jupiter.execution.timeout.default=10m
  --config=junit.jupiter.execution.timeout.thread.mode.default=SEPARATE_THREAD)
test_props=(-Dpekko-rdma.test.progress=/dev/console)
# Surefire's default includes: Test*, *Test, *Tests, *TestCase, no nested classes
tests_of_module=(--include-classname='^(.*\.)?(Test[^.$]*|[^.$]*Test|[^.$]*Tests|[^.$]*TestCase)$')
props=(-Dpekko-rdma.provider=native -Dpekko-rdma.conformance=true
  -Dpekko-rdma.test.device=rxe_lo -Dpekko-rdma.test.gid-index=1
  -Dpekko-rdma.test.cm-address=192.0.2.1)
link_props=(-Dpekko-rdma.provider=native -Dpekko-rdma.conformance=true
  -Dpekko-rdma.test.device=rxe_a -Dpekko-rdma.test.peer-device=rxe_b
  -Dpekko-rdma.test.gid-index=1 -Dpekko-rdma.test.cm-device=rxe_a
  -Dpekko-rdma.test.cm-address=198.51.100.1 -Dpekko-rdma.test.cm-source=198.51.100.2
  -Dpekko-rdma.test.link-script="$link")

crashed=0
# A command run again, at most twice, when a JVM crashed in it (an hs_err file, in the folder it
# ran in); a test that fails is not.
run() {
  local attempt crashes f
  for attempt in 1 2 3; do
    touch "$state/cmd.started"
    taskset -c 0 "$@" && return 0
    crashes=$(find . -maxdepth 2 -name "hs_err_pid*.log" -newer "$state/cmd.started")
    [[ -n $crashes ]] || return 1
    for f in $crashes; do
      crashed=$((crashed + 1))
      say "a JVM crashed in the VM ($f):"
      grep -m3 -E "^# (SIGSEGV|SIGBUS|SIGILL|Problematic|J |V |C )" "$f"
      mv "$f" "$reports/"
    done
    [[ $attempt == 3 ]] && return 1
    say "running it again: ${*:1:8} ..."
  done
}

# What a step was doing when its deadline came, into DIR: every JVM's threads, and the kernel's
# view (the processes and their kernel stacks, the blocked tasks, its log).
dump_threads() { # DIR
  local pid
  mkdir -p "$1"
  for pid in $(pgrep -x java); do
    timeout 60 jcmd "$pid" Thread.print >"$1/threads-$pid.txt" 2>&1 || true
  done
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    [[ -r /proc/$pid/stack ]] || continue
    echo "== $pid $(tr '\0' ' ' </proc/$pid/cmdline 2>/dev/null | cut -c1-200) [$(awk '{print $3}' /proc/$pid/stat 2>/dev/null)]"
    cat "/proc/$pid/stack" 2>/dev/null
  done >"$1/kernel-stacks.txt"
  echo w >/proc/sysrq-trigger 2>/dev/null
  dmesg >"$1/dmesg.txt" 2>&1
  sync
}

# What a step's JVM left running when it ended (a peer JVM, an rdma-core tool): each holds what
# later steps need (a device context keeps `rdma link delete` waiting, a port, a CPU), so it is
# named, killed, and fails the step.
leftovers() { # NAME
  local pids="" n
  # one name at a time: pgrep refuses a pattern longer than a process name (15 characters)
  for n in java rping ibv_rc_pingpong ibv_ud_pingpong udaddy mckey rdma_server rdma_client \
      ib_write_bw ib_send_bw ib_read_bw ib_atomic_bw ib_send_lat ib_write_lat; do
    pids+=" $(pgrep -x "$n")"
  done
  pids=$(echo $pids)
  [[ -z $pids ]] && return 0
  say "step $1 left processes running, killed now:"
  ps -o pid=,etime=,args= -p "$(echo $pids | tr ' ' ,)" | cut -c1-200
  kill -9 $pids 2>/dev/null
  return 1
}

rc=0
# step NAME USUAL_SECONDS MODULE [mvn args...]: `mvn test -pl MODULE args` as described above
step() {
  local name=$1 usual=$2 module=$3 limit start took src dumper step_rc
  shift 3
  limit=$(( usual * 3 > 600 ? usual * 3 : 600 ))
  [[ -z $only || $only == *,$name,* ]] || return 0
  if $plan; then
    [[ -n $state && -s $state/$name.rc ]] || echo "$name $usual"
    return
  fi
  if [[ -s $state/$name.rc ]]; then
    say "step $name: finished in an earlier attempt (exit $(cat "$state/$name.rc")), not run again"
    [[ $(cat "$state/$name.rc") == 0 ]] || rc=1
    return
  fi
  echo "$name $module" >"$state/current"
  sync "$state/current"
  say "step $name started ($module; deadline ${limit} s)"
  start=$(date +%s)
  out=$reports/$name
  rm -rf "$out"
  mkdir -p "$out"
  ( sleep $((limit - 90)) && say "step $name: near its deadline, dumping every JVM's threads" &&
    dump_threads "$out" ) &
  dumper=$!
  # in the module's folder, as Surefire runs its tests; the selection, then the system properties
  local select=() props=()
  while [[ $# -gt 0 && $1 != -D* ]]; do select+=("$1"); shift; done
  props=("$@")
  ( cd "$module" &&
    run timeout -k 30 "$limit" java "${jvm[@]}" "${test_props[@]}" "${props[@]}" "${extra[@]}" \
      -cp "target/test-classes:target/classes:$(cat target/test-classpath.txt)" \
      "${launcher[@]}" --reports-dir="$out" "${select[@]}" >"$out/output.txt" 2>&1 )
  step_rc=$?
  kill "$dumper" 2>/dev/null; wait "$dumper" 2>/dev/null
  took=$(( $(date +%s) - start ))
  (( step_rc == 124 || step_rc == 137 )) && say "step $name: KILLED at its deadline (${limit} s)"
  leftovers "$name" || step_rc=1
  say "step $name ended: exit $step_rc in ${took} s"
  echo "$step_rc" >"$state/$name.rc"
  echo "$took" >"$state/$name.seconds"
  rm -f "$state/current"
  sync "$state"/*
  (( step_rc == 0 )) || rc=1
}

# without the device indexes, sorted: DeviceRemovalTest's rxe0 comes back under a new index,
# after the others
resources() { rdma resource show | sed "s/^[0-9]*: //" | sort; }

# core's test-jar (its conformance suite) on native's test class path
core_tests_jar() {
  [[ -e native/target/test-classpath.txt ]] || return 0
  tr : '\n' <native/target/test-classpath.txt | grep 'pekko-rdma-core-.*-tests\.jar$'
}

# The steps in order, each with its usual length in seconds on an idle two-core machine, the
# tests it selects (console launcher options) and their system properties.
steps() {
  local samples=dev.pekkordma.samples actors=dev.pekkordma.actors streams=dev.pekkordma.streams
  # our rc-pingpong and rping against the real ibv_rc_pingpong and rping, and our datagram peer
  # against udaddy and mckey (rxe0's CM addresses), each way round
  step interop 90 samples --select-class=$samples.interop.RealToolsInteropTest \
    --select-class=$samples.interop.DatagramToolsInteropTest \
    -Dpekko-rdma.interop=true "${props[@]}" -Dpekko-rdma.test.cm-source=192.0.2.2
  # the actors' echo sample and the doctor
  step echo 150 samples --scan-classpath=target/test-classes \
    --include-classname='.*\.(Echo[^.$]*Test|DoctorTest)$' "${props[@]}"
  # native's own tests and core's conformance suite, as native's Surefire configuration picks
  step native 400 native --scan-classpath=target/test-classes \
    --scan-classpath="$(core_tests_jar)" \
    --include-classname='.*\.(conformance|nativeverbs)\.[^.$]*Test$' "${props[@]}"
  # (streams' differential property, 200 random connection lives on Tcp and on RDMA, is the host
  # suite's, on the software provider; here its shrunk cases run on the native one)
  for m in runtime actors streams; do
    step "$m" "$( [[ $m == streams ]] && echo 750 || echo 200 )" "$m" \
      --scan-classpath=target/test-classes "${tests_of_module[@]}" \
      --exclude-classname='.*\.TcpDifferentialPropertyTest$' "${props[@]}"
  done
  # then what changes rxe0: it goes away (rdma link delete) and comes back
  step actors-removal 130 actors --select-class=$actors.DeviceRemovalTest \
    -Dpekko-rdma.test.remove-device=true "${props[@]}"
  # and under a running stream
  step streams-removal 190 streams --select-class=$streams.DeviceRemovalTest \
    -Dpekko-rdma.test.remove-device=true "${props[@]}"
  # and last, as after it rxe0's CM connections end UNREACHABLE: real port events, its netdev
  # (dummy0) down and up
  step actors-netdev 90 actors \
    --select-method=$actors.DeviceActorTest#portEventsReachTheDeviceAndItsSubscribers \
    -Dpekko-rdma.test.toggle-netdev=true "${props[@]}"
  # Across the veth link. The tools' last exchange does not survive a lost final ACK
  # (ibv_rc_pingpong exits after its last receive; the other side's last send then retries
  # against a QP that is gone), and a lost CM message is sent again only after the kernel CM's
  # response timeout (seconds, past the suite's windows): the interop and the CM cases cross it
  # clean.
  $plan || sh "$link" clear
  step link-interop 75 samples --select-class=$samples.interop.RealToolsInteropTest \
    -Dpekko-rdma.interop=true "${link_props[@]}"
  step link-cm 90 native --select-class=dev.pekkordma.conformance.CmConformanceTest "${link_props[@]}"
  # and with faults on it (each test sets its own, and clears them)
  step streams-lossy 380 streams --select-class=$streams.LossyLinkTest "${link_props[@]}"
  step actors-lossy 140 actors --select-class=$actors.LossyLinkActorsTest "${link_props[@]}"
  step cluster-lossy 290 cluster --select-class=dev.pekkordma.cluster.LossyLinkClusterTest \
    -Dpekko-rdma.test.cluster-wait=90 "${link_props[@]}"
  step perf-lossy 150 samples --select-class=$samples.perf.LossyLinkPerfTest "${link_props[@]}"
  $plan || sh "$link" clear
}

if $plan; then steps; exit 0; fi
mkdir -p "$state" "$reports"
if [[ ! -s $state/resources.before ]]; then
  resources >"$state/resources.before"
  sync "$state/resources.before"
fi
echo "rdma resources before:"; cat "$state/resources.before"
steps
resources >"$state/resources.after"
echo "rdma resources after:"; cat "$state/resources.after"
if ! cmp -s "$state/resources.before" "$state/resources.after"; then
  say "LEAK: rdma resource counts differ"
  rc=1
fi
[[ $crashed == 0 ]] || say "$crashed JVM crash(es) in the VM, each command run again"
exit $rc

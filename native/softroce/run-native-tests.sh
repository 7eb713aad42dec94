#!/usr/bin/env bash
# Runs the native module's tests against real kernel RDMA: Soft-RoCE devices (rxe_lo, rxe0) in
# the softroce-lab VM (../shared/softroce-lab/run-in-vm beside the repository, or $SOFTROCE_LAB).
# Inside the VM, offline, with the given local repository, on the native provider (plain verbs on
# rxe_lo, GID index 1; CM at 192.0.2.1 on rxe0): native's tests (LayoutTest, the smoke tests and
# core's whole conformance suite), samples' RealToolsInteropTest against ibv_rc_pingpong and
# rping, the echo sample, the runtime's CM tests, the actors' lifecycle tests, the streams' tests,
# then the actors' and the streams' DeviceRemovalTest (rdma link delete rxe0, and add again) and
# port events (dummy0 down, up);
# then a leak check: `rdma resource show` must read as it did before the tests.
#
#   native/softroce/run-native-tests.sh [--timeout SECONDS] [--repo LOCAL_REPO] [extra mvn args]
#
# `mvn verify -Dsoftroce` runs it (native's softroce profile, integration-test phase; without
# -Dsoftroce it does not run). Exit status: the VM's test run's (1 also for a leak), or run-in-vm's (125: the VM
# did not run the command), 2: the lab is missing or this is not root.
set -euo pipefail
timeout_s=2400
repo=${MAVEN_REPO_LOCAL:-$HOME/.m2/repository}
while [[ $# -gt 0 ]]; do
  case $1 in
    --timeout) timeout_s=$2; shift 2 ;;
    --repo) repo=$2; shift 2 ;;
    *) break ;;
  esac
done
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
lab=${SOFTROCE_LAB:-$root/../shared/softroce-lab}/run-in-vm
say() { echo "run-native-tests: $*"; }
if [[ ! -x $lab ]]; then
  say "$lab is missing: it comes with the project's shared/ folder (or set SOFTROCE_LAB);" \
    "leave out -Dsoftroce to skip the VM tests" >&2
  exit 2
fi
if [[ $(id -u) != 0 ]]; then
  say "run-in-vm boots QEMU and must run as root; leave out -Dsoftroce to skip the VM tests" >&2
  exit 2
fi
# what LayoutTest compiles against on the host (run-in-vm installs the rest on first use)
need=()
command -v gcc >/dev/null || need+=(gcc)
for p in libibverbs-dev librdmacm-dev; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
if [[ ${#need[@]} -gt 0 ]]; then
  say "installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}"
fi
cd "$root"
mvnflags=(-B -Dmaven.repo.local="$repo")
modules=native,runtime,actors,streams

# everything the VM's offline run needs: our modules (core's test-jar: the suite) in $repo, and
# the test plugins resolved by a host run of the same goals that does nothing
say "host: mvn install -DskipTests ($modules and what they need) into $repo"
mvn -q "${mvnflags[@]}" -pl $modules,samples -am install -DskipTests
mvn -q "${mvnflags[@]}" -pl $modules,samples test -Dpekko-rdma.conformance=true -Dtest=NoSuchTest \
  -Dsurefire.failIfNoSpecifiedTests=false
reports=(samples/target/surefire-reports native/target/surefire-reports runtime/target/surefire-reports
  actors/target/surefire-reports streams/target/surefire-reports)
rm -rf "${reports[@]}"
props=(-Dpekko-rdma.provider=native -Dpekko-rdma.conformance=true
  -Dpekko-rdma.test.device=rxe_lo -Dpekko-rdma.test.gid-index=1
  -Dpekko-rdma.test.cm-address=192.0.2.1)
# the VM's command, as a script file (the same file system is the VM's root)
inner=$root/native/target/softroce-in-vm.sh
mkdir -p "${inner%/*}"
{
  # JVMs crashed in the VM, never outside it: QEMU 7.2's multi-threaded TCG can translate code
  # that another vCPU is patching half-way (the hs_err files show a C1 method's verified entry
  # caught mid-patch, a jump over a stack bang, then a SIGSEGV at a wild address). So every JVM
  # there runs on one vCPU (taskset, in run() below: its threads then never race its own code
  # patching), with C1 only (no tier-up: far fewer methods made not entrant, the patch that
  # crashed) and the serial collector (one crash was in G1's concurrent refinement).
  echo 'export MAVEN_OPTS="${MAVEN_OPTS:-} -XX:+UseSerialGC -XX:TieredStopAtLevel=1"'
  echo 'jvm="-XX:+UseSerialGC -XX:TieredStopAtLevel=1"'
  # Should a JVM still crash there (an hs_err file; Maven's own lands in the root), its command
  # runs again, at most twice; a test that fails does not.
  echo 'crashed=0'
  echo 'run() {'
  echo '  for attempt in 1 2 3; do'
  echo '    touch native/target/softroce-cmd.started'
  echo '    taskset -c 0 "$@" && return 0'
  echo '    crashes=$(find . -maxdepth 2 -name "hs_err_pid*.log" -newer native/target/softroce-cmd.started)'
  echo '    [ -n "$crashes" ] || return 1'
  echo '    for f in $crashes; do'
  echo '      crashed=$((crashed + 1))'
  echo '      echo "run-native-tests: a JVM crashed in the VM ($f):"'
  echo '      grep -m3 -E "^# (SIGSEGV|SIGBUS|SIGILL|Problematic|J |V |C )" "$f"'
  echo '      mv "$f" native/target/'
  echo '    done'
  echo '    [ $attempt = 3 ] && return 1'
  echo '    echo "run-native-tests: running it again: ${*:1:8} ..."'
  echo '  done'
  echo '}'
  # without the device indexes: DeviceRemovalTest's rxe0 comes back under a new one
  echo 'before=$(rdma resource show | sed "s/^[0-9]*: //")'
  echo 'echo "rdma resources before:"; echo "$before"'
  # a module at a time: a failure in one still lets the others run
  echo 'rc=0'
  # our rc-pingpong and rping against the real ibv_rc_pingpong and rping, each way round
  printf 'run mvn -o -q -DargLine="$jvm"'
  printf ' %q' "${mvnflags[@]}" -pl samples test -Dtest=RealToolsInteropTest \
    -Dpekko-rdma.interop=true "${props[@]}" -Dpekko-rdma.test.cm-source=192.0.2.2 "$@"
  echo ' || rc=1'
  # the actors' echo sample
  printf 'run mvn -o -q -DargLine="$jvm"'
  printf ' %q' "${mvnflags[@]}" -pl samples test -Dtest='Echo*Test' \
    -Dsurefire.reportNameSuffix=echo "${props[@]}" "$@"
  echo ' || rc=1'
  for m in ${modules//,/ }; do
    printf 'run mvn -o -q -DargLine="$jvm"'
    printf ' %q' "${mvnflags[@]}" -pl "$m" test "${props[@]}" "$@"; echo ' || rc=1'
  done
  # then what changes rxe0: it goes away (rdma link delete) and comes back
  printf 'run mvn -o -q -DargLine="$jvm"'
  printf ' %q' "${mvnflags[@]}" -pl actors test -Dtest=DeviceRemovalTest \
    -Dpekko-rdma.test.remove-device=true -Dsurefire.reportNameSuffix=removal "${props[@]}" "$@"
  echo ' || rc=1'
  # and under a running stream
  printf 'run mvn -o -q -DargLine="$jvm"'
  printf ' %q' "${mvnflags[@]}" -pl streams test -Dtest=DeviceRemovalTest \
    -Dpekko-rdma.test.remove-device=true -Dsurefire.reportNameSuffix=removal "${props[@]}" "$@"
  echo ' || rc=1'
  # and last, as after it rxe0's CM connections end UNREACHABLE: real port events, its netdev
  # (dummy0) down and up
  printf 'run mvn -o -q -DargLine="$jvm"'
  printf ' %q' "${mvnflags[@]}" -pl actors test \
    -Dtest=DeviceActorTest#portEventsReachTheDeviceAndItsSubscribers \
    -Dpekko-rdma.test.toggle-netdev=true -Dsurefire.reportNameSuffix=netdev "${props[@]}" "$@"
  echo ' || rc=1'
  echo 'after=$(rdma resource show | sed "s/^[0-9]*: //")'
  echo 'echo "rdma resources after:"; echo "$after"'
  echo 'if [ "$before" != "$after" ]; then echo "run-native-tests: LEAK: rdma resource counts differ"; [ $rc = 0 ] && rc=1; fi'
  echo '[ $crashed = 0 ] || echo "run-native-tests: $crashed JVM crash(es) in the VM, each command run again"'
  echo 'exit $rc'
} > "$inner"
start=$(date +%s)
# 125: the VM did not run the command to its end. Seen once: the emulated kernel panicked at
# boot ("IO-APIC + timer doesn't work") while the host was busy; so once more.
for attempt in 1 2; do
  set +e
  "$lab" --timeout "$timeout_s" -- bash "$inner" 2>&1 | tee native/target/softroce-vm.log
  rc=${PIPESTATUS[0]}
  set -e
  [[ $rc == 125 && $attempt == 1 ]] || break
  say "the VM did not run the tests to their end (run-in-vm: 125); booting it once more"
  rm -rf "${reports[@]}"
done
took=$(( $(date +%s) - start ))
for d in "${reports[@]}"; do
  for f in "$d"/*-output.txt; do
    [[ -e $f ]] && { echo "---- ${f##*/}"; grep -E '^\[(conformance|native|interop|actors|streams)\]' "$f" || true; }
  done
done
echo "---- summary"
for d in "${reports[@]}"; do
  for f in "$d"/*.txt; do
    [[ -e $f && $f != *-output.txt ]] && { printf '%s: ' "$(basename "$f" .txt)"; grep -h '^Tests run' "$f"; }
  done
done
# what went wrong, where the end of the log shows it: failures, crashes, leaks
grep -E '^(run-native-tests: |\[ERROR\] (Tests run|Failures|Errors|  [A-Za-z]))' native/target/softroce-vm.log \
  | grep -v '^\[ERROR\] Tests run:.*Failures: 0, Errors: 0' | tail -40 || true
say "the VM run took ${took} s and exited $rc"
exit $rc

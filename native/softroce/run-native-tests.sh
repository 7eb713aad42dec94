#!/usr/bin/env bash
# Runs the native provider's tests against real kernel RDMA: Soft-RoCE devices in a throwaway VM
# (native/softroce/vm; guest-network.sh lists the devices). Inside the VM, offline, with the
# given local repository, on the native provider (plain verbs on rxe_lo, GID index 1; CM at
# 192.0.2.1 on rxe0): native's tests (LayoutTest, the smoke tests and core's whole conformance
# suite), samples' RealToolsInteropTest against ibv_rc_pingpong and rping and
# DatagramToolsInteropTest against udaddy and mckey, the echo sample and the doctor (DoctorTest), the
# runtime's CM tests, the actors' lifecycle tests, the streams' tests, then the actors' and the
# streams' DeviceRemovalTest (rdma link delete rxe0, and add again) and port events (dummy0
# down, up). Then across the veth link between rxe_a and rxe_b, clean: the CM conformance cases
# and the interop with rping and ibv_rc_pingpong; and under tc netem faults (link.sh):
# the streams' LossyLinkTest (loss, delay, reordering, duplication, a flap, a blackhole, a killed
# peer), the actors' and the cluster's (a lossy and a dead link) and ib_write_bw beside
# rdma-perf (LossyLinkPerfTest). Last, a leak check: `rdma resource
# show` must read as it did before the tests.
#
#   native/softroce/run-native-tests.sh [--timeout SECONDS] [--repo LOCAL_REPO] [extra mvn args]
#
# `mvn verify -Dsoftroce` runs it (native's softroce profile, integration-test phase; without
# -Dsoftroce it does not run). Not as root, it says that the VM part is skipped and why, and
# exits 0: the VM needs root. Exit status: the VM's test run's (1 also for a leak), or vm's
# (125: the VM did not run the command to its end).
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
vm=$root/native/softroce/vm
link=$root/native/softroce/link.sh
say() { echo "run-native-tests: $*"; }
if [[ $(id -u) != 0 ]]; then
  say "SKIPPED the Soft-RoCE VM tests: they boot a QEMU VM and install its packages, which needs" \
    "root (this is uid $(id -u)). The host tests ran; run the same command as root for the rest." >&2
  exit 0
fi
# what LayoutTest compiles against on the host (vm installs the rest on first use)
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
# built and test-compiled on the host too: what runs only across the veth link
link_modules=cluster

# everything the VM's offline run needs: our modules (core's test-jar: the suite) in $repo, and
# the test plugins resolved by a host run of the same goals that does nothing
say "host: mvn install -DskipTests ($modules and what they need) into $repo"
mvn -q "${mvnflags[@]}" -pl $modules,$link_modules,samples -am install -DskipTests
mvn -q "${mvnflags[@]}" -pl $modules,$link_modules,samples test -Dpekko-rdma.conformance=true -Dtest=NoSuchTest \
  -Dsurefire.failIfNoSpecifiedTests=false
reports=(samples/target/surefire-reports native/target/surefire-reports runtime/target/surefire-reports
  actors/target/surefire-reports streams/target/surefire-reports cluster/target/surefire-reports)
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
  # without the device indexes, sorted: DeviceRemovalTest's rxe0 comes back under a new index,
  # after the others
  echo 'before=$(rdma resource show | sed "s/^[0-9]*: //" | sort)'
  echo 'echo "rdma resources before:"; echo "$before"'
  # a module at a time: a failure in one still lets the others run
  echo 'rc=0'
  # our rc-pingpong and rping against the real ibv_rc_pingpong and rping, and our datagram peer
  # against udaddy and mckey (rxe0's CM addresses), each way round
  printf 'run mvn -o -q -DargLine="$jvm"'
  printf ' %q' "${mvnflags[@]}" -pl samples test -Dtest=RealToolsInteropTest,DatagramToolsInteropTest \
    -Dpekko-rdma.interop=true "${props[@]}" -Dpekko-rdma.test.cm-source=192.0.2.2 "$@"
  echo ' || rc=1'
  # the actors' echo sample
  printf 'run mvn -o -q -DargLine="$jvm"'
  printf ' %q' "${mvnflags[@]}" -pl samples test -Dtest='Echo*Test,DoctorTest' \
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
  # across the veth link, with faults on it
  link_props=(-Dpekko-rdma.provider=native -Dpekko-rdma.conformance=true
    -Dpekko-rdma.test.device=rxe_a -Dpekko-rdma.test.peer-device=rxe_b
    -Dpekko-rdma.test.gid-index=1 -Dpekko-rdma.test.cm-device=rxe_a
    -Dpekko-rdma.test.cm-address=198.51.100.1 -Dpekko-rdma.test.cm-source=198.51.100.2
    -Dpekko-rdma.test.link-script="$link")
  # the tools' last exchange does not survive a lost final ACK (ibv_rc_pingpong exits after its
  # last receive; the other side's last send then retries against a QP that is gone), and a
  # lost CM message is sent again only after the kernel CM's response timeout (seconds, past the
  # suite's windows): the interop and the CM cases cross the link clean
  printf 'run mvn -o -q -DargLine="$jvm"'
  printf ' %q' "${mvnflags[@]}" -pl samples test -Dtest=RealToolsInteropTest \
    -Dpekko-rdma.interop=true -Dsurefire.reportNameSuffix=link "${link_props[@]}" "$@"
  echo ' || rc=1'
  printf 'run mvn -o -q -DargLine="$jvm"'
  printf ' %q' "${mvnflags[@]}" -pl native test -Dtest='CmConformanceTest' \
    -Dsurefire.reportNameSuffix=link "${link_props[@]}" "$@"
  echo ' || rc=1'
  echo "sh $link clear"
  printf 'run mvn -o -q -DargLine="$jvm"'
  printf ' %q' "${mvnflags[@]}" -pl streams test -Dtest=LossyLinkTest "${link_props[@]}" "$@"
  echo ' || rc=1'
  printf 'run mvn -o -q -DargLine="$jvm"'
  printf ' %q' "${mvnflags[@]}" -pl actors test -Dtest=LossyLinkActorsTest \
    -Dsurefire.reportNameSuffix=lossy "${link_props[@]}" "$@"
  echo ' || rc=1'
  printf 'run mvn -o -q -DargLine="$jvm"'
  printf ' %q' "${mvnflags[@]}" -pl cluster test -Dtest=LossyLinkClusterTest \
    -Dpekko-rdma.test.cluster-wait=90 "${link_props[@]}" "$@"
  echo ' || rc=1'
  printf 'run mvn -o -q -DargLine="$jvm"'
  printf ' %q' "${mvnflags[@]}" -pl samples test -Dtest=LossyLinkPerfTest "${link_props[@]}" "$@"
  echo ' || rc=1'
  echo 'after=$(rdma resource show | sed "s/^[0-9]*: //" | sort)'
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
  "$vm" --timeout "$timeout_s" -- bash "$inner" 2>&1 | tee native/target/softroce-vm.log
  rc=${PIPESTATUS[0]}
  set -e
  [[ $rc == 125 && $attempt == 1 ]] || break
  say "the VM did not run the tests to their end (vm: 125); booting it once more"
  rm -rf "${reports[@]}"
done
took=$(( $(date +%s) - start ))
for d in "${reports[@]}"; do
  for f in "$d"/*-output.txt; do
    [[ -e $f ]] && { echo "---- ${f##*/}"; grep -E '^\[(conformance|native|interop|actors|streams|faults)\]' "$f" || true; }
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

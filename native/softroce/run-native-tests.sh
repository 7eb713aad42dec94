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
#   native/softroce/run-native-tests.sh [--timeout SECONDS] [--deadline EPOCH_SECONDS]
#       [--repo LOCAL_REPO] [--only STEP,...] [extra mvn args]
#
# The steps are vm-test-steps.sh's (--only: just those). Each attempt boots the VM and runs the
# steps not yet finished, until the deadline (PEKKO_RDMA_VM_DEADLINE, which .ci/run sets from
# CI's limit, or --deadline; by default --timeout, 5400 s, from now); each step has a deadline of
# its own. A VM that died (vm's 125: it did not boot, or hung) is booted again for the rest, but
# only while what is left fits, at its usual length, before the deadline. The log, every step's reports, and the thread dumps of a step that ran past its own
# deadline stay in native/target/softroce.
#
# `mvn verify -Dsoftroce` runs it (native's softroce profile, integration-test phase; without
# -Dsoftroce it does not run). Not as root, it says that the VM part is skipped and why, and
# exits 0: the VM needs root. Exit status: the VM's test run's (1 also for a leak), or vm's
# (125: the VM did not run the command to its end).
set -euo pipefail
timeout_s=5400
repo=${MAVEN_REPO_LOCAL:-$HOME/.m2/repository}
deadline=${PEKKO_RDMA_VM_DEADLINE:-}
only=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --timeout) timeout_s=$2; shift 2 ;;
    --deadline) deadline=$2; shift 2 ;;
    --repo) repo=$2; shift 2 ;;
    --only) only=(--only "$2"); shift 2 ;;
    *) break ;;
  esac
done
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
deadline=${deadline:-$(( $(date +%s) + timeout_s ))}
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
# each module's test class path in its target/test-classpath.txt
say "host: mvn install -DskipTests ($modules and what they need) into $repo"
mvn -q "${mvnflags[@]}" -pl $modules,$link_modules,samples -am install -DskipTests
mvn -q "${mvnflags[@]}" -pl $modules,$link_modules,samples dependency:build-classpath \
  -Dmdep.includeScope=test -Dmdep.outputFile=target/test-classpath.txt
# Each attempt boots the VM and runs the steps not yet finished (vm-test-steps.sh); the state
# and the reports of all attempts live under native/target/softroce.
out=$root/native/target/softroce
rm -rf "$out"
mkdir -p "$out/state" "$out/reports"
rm -rf samples/target/surefire-reports native/target/surefire-reports runtime/target/surefire-reports \
  actors/target/surefire-reports streams/target/surefire-reports cluster/target/surefire-reports
steps=$root/native/softroce/vm-test-steps.sh
# what an attempt is worth starting with: the VM's boot and set-up, and the steps not yet
# finished at their usual length
expected() {
  local total=120 name usual
  while read -r name usual; do total=$((total + usual)); done \
    < <(bash "$steps" --plan --state "$out/state" "${only[@]}")
  echo "$total"
}
start=$(date +%s)
rc=125
for attempt in 1 2 3; do
  now=$(date +%s)
  left=$((deadline - now))
  need=$(expected)
  if (( attempt > 1 && need > left )); then
    say "not booting the VM again: what is left needs about ${need} s and the deadline is ${left} s away"
    break
  fi
  (( left > 0 )) || { say "no time left for the VM before the deadline"; break; }
  say "attempt $attempt: booting the VM (at most ${left} s, to the deadline; the steps left need about ${need} s)"
  set +e
  "$vm" --timeout "$left" --boot-timeout 300 --stall-timeout 600 -- \
    bash "$steps" --repo "$repo" --state "$out/state" --reports "$out/reports" "${only[@]}" "$@" 2>&1 |
    tee "$out/vm-attempt$attempt.log"
  rc=${PIPESTATUS[0]}
  set -e
  [[ $rc == 125 ]] || break
  # what the dead VM left: the step it was in, its partial reports kept beside the finished ones
  if [[ -s $out/state/current ]]; then
    read -r name module <"$out/state/current"
    say "attempt $attempt ended in step $name; its partial reports are in $out/reports/$name.attempt$attempt"
    [[ -d $out/reports/$name ]] && mv "$out/reports/$name" "$out/reports/$name.attempt$attempt"
    rm -f "$out/state/current"
  fi
  say "the VM did not run the steps to their end (vm: 125); the next attempt runs those not finished"
done
took=$(( $(date +%s) - start ))
cat "$out"/vm-attempt*.log >"$out/vm.log" 2>/dev/null || true
for f in "$out"/reports/*/output.txt; do
  [[ -e $f ]] || continue
  echo "---- ${f#"$out/reports/"}"
  grep -E '^\[(conformance|native|interop|actors|streams|faults)\]' "$f" || true
done
echo "---- summary: each test class's result"
grep -E '^\[tests\] .* (passed|FAILED) in ' "$out/vm.log" || true
echo "---- steps (name: exit status, seconds)"
while read -r n _; do
  if [[ -s $out/state/$n.rc ]]; then
    echo "$n: exit $(cat "$out/state/$n.rc"), $(cat "$out/state/$n.seconds" 2>/dev/null || echo '?') s"
  else
    echo "$n: NOT RUN"
  fi
done < <(bash "$steps" --plan "${only[@]}")
# what went wrong, where the end of the log shows it: failures, crashes, leaks, deadlines
echo "---- what went wrong"
grep -E '^(run-native-tests: |vm: |\[tests\] .*(FAILED|TIMED OUT|still running|for [0-9]+ s))' "$out/vm.log" \
  | grep -v 'step .* started\|not run again\|ended: exit 0 ' | tail -60 || true
for f in "$out"/reports/*/output.txt; do
  [[ -e $f ]] && grep -q -E '^\[ +[1-9][0-9]* tests failed +\]' "$f" &&
    { echo "---- ${f#"$out/reports/"}: failures"; sed -n '/^Failures (/,/^Test run finished/p' "$f" | head -80; }
done
say "the VM part took ${took} s and exited $rc; its log, reports and thread dumps are in $out"
exit $rc

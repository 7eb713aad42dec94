#!/usr/bin/env bash
# Runs the native module's tests against real kernel RDMA: Soft-RoCE devices (rxe_lo, rxe0) in
# the softroce-lab VM (../shared/softroce-lab/run-in-vm beside the repository), where
# -Dpekko-rdma.provider=native enables NativeSmokeTest. Exit status: the VM's Maven run's, or
# run-in-vm's (125: the VM did not run the command; 2: usage or not root).
#
#   native/softroce/run-native-tests.sh [--timeout SECONDS] [extra mvn args, e.g. -Dtest=NativeSmokeTest]
#
# Needs root (run-in-vm boots QEMU and installs its Debian packages on first use). The host
# installs the modules native needs into ~/.m2 first, so Maven inside the VM works offline.
set -euo pipefail
timeout_s=1500
if [[ ${1:-} == --timeout ]]; then timeout_s=$2; shift 2; fi
root=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
lab=$root/../shared/softroce-lab/run-in-vm
if [[ ! -x $lab ]]; then
  echo "run-native-tests: $lab is missing: it comes with the project's shared/ folder" >&2
  exit 2
fi
cd "$root"
echo "run-native-tests: host: mvn -q -B -pl native -am install -DskipTests"
mvn -q -B -pl native -am install -DskipTests
rm -rf native/target/surefire-reports
start=$(date +%s)
set +e
"$lab" --timeout "$timeout_s" -- mvn -o -q -B -pl native test -Dpekko-rdma.provider=native "$@"
rc=$?
set -e
took=$(( $(date +%s) - start ))
# -q keeps the VM's console short; the reports it wrote are on this file system
for f in native/target/surefire-reports/*.txt; do
  [[ -e $f ]] || continue
  case $f in
    *-output.txt) echo "---- ${f##*/}"; cat "$f" ;;
  esac
done
for f in native/target/surefire-reports/*.txt; do
  [[ -e $f && $f != *-output.txt ]] && grep -h '^Tests run' "$f"
done
echo "run-native-tests: the VM run took ${took} s and exited $rc"
exit $rc

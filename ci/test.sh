#!/usr/bin/env bash
# The whole test suite, and proof that the main job still builds and passes. Phases:
#   1. default preset (-Wall -Wextra -Werror): build, then every ctest test (labels unit,
#      crashunit, property, crash) except the known failures in ci/known-failures.txt;
#   2. the main job exactly as a user runs it (./ci/sweep.sh: release preset, -O3), with
#      CRASHSIM_WERROR=ON so that a warning only -O3 sees still turns CI red;
#   3. the asan preset (AddressSanitizer + UBSan): its unit, crashunit and property tests, and a
#      bounded sanitizer sweep (ci/asan-sweep.sh: every failpoint P0–P11 at least once).
# Each phase prints its wall time; a failing phase stops the run with its exit code.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
declare -a timings=()
phase() {
  local name=$1
  shift
  local t0
  t0=$(date +%s)
  echo "=== ci/test.sh: ${name}"
  local rc=0
  "$@" || rc=$?
  local dt=$(($(date +%s) - t0))
  timings+=("$(printf '%-34s %5ds  %s' "$name" "$dt" "$([ $rc -eq 0 ] && echo ok || echo "FAILED ($rc)")")")
  echo "=== ci/test.sh: ${name}: ${dt}s, exit ${rc}"
  if [ $rc -ne 0 ]; then
    report
    exit $rc
  fi
}
report() {
  echo "=== ci/test.sh phases (total $(($(date +%s) - start))s)"
  printf '  %s\n' "${timings[@]}"
}

known_failures() { grep -v '^#' ci/known-failures.txt | grep -v '^$' | paste -sd'|' - || true; }
ctest_excluding_known() {
  local exclude
  exclude=$(known_failures)
  if [ -n "$exclude" ]; then
    ctest "$@" -E "$exclude"
  else
    ctest "$@"
  fi
}

phase "install packages" ./ci/install-deps.sh
phase "default: configure" cmake --preset default
phase "default: build" cmake --build --preset default -j "$(nproc)"
phase "default: ctest" ctest_excluding_known --preset default
main_job() {
  rm -rf out/ci-sweep
  CRASHSIM_WERROR=ON ./ci/sweep.sh out/ci-sweep
  for f in report.json junit.xml report.md report.html stop/report.json stop/report.md; do
    [ -s "out/ci-sweep/$f" ] || {
      echo "ci/test.sh: the main job wrote no $f" >&2
      return 1
    }
  done
}
phase "main job: ./ci/sweep.sh (release)" main_job
phase "asan: configure" cmake --preset asan
phase "asan: build" cmake --build --preset asan -j "$(nproc)"
phase "asan: ctest (unit|crashunit|property)" ctest_excluding_known --preset asan -L 'unit|crashunit|property'
phase "asan: bounded sweep" ./ci/asan-sweep.sh
report

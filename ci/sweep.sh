#!/usr/bin/env bash
# The main job: install missing packages, build the CLI and the instrumented agent (release
# preset), run the exhaustive crash sweep (kill mode, double faults) over every built-in
# scenario and write report.json, junit.xml, report.md and report.html; then the Stop sweep
# (--mode stop, double faults: a Stop instead of the kill at every point, the stopping process
# killed on the Stop path) with its own reports in OUT_DIR/stop.
#
#   ./ci/sweep.sh [OUT_DIR] [crashsim sweep options…]
#
# OUT_DIR defaults to out/sweep; every further argument goes to both `crashsim sweep` runs as it
# is (`./ci/sweep.sh out/mine --jobs 4 --scenario write-config-port`). Exit code: 0 every
# contract holds, 1 a contract violation, 2 usage or environment error (the build failing
# included); the worse of the two sweeps.
# CRASHSIM_WERROR=ON makes warnings errors in this build (CI does; a user's build never fails on
# a warning).
set -euo pipefail
cd "$(dirname "$0")/.."
out=out/sweep
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  out=$1
  shift
fi
./ci/install-deps.sh
if ! { cmake --preset release -DCRASHSIM_WERROR="${CRASHSIM_WERROR:-OFF}" >/dev/null &&
  cmake --build --preset release -j "$(nproc)" --target crashsim crashsim-agent; }; then
  echo "ci/sweep.sh: the release build failed" >&2
  exit 2
fi
rc=0
./build/release/harness/crashsim sweep --double-faults --out "$out" "$@" || rc=$?
stop_rc=0
./build/release/harness/crashsim sweep --mode stop --double-faults --out "$out/stop" "$@" ||
  stop_rc=$?
[ "$stop_rc" -gt "$rc" ] && rc=$stop_rc
exit "$rc"

#!/usr/bin/env bash
# Bounded libFuzzer runs (part of ./ci/test.sh): installs clang 14 and its runtime from Debian
# when missing, builds the `fuzz` target of PRESET (default `fuzz`, README "Fuzzing"; ci/test.sh
# passes `asan`, whose tree already holds every object the targets link) and runs every target
# for SECONDS (default 30) over its committed corpus and kept crashers, new inputs going to a
# scratch folder. Every target runs at once, each for SECONDS of one core's time: on a machine
# with fewer cores than targets the wall limit is SECONDS x targets / cores (5 targets on 2
# cores: 50 s each, side by side), so no core idles while the last target runs alone (the
# former two-at-a-time rounds took 3 x SECONDS with one core idle in the last). A crash, a leak,
# a timeout or an out-of-memory is a finding: the input is written to OUT_DIR/<target>/ and the
# script exits 1 (keep it under fuzz/crashers/<target>/ once fixed).
# Usage: ./ci/fuzz.sh [SECONDS] [OUT_DIR] [PRESET]   (default 30, out/fuzz, fuzz); exit 2 on a
# set-up failure.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
out=${2:-out/fuzz}
preset=${3:-fuzz}
missing=()
for p in clang-14 libclang-rt-14-dev; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "ci/fuzz.sh: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
    exit 2
fi
if ! { cmake --preset "$preset" >/dev/null &&
  cmake --build --preset "$preset" -j "$(nproc)" --target fuzz; }; then
  echo "ci/fuzz.sh: the $preset build of the fuzz targets failed" >&2
  exit 2
fi
build=build/$preset
targets=(runtime_event_fuzz ledger_resolve_fuzz args_hash_fuzz scenario_fuzz report_merge_fuzz)
for t in "${targets[@]}"; do
  [ -d "fuzz/corpus/$t" ] || {
    echo "ci/fuzz.sh: no corpus fuzz/corpus/$t" >&2
    exit 2
  }
done
# One target's run; its verdict goes to $out/$t.rc.
run_target() {
  local t=$1
  rm -rf "$out/$t" "$out/scratch/$t"
  mkdir -p "$out/$t" "$out/scratch/$t"
  local dirs=("fuzz/corpus/$t")
  [ -d "fuzz/crashers/$t" ] && dirs+=("fuzz/crashers/$t")
  local rc=0
  "./$build/fuzz/$t" "$out/scratch/$t" "${dirs[@]}" -max_total_time="$wall" \
    -timeout=10 -rss_limit_mb=4096 -artifact_prefix="$out/$t/" -print_final_stats=1 \
    >"$out/$t.log" 2>&1 || rc=$?
  echo "$rc" >"$out/$t.rc"
}
mkdir -p "$out"
cores=$(nproc)
wall=$seconds
if [ ${#targets[@]} -gt "$cores" ]; then
  wall=$(((seconds * ${#targets[@]} + cores - 1) / cores))
fi
for t in "${targets[@]}"; do
  run_target "$t" &
done
wait
rc=0
for t in "${targets[@]}"; do
  if [ "$(cat "$out/$t.rc")" = 0 ]; then
    echo "ci/fuzz.sh: $t: $(grep -o 'number_of_executed_units: [0-9]*' "$out/$t.log" |
      cut -d' ' -f2) executions in ${wall}s (${#targets[@]} targets on ${cores} cores), no finding"
  else
    echo "ci/fuzz.sh: $t: FINDING, see $out/$t.log and $out/$t/" >&2
    tail -30 "$out/$t.log" >&2
    rc=1
  fi
done
exit $rc

#!/usr/bin/env bash
# The bounded sanitizer sweep (part of ./ci/test.sh): the asan preset's crashsim drives the asan
# preset's instrumented crashsim-agent (AddressSanitizer + UBSan, -fno-sanitize-recover) over
# every built-in scenario, killing at the first hit of every failpoint the scenario reaches and,
# with double faults, at the first hit of every recovery failpoint (P8–P11) of each of those
# cases, and at the continuation admission (P14, P15) after the first P1 and P6 kills (a call
# re-issued, a call answered), and the continuation of the first P0 kill at the first hit of each
# of its own P0–P7: every failpoint P0–P11, P14, P15 at least once, about a fifth of the full sweep
# (578 kill cases; 97 of them the continuation's own), the race of two hosts (+H2,
# verdicts/h1_race.h) on the crash state of the first P6 kill (a call answered, the task
# continues): 15 cases, plus the generated path-component mutations of one scenario whose
# target lies two directories deep (parent-deleted: the file, src/app, src and the workspace
# root, each symlinked, replaced and removed: 12 cases, a few seconds), and the first P0 kill's
# recovery killed at its own first S and F barrier (+R:S#1, +R:F#1, verdicts/recovery_barrier.h:
# 31 cases). A sanitizer
# report in a child makes it exit non-zero (its case fails); one in crashsim itself fails the
# sweep. V9's second run is skipped (--no-determinism): under the sanitizers it would repeat
# the first run's code path, and the main job judges V9 on its sample (A/B on the 2-core VM:
# see docs/ci-time.md). Then the same bound under --mode stop: a Stop at the first hit of every failpoint, and
# the Stop-path kills (P12, P13) after a Stop at P1, P3 and P5 (a call not yet dispatched, an
# implementation in progress, a response being committed: each kind of open call the
# termination batch closes), reports in OUT_DIR/stop. The main job runs every Stop-path kill in
# the release build; here the sanitizers see each kind once per scenario: 191 Stop cases instead
# of 309, which took about 470 s of CI's 90 minutes. Plus the watchdog cases (+grace, a Bash that
# ignores the Stop: 2 cases, about 5 s).
# Usage: ./ci/asan-sweep.sh [OUT_DIR] (default out/asan-sweep); expects build/asan.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-out/asan-sweep}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=86:malloc_context_size=2}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
./build/asan/harness/crashsim sweep --double-faults --no-determinism --jobs "$(nproc)" \
  --case '*/P*#1/kill' --case '*/P*#1/kill+R:P[89]#1' --case '*/P*#1/kill+R:P1[01]#1' \
  --case '*/P[16]#1/kill+R:P1[45]#1' --case '*/P0#1/kill+R:P[0-7]#1' --case '*/P6#1/kill+H2' \
  --case 'parent-deleted/P4#1/kill~path:*' --case '*/P0#1/kill+R:[SF]#1' --out "$out"
exec ./build/asan/harness/crashsim sweep --mode stop --double-faults --no-determinism --jobs "$(nproc)" \
  --case '*/P*#1/stop' --case '*/P[135]#1/stop+K:*' --case '*/stop+grace' --out "$out/stop"

#!/usr/bin/env bash
# The main job: install missing packages, build the CLI and the instrumented agent, run the
# exhaustive crash sweep (kill mode, double faults) over every built-in scenario and write
# report.json, junit.xml, report.md and report.html to ${1:-out/sweep}. Exit code: 0 every
# contract holds, 1 a contract violation, 2 usage or environment error.
set -euo pipefail
cd "$(dirname "$0")/.."
./ci/install-deps.sh
cmake --preset release
cmake --build --preset release -j "$(nproc)" --target crashsim crashsim-agent
out="${1:-out/sweep}"
./build/release/harness/crashsim sweep --double-faults --out "$out"

#!/usr/bin/env bash
# The main job: install, build, run the crash sweep over every built-in scenario and write
# the reports (report.json, junit.xml, report.md, report.html) to ${1:-out/sweep}.
set -euo pipefail
cd "$(dirname "$0")/.."
./ci/install-deps.sh
cmake --preset release
cmake --build --preset release -j "$(nproc)"
out="${1:-out/sweep}"
./build/release/harness/crashsim sweep --double-faults --out "$out"
